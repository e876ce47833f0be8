"""`F.linear`, `F.bilinear`, `F.dropout`, `F.scaled_dot_product_attention`, and the sparse ones:
`F.embedding`, `F.embedding_bag`, `F.one_hot`."""

from __future__ import annotations

import numpy as np

from ... import backend, ops
from ...errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError
from ...ops.core.op import as_tensor, shape_of
from ...ops.core.operands import array_step
from ...tensor import Tensor
from ..torch_args import (
    check_embedding_options,
    padding_row,
)

__all__ = [
    "linear",
    "bilinear",
    "dropout",
    "scaled_dot_product_attention",
    "embedding",
    "embedding_bag",
    "one_hot",
]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """input @ weight.T + bias: input `(*, in_features)`, weight (out_features, in_features), bias
    (out_features,) or None -> `(*, out_features)`."""
    return ops.linear(input, weight, bias)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y_o = input1^T weight[o] input2 + bias_o: input1 `(*, in1)`, input2 `(*, in2)` (the same
    leading dims), weight (out, in1, in2), bias (out,) or None -> `(*, out)`. One einsum."""
    shapes = (tuple(input1.shape), tuple(input2.shape), tuple(weight.shape))
    if (
        weight.ndim != 3
        or input1.ndim < 1
        or shapes[0][:-1] != shapes[1][:-1]
        or shapes[0][-1] != shapes[2][1]
        or shapes[1][-1] != shapes[2][2]
    ):
        raise ShapeError(
            f"bilinear: expected input1 (*, in1), input2 (*, in2) with the same leading dims and "
            f"weight (out, in1, in2), got input1 {shapes[0]}, input2 {shapes[1]}, weight "
            f"{shapes[2]}"
        )
    if bias is not None and tuple(bias.shape) != shapes[2][:1]:
        raise ShapeError(
            f"bilinear: bias must have shape ({shapes[2][0]},), got {tuple(bias.shape)}"
        )
    out = ops.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:  # noqa: A002
    """With training=True (the default, as in PyTorch: pass `training=self.training` in a module),
    zero each element with probability p and scale the rest by 1 / (1 - p); input itself otherwise.
    `inplace` is accepted and ignored: the result is a new tensor."""
    return ops.dropout(input, p, training)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(scale query key^T + mask) value, one op (ops.scaled_dot_product_attention: masks,
    causal, dropout, grouped-query attention) whose backward recomputes the weights."""
    return ops.scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa
    )


