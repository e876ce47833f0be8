"""scaled_dot_product_attention's numba path: row kernels around BLAS GEMMs, a block of query
rows against a block of keys at a time (online softmax across key blocks), chunks of heads shared
among threads; tested against the generic kernels of attention_blocks.py. attention.py runs them
where `backend.numba_takes(q5, k5, v5)` holds (the blocks need keys: an empty array never comes
here), forward and backward each asking once; the row that keeps them is the op's `numba_bench`,
`SDPA causal`."""

from __future__ import annotations

import functools
import importlib
import math
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from ... import backend
from ...runtime.threads import side_by_side, side_by_side_threads
from ..core import numba_math
from .attention_blocks import generic_backward

__all__ = ["numba_backward", "numba_forward"]

# The numba path: blocks of query rows and of keys, and the bytes of a chunk of heads' block of
# scores, which stays in the core's cache between the GEMMs and the row kernels.
_ROW_BLOCK = 64
_KEY_BLOCK = 512
_CHUNK_BYTES = 1 << 20
# Scores (heads * L * S) from which the numba path shares its heads among threads.
_THREADED_SCORES = 1 << 16
_FASTMATH = {"reassoc", "contract", "nsz"}


def _row_limit(i, row0, col0, keys, causal):
    """The keys of a block that its row i sees: all, or those up to the row's causal limit (a
    numba kernel's helper, compiled into the kernels that call it)."""
    if not causal:
        return keys
    return max(0, min(keys, row0 + i - col0 + 1))


def _load_row(row, limit, scale, bias, index, i):
    """row[:limit] = scale * row + the mask's row i (index -1: no mask) (a numba kernel's
    helper)."""
    if index < 0:
        for j in range(limit):
            row[j] *= scale
    else:
        mask_row = bias[index, i if bias.shape[1] > 1 else 0]
        if bias.shape[2] == 1:
            shift = mask_row[0]
            for j in range(limit):
                row[j] = row[j] * scale + shift
        else:
            for j in range(limit):
                row[j] = row[j] * scale + mask_row[j]


