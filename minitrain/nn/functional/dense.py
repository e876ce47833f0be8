"""`F.linear`, `F.dropout`, `F.scaled_dot_product_attention`, and the sparse ones: `F.embedding`,
`F.one_hot`."""

from __future__ import annotations

import numpy as np

from ... import backend, ops
from ...errors import ArgumentError, DTypeError, IndexOutOfRangeError
from ...tensor import Tensor
from ..torch_args import (
    check_embedding_options,
    padding_row,
)

__all__ = ["linear", "dropout", "scaled_dot_product_attention", "embedding", "one_hot"]


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:  # noqa: A002
    """input @ weight.T + bias: input `(*, in_features)`, weight (out_features, in_features), bias
    (out_features,) or None -> `(*, out_features)`."""
    return ops.linear(input, weight, bias)


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
    if indices.size and (indices.min() < -rows or indices.max() >= rows):
        raise IndexError(
            f"embedding: indices must lie in [{-rows}, {rows}) for a weight of shape "
            f"{weight.shape}, got values from {indices.min()} to {indices.max()}"
        )
    pad_row = padding_row(padding_idx, rows, "embedding")
    out = ops.getitem(weight, indices)
    if pad_row is None:
        return out
    # same values, but the padding rows come from a copy outside the graph: no gradient there
    keep = (indices % rows != pad_row)[..., None]
    return ops.where(keep, out, out.detach())


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
