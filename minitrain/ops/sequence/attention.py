"""scaled_dot_product_attention: one op that keeps the row log-sum-exp of the scores instead of
the attention weights, and its gradient kernel attention_grad, which recomputes the weights a
block at a time (docs/kernels.md section 8), so that what attention holds for backward grows
linearly with the sequence length.

Inside, a call is laid out grouped: query (B, Hk, G, L, E), key (B, Hk, 1, S, E), value (B, Hk,
1, S, Ev): B the batch dims flattened, Hk the heads of key and value, G the query heads that
share each (grouped-query attention; 1 otherwise). A mask is viewed as (Bm, Hm, Gm, Lm, Sm),
each dim 1 or full, so that it broadcasts without a copy. The kernels that compute in that
layout live beside: the generic ones in attention_blocks.py, the numba ones in attention_numba.py.
"""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ...autograd import unbroadcast
from ...errors import ArgumentError, DimensionError, DTypeError, ShapeError
from ...runtime.background_compile import KernelNotReady, falls_back
from ...tensor import Tensor
from ..activations.softmax_family import softmax
from ..core.op import Op, array_of, as_tensor
from ..pointwise.masking import masked_fill, where
from ..random.dropout import check_probability
from ..shapes.rearrange import repeat_interleave
from ..shapes.shape import broadcast_to
from .attention_blocks import generic_backward, generic_forward
from .attention_numba import numba_backward, numba_forward

__all__ = ["attention_grad", "scaled_dot_product_attention"]

_NAME = "scaled_dot_product_attention"


def _groups(q_shape: tuple, k_shape: tuple) -> tuple[int, int, int]:
    """(B, Hk, G) of the grouped layout: batch dims flattened, key heads, query heads per key
    head."""
    if len(q_shape) < 3:
        return 1, 1, 1
    heads_k = k_shape[-3]
    return math.prod(q_shape[:-3]), heads_k, q_shape[-3] // heads_k if heads_k else 1


def _grouped(q, k, v):
    """query, key and value (arrays or Tensors) in the grouped layout."""
    batch, heads_k, groups = _groups(q.shape, k.shape)
    return (
        q.reshape(batch, heads_k, groups, *q.shape[-2:]),
        k.reshape(batch, heads_k, 1, *k.shape[-2:]),
        v.reshape(batch, heads_k, 1, *v.shape[-2:]),
    )


def _mask_layout(mask_shape: tuple, attention_shape: tuple) -> tuple[tuple, tuple]:
    """(full, grouped): the mask's shape padded to the attention's rank (its batch dims stretched
    where some but not all are 1, so that they flatten), and its grouped shape, None for the
    (Hm, Gm) pair where the mask has the query's heads."""
    full = (1,) * (len(attention_shape) - len(mask_shape)) + tuple(mask_shape)
    if len(attention_shape) < 3:
        return full, (1, 1, 1, *full)
    batch = full[:-3]
    if any(n != 1 for n in batch) and batch != attention_shape[:-3]:
        batch = attention_shape[:-3]
        full = batch + full[-3:]
    heads = (1, 1) if full[-3] == 1 else (None, None)
    return full, (math.prod(batch), *heads, *full[-2:])


def _grouped_mask(mask, attention_shape: tuple, heads_k: int, groups: int):
    """The mask (an array or a Tensor) in its grouped layout."""
    full, grouped = _mask_layout(tuple(mask.shape), attention_shape)
    if math.prod(full) != math.prod(mask.shape):
        mask = (
            broadcast_to(mask, full)
            if isinstance(mask, Tensor)
            else backend.array_module(mask).broadcast_to(mask, full)
        )
    if grouped[1] is None:
        grouped = (grouped[0], heads_k, groups, *grouped[3:])
    return mask.reshape(grouped)


def _mask_grad(dmask, mask_shape: tuple, attention_shape: tuple):
    """A gradient in the grouped mask's shape summed back to the mask's own shape."""
    full, _ = _mask_layout(mask_shape, attention_shape)
    return unbroadcast(dmask.reshape(full), mask_shape)


