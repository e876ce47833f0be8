"""numba's thread pool, started once before the first parallel kernel, with OpenMP's idle spin cut
short so that its threads hand the cores back to BLAS.

One policy for both pools on a machine with few cores. OpenBLAS's threads spin (yielding) for
about 0.1 s after each GEMM, and that is fixed when it loads (OPENBLAS_THREAD_TIMEOUT); only its
thread count can change at run time. numba's parallel kernels run on its "omp" threading layer
where libgomp is installed (the layer numba picks before its "workqueue"), and libgomp's idle
threads spin for GOMP_SPINCOUNT = 300000 rounds of a pause instruction (milliseconds) after every
parallel region before they sleep. A GEMM started in that time splits its work over all cores,
finds one taken by a spinning numba thread, and waits for the scheduler to hand it over. So:

- numba's pool starts with GOMP_SPINCOUNT=1000 (`SHORT_SPIN`): its threads still catch a second
  parallel region that follows at once (a forward kernel's backward, a kernel's next chunk), then
  sleep, tens of microseconds later, instead of holding a core through the next GEMM;
- elementwise kernels that sit between GEMMs keep serial builds up to huge sizes (each family's
  threshold, e.g. activation.py's _PARALLEL_ELEMENTS): with OpenBLAS's threads spinning after
  each GEMM, a parallel loop there waits for a core and does not pay even with the short spin.

Measured on 2 cores (Zen 4, OpenBLAS 0.3 with 2 threads, numba 0.68 on libgomp), a GELU MLP
block (16x64x128 -> 512 -> exact GELU -> 128, forward and backward), exact GELU's parallel build
against its serial one in the same process, rounds alternating: with libgomp's default spin the
parallel build made the block 2.73x and 2.82x slower (medians of 8 rounds, two processes); with
GOMP_SPINCOUNT=1000 1.02-1.08x (three processes), 300 1.04x, 3000 1.03x: the fight is gone,
but the parallel build still gains nothing between GEMMs. Alone (no GEMM near), exact GELU's
forward plus backward on 2^19 float32 elements took 0.57x of its serial time in parallel with
GOMP_SPINCOUNT=1000 and 0.50x with the default spin; with OMP_WAIT_POLICY=passive (no spin)
each parallel region cost 60-130 us of wake-up on the loaded machine, 2x slower than serial up to
2^16 elements: a short spin, not none.

The variable is set only while numba's pool starts (libgomp reads it when it loads) and put back
at once, so neither child processes nor a libgomp loaded later (PyTorch's own) see it. Left alone
where the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT, where numba's pool already runs, and where
MINITRAIN_SHORT_OMP_SPIN=0; without effect on numba's "workqueue" and "tbb" layers, whose idle
threads sleep.
"""

from __future__ import annotations

import importlib
import os
import threading

from .environment import switched_off

__all__ = ["SHORT_SPIN", "numba_threads", "start_numba_threads"]

# libgomp's spin rounds before an idle thread sleeps: short enough to free a core for the next
# GEMM within tens of microseconds, long enough to catch a parallel region that follows at once
SHORT_SPIN = 1000
_USER_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def start_numba_threads() -> str:
    """Start numba's thread pool (once) as the module docstring says; returns the threading layer
    numba runs parallel kernels on ('omp', 'workqueue' or 'tbb'). Called before the first
    parallel build compiles (backend.jit); threads that call it at once start one pool, under
    one setting of the variable."""
    with _start_lock:
        if not _layer:
            _layer.append(_start_pool())
        return _layer[0]


# the threading layer, once the pool has started, and the lock its first starters take
_layer: list[str] = []
_start_lock = threading.Lock()


def _start_pool() -> str:
    numba = importlib.import_module("numba")
    # get_num_threads starts the pool where it has not started (a pool already running, or a
    # libgomp already loaded, keeps the spin it has: the variable is read once, at load)
    if switched_off("MINITRAIN_SHORT_OMP_SPIN") or any(v in os.environ for v in _USER_SETTINGS):
        numba.get_num_threads()
    else:
        os.environ["GOMP_SPINCOUNT"] = str(SHORT_SPIN)
        try:
            numba.get_num_threads()
        finally:
            del os.environ["GOMP_SPINCOUNT"]
    return numba.threading_layer()


def numba_threads() -> int:
    """The threads numba's parallel kernels run on (numba.get_num_threads()), with the pool
    started as start_numba_threads starts it: a kernel sizing its work by the thread count
    asks here, so that the first to ask does not start the pool with libgomp's long spin."""
    start_numba_threads()
    return importlib.import_module("numba").get_num_threads()