def embedding(
    input,  # noqa: A002
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """weight[input] for integer indices of any shape: the result has shape
    input.shape + (embedding_dim,). Rows looked up at padding_idx get no gradient. max_norm,
    scale_grad_by_freq and sparse take PyTorch's defaults only."""
    check_embedding_options("embedding", max_norm, scale_grad_by_freq, sparse)
    indices = input.array if isinstance(input, Tensor) else input
    if getattr(indices, "dtype", None) is None or indices.dtype.kind not in "iu":
        raise DTypeError(
            f"embedding: input must hold integer indices, got "
            f"{getattr(indices, 'dtype', type(indices).__name__)}"
        )
    rows = weight.shape[0]
    # checked at each call, a compiled one's replays too (array_step)
    array_step(_check_embedding_indices, indices, tuple(weight.shape))
    pad_row = padding_row(padding_idx, rows, "embedding")
    out = ops.getitem(weight, indices)
    if pad_row is None:
        return out
    # same values, but the padding rows come from a copy outside the graph: no gradient there
    keep = array_step(_not_padding, indices, rows, pad_row)
    return ops.where(keep, out, out.detach())


def _check_embedding_indices(indices, weight_shape: tuple) -> None:
    """Every index is a row of the weight, in [0, rows): PyTorch's IndexError for any other,
    a negative one too (numpy would read -1 as the last row)."""
    rows = weight_shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        raise IndexOutOfRangeError(
            f"embedding: index out of range: indices must lie in [0, {rows}) for a weight of "
            f"shape {weight_shape}, got values from {indices.min()} to {indices.max()}"
        )


def _not_padding(indices, rows: int, pad_row: int):
    """Where the looked-up row is not the padding row, as (*indices.shape, 1)."""
    return (indices != pad_row)[..., None]


_BAG_MODES = ("sum", "mean", "max")


def _integer_indices(caller: str, name: str, value):
    """The integer array behind an index argument (a Tensor or an array)."""
    indices = value.array if isinstance(value, Tensor) else value
    if getattr(indices, "dtype", None) is None or indices.dtype.kind not in "iu":
        raise DTypeError(
            f"{caller}: {name} must hold integer indices, got "
            f"{getattr(indices, 'dtype', type(indices).__name__)}"
        )
    return indices


def _bag_of_each_position(input, offsets, include_last_offset: bool):  # noqa: A002
    """(indices, bag number of each, number of bags): a 2-D input's rows are its bags; a 1-D
    input is cut into bags at `offsets` (each bag's start; with include_last_offset, the last
    offset is the end of the last bag)."""
    caller = "embedding_bag"
    indices = _integer_indices(caller, "input", input)
    xp = backend.array_module(indices)
    if indices.ndim == 2:
        if offsets is not None:
            raise ArgumentError(f"{caller}: offsets must be None for a 2-D input, got {offsets!r}")
        bags, width = indices.shape
        return indices.reshape(-1), xp.repeat(xp.arange(bags), width), bags
    if indices.ndim != 1:
        raise ShapeError(f"{caller}: input must be 1-D or 2-D, got shape {tuple(indices.shape)}")
    if offsets is None:
        raise ArgumentError(f"{caller}: a 1-D input needs offsets (each bag's start)")
    starts = _integer_indices(caller, "offsets", offsets)
    if starts.ndim != 1 or starts.size == 0 or int(starts[0]) != 0:
        raise ArgumentError(
            f"{caller}: offsets must be 1-D and start at 0 (the first bag starts at position 0), "
            f"got {starts!r}"
        )
    if bool((starts[1:] < starts[:-1]).any()) or int(starts[-1]) > indices.size:
        raise ArgumentError(
            f"{caller}: offsets must not decrease nor pass the input's length {indices.size}, "
            f"got {starts!r}"
        )
    end = indices.size
    if include_last_offset:
        end, starts = int(starts[-1]), starts[:-1]
    indices = indices[:end]
    # the bag of position i: the last bag starting at or before i (empty bags are skipped)
    bag_of = xp.searchsorted(starts, xp.arange(indices.size), side="right") - 1
    return indices, bag_of, int(starts.size)


def embedding_bag(
    input,  # noqa: A002
    weight: Tensor,
    offsets=None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights=None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """The sum, mean or max of each bag's rows of weight, without making the rows one by one:
    input (B, L) holds B bags of L indices, or a 1-D input is cut into bags at `offsets` ->
    (B, embedding_dim). An empty bag gives zeros. Indices equal to padding_idx are left out of
    their bag (and of its mean's count). per_sample_weights (input's shape, mode 'sum' only)
    weigh each row. max gives each feature the gradient of its first maximal row. max_norm,
    scale_grad_by_freq and sparse take PyTorch's defaults only."""
    caller = "embedding_bag"
    check_embedding_options(caller, max_norm, scale_grad_by_freq, sparse)
    if mode not in _BAG_MODES:
        raise ArgumentError(f"{caller}: mode must be one of {_BAG_MODES}, got {mode!r}")
    if per_sample_weights is not None and mode != "sum":
        raise ArgumentError(
            f"{caller}: per_sample_weights is only supported for mode='sum', got mode={mode!r}"
        )
    indices, bag_of, bags = _bag_of_each_position(input, offsets, include_last_offset)
    rows = weight.shape[0]
    if indices.size and (indices.min() < -rows or indices.max() >= rows):
        raise IndexError(
            f"{caller}: indices must lie in [{-rows}, {rows}) for a weight of shape "
            f"{tuple(weight.shape)}, got values from {indices.min()} to {indices.max()}"
        )
    xp = backend.array_module(indices)
    kept = xp.ones(indices.shape, bool)
    pad_row = padding_row(padding_idx, rows, caller)
    if pad_row is not None:
        kept = indices % rows != pad_row
    positions = xp.nonzero(kept)[0]
    picked = ops.getitem(weight, indices[positions])  # (kept positions, dim)
    bag_of = bag_of[positions]
    if mode == "max":
        return _bag_max(picked, bag_of, bags)
    if per_sample_weights is not None:
        sample_weights = as_tensor(per_sample_weights)
        if tuple(sample_weights.shape) != tuple(shape_of(input)):
            raise ShapeError(
                f"{caller}: per_sample_weights must have input's shape {tuple(shape_of(input))}, "
                f"got {tuple(sample_weights.shape)}"
            )
        sample_weights = ops.reshape(sample_weights, (-1,))
        picked = picked * ops.getitem(sample_weights, positions).unsqueeze(-1)
    # each bag's sum as one product with its 0/1 membership matrix (bags, kept positions)
    membership = xp.zeros((bags, positions.size), weight.dtype)
    membership[bag_of, xp.arange(positions.size)] = 1
    out = ops.matmul(Tensor.wrap(membership), picked)
    if mode == "mean":
        counts = xp.maximum(membership.sum(axis=1, keepdims=True), 1)
        out = out / Tensor.wrap(counts)
    return out


def _bag_max(picked: Tensor, bag_of, bags: int) -> Tensor:
    """Each bag's featurewise max of its rows (zeros for an empty bag), gathered at the first
    maximal row so that it alone gets the gradient, as PyTorch's."""
    values = picked.array
    xp = backend.array_module(values)
    dim = values.shape[1]
    winners = xp.zeros((bags, dim), np.int64)
    filled = xp.zeros((bags, 1), values.dtype)
    for bag in range(bags):
        members = xp.nonzero(bag_of == bag)[0]
        if members.size:
            winners[bag] = members[xp.argmax(values[members], axis=0)]
            filled[bag] = 1
    if values.shape[0] == 0:
        return Tensor.wrap(xp.zeros((bags, dim), values.dtype))
    return ops.gather(picked, 0, Tensor.wrap(winners)) * Tensor.wrap(filled)


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """(*, num_classes) int64 zeros with a 1 at each class index of `tensor` (int64 indices,
    as PyTorch requires), outside the graph. num_classes=-1: the largest index + 1."""
    indices = tensor.array if isinstance(tensor, Tensor) else np.asarray(tensor)
    if indices.dtype != np.int64:
        raise DTypeError(f"one_hot: tensor must hold int64 class indices, got {indices.dtype}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise DTypeError(f"one_hot: num_classes must be an int, got {num_classes!r}")
    if num_classes == -1:
        if not indices.size:
            raise ArgumentError(
                "one_hot: cannot infer num_classes from an empty tensor; pass num_classes"
            )
        num_classes = int(indices.max()) + 1
    if num_classes < 0:
        raise ArgumentError(f"one_hot: num_classes must be -1 or >= 0, got {num_classes}")
    if indices.size and (indices.min() < 0 or indices.max() >= num_classes):
        raise IndexOutOfRangeError(
            f"one_hot: class indices must lie in [0, {num_classes}), got values from "
            f"{indices.min()} to {indices.max()}"
        )
    xp = backend.array_module(indices)
    return Tensor((indices[..., None] == xp.arange(num_classes)).astype(np.int64))