@functools.cache
def _kernels() -> SimpleNamespace:
    """The numba path's row kernels, defined on first use (importing minitrain does not import
    numba): serial and nogil, each thread of the path runs them on its own heads.

    Each works in place on a block of scores (heads, G, rows, keys), Q K^T of a block of query
    rows (global index row0 on) against a block of keys (col0 on). `bias` holds the additive
    mask's block, (M, rows or 1, keys or 1), `mask_of` the index into it of each (head, g), -1
    for none; `keep` the dropout mask's block, read only when `dropping`. The keys past a row's
    causal limit are masked, their entries set to 0. Sums run in the scores' dtype."""
    numba_math.register()
    helper = importlib.import_module("numba.extending").register_jitable(
        inline="always", fastmath=_FASTMATH
    )
    helper(_row_limit)
    helper(_load_row)

    @backend.jit(nogil=True, fastmath=_FASTMATH)
    def forward_block(
        scores,
        bias,
        mask_of,
        row0,
        col0,
        causal,
        scale,
        keep,
        dropping,
        keep_scale,
        top,
        total,
        rescale,
    ):
        """Scores to exp(s - m), m the row's running max over the key blocks so far (`top`),
        their sum (before dropout) added to `total`; `rescale` = exp(old m - new m), by which
        the caller multiplies the output it summed over the earlier key blocks."""
        heads, groups, rows, keys = scores.shape
        zero, minus_inf = scores.dtype.type(0), scores.dtype.type(-np.inf)
        for h in range(heads):
            for g in range(groups):
                for i in range(rows):
                    row = scores[h, g, i]
                    limit = _row_limit(i, row0, col0, keys, causal)
                    _load_row(row, limit, scale, bias, mask_of[h, g], i)
                    block_top = numba_math.row_max(row[:limit]) if limit else minus_inf
                    row[limit:] = zero
                    old = top[h, g, i]
                    new = max(old, block_top)
                    if new == -np.inf:  # every key so far is masked
                        row[:limit] = zero
                        rescale[h, g, i] = 1
                        continue
                    added = zero
                    for j in range(limit):
                        e = numba_math.exp_nonpositive(row[j] - new)
                        row[j] = e
                        added += e
                    if dropping:
                        kept = keep[h, g, i]
                        for j in range(limit):
                            row[j] = row[j] * keep_scale if kept[j] else zero
                    factor = numba_math.exp_nonpositive(old - new)
                    rescale[h, g, i] = factor
                    total[h, g, i] = total[h, g, i] * factor + added
                    top[h, g, i] = new

    @backend.jit(nogil=True, fastmath=_FASTMATH)
    def weights_block(
        scores, bias, mask_of, row0, col0, causal, scale, lse, keep, dropping, keep_scale, kept
    ):
        """Scores to the weights P = exp(s - lse) (0 where lse is +inf: a fully masked row);
        with dropout also kept = P M."""
        heads, groups, rows, keys = scores.shape
        zero = scores.dtype.type(0)
        for h in range(heads):
            for g in range(groups):
                for i in range(rows):
                    row = scores[h, g, i]
                    limit = _row_limit(i, row0, col0, keys, causal)
                    _load_row(row, limit, scale, bias, mask_of[h, g], i)
                    shift = lse[h, g, i]
                    for j in range(limit):
                        row[j] = numba_math.exp_nonpositive(row[j] - shift)
                    row[limit:] = zero
                    if dropping:
                        kept_row, keep_row = kept[h, g, i], keep[h, g, i]
                        for j in range(keys):
                            kept_row[j] = row[j] * keep_scale if keep_row[j] else zero

    @backend.jit(nogil=True, fastmath=_FASTMATH)
    def score_grads_block(dp, weights, delta, keep, dropping, keep_scale):
        """dp = dO V^T to dS = P * (dP M - rowsum(dO * O)), in place."""
        heads, groups, rows, keys = dp.shape
        zero = dp.dtype.type(0)
        for h in range(heads):
            for g in range(groups):
                for i in range(rows):
                    row, p, d = dp[h, g, i], weights[h, g, i], delta[h, g, i]
                    if dropping:
                        keep_row = keep[h, g, i]
                        for j in range(keys):
                            kept = keep_scale if keep_row[j] else zero
                            row[j] = p[j] * (row[j] * kept - d)
                    else:
                        for j in range(keys):
                            row[j] = p[j] * (row[j] - d)

    return SimpleNamespace(
        forward_block=forward_block,
        weights_block=weights_block,
        score_grads_block=score_grads_block,
    )


