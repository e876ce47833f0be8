"""The numba kernels' scalar helpers against numpy: exp over its whole range, and the row max."""

from __future__ import annotations

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from minitrain.ops.core import numba_math

# what the kernels that call exp compile with: the helpers must stay accurate under it
KERNEL_FASTMATH = {"reassoc", "contract", "nsz"}


def _exp_of(dtype, loose=False):
    numba_math.register()

    @numba.njit(fastmath=KERNEL_FASTMATH)
    def apply(values):
        out = np.empty_like(values)
        for i in range(values.shape[0]):
            out[i] = numba_math.exp_nonpositive(values[i])
        return out

    @numba.njit(fastmath=KERNEL_FASTMATH)
    def apply_loose(values):
        out = np.empty_like(values)
        for i in range(values.shape[0]):
            out[i] = numba_math.exp_nonpositive_loose(values[i])
        return out

    return apply_loose if loose else apply


@pytest.mark.parametrize(
    "dtype, ulps, loose",
    [(np.float32, 2, False), (np.float64, 1, False), (np.float32, 3, True), (np.float64, 1, True)],
)
def test_exp_within_an_ulp_or_two_of_numpy_over_its_range(dtype, ulps, loose):
    rng = np.random.default_rng(0)
    tiny = np.finfo(dtype).tiny
    floor = np.log(tiny)  # below this numpy's exp is subnormal
    values = np.concatenate(
        [
            -rng.exponential(1.0, 20_000),
            rng.uniform(floor, 0.0, 20_000),
            -np.logspace(-30, 0, 1_000),
            [0.0, -0.0, -np.log(2) / 2, -np.log(2), -1.5 * np.log(2)],
        ]
    ).astype(dtype)
    got = _exp_of(dtype, loose)(values)
    want = np.exp(values)
    # from EXP_MIN down (a little above the subnormal range) the result is 0 by design
    exp_min = -87.0 if dtype == np.float32 else -708.0
    kept = values >= exp_min
    assert np.max(np.abs(got[kept] - want[kept]) / np.spacing(want[kept])) <= ulps
    assert np.all(got[~kept] == 0.0) and np.all(want[~kept] < np.exp(dtype(exp_min)))


@pytest.mark.parametrize("loose", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_edge_values(dtype, loose):
    values = np.array([0.0, -np.inf, np.nan, -1e30, np.finfo(dtype).min], dtype)
    got = _exp_of(dtype, loose)(values)
    assert got[0] == 1.0
    assert got[1] == 0.0 and got[3] == 0.0 and got[4] == 0.0
    assert np.isnan(got[2])


@pytest.mark.parametrize("n", [1, 3, 4, 5, 8, 1001])
def test_row_max_matches_numpy(n):
    numba_math.register()

    @numba.njit
    def apply(x):
        return numba_math.row_max(x)

    rng = np.random.default_rng(n)
    for _ in range(20):
        x = rng.standard_normal(n)
        assert apply(x) == x.max()
    x = -np.arange(n, dtype=np.float64)[::-1].copy()  # the max last: the tail loop must see it
    assert apply(x) == 0.0


@pytest.mark.parametrize("dtype, offset", [(np.float32, 1e4), (np.float64, 1e12)])
def test_log_probability_keeps_its_rounding_under_the_callers_reassoc(dtype, offset):
    # under "reassoc" alone, a loop of (x - top) - log_total becomes x - (top + log_total) with
    # the sum hoisted, which rounds to top's spacing
    numba_math.register()

    @numba.njit(fastmath=KERNEL_FASTMATH)
    def apply(x, top, log_total):
        out = np.empty_like(x)
        for i in range(x.shape[0]):
            out[i] = numba_math.log_probability(x[i], top, log_total)
        return out

    x = (offset + np.random.default_rng(0).standard_normal(1000)).astype(dtype)
    top, log_total = x.max(), np.log(dtype(1000.0))
    want = (x - top) - log_total
    np.testing.assert_array_equal(apply(x, top, log_total), want)
    np.testing.assert_array_equal(numba_math.log_probability(x, top, log_total), want)


def test_the_python_stubs_are_numpy():
    values = np.array([0.0, -1.0, -50.0])
    np.testing.assert_array_equal(numba_math.exp_nonpositive(values), np.exp(values))
    np.testing.assert_array_equal(numba_math.exp_nonpositive_loose(values), np.exp(values))
    assert numba_math.row_max(values) == 0.0


def test_kernels_that_call_the_helpers_hit_numba_cache_in_a_fresh_process(tmp_path):
    # numba's cache keys a kernel on its closure's pickled contents: one that captured a jitted
    # helper (a dispatcher) pickled differently in every process and was never loaded from the
    # cache. A second process must load the softmax and cross-entropy kernels, not compile them.
    code = (
        "import numpy as np, numba, minitrain as mt\n"
        "from minitrain import ops\n"
        "x = mt.Tensor(np.ones((3, 4), np.float32), requires_grad=True)\n"
        "ops.softmax(x).backward(np.ones((3, 4), np.float32))\n"
        "ops.log_softmax(x).backward(np.ones((3, 4), np.float32))\n"
        "ops.cross_entropy(x, np.array([0, 1, 2])).backward()\n"
        "from numba.core.dispatcher import Dispatcher\n"
        "import gc\n"
        "compiled = [d.py_func.__qualname__ for d in gc.get_objects()\n"
        "            if isinstance(d, Dispatcher) and d.stats.cache_misses]\n"
        "print(sorted(compiled))\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path), MINITRAIN_NUMBA="1")
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert "softmax_rows" in runs[0] and "forward_rows" in runs[0]  # the first one compiled
    assert runs[1] == "[]"