def _as_bias(xp, mask, dtype):
    """An additive mask in `dtype` (None stays None): boolean False becomes -inf, True 0."""
    if mask is None or mask.dtype != np.bool_:
        return mask if mask is None else mask.astype(dtype, copy=False)
    return xp.where(mask, dtype.type(0), dtype.type(-np.inf))


def _work_dtype(dtype) -> np.dtype:
    """float32 and float64 compute in themselves, narrower floats in float32."""
    return np.dtype(dtype) if np.dtype(dtype).itemsize >= 4 else np.dtype(np.float32)


def _keep_scale(dropout_p: float) -> float:
    """What a kept attention weight is multiplied by: 1 / (1 - p), 0 when all are dropped."""
    return 1.0 / (1.0 - dropout_p) if dropout_p < 1 else 0.0


def _prepare(xp, query, key, value, mask, keep) -> tuple:
    """(q5, k5, v5, bias5, keep5): query, key and value in the work dtype (_work_dtype) and the
    grouped layout, the mask as an additive one, the dropout mask, both grouped (or None)."""
    work = _work_dtype(query.dtype)
    q5, k5, v5 = _grouped(*(a.astype(work, copy=False) for a in (query, key, value)))
    attention_shape = (*query.shape[:-1], key.shape[-2])
    bias5 = keep5 = None
    if mask is not None:
        bias5 = _as_bias(xp, _grouped_mask(mask, attention_shape, *q5.shape[1:3]), work)
    if keep is not None:
        keep5 = keep.reshape(*q5.shape[:-1], k5.shape[-2])
    return q5, k5, v5, bias5, keep5


@falls_back
def _attend(xp, query, key, value, mask, causal: bool, scale: float, keep, keep_scale: float):
    """(out, lse) of attention in the inputs' layout, out (..., Hq, L, Ev) and lse (..., Hq, L),
    in the work dtype."""
    q5, k5, v5, bias5, keep5 = _prepare(xp, query, key, value, mask, keep)
    arguments = (xp, q5, k5, v5, bias5, causal, scale, keep5, keep_scale)
    out = None
    if backend.numba_takes(q5, k5, v5):
        try:
            out, lse = numba_forward(*arguments)
        except KernelNotReady:  # compiling in the background: generic kernels here, so that
            pass  # the dropout mask drawn stays the one drawn (not drawn again)
    if out is None:
        out, lse = generic_forward(*arguments)
    return out.reshape(*query.shape[:-1], value.shape[-1]), lse.reshape(query.shape[:-1])


def _attend_grads(
    xp, d_out, query, key, value, out, lse, mask, causal, scale, keep, keep_scale, mask_grad
):
    """(dquery, dkey, dvalue, dmask) in the inputs' shapes and the work dtype (dmask None unless
    `mask_grad`)."""
    q5, k5, v5, bias5, keep5 = _prepare(xp, query, key, value, mask, keep)
    out5 = out.astype(q5.dtype, copy=False).reshape(*q5.shape[:-1], v5.shape[-1])
    d_out5 = d_out.astype(q5.dtype, copy=False).reshape(out5.shape)
    lse5 = lse.astype(q5.dtype, copy=False).reshape(q5.shape[:-1])
    backward = numba_backward if backend.numba_takes(q5, k5, v5) else generic_backward
    dq, dk, dv, dmask = backward(
        xp, d_out5, q5, k5, v5, out5, lse5, bias5, causal, scale, keep5, keep_scale, mask_grad
    )
    if mask_grad:
        attention_shape = (*query.shape[:-1], key.shape[-2])
        dmask = _mask_grad(dmask, tuple(mask.shape), attention_shape)
    return dq.reshape(query.shape), dk.reshape(key.shape), dv.reshape(value.shape), dmask


def _shapes(q, k, v) -> str:
    return f"query {tuple(q.shape)}, key {tuple(k.shape)}, value {tuple(v.shape)}"