class _Plan(NamedTuple):
    """How the numba path goes through the heads (B * Hk of them, each with its G query heads):
    blocks of `rows` query rows against blocks of `keys` keys, heads in chunks whose blocks of
    scores stay in cache, each thread a share of the chunks, [(n0, n1), ...]."""

    rows: int
    keys: int
    chunk: int
    shares: list

    @classmethod
    def of(cls, q4, k4, threaded: bool) -> _Plan:
        heads, groups, length, _ = q4.shape
        keys = k4.shape[-2]
        rows, key_block = min(length, _ROW_BLOCK), min(keys, _KEY_BLOCK)
        per_head = groups * rows * key_block * q4.dtype.itemsize
        chunk = max(1, min(heads, _CHUNK_BYTES // per_head))
        threads = 1
        if threaded and heads > 1 and heads * groups * length * keys >= _THREADED_SCORES:
            threads = min(heads, side_by_side_threads())
        bounds = [heads * t // threads for t in range(threads + 1)]
        shares = [
            [(n0, min(hi, n0 + chunk)) for n0 in range(lo, hi, chunk)]
            for lo, hi in zip(bounds, bounds[1:], strict=False)
        ]
        return cls(rows, key_block, chunk, shares)

    def blocks(self, length: int, keys: int, causal: bool):
        """(r0, r1, [(c0, c1), ...]): each block of query rows with the key blocks it sees."""
        for r0 in range(0, length, self.rows):
            r1 = min(length, r0 + self.rows)
            end = min(keys, r1) if causal else keys
            yield r0, r1, [(c0, min(end, c0 + self.keys)) for c0 in range(0, end, self.keys)]

    def buffer(self, groups: int, dtype):
        """A thread's buffer for one chunk's block of scores."""
        return np.empty(self.chunk * groups * self.rows * self.keys, dtype)


def _view(buffer, shape):
    """The first prod(shape) elements of a flat buffer, C-contiguous in `shape`."""
    return buffer[: math.prod(shape)].reshape(shape)


def _flat_heads(q5, k5, v5, bias5, keep5):
    """(q4, k4, v4, bias3, mask_of, keep4): query (N, G, L, E), key (N, 1, S, E) and value (N,
    1, S, Ev), N = B * Hk, C-contiguous; the additive mask as (M, Lm, Sm) with the index of
    each (n, g) into it (-1 without a mask); the dropout mask (N, G, L, S) or None."""
    batch, heads_k, groups, length, _ = q5.shape
    heads = batch * heads_k
    q4 = np.ascontiguousarray(q5).reshape(heads, groups, length, -1)
    k4 = np.ascontiguousarray(k5).reshape(heads, 1, *k5.shape[-2:])
    v4 = np.ascontiguousarray(v5).reshape(heads, 1, *v5.shape[-2:])
    keep4 = None if keep5 is None else keep5.reshape(heads, groups, length, -1)
    if bias5 is None:
        return q4, k4, v4, np.zeros((1, 1, 1), q4.dtype), np.full((heads, groups), -1), keep4
    mask_batch, mask_heads, mask_groups, mask_rows, mask_cols = bias5.shape
    bias3 = np.ascontiguousarray(bias5).reshape(-1, mask_rows, mask_cols)
    n, g = np.arange(heads)[:, None], np.arange(groups)[None, :]
    index = (n // heads_k if mask_batch > 1 else 0) * mask_heads
    index = (index + (n % heads_k if mask_heads > 1 else 0)) * mask_groups
    index = index + (g if mask_groups > 1 else 0)
    mask_of = np.ascontiguousarray(np.broadcast_to(index, (heads, groups)), dtype=np.int64)
    return q4, k4, v4, bias3, mask_of, keep4


def _mask_block(bias3, r0: int, r1: int, c0: int, c1: int):
    rows = slice(r0, r1) if bias3.shape[1] > 1 else slice(None)
    return bias3[:, rows, c0:c1] if bias3.shape[2] > 1 else bias3[:, rows]


def numba_forward(xp, q5, k5, v5, bias5, causal: bool, scale: float, keep5, keep_scale):
    """generic_forward's (out, lse) by the numba row kernels and BLAS: per chunk of heads, a
    block of query rows against a block of keys at a time (online softmax across key blocks),
    the chunks shared among threads (minitrain.runtime.threads)."""
    q4, k4, v4, bias3, mask_of, keep4 = _flat_heads(q5, k5, v5, bias5, keep5)
    heads, groups, length, _ = q4.shape
    keys = k4.shape[-2]
    dtype = q4.dtype
    out = np.empty((heads, groups, length, v4.shape[-1]), dtype)
    lse = np.empty((heads, groups, length), dtype)
    plan = _Plan.of(q4, k4, threaded=True)
    kernels = _kernels()
    real = dtype.type
    dropping = keep4 is not None
    dummy_keep = np.zeros((1, 1, 1, 1), np.bool_)

    def work(thread: int, share) -> None:
        buffer = plan.buffer(groups, dtype)
        for n0, n1 in share:
            for r0, r1, key_blocks in plan.blocks(length, keys, causal):
                stats = np.empty((3, n1 - n0, groups, r1 - r0), dtype)
                top, total, rescale = stats
                top[...], total[...] = -np.inf, 0
                out_block = out[n0:n1, :, r0:r1]
                for c0, c1 in key_blocks:
                    scores = _view(buffer, (n1 - n0, groups, r1 - r0, c1 - c0))
                    np.matmul(q4[n0:n1, :, r0:r1], k4[n0:n1, :, c0:c1].swapaxes(-1, -2), out=scores)
                    kernels.forward_block(
                        scores,
                        _mask_block(bias3, r0, r1, c0, c1),
                        mask_of[n0:n1],
                        r0,
                        c0,
                        causal,
                        real(scale),
                        keep4[n0:n1, :, r0:r1, c0:c1] if dropping else dummy_keep,
                        dropping,
                        real(keep_scale),
                        top,
                        total,
                        rescale,
                    )
                    if c0 == 0:
                        np.matmul(scores, v4[n0:n1, :, c0:c1], out=out_block)
                    else:
                        out_block *= rescale[..., None]
                        out_block += scores @ v4[n0:n1, :, c0:c1]
                dead = total == 0  # every key masked: out 0, lse +inf
                total[dead] = 1
                out_block /= total[..., None]
                row_lse = np.log(total, out=total)
                row_lse += top
                row_lse[dead] = np.inf
                lse[n0:n1, :, r0:r1] = row_lse

    side_by_side(work, plan.shares)
    return out.reshape(*q5.shape[:-1], -1), lse.reshape(q5.shape[:-1])


def numba_backward(
    xp, d_out5, q5, k5, v5, out5, lse5, bias5, causal, scale, keep5, keep_scale, mask_grad: bool
):
    """generic_backward's (dq, dk, dv, None) by the numba row kernels and BLAS, blocked and
    threaded as numba_forward. A float mask that needs its gradient takes the generic kernel."""
    if mask_grad:
        return generic_backward(
            xp, d_out5, q5, k5, v5, out5, lse5, bias5, causal, scale, keep5, keep_scale, True
        )
    q4, k4, v4, bias3, mask_of, keep4 = _flat_heads(q5, k5, v5, bias5, keep5)
    heads, groups, length, width = q4.shape
    keys, width_v = k4.shape[-2], v4.shape[-1]
    dtype = q4.dtype
    d_out4 = np.ascontiguousarray(d_out5).reshape(heads, groups, length, width_v)
    out4 = out5.reshape(d_out4.shape)
    lse3 = lse5.reshape(heads, groups, length)
    dq = np.empty(q4.shape, dtype)
    dk = np.zeros(k4.shape, dtype)
    dv = np.zeros(v4.shape, dtype)
    plan = _Plan.of(q4, k4, threaded=True)
    kernels = _kernels()
    real = dtype.type
    dropping = keep4 is not None
    dummy_keep = np.zeros((1, 1, 1, 1), np.bool_)

    def work(thread: int, share) -> None:
        weights_buffer, grads_buffer = plan.buffer(groups, dtype), plan.buffer(groups, dtype)
        kept_buffer = plan.buffer(groups, dtype) if dropping else None
        for n0, n1 in share:
            delta = np.einsum("ngle,ngle->ngl", d_out4[n0:n1], out4[n0:n1])  # rowsum(dO * O)
            for r0, r1, key_blocks in plan.blocks(length, keys, causal):
                q_block, d_out_block = q4[n0:n1, :, r0:r1], d_out4[n0:n1, :, r0:r1]
                dq_block = dq[n0:n1, :, r0:r1]
                for c0, c1 in key_blocks:
                    shape = (n1 - n0, groups, r1 - r0, c1 - c0)
                    weights, ds = _view(weights_buffer, shape), _view(grads_buffer, shape)
                    kept = _view(kept_buffer, shape) if dropping else weights
                    keep = keep4[n0:n1, :, r0:r1, c0:c1] if dropping else dummy_keep
                    np.matmul(q_block, k4[n0:n1, :, c0:c1].swapaxes(-1, -2), out=weights)
                    kernels.weights_block(
                        weights,
                        _mask_block(bias3, r0, r1, c0, c1),
                        mask_of[n0:n1],
                        r0,
                        c0,
                        causal,
                        real(scale),
                        lse3[n0:n1, :, r0:r1],
                        keep,
                        dropping,
                        real(keep_scale),
                        kept,
                    )
                    _add_over_groups(dv[n0:n1, :, c0:c1], kept.swapaxes(-1, -2) @ d_out_block)
                    np.matmul(d_out_block, v4[n0:n1, :, c0:c1].swapaxes(-1, -2), out=ds)
                    kernels.score_grads_block(
                        ds, weights, delta[:, :, r0:r1], keep, dropping, real(keep_scale)
                    )
                    if c0 == 0:
                        np.matmul(ds, k4[n0:n1, :, c0:c1], out=dq_block)
                    else:
                        dq_block += ds @ k4[n0:n1, :, c0:c1]
                    _add_over_groups(dk[n0:n1, :, c0:c1], ds.swapaxes(-1, -2) @ q_block)

    side_by_side(work, plan.shares)
    dq *= scale
    dk *= scale
    return dq.reshape(q5.shape), dk.reshape(k5.shape), dv.reshape(v5.shape), None


def _add_over_groups(total, per_group) -> None:
    """total (n, 1, keys, width) += per_group (n, G, keys, width) summed over its G."""
    total += per_group if per_group.shape[1] == 1 else per_group.sum(axis=1, keepdims=True)
