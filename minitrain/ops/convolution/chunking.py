"""How the conv ops go through a batch: in chunks that stay in cache, side by side on threads.

The batch goes through in chunks of images, in the column layout that makes the GEMMs fastest
(Columns): each chunk's columns are written by im2col and read by the GEMM while still in the
last-level cache. A big batch's chunks (a first layer's from a smaller batch) run side by side,
one thread per core BLAS uses, each GEMM on one core (minitrain.runtime.threads), so that the
serial kernels between the GEMMs run in parallel too. On a GPU there is no cache to stay in and
no thread to share: chunks would only multiply the kernel launches, so the whole batch goes
through in one (bounded only by device memory)."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ... import backend
from ...runtime.threads import side_by_side, side_by_side_threads
from .columns import Columns
from .window import Window

# Bytes of im2col columns plus GEMM output computed at once: small enough that a chunk's columns
# stay in the last-level cache between im2col and the GEMM, large enough that glibc's malloc
# keeps serving the chunk buffers from its heap instead of page-faulting fresh mappings.
_COL_CHUNK_BYTES = 12 << 20
# Bytes of columns plus GEMM rows of the whole batch from which conv and conv_grad run its chunks
# side by side: below it, the threads' start and BLAS's lost parallelism cost what they save.
_SIDE_BY_SIDE_BYTES = 12 << 20
# The same for a conv whose GEMMs sum over at most _SHORT_INNER rows of columns (C/group * Kc: a
# first layer's 1 or 3 channels times a 3x3 kernel's taps): its GEMMs are cheap beside the
# passes between them (im2col, the transposes, dY's copy), which run serially, so it pays to
# run them side by side from far fewer bytes, down to where handing a share to a pool thread
# (about 0.15 ms on a busy 2-core machine) costs what it saves. Measured on 2 cores, in-process
# alternating rounds, as a multiple of PyTorch's time: the CNN step (32,3,32,32) 3->32->64 went
# from 1.26-1.53x to 1.19-1.35x in 6 runs of 15 to 25 rounds (its 32->64 already ran side by
# side), the step (64,1,28,28) 1->16->32 from 0.75, 0.76, 0.80x to 0.68, 0.75, 0.82x. Its
# 16->32 (144 rows, 9.7 MB) side by side too took it to 0.79-0.89x from 0.75-0.80x in 4 runs:
# the line stays at 12 MB for the wider GEMMs, which BLAS's two threads run well.
_SHORT_INNER = 32
_SHORT_INNER_SIDE_BY_SIDE_BYTES = 1 << 20
# Bytes of columns plus GEMM output computed at once on a GPU: a generous bound on the
# temporaries, which only a batch far larger than a training step's splits.
_DEVICE_CHUNK_BYTES = 1 << 30


def _shares(N: int, chunk_bytes, threads: int, xp=np) -> list[list[slice]]:
    """The batch in about equal chunks of images, as many for each of `threads` threads (at most
    N), whose buffers, chunk_bytes(n) for n images, fit _COL_CHUNK_BYTES for all the threads
    together (_DEVICE_CHUNK_BYTES for arrays of xp on a GPU; one image per chunk when even one
    does not fit): thread t's share is every threads-th chunk from the t-th."""
    if N == 0:
        return [[]]
    budget = (_COL_CHUNK_BYTES if xp is np else _DEVICE_CHUNK_BYTES) // threads
    size = max(1, min(N, budget // max(1, chunk_bytes(1))))
    while size > 1 and chunk_bytes(size) > budget:
        size -= 1
    count = math.ceil(math.ceil(N / size) / threads) * threads  # a multiple of threads
    bounds = [N * i // count for i in range(count + 1)]
    chunks = [slice(lo, hi) for lo, hi in zip(bounds, bounds[1:], strict=False) if hi > lo]
    return [chunks[t::threads] for t in range(threads)]


def _thread_count(xp, N: int, chunk_bytes, weight_bytes: int, inner: int) -> int:
    """Threads to run the batch's chunks on: as many as minitrain.runtime.threads has (BLAS's, on
    the main thread), where the whole batch's buffers, chunk_bytes(N), take at least
    _SIDE_BY_SIDE_BYTES (_SHORT_INNER_SIDE_BY_SIDE_BYTES where the GEMMs sum over `inner` <=
    _SHORT_INNER rows of columns); else 1 (always on the GPU). At most one per image, and only as
    many as have their smallest working sets fit _COL_CHUNK_BYTES together: a one-image chunk's
    buffers and, in the backward, dW's sum and product (so that memory does not grow with the
    cores where one image fills the budget)."""
    least = _SHORT_INNER_SIDE_BY_SIDE_BYTES if inner <= _SHORT_INNER else _SIDE_BY_SIDE_BYTES
    if xp is not np or N < 2 or chunk_bytes(N) < least:
        return 1
    fitting = _COL_CHUNK_BYTES // (chunk_bytes(1) + 2 * weight_bytes)
    return max(1, min(N, fitting, side_by_side_threads()))


@functools.lru_cache(maxsize=256)
def _layout(window: Window, spatial, channels: int, filters: int) -> Columns:
    """The columns the conv op uses, given C/group and M/group: the compact layout where
    Columns.of picks it, else of the wide layout and its splits the least estimated time
    (splits that shift nothing, like 1 for a 2-D conv, tie with 0, which wins), taken as the
    columns per image, plus the largest shift for the shifted sums and copies a split adds,
    times 1 + a tenth of |ln(S * M / (C * Kc))|, how lopsided the GEMM is (BLAS runs a
    squarer GEMM faster; the model picked the fastest layout of the 3x3 convs timed)."""
    candidates = [Columns.of(window, spatial)]
    if not (candidates[0].wide and channels and filters):  # (with no rows, any layout does)
        return candidates[0]
    candidates += [Columns.of(window, spatial, split=split) for split in (1, 2, 3)]

    def cost(columns: Columns) -> float:
        rows = channels * math.prod(columns.column_kernel)
        lopsided = abs(math.log(len(columns.shifts()) * filters / rows))
        return (columns.span + max(columns.shifts())) * (1 + lopsided / 10)

    return min(candidates, key=cost)


def _stacked_weights(W, group: int, columns: Columns):
    """W (M, C/group, *kernel) as (group, S * M/group, C/group * Kc): per group, the weights of
    each shift (see Columns) stacked, shift-major, rows (s, m), columns (c, column tap)."""
    xp = backend.array_module(W)
    shifts = len(columns.shifts())
    M, per_group = W.shape[:2]
    taps = W.reshape(group, M // group, per_group, shifts, -1).transpose(0, 3, 1, 2, 4)
    return xp.ascontiguousarray(taps).reshape(group, shifts * M // group, -1)


class Chunked(NamedTuple):
    """What conv and conv_grad both set up: the layout, W stacked for it, the batch's chunks,
    one share of them per thread (see minitrain.runtime.threads), and each thread's buffers a chunk
    works in, its columns (group, C/group * Kc, width(n)) and the rows the GEMM multiplies
    them with, (group, S * M/group, width(n)): the GEMM's output in the forward, dY once per
    shift in the backward."""

    columns: Columns
    w_stacked: object
    shares: list[list[slice]]
    col_buffers: list
    out_buffers: list
    group: int

    @classmethod
    def of(cls, x_shape, dtype, W, window: Window, group: int) -> Chunked:
        """For a conv of an X of shape x_shape (N, C, *spatial) and this dtype with W."""
        xp = backend.array_module(W)
        N, C = x_shape[:2]
        M = W.shape[0]
        columns = _layout(window, tuple(x_shape[2:]), C // group, M // group)
        rows, shifts = C * math.prod(columns.column_kernel), len(columns.shifts())

        def chunk_bytes(n: int) -> int:
            return (rows + shifts * M) * columns.width(n) * dtype.itemsize

        inner = rows // group
        threads = _thread_count(xp, N, chunk_bytes, W.size * dtype.itemsize, inner)
        shares = _shares(N, chunk_bytes, threads, xp)
        size = max((part.stop - part.start for share in shares for part in share), default=0)
        return cls(
            columns,
            _stacked_weights(W, group, columns),
            shares,
            # every thread's buffers come from the caller's thread: glibc gives each thread an
            # arena of its own, which would keep its freed buffers from the caller's next ones
            [xp.empty(rows * columns.width(size), dtype) for _ in shares],
            [xp.empty(shifts * M * columns.width(size), dtype) for _ in shares],
            group,
        )

    @property
    def threads(self) -> int:
        return len(self.shares)

    def each(self, work) -> None:
        """work(thread, part, col, out) for every chunk `part` (a slice of the batch), with
        the thread's column buffer and GEMM-output / dY buffer sized for it, each share of the
        chunks on a thread of its own."""

        def run(thread: int, parts: list[slice]) -> None:
            for part in parts:
                n = part.stop - part.start
                col = self._view(self.col_buffers[thread], self.w_stacked.shape[2], n)
                out = self._view(self.out_buffers[thread], self.w_stacked.shape[1], n)
                work(thread, part, col, out)

        side_by_side(run, self.shares)

    def _view(self, buffer, rows_per_group: int, n: int):
        length = self.group * rows_per_group * self.columns.width(n)
        return buffer[:length].reshape(self.group, rows_per_group, -1)
