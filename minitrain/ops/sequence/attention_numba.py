"""scaled_dot_product_attention's numba path: row kernels around BLAS GEMMs, a block of query
rows against a block of keys at a time (online softmax across key blocks), chunks of heads shared
among threads, query, key and value read in place where BLAS can read them; tested against the
generic kernels of attention_blocks.py. attention.py runs them where
`backend.numba_takes(q5, k5, v5)` holds (the blocks need keys: an empty array never comes here),
forward and backward each asking once; the row that keeps them is the op's `numba_bench`,
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


def _nan_in(row, otherwise):
    """A nan of `row` if it holds one, else `otherwise` (a numba kernel's helper)."""
    for value in row:
        if value != value:
            return value
    return otherwise


def _nan_max(a, b):
    """max(a, b), nan where either is (Python's max keeps its first argument against a nan; a
    numba kernel's helper)."""
    if a != a or b != b:
        return a + b
    return a if a >= b else b


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
    helper(_nan_in)
    helper(_nan_max)

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
                    if block_top == minus_inf:  # all masked, or all nan (row_max passes nan)
                        block_top = _nan_in(row[:limit], minus_inf)
                    row[limit:] = zero
                    old = top[h, g, i]
                    new = _nan_max(old, block_top)  # a nan score makes the row nan, as PyTorch's
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
    """How the numba path goes through the heads (N = B * Hk of them, each with its G query
    heads, numbered n = b * Hk + h): blocks of `rows` query rows against blocks of `keys` keys,
    heads in chunks whose blocks of scores stay in cache, each thread a share of the chunks,
    [(n0, n1), ...]. A chunk lies within one batch element or covers whole ones, so that it is a
    slice of the grouped arrays (_heads) whatever their strides."""

    rows: int
    keys: int
    chunk: int
    shares: list

    @classmethod
    def of(cls, q5, k5, threaded: bool) -> _Plan:
        batch, heads_k, groups, length, _ = q5.shape
        heads, keys = batch * heads_k, k5.shape[-2]
        rows, key_block = min(length, _ROW_BLOCK), min(keys, _KEY_BLOCK)
        per_head = groups * rows * key_block * q5.dtype.itemsize
        chunk = max(1, min(heads, _CHUNK_BYTES // per_head))
        threads = 1
        if threaded and heads > 1 and heads * groups * length * keys >= _THREADED_SCORES:
            threads = min(heads, side_by_side_threads())
        bounds = [heads * t // threads for t in range(threads + 1)]
        shares = [
            _chunks(lo, hi, chunk, heads_k) for lo, hi in zip(bounds, bounds[1:], strict=False)
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


def _chunks(lo: int, hi: int, chunk: int, heads_k: int) -> list:
    """Heads lo:hi in chunks of at most `chunk`, each within one batch element (of heads_k
    heads) or made of whole ones."""
    chunks, n0 = [], lo
    whole = (chunk // heads_k) * heads_k  # the most heads of whole batch elements in a chunk
    while n0 < hi:
        if n0 % heads_k == 0 and whole and hi - n0 >= heads_k:
            n1 = n0 + min(whole, (hi - n0) // heads_k * heads_k)
        else:
            n1 = min(hi, n0 + chunk, (n0 // heads_k + 1) * heads_k)
        chunks.append((n0, n1))
        n0 = n1
    return chunks


def _heads(grouped, n0: int, n1: int):
    """Heads n0:n1 (a _Plan chunk) of a grouped array (B, Hk, ...), a view (nb, nh, ...)."""
    heads_k = grouped.shape[1]
    b0, h0 = divmod(n0, heads_k)
    if n1 - n0 <= heads_k - h0:
        return grouped[b0 : b0 + 1, h0 : h0 + n1 - n0]
    return grouped[b0 : n1 // heads_k]


def _view(buffer, shape):
    """The first prod(shape) elements of a flat buffer, C-contiguous in `shape`."""
    return buffer[: math.prod(shape)].reshape(shape)


def _transposed(heads):
    """A chunk's keys (or values) (nb, nh, 1, S, E) as a C-contiguous (nb, nh, 1, E, S): OpenBLAS
    multiplies Q by it at about 1.6 times the speed it reaches on the transposed view (measured
    at 64 query rows, 128 keys, E 32, one thread), and each is read by every block of query
    rows. It holds no more than the chunk's share of the keys."""
    return np.ascontiguousarray(heads.swapaxes(-1, -2))


def _blas_ready(a):
    """`a` itself where BLAS reads its matrices (the last two dims) in place: unit stride along
    the last dim, a row stride that holds a row; else a C-contiguous copy. Views of q, k, v in
    a transformer's (B, T, H, D) layout pass without a copy, as they do into PyTorch's kernel."""
    size = a.itemsize
    row_stride = a.strides[-2]
    rows_fit = a.shape[-2] <= 1 or (row_stride % size == 0 and row_stride >= a.shape[-1] * size)
    if (a.strides[-1] == size or a.shape[-1] <= 1) and rows_fit:
        return a
    return np.ascontiguousarray(a)


def _mask_rows(bias5, heads: int, heads_k: int, groups: int):
    """(bias3, mask_of): the additive mask as (M, Lm, Sm) with the index of each (n, g) into it
    (-1 without a mask), (N, G)."""
    if bias5 is None:
        return np.zeros((1, 1, 1), np.float64), np.full((heads, groups), -1)
    mask_batch, mask_heads, mask_groups, mask_rows, mask_cols = bias5.shape
    bias3 = np.ascontiguousarray(bias5).reshape(-1, mask_rows, mask_cols)
    n, g = np.arange(heads)[:, None], np.arange(groups)[None, :]
    index = (n // heads_k if mask_batch > 1 else 0) * mask_heads
    index = (index + (n % heads_k if mask_heads > 1 else 0)) * mask_groups
    index = index + (g if mask_groups > 1 else 0)
    mask_of = np.ascontiguousarray(np.broadcast_to(index, (heads, groups)), dtype=np.int64)
    return bias3, mask_of


def _mask_block(bias3, r0: int, r1: int, c0: int, c1: int):
    rows = slice(r0, r1) if bias3.shape[1] > 1 else slice(None)
    return bias3[:, rows, c0:c1] if bias3.shape[2] > 1 else bias3[:, rows]


def _flat(a):
    """A chunk's (nb, nh, ...) view as (nb * nh, ...) (a view: a chunk of a C-contiguous array
    is one batch element or whole ones)."""
    return a.reshape(-1, *a.shape[2:])


def numba_forward(xp, q5, k5, v5, bias5, causal: bool, scale: float, keep5, keep_scale):
    """generic_forward's (out, lse) by the numba row kernels and BLAS: per chunk of heads, a
    block of query rows against a block of keys at a time (online softmax across key blocks),
    the chunks shared among threads (minitrain.runtime.threads). q, k and v are read in place
    where BLAS can (_blas_ready); out is laid out as the query is (a transformer's (B, T, H, D)
    stays so, and its transpose back to (B, T, H * D) is then free)."""
    q5, k5, v5 = (_blas_ready(a) for a in (q5, k5, v5))
    batch, heads_k, groups, length, _ = q5.shape
    keys, dtype = k5.shape[-2], q5.dtype
    bias3, mask_of = _mask_rows(bias5, batch * heads_k, heads_k, groups)
    bias3 = bias3.astype(dtype, copy=False)
    keep5 = None if keep5 is None else np.ascontiguousarray(keep5)
    out = np.empty_like(q5, shape=(*q5.shape[:-1], v5.shape[-1]))
    lse = np.empty(q5.shape[:-1], dtype)
    plan = _Plan.of(q5, k5, threaded=True)
    kernels = _kernels()
    real = dtype.type
    dropping = keep5 is not None
    dummy_keep = np.zeros((1, 1, 1, 1), np.bool_)

    def work(thread: int, share) -> None:
        buffer = plan.buffer(groups, dtype)
        for n0, n1 in share:
            q_heads, k_heads, v_heads = (_heads(a, n0, n1) for a in (q5, k5, v5))
            nb, nh = q_heads.shape[:2]
            k_transposed = _transposed(k_heads)
            for r0, r1, key_blocks in plan.blocks(length, keys, causal):
                stats = np.empty((3, nb, nh, groups, r1 - r0), dtype)
                top, total, rescale = stats
                top[...], total[...] = -np.inf, 0
                out_block = _heads(out, n0, n1)[..., r0:r1, :]
                for c0, c1 in key_blocks:
                    scores = _view(buffer, (nb, nh, groups, r1 - r0, c1 - c0))
                    np.matmul(q_heads[..., r0:r1, :], k_transposed[..., c0:c1], out=scores)
                    kernels.forward_block(
                        _flat(scores),
                        _mask_block(bias3, r0, r1, c0, c1),
                        mask_of[n0:n1],
                        r0,
                        c0,
                        causal,
                        real(scale),
                        _flat(_heads(keep5, n0, n1)[..., r0:r1, c0:c1]) if dropping else dummy_keep,
                        dropping,
                        real(keep_scale),
                        _flat(top),
                        _flat(total),
                        _flat(rescale),
                    )
                    if c0 == 0:
                        np.matmul(scores, v_heads[..., c0:c1, :], out=out_block)
                    else:
                        out_block *= rescale[..., None]
                        out_block += scores @ v_heads[..., c0:c1, :]
                dead = total == 0  # every key masked: out 0, lse +inf
                total[dead] = 1
                out_block /= total[..., None]
                row_lse = np.log(total, out=total)
                row_lse += top
                row_lse[dead] = np.inf
                _heads(lse, n0, n1)[..., r0:r1] = row_lse

    side_by_side(work, plan.shares)
    return out, lse


def numba_backward(
    xp, d_out5, q5, k5, v5, out5, lse5, bias5, causal, scale, keep5, keep_scale, mask_grad: bool
):
    """generic_backward's (dq, dk, dv, None) by the numba row kernels and BLAS, blocked and
    threaded as numba_forward, reading q, k, v and d_out in place as it does. A float mask that
    needs its gradient takes the generic kernel."""
    if mask_grad:
        return generic_backward(
            xp, d_out5, q5, k5, v5, out5, lse5, bias5, causal, scale, keep5, keep_scale, True
        )
    q5, k5, v5, d_out5 = (_blas_ready(a) for a in (q5, k5, v5, d_out5))
    batch, heads_k, groups, length, _ = q5.shape
    keys, dtype = k5.shape[-2], q5.dtype
    bias3, mask_of = _mask_rows(bias5, batch * heads_k, heads_k, groups)
    bias3 = bias3.astype(dtype, copy=False)
    keep5 = None if keep5 is None else np.ascontiguousarray(keep5)
    lse5 = np.ascontiguousarray(lse5)
    dq = np.empty(q5.shape, dtype)
    dk = np.zeros(k5.shape, dtype)
    dv = np.zeros(v5.shape, dtype)
    plan = _Plan.of(q5, k5, threaded=True)
    kernels = _kernels()
    real = dtype.type
    dropping = keep5 is not None
    dummy_keep = np.zeros((1, 1, 1, 1), np.bool_)

    def work(thread: int, share) -> None:
        weights_buffer, grads_buffer = plan.buffer(groups, dtype), plan.buffer(groups, dtype)
        kept_buffer = plan.buffer(groups, dtype) if dropping else None
        # a key block's share of dK or dV before it is summed in
        product_buffer = np.empty(
            plan.chunk * groups * plan.keys * max(q5.shape[-1], v5.shape[-1]), dtype
        )
        for n0, n1 in share:
            q_heads, k_heads, v_heads = (_heads(a, n0, n1) for a in (q5, k5, v5))
            d_out_heads, dq_heads = _heads(d_out5, n0, n1), _heads(dq, n0, n1)
            dk_heads, dv_heads = _heads(dk, n0, n1), _heads(dv, n0, n1)
            nb, nh = q_heads.shape[:2]
            k_transposed, v_transposed = _transposed(k_heads), _transposed(v_heads)
            # rowsum(dO * O)
            delta = np.einsum("bhgle,bhgle->bhgl", d_out_heads, _heads(out5, n0, n1))
            for r0, r1, key_blocks in plan.blocks(length, keys, causal):
                q_block, d_out_block = q_heads[..., r0:r1, :], d_out_heads[..., r0:r1, :]
                dq_block = dq_heads[..., r0:r1, :]
                lse_block = _flat(_heads(lse5, n0, n1)[..., r0:r1])
                for c0, c1 in key_blocks:
                    shape = (nb, nh, groups, r1 - r0, c1 - c0)
                    weights, ds = _view(weights_buffer, shape), _view(grads_buffer, shape)
                    kept = _view(kept_buffer, shape) if dropping else weights
                    keep = (
                        _flat(_heads(keep5, n0, n1)[..., r0:r1, c0:c1]) if dropping else dummy_keep
                    )
                    k_block = k_heads[..., c0:c1, :]
                    np.matmul(q_block, k_transposed[..., c0:c1], out=weights)
                    kernels.weights_block(
                        _flat(weights),
                        _mask_block(bias3, r0, r1, c0, c1),
                        mask_of[n0:n1],
                        r0,
                        c0,
                        causal,
                        real(scale),
                        lse_block,
                        keep,
                        dropping,
                        real(keep_scale),
                        _flat(kept),
                    )
                    products = _view(product_buffer, (*shape[:3], c1 - c0, v5.shape[-1]))
                    np.matmul(kept.swapaxes(-1, -2), d_out_block, out=products)
                    _add_over_groups(dv_heads[..., c0:c1, :], products)
                    np.matmul(d_out_block, v_transposed[..., c0:c1], out=ds)
                    kernels.score_grads_block(
                        _flat(ds),
                        _flat(weights),
                        _flat(delta[..., r0:r1]),
                        keep,
                        dropping,
                        real(keep_scale),
                    )
                    if c0 == 0:
                        np.matmul(ds, k_block, out=dq_block)
                    else:
                        dq_block += ds @ k_block
                    products = _view(product_buffer, (*shape[:3], c1 - c0, q5.shape[-1]))
                    np.matmul(ds.swapaxes(-1, -2), q_block, out=products)
                    _add_over_groups(dk_heads[..., c0:c1, :], products)

    side_by_side(work, plan.shares)
    dq *= scale
    dk *= scale
    return dq, dk, dv, None


def _add_over_groups(total, per_group) -> None:
    """total (nb, nh, 1, keys, width) += per_group (nb, nh, G, keys, width) summed over its G."""
    total += per_group if per_group.shape[2] == 1 else per_group.sum(axis=2, keepdims=True)
