"""MultiheadAttention, PyTorch's layer and parameters over scaled_dot_product_attention, and the
checks of sequences and attention masks the transformer layers share with it."""

from __future__ import annotations

import math

import numpy as np

from ... import backend, ops
from ...errors import ArgumentError, DTypeError, ShapeError
from ...ops.core.op import array_of, as_tensor, shape_of
from ...ops.random.dropout import check_probability
from ...tensor import Tensor
from .. import functional as F  # noqa: N812 (PyTorch's idiom)
from .. import init
from ..torch_args import check_positive_int
from .linear import Linear, layer_dtype
from .module import Module, Parameter


def check_heads(caller: str, embed_dim, num_heads, names=("embed_dim", "num_heads")) -> None:
    """embed_dim and num_heads positive ints, embed_dim a multiple of num_heads (each head takes
    embed_dim // num_heads features); `names` are the caller's names for the two."""
    for name, value in zip(names, (embed_dim, num_heads), strict=True):
        check_positive_int(caller, name, value)
    if embed_dim % num_heads:
        raise ArgumentError(
            f"{caller}: {names[0]} ({embed_dim}) must be divisible by {names[1]} ({num_heads})"
        )


def sequence_dims(
    caller: str, name: str, x, features: int, batch_first: bool, feature_name: str
) -> tuple[int | None, int]:
    """(batch size, sequence length) of a sequence input: (T, E) unbatched (batch None), or
    (T, N, E), (N, T, E) when batch_first, with E == features (the layer's `feature_name`)."""
    shape = shape_of(x)
    batched = "(N, T, E)" if batch_first else "(T, N, E)"
    if len(shape) not in (2, 3):
        raise ShapeError(
            f"{caller}: {name} must be (T, E) unbatched or {batched} batched, got shape {shape}"
        )
    if shape[-1] != features:
        raise ShapeError(
            f"{caller}: {name} has {shape[-1]} features (its last dim, shape {shape}), the layer "
            f"was built for {feature_name}={features}"
        )
    if len(shape) == 2:
        return None, shape[0]
    return (shape[0], shape[1]) if batch_first else (shape[1], shape[0])


def check_masks(
    caller: str,
    batch: int | None,
    heads: int,
    target_len: int,
    source_len: int,
    attn_mask,
    key_padding_mask,
    names=("attn_mask", "key_padding_mask"),
) -> None:
    """An attention mask (L, S) or (N * heads, L, S), and a key padding mask (N, S) ((S,) for
    unbatched input, batch None): boolean (True: not attended) or floating (added to the
    scores), as PyTorch's. `names` are the caller's names for the two masks."""
    attn_name, padding_name = names
    n = 1 if batch is None else batch
    for name, mask in ((attn_name, attn_mask), (padding_name, key_padding_mask)):
        if mask is not None:
            dtype = array_of(mask).dtype
            if dtype != np.bool_ and dtype.kind != "f":
                raise DTypeError(
                    f"{caller}: {name} must be boolean (True: not attended) or floating "
                    f"(added to the scores), got {dtype}"
                )
    if attn_mask is not None:
        shape = shape_of(attn_mask)
        allowed = [(target_len, source_len), (n * heads, target_len, source_len)]
        if shape not in allowed:
            raise ShapeError(
                f"{caller}: {attn_name} must be (L, S) = {allowed[0]} or "
                f"({'num_heads' if batch is None else 'N * num_heads'}, L, S) = {allowed[1]}, "
                f"got shape {shape}"
            )
    if key_padding_mask is not None:
        expected = (source_len,) if batch is None else (batch, source_len)
        shape = shape_of(key_padding_mask)
        if shape != expected:
            form = "(S,)" if batch is None else "(N, S)"
            raise ShapeError(
                f"{caller}: {padding_name} must be {form} = {expected}, got shape {shape}"
            )


def additive_mask(mask, dtype) -> Tensor | None:
    """A mask as one added to the attention scores, in `dtype`: a boolean mask's True (not
    attended) as -inf and False as 0, as PyTorch's _canonical_mask; a floating one cast, its
    graph kept."""
    if mask is None:
        return None
    data = array_of(mask)
    if data.dtype == np.bool_:
        xp = backend.array_module(data)
        return Tensor(xp.where(data, -np.inf, 0.0).astype(dtype))
    return as_tensor(mask) if data.dtype == dtype else ops.cast(mask, dtype)


def causal_mask(target_len: int, source_len: int, dtype, xp=np) -> Tensor:
    """-inf above the diagonal and 0 on and below it, (target_len, source_len): query i attends
    keys 0..i, as is_causal does in scaled_dot_product_attention."""
    upper = xp.triu(xp.ones((target_len, source_len), dtype=bool), 1)
    return Tensor(xp.where(upper, -np.inf, 0.0).astype(dtype))


