"""The activations' numba kernels (relu, gelu, softmax, log_softmax) against the generic ones:
every layout and dtype, serial and parallel builds, the inputs they step aside for, logits near a
large offset, and minitrain importing without numba."""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from activation_cases import torch_value_and_grad, value_and_grad

from minitrain import backend, ops
from minitrain.ops.activations import activation

softmax_module = importlib.import_module("minitrain.ops.activations.softmax_family")


@pytest.fixture
def numba_runs(monkeypatch):
    """The names of the numba kernels that ran (each run passes through its module's runner);
    read it with `runs_of`."""
    runs = []
    # each runner, and the position of the kernel's name among its arguments
    runners = [(activation, "_run_elementwise_kernel", 1), (softmax_module, "_run_row_kernel", 0)]
    for module, runner, name_at in runners:
        original = getattr(module, runner)

        def counted(*args, original=original, name_at=name_at):
            result = original(*args)
            runs.append(args[name_at])
            return result

        monkeypatch.setattr(module, runner, counted)
    return runs


def runs_of(numba_runs) -> list:
    """The kernels run since the last look, and forget them."""
    seen = list(numba_runs)
    numba_runs.clear()
    return seen


LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.transpose(2, 0, 1),
    "strided": lambda a: a[:, ::2, 1:],
    "fortran": np.asfortranarray,
}


