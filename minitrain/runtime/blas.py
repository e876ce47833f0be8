"""BLAS's thread count: read, and held to one thread by whoever needs the other cores meanwhile
(threads.side_by_side, whose chunks run one per core; background_compile, whose compile process
starves beside BLAS's spinning threads). Holds nest: the first takes the count down to one, the
last gives back the count there was.

BLAS's thread count is process-wide (OpenBLAS has no per-thread setting), changed through
threadpoolctl. Only the main thread holds it: OpenBLAS 0.3.31 ignores a thread count set from
another thread once the main thread has set one, so a count lowered from elsewhere might never
come back."""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import threading

__all__ = [
    "blas_threads",
    "controller",
    "held",
    "hold_one_thread",
    "one_thread",
    "release_one_thread",
    "unheld_blas_threads",
]


@functools.cache
def controller():
    """threadpoolctl's handle on the BLAS libraries loaded (None without threadpoolctl)."""
    try:
        threadpoolctl = importlib.import_module("threadpoolctl")
    except ImportError:
        return None
    return threadpoolctl.ThreadpoolController().select(user_api="blas")


def blas_threads() -> int:
    """Threads BLAS runs a GEMM on now: 1 without threadpoolctl or a BLAS it knows."""
    handle = controller()
    if handle is None:
        return 1
    return max((lib.num_threads for lib in handle.lib_controllers), default=1)


# the holds taken and not given back, threadpoolctl's limit while there are any (a child
# forked meanwhile gives BLAS its count back), and the count BLAS had before the first; changed
# under _hold_lock, so that another thread reading the count outside the holds sees either
# the count before them or BLAS's own
_holds = 0
_limit = None
_count_before_holds = None
_hold_lock = threading.Lock()


def hold_one_thread() -> bool:
    """Take a hold on BLAS at one thread (release_one_thread gives it back), on the main thread
    only; returns whether a hold was taken (not elsewhere, nor without threadpoolctl)."""
    global _holds, _limit, _count_before_holds
    if threading.current_thread() is not threading.main_thread() or controller() is None:
        return False
    if _holds == 0:
        with _hold_lock:
            _count_before_holds = blas_threads()
            _limit = controller().limit(limits=1)
    _holds += 1
    return True


def release_one_thread() -> None:
    """Give back a hold hold_one_thread took: the last gives BLAS its count back."""
    global _holds, _limit, _count_before_holds
    _holds -= 1
    if _holds == 0:
        with _hold_lock:
            _limit.restore_original_limits()
            _limit = _count_before_holds = None


def held() -> bool:
    """Whether BLAS is held at one thread now (a hold taken and not given back)."""
    return _holds > 0


def unheld_blas_threads() -> int:
    """Threads BLAS runs a GEMM on outside any hold: blas_threads() but while the main thread
    holds BLAS at one thread, when it is the count the hold gives back (the same answer from
    every thread at every moment)."""
    with _hold_lock:
        return blas_threads() if _count_before_holds is None else _count_before_holds


@contextlib.contextmanager
def one_thread():
    """BLAS held to one thread within the block; yields whether it runs on one thread (False
    off the main thread, or where BLAS would not take the limit)."""
    taken = hold_one_thread()
    try:
        yield taken and blas_threads() == 1
    finally:
        if taken:
            release_one_thread()


def _after_fork_in_child() -> None:
    global _holds, _limit, _count_before_holds, _hold_lock
    if _limit is not None:  # the parent's holders are not in the child
        _limit.restore_original_limits()
    _holds, _limit, _count_before_holds = 0, None, None
    _hold_lock = threading.Lock()  # a parent's thread may have held it at the fork


os.register_at_fork(after_in_child=_after_fork_in_child)