class MultiheadAttention(Module):
    """Attention over num_heads heads of embed_dim // num_heads features, as PyTorch's layer.

    Parameters (PyTorch's names): in_proj_weight (3 * embed_dim, embed_dim), the query, key and
    value projections stacked, or q_proj_weight, k_proj_weight (embed_dim, kdim) and
    v_proj_weight (embed_dim, vdim) where kdim or vdim differs from embed_dim; in_proj_bias
    (3 * embed_dim); out_proj, a Linear(embed_dim, embed_dim); bias_k and bias_v (1, 1,
    embed_dim) with add_bias_kv, a key and a value appended to every sequence. add_zero_attn
    appends a zero key and value after them.

    forward(query, key, value) takes (L, E) unbatched or (L, N, E) ((N, L, E) with batch_first)
    and returns (output, weights): the weights computed explicitly when need_weights (averaged
    over the heads unless average_attn_weights=False), else None and the attention runs as one
    scaled_dot_product_attention. attn_mask (L, S) or (N * num_heads, L, S), key_padding_mask
    (N, S): True, or -inf where floating, keeps a key from a query. is_causal is PyTorch's hint
    that attn_mask is the causal mask; without an attn_mask (which PyTorch refuses) it is the
    causal mask, query i attending keys 0..i.
    """

    def __init__(
        self,
        embed_dim,
        num_heads,
        dropout=0.0,
        bias=True,
        add_bias_kv=False,
        add_zero_attn=False,
        kdim=None,
        vdim=None,
        batch_first=False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        caller = "MultiheadAttention"
        dtype = layer_dtype(dtype, caller)
        check_heads(caller, embed_dim, num_heads)
        kdim = embed_dim if kdim is None else check_positive_int(caller, "kdim", kdim)
        vdim = embed_dim if vdim is None else check_positive_int(caller, "vdim", vdim)
        self.embed_dim, self.num_heads, self.kdim, self.vdim = embed_dim, num_heads, kdim, vdim
        self.head_dim = embed_dim // num_heads
        self.dropout = check_probability(dropout, caller, "dropout")
        self.batch_first, self.add_zero_attn = batch_first, add_zero_attn
        if kdim == embed_dim and vdim == embed_dim:
            self.in_proj_weight = Parameter(np.empty((3 * embed_dim, embed_dim), dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(np.empty((embed_dim, embed_dim), dtype))
            self.k_proj_weight = Parameter(np.empty((embed_dim, kdim), dtype))
            self.v_proj_weight = Parameter(np.empty((embed_dim, vdim), dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(np.empty(3 * embed_dim, dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, dtype=dtype)
        for name in ("bias_k", "bias_v"):
            extra = Parameter(np.empty((1, 1, embed_dim), dtype)) if add_bias_kv else None
            self.register_parameter(name, extra)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        """PyTorch's initialisation: the projections Xavier-uniform, the biases 0, bias_k and
        bias_v Xavier-normal (out_proj.weight keeps Linear's)."""
        if self.in_proj_weight is not None:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Attention of query (L, E), (L, N, E) or with batch_first (N, L, E) over key and value (S,
        kdim) and (S, vdim), batched likewise. Returns (output, weights): output of query's shape;
        weights (N, L, S') averaged over the heads, (N, num_heads, L, S') with
        average_attn_weights=False (no N for unbatched input), or None with need_weights=False. S'
        counts the keys add_bias_kv and add_zero_attn append. Masks and is_causal: see the class."""
        batch, _, source_len = self._check_inputs(query, key, value, attn_mask, key_padding_mask)
        query, key, value = self._batch_first(query, key, value, batch is None)
        q, k, v = self._heads(query, key, value)
        k, v = self._with_extra_keys(k, v)
        # PyTorch trusts the is_causal hint where it runs its attention kernel (no padding mask,
        # no weights to return), and reads the attn_mask it was given elsewhere
        causal_kernel = is_causal and key_padding_mask is None and not need_weights
        mask = None
        if not causal_kernel:
            mask = self._mask(attn_mask, key_padding_mask, is_causal, q, k.shape[2], source_len)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            scores = ops.matmul(q * (1.0 / math.sqrt(self.head_dim)), ops.transpose(k, -2, -1))
            weights = ops.softmax(scores if mask is None else scores + mask, -1)
            weights = ops.dropout(weights, dropout_p, dropout_p > 0)
            heads = ops.matmul(weights, v)
            if average_attn_weights:
                weights = ops.mean(weights, 1)
        else:
            heads = F.scaled_dot_product_attention(q, k, v, mask, dropout_p, causal_kernel)
            weights = None
        heads = ops.reshape(ops.transpose(heads, 1, 2), (*query.shape[:2], self.embed_dim))
        out = self.out_proj(heads)
        if batch is None:
            out = ops.reshape(out, out.shape[1:])
            weights = None if weights is None else ops.reshape(weights, weights.shape[1:])
        elif not self.batch_first:
            out = ops.transpose(out, 0, 1)
        return out, weights

    def _check_inputs(self, query, key, value, attn_mask, key_padding_mask) -> tuple:
        """(batch size, L, S) of forward's arguments (batch None for unbatched input), or a
        minitrain error naming the layer and the shapes."""
        caller, batch_first = "MultiheadAttention", self.batch_first
        batch, target_len = sequence_dims(
            caller, "query", query, self.embed_dim, batch_first, "embed_dim"
        )
        if (len(shape_of(key)), len(shape_of(value))) != (len(shape_of(query)),) * 2:
            raise ShapeError(
                f"{caller}: key and value must have query's rank, got query "
                f"{shape_of(query)}, key {shape_of(key)}, value {shape_of(value)}"
            )
        key_batch, source_len = sequence_dims(caller, "key", key, self.kdim, batch_first, "kdim")
        sequence_dims(caller, "value", value, self.vdim, batch_first, "vdim")
        if shape_of(key)[:-1] != shape_of(value)[:-1] or key_batch != batch:
            raise ShapeError(
                f"{caller}: key and value must share their sequence and batch dims, and the "
                f"batch size with query, got query {shape_of(query)}, key {shape_of(key)}, "
                f"value {shape_of(value)}"
            )
        check_masks(
            caller, batch, self.num_heads, target_len, source_len, attn_mask, key_padding_mask
        )
        return batch, target_len, source_len

    def _batch_first(self, query, key, value, unbatched: bool) -> tuple:
        """query, key and value as (N, T, E) Tensors; those that are one object stay one
        (self-attention then projects once)."""
        moved = {}
        for x in (query, key, value):
            if id(x) in moved:
                continue
            if unbatched:
                moved[id(x)] = ops.reshape(x, (1,) + shape_of(x))
            else:
                moved[id(x)] = as_tensor(x) if self.batch_first else ops.transpose(x, 0, 1)
        return moved[id(query)], moved[id(key)], moved[id(value)]

    def _heads_of(self, x, batch: int) -> Tensor:
        """(N, T, E) as (N, num_heads, T, head_dim)."""
        length = shape_of(x)[1]
        return ops.transpose(ops.reshape(x, (batch, length, self.num_heads, self.head_dim)), 1, 2)

    def _heads(self, query, key, value) -> tuple:
        """The projected query, key and value, each (N, num_heads, T, head_dim)."""
        batch, bias = query.shape[0], self.in_proj_bias
        if self.in_proj_weight is not None and query is key and key is value:
            projected = ops.chunk(ops.linear(query, self.in_proj_weight, bias), 3, -1)
        else:
            if self.in_proj_weight is None:
                weights = (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
            else:
                weights = ops.chunk(self.in_proj_weight, 3)
            biases = (None,) * 3 if bias is None else ops.chunk(bias, 3)
            projected = [
                ops.linear(x, w, b)
                for x, w, b in zip((query, key, value), weights, biases, strict=True)
            ]
        return tuple(self._heads_of(x, batch) for x in projected)

    def _with_extra_keys(self, k, v) -> tuple:
        """k and v (N, num_heads, S, head_dim) with bias_k and bias_v appended as one more key
        and value (add_bias_kv), then a zero key and value (add_zero_attn)."""
        appended = (*k.shape[:2], 1, self.head_dim)
        if self.bias_k is not None:
            k = ops.concat([k, ops.broadcast_to(self._heads_of(self.bias_k, 1), appended)], 2)
            v = ops.concat([v, ops.broadcast_to(self._heads_of(self.bias_v, 1), appended)], 2)
        if self.add_zero_attn:
            zeros = Tensor(k.xp.zeros(appended, k.dtype))
            k, v = ops.concat([k, zeros], 2), ops.concat([v, zeros], 2)
        return k, v

    def _mask(
        self, attn_mask, key_padding_mask, is_causal: bool, q, keys: int, source_len: int
    ) -> Tensor | None:
        """attn_mask ((L, S) or (N * num_heads, L, S)) and key_padding_mask ((N, S) or (S,))
        as one additive mask that broadcasts against the (N, num_heads, L, keys) scores, the
        keys past source_len (add_bias_kv's, add_zero_attn's) attended; None for neither.
        is_causal without an attn_mask is the causal mask."""
        batch, heads, target_len, _ = q.shape
        extra = [(0, 0)] * 3 + [(0, keys - source_len)]
        mask = additive_mask(attn_mask, q.dtype)
        if mask is not None:
            lead = (1, 1) if mask.ndim == 2 else (batch, heads)
            mask = ops.reshape(mask, (*lead, target_len, source_len))
            mask = ops.pad(mask, extra) if keys > source_len else mask
        elif is_causal:
            mask = causal_mask(target_len, keys, q.dtype, q.xp)
        padding = additive_mask(key_padding_mask, q.dtype)
        if padding is None:
            return mask
        padding = ops.reshape(padding, (batch, 1, 1, source_len))
        padding = ops.pad(padding, extra) if keys > source_len else padding
        return padding if mask is None else mask + padding
