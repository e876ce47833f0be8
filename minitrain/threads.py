"""Side by side: a batch's chunks on one Python thread per core that BLAS uses, each thread's
GEMMs on one core, so that the serial kernels between the GEMMs (numba, nogil) run in parallel
too, instead of one at a time while BLAS's idle threads spin on the other cores.

BLAS's thread count is process-wide (OpenBLAS has no per-thread setting), so while chunks run
side by side BLAS is held to one thread (through threadpoolctl) for the whole program. Only
the main thread does this: OpenBLAS 0.3.31 ignores a thread count set from another thread once
the main thread has set one, so a count lowered from elsewhere might never come back. Called
from any other thread, the chunks run one after another on it.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import importlib
import os
import threading
from collections.abc import Callable, Sequence


@functools.cache
def _controller():
    """threadpoolctl's handle on the BLAS libraries loaded (None without threadpoolctl)."""
    try:
        threadpoolctl = importlib.import_module("threadpoolctl")
    except ImportError:
        return None
    return threadpoolctl.ThreadpoolController().select(user_api="blas")


def blas_threads() -> int:
    """Threads BLAS runs a GEMM on now: 1 without threadpoolctl or a BLAS it knows."""
    controller = _controller()
    if controller is None:
        return 1
    return max((lib.num_threads for lib in controller.lib_controllers), default=1)


def side_by_side_threads() -> int:
    """Threads side_by_side would run chunks on from here: BLAS's on the main thread, else 1."""
    return blas_threads() if threading.current_thread() is threading.main_thread() else 1


@contextlib.contextmanager
def _one_blas_thread():
    """BLAS held to one thread; yields whether it took (and gives the count back after)."""
    limiter = _controller().limit(limits=1)
    try:
        yield blas_threads() == 1
    finally:
        limiter.restore_original_limits()


@functools.cache
def _pool() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(thread_name_prefix="minitrain")


# a forked child has none of the parent's threads: it starts a pool of its own on first use
os.register_at_fork(after_in_child=_pool.cache_clear)


def side_by_side(work: Callable[[int, object], None], shares: Sequence) -> None:
    """work(t, shares[t]) for every t: on the main thread, each on a thread of its own (t = 0
    on the caller's) with BLAS held to one thread until all are done; elsewhere (or where BLAS
    would not take the limit), one after another on the caller's. An exception in any is
    raised here once every thread has stopped, so none is left writing into the caller's
    arrays."""
    if len(shares) > 1 and side_by_side_threads() > 1:
        with _one_blas_thread() as held:
            if held:
                futures = [_pool().submit(work, t, s) for t, s in enumerate(shares) if t > 0]
                try:
                    work(0, shares[0])
                finally:
                    concurrent.futures.wait(futures)
                for future in futures:
                    future.result()
                return
    for t, share in enumerate(shares):
        work(t, share)
