"""Side by side: a batch's chunks on one thread per core BLAS uses, BLAS held to one thread.

Each thread's GEMMs run on one core, so that the serial kernels between the GEMMs (numba, nogil)
run in parallel too, instead of one at a time while BLAS's idle threads spin on the other cores.

BLAS's thread count is process-wide, so while chunks run side by side BLAS is held to one thread
for the whole program (blas.py). Only the main thread does this (blas.py says why): called from
any other thread, the chunks run one after another on it.

MINITRAIN_SIDE_BY_SIDE=0 in the environment turns this off: chunks run one after another on the
caller's thread, and BLAS keeps its thread count throughout.
"""

from __future__ import annotations

import concurrent.futures
import functools
import os
from collections.abc import Callable, Sequence

from . import background_compile, blas
from .blas import blas_threads, unheld_blas_threads  # noqa: F401 (callers read blas_threads here)
from .environment import switched_off


def side_by_side_threads() -> int:
    """Shares to cut work into for side_by_side: BLAS's threads (1 where
    MINITRAIN_SIDE_BY_SIDE=0), the same on every thread, and while the main thread holds BLAS
    at one thread. How a batch is cut decides how its sums round (a conv's weight gradient is
    summed share by share), so a model cuts and sums alike whichever thread runs it; off the
    main thread its shares run one after another, their GEMMs on BLAS's own threads (OpenBLAS
    may round a long sum differently on two threads than on one)."""
    if switched_off("MINITRAIN_SIDE_BY_SIDE"):
        return 1
    return unheld_blas_threads()


@functools.cache
def _pool() -> concurrent.futures.ThreadPoolExecutor:
    # at least as many workers as BLAS can have threads (the default stops at 32)
    workers = max(32, os.cpu_count() or 1)
    return concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="minitrain")


def _after_fork_in_child() -> None:
    _pool.cache_clear()  # the child has none of the parent's threads: a pool of its own


os.register_at_fork(after_in_child=_after_fork_in_child)


def side_by_side(work: Callable[[int, object], None], shares: Sequence) -> None:
    """work(t, shares[t]) for every t: on the main thread, each on a thread of its own (t = 0
    on the caller's) with BLAS held to one thread until all are done; elsewhere (or where BLAS
    would not take the limit), one after another on the caller's. An exception in any, a
    Ctrl-C included, is raised here once every thread has stopped, so none is left writing
    into the caller's arrays (shares not yet started are dropped). Under a hold already taken
    (a share of an outer side_by_side, background compilation leaving the cores to its
    compiler) the shares run one after another too: cut alike, so the sums are the same."""
    if len(shares) > 1 and side_by_side_threads() > 1 and not blas.held():
        with blas.one_thread() as held:
            if held:
                _run_side_by_side(work, shares)
                return
    for t, share in enumerate(shares):
        work(t, share)


def _run_side_by_side(work, shares) -> None:
    futures = []
    # a pool thread's kernel may raise KernelNotReady where the caller's would: it reaches the
    # caller below (future.result()), who runs generic kernels instead (background_compile.py)
    pooled = _relayed if background_compile.caller_falls_back() else _alone
    try:
        for t, share in enumerate(shares[1:], start=1):
            futures.append(_pool().submit(pooled, work, t, share))
    except RuntimeError:  # the interpreter is shutting down (an atexit handler): no new threads
        pass
    try:
        work(0, shares[0])
        for t in range(len(futures) + 1, len(shares)):  # those no thread took
            work(t, shares[t])
    except BaseException:
        _join(futures, cancel=True)
        raise
    _join(futures, cancel=False)
    for future in futures:
        future.result()


def _alone(work, t, share) -> None:
    work(t, share)


@background_compile.falls_back
def _relayed(work, t, share) -> None:
    """work(t, share) on a pool thread for a caller that falls back: a kernel compiling in the
    background raises KernelNotReady here, which the caller receives."""
    work(t, share)


def _join(futures, cancel: bool) -> None:
    """Wait until every future has run or been cancelled, through Ctrl-Cs (cancelling what has
    not started from the first), then raise the first Ctrl-C."""
    interrupted = None
    while True:
        if cancel:
            for future in futures:
                future.cancel()
        try:
            concurrent.futures.wait(futures)
            break
        except BaseException as exc:  # noqa: B036 (a Ctrl-C must not leave threads writing)
            interrupted, cancel = interrupted or exc, True
    if interrupted is not None:
        raise interrupted