def _draw(rng, layout, dtype, scale=4.0):
    return LAYOUTS[layout](scale * rng.standard_normal((6, 8, 5))).astype(dtype, copy=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dim", [-1, 0, 1, None])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_numba_softmax_matches_generic(numba_runs, name, dim, layout, dtype):
    rng = np.random.default_rng(3)
    x, dy = _draw(rng, layout, dtype), _draw(rng, layout, dtype, scale=1.0)
    with backend.use_numba(True):
        y_numba, dx_numba = value_and_grad(getattr(ops, name), x, dy, dim)
    assert runs_of(numba_runs) == [name, name + "_grad"]
    with backend.use_numba(False):
        y, dx = value_and_grad(getattr(ops, name), x, dy, dim)
    assert runs_of(numba_runs) == []
    assert y_numba.dtype == y.dtype == dx_numba.dtype == dx.dtype == dtype
    tol = {"rtol": 2e-5, "atol": 2e-6} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-14}
    np.testing.assert_allclose(y_numba, y, **tol)
    np.testing.assert_allclose(dx_numba, dx, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_numba_softmax_serial_and_parallel_builds_agree_at_the_threshold(
    monkeypatch, record_builds, name, dtype
):
    rng = np.random.default_rng(9)
    x, dy = _draw(rng, "contiguous", dtype), _draw(rng, "contiguous", dtype, scale=1.0)
    builds = record_builds(softmax_module, "_row_kernels")
    results = {}
    # at the threshold (x.size) the parallel builds run, one above it the serial ones
    for threshold, parallel in [(x.size, True), (x.size + 1, False)]:
        for kernel in (name, name + "_grad"):
            monkeypatch.setitem(softmax_module._PARALLEL_ELEMENTS, kernel, threshold)
        with backend.use_numba(True):
            results[parallel] = value_and_grad(getattr(ops, name), x, dy)
        assert builds == [parallel, parallel]
        builds.clear()
    for got, want in zip(results[True], results[False], strict=True):
        np.testing.assert_array_equal(got, want)


# The generic tanh form's 1 + tanh(u) and 1 - tanh(u)^2 cancel in the left tail, where the numba
# kernels' sigmoid(2u) does not: there the two differ by the generic kernel's error, |x| u' / 2
# times tanh's rounding near -1 in the gradient (1.4e-6 at x = -4.5 in float32, as PyTorch's).
GELU_TOLERANCE = {
    ("none", np.float32): {"rtol": 1e-5, "atol": 1e-6},
    ("none", np.float64): {"rtol": 1e-13, "atol": 1e-15},
    ("tanh", np.float32): {"rtol": 1e-5, "atol": 5e-6},
    ("tanh", np.float64): {"rtol": 1e-12, "atol": 1e-14},
}


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "serial"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_numba_gelu_matches_generic(monkeypatch, numba_runs, approximate, layout, dtype, parallel):
    kernel = "gelu" if approximate == "none" else "gelu_tanh"
    for name in (kernel, kernel + "_grad"):
        monkeypatch.setitem(activation._PARALLEL_ELEMENTS, name, 0 if parallel else 1 << 62)
    rng = np.random.default_rng(4)
    x, dy = _draw(rng, layout, dtype, scale=6.0), _draw(rng, layout, dtype, scale=1.0)
    with backend.use_numba(True):
        y_numba, dx_numba = value_and_grad(ops.gelu, x, dy, approximate)
    assert runs_of(numba_runs) == [kernel, kernel + "_grad"]
    with backend.use_numba(False):
        y, dx = value_and_grad(ops.gelu, x, dy, approximate)
    assert runs_of(numba_runs) == []
    assert y_numba.dtype == dx_numba.dtype == dtype
    tol = GELU_TOLERANCE[approximate, dtype]
    np.testing.assert_allclose(y_numba, y, **tol)
    np.testing.assert_allclose(dx_numba, dx, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_numba_gelu_matches_high_precision_values(approximate, dtype):
    # against mpmath at 60 digits over the whole range, both tails included
    mpmath = pytest.importorskip("mpmath")
    x = np.concatenate([np.linspace(-14.0, 14.0, 1121), [-37.0, -20.0, 25.0]]).astype(dtype)
    with mpmath.workdps(60):
        want = np.array([_gelu_and_slope(mpmath, float(v), approximate) for v in x])
    with backend.use_numba(True):
        y, dx = value_and_grad(ops.gelu, x, np.ones_like(x), approximate)
    # in the left tail exp carries its argument's rounding (x^2 / 2, or 2|u| of the tanh form,
    # up to hundreds): 6e-6 relative at y = -1e-21 in float32, 6e-14 at y = -1e-94 in float64
    tol = {"rtol": 1e-5, "atol": 1e-30} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-300}
    np.testing.assert_allclose(y, want[:, 0], **tol)
    # the gradient is a difference near its zero (x = -0.75): checked there to its terms' rounding
    tol["atol"] = 2e-7 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(dx, want[:, 1], **tol)


def _gelu_and_slope(mpmath, v: float, approximate: str) -> tuple[float, float]:
    x = mpmath.mpf(v)
    if approximate == "none":
        cdf = mpmath.ncdf(x)
        return float(x * cdf), float(cdf + x * mpmath.npdf(x))
    scale, cubic = mpmath.sqrt(2 / mpmath.pi), mpmath.mpf(0.044715)
    u = scale * (x + cubic * x**3)
    s = 1 / (1 + mpmath.exp(-2 * u))  # (1 + tanh(u)) / 2, without its cancellation
    return float(x * s), float(s + 2 * x * s * (1 - s) * scale * (1 + 3 * cubic * x * x))


def _gelu_inputs(dtype):
    """Random values, both tails, the non-finite, signed zeros and subnormals."""
    tiny = np.finfo(dtype).tiny
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -tiny, tiny / 8, -tiny / 8, 1e-30]
    spread = 6.0 * np.random.default_rng(8).standard_normal(10_007)
    tails = np.linspace(-40.0, 40.0, 801)
    return np.concatenate([spread, tails, specials]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", ["gelu", "gelu_tanh"])
def test_numba_gelu_serial_and_parallel_builds_agree_bit_for_bit(kernel, dtype):
    # an elementwise kernel: the loop order changes which thread computes an element, not how
    x = _gelu_inputs(dtype)
    dy = np.random.default_rng(9).standard_normal(x.size).astype(dtype)
    results = {}
    for parallel in (True, False):
        kernels = activation._gelu_kernels(parallel)
        y, dx = np.empty_like(x), np.empty_like(x)
        getattr(kernels, kernel)(x, y)
        getattr(kernels, kernel + "_grad")(dy, x, dx)
        results[parallel] = y, dx
    for got, want in zip(results[True], results[False], strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_exact_gelu_near_math_erfc_and_at_special_values(dtype):
    x = _gelu_inputs(dtype)
    with backend.use_numba(True):
        y, dx = value_and_grad(ops.gelu, x, np.ones_like(x))
    finite = np.isfinite(x)
    values = x[finite].astype(np.float64).tolist()
    want = np.array([v * 0.5 * math.erfc(-v * math.sqrt(0.5)) for v in values])
    # in float32 math.erfc (float64) is exact to the float32 result: within 20 ulps for |x| <= 5
    # (12 at most for |x| <= 3: P / Q's 5.7e-7); in the left tail x^2 / 2 carries its rounding
    # into exp (see test_numba_gelu_matches_high_precision_values), so relatively there,
    if dtype == np.float32:
        middle = np.abs(x[finite]) <= 5.0
        ulps = np.abs(y[finite] - want) / np.spacing(np.abs(want).astype(dtype))
        assert ulps[middle].max() <= 20
    # (below EXP_MIN's 1e-37 and 1e-307 the lower tail is 0, by design; math.erfc carries the
    # rounding of x / sqrt(2) into its tail, 2e-13 relative at x = -37 in float64)
    tol = {"rtol": 1e-5, "atol": 1e-36} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-300}
    np.testing.assert_allclose(y[finite], want, **tol)
    # subnormals, zeros: gelu(x) = x / 2 and gelu'(x) = 1/2 to P / Q's error; sign kept
    small = finite & (np.abs(x) <= 1e-30)
    rtol = 1e-6 if dtype == np.float32 else 1e-15
    subnormal_step = float(np.finfo(dtype).smallest_subnormal)
    np.testing.assert_allclose(y[small], x[small] / 2, rtol=rtol, atol=subnormal_step)
    np.testing.assert_array_equal(np.signbit(y[small]), np.signbit(x[small]))
    np.testing.assert_allclose(dx[small], 0.5, rtol=rtol)
    # at +-inf and NaN as the generic kernel (and x * Phi(x) as written): gelu(inf) = inf, and
    # NaN for gelu(-inf) = -inf * 0 and the slopes at +-inf, inf * phi = inf * 0
    special = ~finite
    with backend.use_numba(False), np.errstate(invalid="ignore"):
        y_generic, dx_generic = value_and_grad(ops.gelu, x[special], np.ones_like(x[special]))
    np.testing.assert_array_equal(y[special], y_generic)
    np.testing.assert_array_equal(dx[special], dx_generic)
    assert y[x == np.inf] == np.inf


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "serial"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_numba_relu_matches_generic_bit_for_bit(monkeypatch, numba_runs, layout, dtype, parallel):
    monkeypatch.setitem(activation._PARALLEL_ELEMENTS, "relu", 0 if parallel else 1 << 62)
    monkeypatch.setitem(activation._PARALLEL_ELEMENTS, "relu_grad", 0 if parallel else 1 << 62)
    rng = np.random.default_rng(6)
    base, dy_base = rng.standard_normal((6, 8, 5)), rng.standard_normal((6, 8, 5))
    # the kinks and the non-finite, spread so that every layout's view holds some of each:
    # 0, -0, NaN and +-inf in x; NaN and inf in dY on both sides of the kink
    specials = [0.0, -0.0, np.nan, np.inf, -np.inf]
    picks = rng.random(base.shape) < 0.4
    base[picks] = rng.choice(specials, picks.sum())
    dy_picks = rng.random(base.shape) < 0.4
    dy_base[dy_picks] = rng.choice([np.nan, np.inf, -np.inf], dy_picks.sum())
    x, dy = (LAYOUTS[layout](a).astype(dtype, copy=False) for a in (base, dy_base))
    with backend.use_numba(True):
        y_numba, dx_numba = value_and_grad(ops.relu, x, dy)
    assert runs_of(numba_runs) == ["relu", "relu_grad"]
    with backend.use_numba(False):
        y, dx = value_and_grad(ops.relu, x, dy)
    assert y_numba.dtype == dx_numba.dtype == dtype
    np.testing.assert_array_equal(y_numba, y)  # NaN where NaN
    np.testing.assert_array_equal(dx_numba, dx)
    # dY's NaN and inf where x <= 0 or x is NaN give 0, not NaN (no dY * (x > 0))
    off = ~(x > 0)
    assert (off & ~np.isfinite(dy)).any() and (np.isnan(x) & ~np.isfinite(dy)).any()
    assert (dx_numba[off] == 0).all()
    np.testing.assert_array_equal(dx_numba[x > 0], dy[x > 0])


def test_numba_relu_keeps_a_fortran_layout():
    x = np.asfortranarray(np.random.default_rng(7).standard_normal((4, 6)))
    with backend.use_numba(True):
        y, dx = value_and_grad(ops.relu, x, np.asfortranarray(np.ones((4, 6))))
    assert y.flags.f_contiguous and dx.flags.f_contiguous
    np.testing.assert_array_equal(dx, (x > 0).astype(np.float64))


def test_numba_kernels_step_aside_where_they_do_not_apply(numba_runs):
    rng = np.random.default_rng(5)
    with backend.use_numba(True):
        # float16, empty and 0-d tensors run the generic kernels
        half = rng.standard_normal((3, 4)).astype(np.float16)
        y, dx = value_and_grad(ops.softmax, half, np.ones((3, 4), np.float16))
        assert y.dtype == dx.dtype == np.float16
        np.testing.assert_allclose(y.astype(np.float64).sum(axis=1), 1.0, rtol=1e-3)
        for approximate in ("none", "tanh"):
            y, dx = value_and_grad(ops.gelu, half, np.ones((3, 4), np.float16), approximate)
            assert y.dtype == dx.dtype == np.float16
        empty_y, empty_dx = value_and_grad(ops.log_softmax, np.zeros((2, 0)), np.zeros((2, 0)))
        assert empty_y.shape == empty_dx.shape == (2, 0)
        scalar_y, scalar_dx = value_and_grad(ops.softmax, np.array(3.0), np.array(1.0))
        assert scalar_y == 1.0 and scalar_dx == 0.0
    assert runs_of(numba_runs) == []


# Rows of logits near a large offset: x - max is exact there, so the results are as accurate as
# near 0. The numba kernels' fastmath "reassoc" once rewrote (x - max) - log(sum) as
# x - (max + log(sum)), which rounds to max's spacing: log_softmax was off by 2e-4 at 1e4 in
# float32, by 2 at 1e8, and by 0.9 at 1e16 in float64.
LARGE_OFFSETS = [
    (np.float32, 1e4),
    (np.float32, 1e6),
    (np.float32, 1e8),
    (np.float64, 1e8),
    (np.float64, 1e12),
    (np.float64, 1e16),
]


@pytest.mark.parametrize("dtype, offset", LARGE_OFFSETS, ids=lambda v: getattr(v, "__name__", v))
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_numba_softmax_of_logits_near_a_large_offset_matches_torch(
    torch, numba_runs, name, dtype, offset
):
    rng = np.random.default_rng(10)
    x = (offset + 3.0 * rng.standard_normal((8, 200))).astype(dtype)  # rows the vector loops run
    dy = rng.standard_normal(x.shape).astype(dtype)
    # the reference: PyTorch in float64 on the same (rounded) logits
    fn = getattr(torch, name)
    y_want, dx_want = torch_value_and_grad(
        torch, lambda t: fn(t, -1), x.astype(np.float64), dy.astype(np.float64)
    )
    with backend.use_numba(True):
        y, dx = value_and_grad(getattr(ops, name), x, dy)
    assert runs_of(numba_runs) == [name, name + "_grad"]
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-13}
    np.testing.assert_allclose(y, y_want, **tol)
    np.testing.assert_allclose(dx, dx_want, **tol)


def test_importing_minitrain_imports_no_numba_and_numba_off_needs_none():
    script = (
        "import sys, numpy as np, minitrain as mt\n"
        "assert 'numba' not in sys.modules\n"
        "x = mt.tensor(np.ones((2, 3)), requires_grad=True)\n"
        "mt.ops.softmax(x).sum().backward(); mt.ops.gelu(x).sum().backward()\n"
        "assert 'numba' not in sys.modules\n"
    )
    env = dict(os.environ, MINITRAIN_NUMBA="0")
    subprocess.run([sys.executable, "-c", script], check=True, env=env)
