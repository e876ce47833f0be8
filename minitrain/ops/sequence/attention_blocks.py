"""scaled_dot_product_attention's generic kernels: written once against `xp` (numpy or CuPy),
a block of query rows at a time, so that what they hold beyond their inputs and outputs stays a
few MiB whatever the sequence length. Arrays come in the grouped layout (attention.py's
docstring): query (B, Hk, G, L, E), key (B, Hk, 1, S, E), value (B, Hk, 1, S, Ev)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["generic_backward", "generic_forward"]

# Scores the generic kernels compute at once (every head, a block of query rows, the keys they
# see): the block's temporaries stay a few MiB whatever the sequence length.
_BLOCK_ELEMENTS = 1 << 20


def _row_blocks(q5, k5) -> list[tuple[int, int]]:
    """(start, stop) blocks of query rows whose scores, every head against every key, hold
    about _BLOCK_ELEMENTS (a row at least)."""
    length, keys = q5.shape[-2], k5.shape[-2]
    rows = max(1, _BLOCK_ELEMENTS // max(1, math.prod(q5.shape[:-2]) * keys))
    return [(start, min(length, start + rows)) for start in range(0, length, rows)]


def _block(grouped, start: int, stop: int, keys: int):
    """Rows start:stop and the first `keys` columns of a grouped (..., L or 1, S or 1) array."""
    rows = slice(start, stop) if grouped.shape[-2] > 1 else slice(None)
    columns = slice(0, keys) if grouped.shape[-1] > 1 else slice(None)
    return grouped[..., rows, columns]


def _block_scores(xp, q5, k5, bias5, causal: bool, scale: float, start: int, stop: int):
    """(scores, keys) of query rows start:stop against the first `keys` keys (every key, or
    the causal limit): scale Q K^T plus the mask, -inf where the causal mask hides a key."""
    keys = min(k5.shape[-2], stop) if causal else k5.shape[-2]
    scores = q5[..., start:stop, :] @ xp.swapaxes(k5[..., :keys, :], -1, -2)
    if q5.shape[-1]:  # with E = 0 every score is 0 whatever the scale, as in PyTorch
        scores *= scale
    if bias5 is not None:
        scores += _block(bias5, start, stop, keys)
    if causal and keys > start + 1:  # query i sees keys j <= i (PyTorch's upper-left causal)
        scores[..., xp.arange(keys)[None, :] > xp.arange(start, stop)[:, None]] = -np.inf
    return scores, keys


def generic_forward(xp, q5, k5, v5, bias5, causal: bool, scale: float, keep5, keep_scale):
    """(out, lse) in the grouped layout, a block of query rows at a time. A row whose keys are
    all masked gets out = 0 (PyTorch's) and lse = +inf, so that exp(scores - lse) is 0 there."""
    dtype = q5.dtype
    out = xp.empty((*q5.shape[:-1], v5.shape[-1]), dtype)
    lse = xp.empty(q5.shape[:-1], dtype)
    for start, stop in _row_blocks(q5, k5):
        scores, keys = _block_scores(xp, q5, k5, bias5, causal, scale, start, stop)
        if keys:
            top = scores.max(axis=-1, keepdims=True)
        else:
            top = xp.full((*scores.shape[:-1], 1), -np.inf, dtype)
        dead = top == -np.inf
        top[dead] = 0
        scores -= top
        weights = xp.exp(scores, out=scores)
        total = weights.sum(axis=-1, keepdims=True)
        total[dead] = 1  # every weight of the row is 0, so is its output
        if keep5 is not None:
            weights *= _block(keep5, start, stop, keys)
            weights *= dtype.type(keep_scale)
        out[..., start:stop, :] = (weights @ v5[..., :keys, :]) / total
        row_lse = xp.log(total) + top
        row_lse[dead] = np.inf
        lse[..., start:stop] = row_lse[..., 0]
    return out, lse


def generic_backward(
    xp, d_out5, q5, k5, v5, out5, lse5, bias5, causal, scale, keep5, keep_scale, mask_grad: bool
):
    """(dq, dk, dv, dmask) in the grouped layout (dmask None unless `mask_grad`), a block of
    query rows at a time, the weights recomputed as exp(scores - lse): attention_grad's
    formula."""
    dtype = q5.dtype
    dq = xp.empty(q5.shape, dtype)
    dk = xp.zeros(k5.shape, dtype)
    dv = xp.zeros(v5.shape, dtype)
    dmask = xp.zeros(bias5.shape, dtype) if mask_grad else None
    delta = (d_out5 * out5).sum(axis=-1, keepdims=True)  # rowsum(dO * O)
    for start, stop in _row_blocks(q5, k5):
        scores, keys = _block_scores(xp, q5, k5, bias5, causal, scale, start, stop)
        scores -= lse5[..., start:stop, None]
        weights = xp.exp(scores, out=scores)
        d_out = d_out5[..., start:stop, :]
        dp = d_out @ xp.swapaxes(v5[..., :keys, :], -1, -2)
        kept = weights
        if keep5 is not None:
            keep = _block(keep5, start, stop, keys) * dtype.type(keep_scale)
            kept = weights * keep
            dp *= keep
        dv[..., :keys, :] += (xp.swapaxes(kept, -1, -2) @ d_out).sum(axis=2, keepdims=True)
        dp -= delta[..., start:stop, :]
        ds = xp.multiply(weights, dp, out=dp)
        dq[..., start:stop, :] = ds @ k5[..., :keys, :]
        dk[..., :keys, :] += (xp.swapaxes(ds, -1, -2) @ q5[..., start:stop, :]).sum(
            axis=2, keepdims=True
        )
        if mask_grad:  # summed over the dims the mask broadcasts along
            axes = tuple(i for i, n in enumerate(dmask.shape) if n == 1 and ds.shape[i] != 1)
            _block(dmask, start, stop, keys)[...] += ds.sum(axis=axes, keepdims=True)
    if q5.shape[-1]:
        dq *= scale
        dk *= scale
    return dq, dk, dv, dmask