def _check_qkv(caller: str, q, k, v) -> None:
    """query, key and value: floating, of one dtype, at least (L, E), (S, E) and (S, Ev)."""
    for name, a in (("query", q), ("key", k), ("value", v)):
        if np.dtype(a.dtype).kind != "f":
            raise DTypeError(f"{caller}: {name} must be floating point, got {a.dtype}")
    if not q.dtype == k.dtype == v.dtype:
        raise DTypeError(
            f"{caller}: query, key and value must share one dtype, got {q.dtype}, {k.dtype} "
            f"and {v.dtype}"
        )
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise ShapeError(
            f"{caller}: query, key and value need at least 2 dims, (..., L, E), (..., S, E) "
            f"and (..., S, Ev); got {_shapes(q, k, v)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ShapeError(f"{caller}: query and key must share their last dim E: {_shapes(q, k, v)}")
    if k.shape[-2] != v.shape[-2]:
        raise ShapeError(
            f"{caller}: key and value must hold as many keys S (dim -2): {_shapes(q, k, v)}"
        )


def _check_heads(caller: str, q, k, v) -> None:
    """Grouped-query attention: key's and value's heads (dim -3) divide the query's."""
    if min(q.ndim, k.ndim, v.ndim) < 3:
        raise DimensionError(
            f"{caller}: grouped-query attention needs a heads dim (-3) in query, key and value, "
            f"got {_shapes(q, k, v)}"
        )
    heads_q, heads_k, heads_v = q.shape[-3], k.shape[-3], v.shape[-3]
    if not (heads_k and heads_v) or heads_q % heads_k or heads_q % heads_v:
        raise ShapeError(
            f"{caller}: the heads (dim -3) of key and value must divide the query's: "
            f"{_shapes(q, k, v)}"
        )


def _check_mask(caller: str, mask, q_dtype, attention_shape: tuple) -> None:
    """A boolean mask, or a float one of float32 or the query's dtype (PyTorch's rule), that
    broadcasts to the attention weights' shape without stretching it."""
    if mask.dtype != np.bool_ and mask.dtype not in (np.float32, q_dtype):
        raise DTypeError(
            f"{caller}: attn_mask must be boolean (True takes part) or an additive float mask "
            f"of float32 or the query's dtype {q_dtype}, got {mask.dtype}"
        )
    try:
        fits = np.broadcast_shapes(tuple(mask.shape), attention_shape) == attention_shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(
            f"{caller}: attn_mask {tuple(mask.shape)} must broadcast to the attention weights' "
            f"shape {attention_shape} (the query's dims but E, then S)"
        )


def _check_scale(caller: str, scale, width: int) -> float:
    """The scores' scale: a number, or None for 1 / sqrt(E), E = width (1 for E = 0)."""
    if scale is None:
        return 1.0 / math.sqrt(width) if width else 1.0
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise DTypeError(f"{caller}: scale must be a number or None, got {type(scale).__name__}")
    return float(scale)


def _check_flag(caller: str, name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise DTypeError(f"{caller}: {name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _check_grad_shapes(kernel: str, q, k, v, out, d_out, lse) -> None:
    """attention_grad's arrays: query, key and value as _check_qkv takes them, their batch dims
    equal (scaled_dot_product_attention broadcasts them before the op) and key's heads dividing
    the query's; out and d_out (..., Hq, L, Ev), lse (..., Hq, L)."""
    _check_qkv(kernel, q, k, v)
    if q.ndim >= 3:
        _check_heads(kernel, q, k, v)
    if not (q.ndim == k.ndim == v.ndim and q.shape[:-3] == k.shape[:-3] == v.shape[:-3]):
        raise ShapeError(f"{kernel}: the batch dims must be equal: {_shapes(q, k, v)}")
    if k.shape[:-2] != v.shape[:-2]:
        raise ShapeError(f"{kernel}: key and value must have the same heads: {_shapes(q, k, v)}")
    out_shape = (*q.shape[:-1], v.shape[-1])
    for name, array, shape in (
        ("out", out, out_shape),
        ("d_out", d_out, out_shape),
        ("lse", lse, q.shape[:-1]),
    ):
        if tuple(array.shape) != shape:
            raise ShapeError(
                f"{kernel}: {name} {tuple(array.shape)} must have shape {shape} for "
                f"{_shapes(q, k, v)}"
            )


def attention_grad(
    d_out,
    query,
    key,
    value,
    out,
    lse,
    attn_mask=None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_mask=None,
    dropout_p: float = 0.0,
):
    """AttentionGrad: (dQ, dK, dV, dmask) of O = softmax(scale Q K^T + mask) V, from the row
    log-sum-exp `lse` of the scores, which the forward keeps instead of the weights P.

    query Q (..., Hq, L, E), key K (..., Hk, S, E), value V (..., Hk, S, Ev), out O and d_out dO
    (..., Hq, L, Ev), lse (..., Hq, L): the batch dims equal, Hq a multiple of Hk (grouped-query
    attention: query head h reads key and value head h // (Hq / Hk)). attn_mask: boolean (True
    takes part) or additive, broadcasting to (..., Hq, L, S); is_causal: query i sees keys
    j <= i; scale: 1 / sqrt(E) by default; dropout_mask: the kept weights, boolean (..., Hq, L,
    S), scaled by 1 / (1 - dropout_p). Per query row, with S = scale Q K^T + mask, P = exp(S -
    lse) (0 on a row whose keys are all masked, whose lse is +inf) and M the scaled dropout mask
    (1 without dropout):

        dV = (P M)^T dO        dP = (dO V^T) M        dS = P * (dP - rowsum(dO * O))
        dQ = dS K scale        dK = dS^T Q scale      dmask = dS

    (rowsum(dO * O) = rowsum(P * dP): softmax's Jacobian applied to dP.) Under grouped-query
    attention dK and dV sum over the query heads sharing a key head; dmask is summed to the
    mask's shape, None for a boolean mask or none. Computed a block of query rows at a time:
    the memory it takes beyond its inputs and outputs does not grow as L * S.
    """
    kernel = "attention_grad"
    d_out, q, k, v, out, lse = (array_of(a) for a in (d_out, query, key, value, out, lse))
    mask, keep = array_of(attn_mask), array_of(dropout_mask)
    _check_grad_shapes(kernel, q, k, v, out, d_out, lse)
    attention_shape = (*q.shape[:-1], k.shape[-2])
    is_causal = _check_flag(kernel, "is_causal", is_causal)
    if mask is not None:
        if is_causal:
            raise ArgumentError(f"{kernel}: give attn_mask or is_causal, not both")
        _check_mask(kernel, mask, q.dtype, attention_shape)
    keep_scale = _keep_scale(check_probability(dropout_p, kernel, "dropout_p"))
    if keep is not None and (keep.dtype != np.bool_ or tuple(keep.shape) != attention_shape):
        raise ShapeError(
            f"{kernel}: dropout_mask must be boolean of the attention weights' shape "
            f"{attention_shape}, got {keep.dtype} {tuple(keep.shape)}"
        )
    scale = _check_scale(kernel, scale, q.shape[-1])
    mask_grad = mask is not None and mask.dtype != np.bool_
    xp = backend.array_module(d_out, q, k, v, out, lse)
    dq, dk, dv, dmask = _attend_grads(
        xp, d_out, q, k, v, out, lse, mask, is_causal, scale, keep, keep_scale, mask_grad
    )
    return (
        dq.astype(q.dtype, copy=False),
        dk.astype(q.dtype, copy=False),
        dv.astype(q.dtype, copy=False),
        None if dmask is None else dmask.astype(mask.dtype, copy=False),
    )


class ScaledDotProductAttention(Op):
    """softmax(scale Q K^T + mask) V over the last two dims (see `scaled_dot_product_attention`).
    Saves query, key, value, the mask, the output and the row log-sum-exp (and the dropout mask,
    one byte per weight, where dropout_p > 0), never the weights: backward is attention_grad."""

    name = _NAME
    inputs = ("query", "key", "value", "attn_mask")
    attrs = ("scale", "is_causal", "dropout_p")
    saved = ("query", "key", "value", "attn_mask", "out", "lse", "keep")
    grad_kernel = "AttentionGrad"
    exact_dtype = True
    fused_backward = "SDPA causal"
    numba_bench = "SDPA causal"  # the row kernels, chosen per call (attention_grad)

    @staticmethod
    def forward(ctx, query, key, value, attn_mask):
        keep = _draw_keep(ctx.xp, query, key, ctx.dropout_p)
        out, lse = _attend(
            ctx.xp,
            query,
            key,
            value,
            attn_mask,
            ctx.is_causal,
            ctx.scale,
            keep,
            _keep_scale(ctx.dropout_p),
        )
        out = out.astype(query.dtype, copy=False)
        ctx.save(
            query=query, key=key, value=value, attn_mask=attn_mask, out=out, lse=lse, keep=keep
        )
        return out

    @staticmethod
    def backward(ctx, grad):
        """dQ = dS K scale, dK = dS^T Q scale, dV = P^T dO, dmask = dS (attention_grad).

        dS = P * (dO V^T - rowsum(dO * O)), the weights P = exp(S - lse) recomputed a block at a
        time from the saved row log-sum-exp; the mask's gradient only for a float mask."""
        grads = _attend_grads(
            ctx.xp,
            grad,
            ctx.query,
            ctx.key,
            ctx.value,
            ctx.out,
            ctx.lse,
            ctx.attn_mask,
            ctx.is_causal,
            ctx.scale,
            ctx.keep,
            _keep_scale(ctx.dropout_p),
            ctx.needs_grad[3],
        )
        return tuple(g if need else None for g, need in zip(grads, ctx.needs_grad, strict=True))

    @staticmethod
    def tensor_backward(ctx, grad):
        """attention_grad's formula in tensor ops, the weights recomputed with softmax from
        query, key (and a float mask) in the graph, so that it differentiates again."""
        return _tensor_grads(ctx, grad)


def _draw_keep(xp, query, key, dropout_p: float):
    """The dropout mask of the attention weights, (..., Hq, L, S) boolean, True where a weight
    is kept (u >= p, u uniform from minitrain's generator); None without dropout."""
    if not dropout_p:
        return None
    shape = (*query.shape[:-1], key.shape[-2])
    return backend.draw(backend.device_of(query), "uniform", shape, np.float64) >= dropout_p


def _tensor_grads(ctx, grad) -> tuple:
    """The backward in tensor ops (ScaledDotProductAttention.tensor_backward)."""
    query, key, value, out, mask = ctx.query, ctx.key, ctx.value, ctx.out, ctx.attn_mask
    q5, k5, v5 = _grouped(query, key, value)
    _, heads_k, groups, length, width = q5.shape
    keys = k5.shape[-2]
    attention_shape = (*query.shape[:-1], keys)
    scores = q5 @ k5.swapaxes(-1, -2)
    if width:
        scores = scores * ctx.scale
    if mask is not None:
        mask5 = _grouped_mask(mask, attention_shape, heads_k, groups)
        if mask.dtype == np.bool_:
            scores = masked_fill(scores, ~mask5.array, -np.inf)
        else:
            scores = scores + mask5.astype(scores.dtype)
    if ctx.is_causal:
        upper = ctx.xp.triu(ctx.xp.ones((length, keys), np.bool_), 1)
        scores = masked_fill(scores, upper, -np.inf)
    dead = ctx.xp.isinf(ctx.lse).reshape(*q5.shape[:-1], 1)  # rows whose keys are all masked
    if dead.any():  # a constant: their weights are 0 (softmax of a row of -inf would be nan)
        weights = where(dead, 0.0, softmax(where(dead, 0.0, scores), dim=-1))
    else:
        weights = softmax(scores, dim=-1)
    d_out = grad.reshape(*q5.shape[:-1], v5.shape[-1])
    dp = d_out @ v5.swapaxes(-1, -2)
    kept = weights
    if ctx.keep is not None:
        keep = ctx.keep.reshape(scores.shape) * query.dtype.type(_keep_scale(ctx.dropout_p))
        kept = weights * keep
        dp = dp * keep
    ds = weights * (dp - (d_out * out.reshape(d_out.shape)).sum(axis=-1, keepdims=True))
    needs = ctx.needs_grad
    scale = ctx.scale if width else 1.0
    return (
        (ds @ k5 * scale).reshape(query.shape) if needs[0] else None,
        (ds.swapaxes(-1, -2) @ q5 * scale).sum(axis=2).reshape(key.shape) if needs[1] else None,
        (kept.swapaxes(-1, -2) @ d_out).sum(axis=2).reshape(value.shape) if needs[2] else None,
        _mask_grad(unbroadcast(ds, tuple(mask5.shape)), tuple(mask.shape), attention_shape)
        if needs[3]
        else None,
    )


def _fit_heads_and_batch(q, k, v, enable_gqa: bool) -> tuple:
    """query, key and value with their batch dims broadcast to one shape, and, for grouped-query
    attention, key's and value's heads brought to one count (both repeated to the least common
    multiple where they differ)."""
    lead = -2
    if enable_gqa:
        _check_heads(_NAME, q, k, v)
        heads_k, heads_v = k.shape[-3], v.shape[-3]
        if heads_k != heads_v:
            heads = math.lcm(heads_k, heads_v)
            k = repeat_interleave(k, heads // heads_k, -3) if heads != heads_k else k
            v = repeat_interleave(v, heads // heads_v, -3) if heads != heads_v else v
        lead = -3
    try:
        batch = np.broadcast_shapes(q.shape[:lead], k.shape[:lead], v.shape[:lead])
    except ValueError:
        hint = ""
        if min(q.ndim, k.ndim) >= 3 and q.shape[-3] != k.shape[-3] and not enable_gqa:
            hint = "; for grouped-query attention (fewer key heads), pass enable_gqa=True"
        raise ShapeError(
            f"{_NAME}: the batch dims of query, key and value do not broadcast: "
            f"{_shapes(q, k, v)}{hint}"
        ) from None
    return tuple(
        t if t.shape[:lead] == batch else broadcast_to(t, batch + t.shape[lead:]) for t in (q, k, v)
    )


def scaled_dot_product_attention(
    query,
    key,
    value,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(scale query key^T + mask) value, PyTorch's `F.scaled_dot_product_attention`.

    query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev), their batch dims
    broadcasting, one floating dtype. attn_mask, broadcasting to (..., L, S): boolean (True:
    the key takes part) or additive (float32 or the query's dtype). is_causal: query i sees keys
    j <= i (not with attn_mask). scale: 1 / sqrt(E) by default. dropout_p: attention weights
    dropped with that probability (minitrain's generator, `manual_seed`), the rest scaled by
    1 / (1 - p). enable_gqa: query's heads (dim -3) a multiple of key's and value's, each key
    head serving that many consecutive query heads. A query row whose keys are all masked gives
    0 (and gradients 0), as in PyTorch.

    One op: backward recomputes the weights from the row log-sum-exp it saved (attention_grad),
    so it holds O(L) per row for backward, not the (L, S) weights (plus, with dropout, the
    dropout mask, one byte per weight).
    """
    q, k, v = as_tensor(query), as_tensor(key), as_tensor(value)
    _check_qkv(_NAME, q, k, v)
    is_causal = _check_flag(_NAME, "is_causal", is_causal)
    enable_gqa = _check_flag(_NAME, "enable_gqa", enable_gqa)
    if attn_mask is not None and is_causal:
        raise ArgumentError(f"{_NAME}: give attn_mask or is_causal=True, not both (as PyTorch)")
    dropout_p = float(check_probability(dropout_p, _NAME, "dropout_p"))
    scale = _check_scale(_NAME, scale, q.shape[-1])
    q, k, v = _fit_heads_and_batch(q, k, v, enable_gqa)
    if attn_mask is not None:
        _check_mask(_NAME, array_of(attn_mask), q.dtype, (*q.shape[:-1], k.shape[-2]))
    return ScaledDotProductAttention.apply(
        q, k, v, attn_mask, scale=scale, is_causal=is_causal, dropout_p=dropout_p
    )
