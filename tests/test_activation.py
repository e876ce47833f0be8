"""Activations: every gradient kernel called directly against PyTorch, the numba kernels against
the generic ones, the tails (logits of 1e4, sigmoid of 1e4), the kinks, and the wiring (what each
op saves, that its backward calls its kernel, display names, argument checks)."""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DTypeError, ShapeError
from minitrain.ops import activation

SHAPES = [(7,), (3, 5), (2, 3, 4), (2, 3, 4, 5)]


@contextlib.contextmanager
def no_float_warnings():
    """Fail on any overflow, invalid or divide-by-zero (underflow to 0 is fine)."""
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")
        yield


@pytest.fixture
def numba_runs(monkeypatch):
    """The names of the numba kernels that ran (their layout helper returned a result); read it
    with `runs_of`."""
    runs = []
    for helper in ("_by_rows", "_by_elements"):
        original = getattr(activation, helper)

        def counted(*args, original=original):
            result = original(*args)
            if result is not None:
                runs.append(args[0])
            return result

        monkeypatch.setattr(activation, helper, counted)
    return runs


def runs_of(numba_runs) -> list:
    """The kernels run since the last look, and forget them."""
    seen = list(numba_runs)
    numba_runs.clear()
    return seen


def spy_on(monkeypatch, kernel_name: str) -> list:
    """Replace activation.<kernel_name> by a wrapper that records its arguments."""
    calls = []
    kernel = getattr(activation, kernel_name)

    def recording(*args):
        calls.append(args)
        return kernel(*args)

    monkeypatch.setattr(activation, kernel_name, recording)
    return calls


def _value_and_grad(op, x, dy, *args):
    """op(x, *args) and d(sum(op * dy))/dx as arrays; x keeps its layout (Tensor does not copy)."""
    leaf = mt.Tensor(x, requires_grad=True)
    out = op(leaf, *args)
    (grad,) = mt.grad(out, [leaf], grad_outputs=mt.Tensor(dy))
    return out.data, grad.data


def _torch_value_and_grad(torch, fn, x, dy):
    leaf = torch.tensor(x, requires_grad=True)
    out = fn(leaf)
    out.backward(torch.tensor(dy))
    return out.detach().numpy(), leaf.grad.numpy()


# --- the kernels against PyTorch ---------------------------------------------------------------

# Each: the kernel as a function of (dY, X, Y), and PyTorch's forward of the same activation.
ELEMENTWISE_KERNELS = {
    "relu_grad": (lambda dy, x, y: ops.relu_grad(dy, x), lambda torch, x: torch.relu(x)),
    "leaky_relu_grad": (
        lambda dy, x, y: ops.leaky_relu_grad(dy, y),
        lambda torch, x: torch.nn.functional.leaky_relu(x),
    ),
    "leaky_relu_grad_alpha0.3": (
        lambda dy, x, y: ops.leaky_relu_grad(dy, y, alpha=0.3),
        lambda torch, x: torch.nn.functional.leaky_relu(x, 0.3),
    ),
    "sigmoid_grad": (lambda dy, x, y: ops.sigmoid_grad(dy, y), lambda torch, x: torch.sigmoid(x)),
    "tanh_grad": (lambda dy, x, y: ops.tanh_grad(dy, y), lambda torch, x: torch.tanh(x)),
    "quick_gelu_grad": (
        lambda dy, x, y: ops.quick_gelu_grad(dy, x),
        lambda torch, x: x * torch.sigmoid(1.702 * x),
    ),
    "quick_gelu_grad_alpha-1.3": (
        lambda dy, x, y: ops.quick_gelu_grad(dy, x, alpha=-1.3),
        lambda torch, x: x * torch.sigmoid(-1.3 * x),
    ),
    "gelu_grad": (
        lambda dy, x, y: ops.gelu_grad(dy, x),
        lambda torch, x: torch.nn.functional.gelu(x),
    ),
    "gelu_grad_tanh": (
        lambda dy, x, y: ops.gelu_grad(dy, x, approximate="tanh"),
        lambda torch, x: torch.nn.functional.gelu(x, approximate="tanh"),
    ),
}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", sorted(ELEMENTWISE_KERNELS))
def test_elementwise_kernel_matches_torch(torch, name, shape):
    kernel, forward = ELEMENTWISE_KERNELS[name]
    rng = np.random.default_rng(0)
    x, dy = 3.0 * rng.standard_normal(shape), rng.standard_normal(shape)
    y, want = _torch_value_and_grad(torch, lambda t: forward(torch, t), x, dy)
    got = kernel(dy, x, y)  # Y is PyTorch's forward output: the kernel alone is under test
    assert got.shape == shape and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# (shape, axis, opset): opset >= 13 is one axis, opset < 13 flattens to 2-D at the axis.
SOFTMAX_CASES = [
    ((7,), None, 13),
    ((3, 5), None, 13),
    ((3, 5), 0, 13),
    ((2, 3, 4), 1, 13),
    ((2, 3, 4), -3, 13),
    ((2, 3, 4, 5), 2, 13),
    ((2, 3, 4, 5), -1, 13),
    ((2, 3, 4), None, 11),
    ((2, 3, 4), 0, 11),
    ((2, 3, 4, 5), 2, 11),
    ((2, 3, 4, 5), -1, 11),
    ((2, 3, 4, 5), None, 1),
]


def _torch_softmax(torch, fn, shape, axis, opset):
    """PyTorch's twin: softmax over `dim`, or over the rows of x flattened to 2-D at the axis."""
    if opset >= 13:
        return lambda t: fn(t, -1 if axis is None else axis)
    start = (1 if axis is None else axis) % len(shape)
    rows = math.prod(shape[:start])
    return lambda t: fn(t.reshape(rows, -1), 1).reshape(shape)


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "generic"])
@pytest.mark.parametrize(
    "shape, axis, opset",
    SOFTMAX_CASES,
    ids=[f"{'x'.join(map(str, s))}_axis{a}_opset{o}" for s, a, o in SOFTMAX_CASES],
)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_family_matches_torch(torch, name, shape, axis, opset, use_numba):
    op, kernel = getattr(ops, name), getattr(ops, name + "_grad")
    reference = _torch_softmax(torch, getattr(torch, name), shape, axis, opset)
    rng = np.random.default_rng(1)
    x, dy = 3.0 * rng.standard_normal(shape), rng.standard_normal(shape)
    y_want, dx_want = _torch_value_and_grad(torch, reference, x, dy)

    got = kernel(dy, y_want, axis, opset)  # the kernel alone, on PyTorch's Y
    np.testing.assert_allclose(got, dx_want, rtol=1e-10, atol=1e-12)
    with backend.use_numba(use_numba):  # and the op, forward and backward
        y, dx = _value_and_grad(op, x, dy, axis, opset)
    np.testing.assert_allclose(y, y_want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dx, dx_want, rtol=1e-10, atol=1e-12)


def test_opset_below_13_defaults_to_axis_1():
    rng = np.random.default_rng(2)
    y = ops.softmax(rng.standard_normal((2, 3, 4)), opset=11).data
    dy = rng.standard_normal(y.shape)
    np.testing.assert_allclose(y.reshape(2, 12).sum(axis=1), 1.0)
    for kernel in (ops.softmax_grad, ops.log_softmax_grad):
        np.testing.assert_array_equal(kernel(dy, y, opset=11), kernel(dy, y, 1, 11))
        assert not np.allclose(kernel(dy, y, opset=11), kernel(dy, y, -1, 11))
    # while opset 13 defaults to the last axis
    np.testing.assert_array_equal(ops.softmax_grad(dy, y), ops.softmax_grad(dy, y, -1, 13))


# --- numba against the generic kernels ---------------------------------------------------------

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
@pytest.mark.parametrize("axis, opset", [(-1, 13), (0, 13), (1, 13), (None, 11), (-1, 1)])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_numba_softmax_matches_generic(numba_runs, name, axis, opset, layout, dtype):
    rng = np.random.default_rng(3)
    x, dy = _draw(rng, layout, dtype), _draw(rng, layout, dtype, scale=1.0)
    with backend.use_numba(True):
        y_numba, dx_numba = _value_and_grad(getattr(ops, name), x, dy, axis, opset)
    assert runs_of(numba_runs) == [name, name + "_grad"]
    with backend.use_numba(False):
        y, dx = _value_and_grad(getattr(ops, name), x, dy, axis, opset)
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
    builds = record_builds(activation, "_row_kernels")
    results = {}
    # at the threshold (x.size) the parallel builds run, one above it the serial ones
    for threshold, parallel in [(x.size, True), (x.size + 1, False)]:
        for kernel in (name, name + "_grad"):
            monkeypatch.setitem(activation._PARALLEL_ELEMENTS, kernel, threshold)
        with backend.use_numba(True):
            results[parallel] = _value_and_grad(getattr(ops, name), x, dy)
        assert builds == [parallel, parallel]
        builds.clear()
    for got, want in zip(results[True], results[False], strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_numba_gelu_matches_generic(numba_runs, layout, dtype):
    rng = np.random.default_rng(4)
    x, dy = _draw(rng, layout, dtype, scale=6.0), _draw(rng, layout, dtype, scale=1.0)
    with backend.use_numba(True):
        y_numba, dx_numba = _value_and_grad(ops.gelu, x, dy)
    assert runs_of(numba_runs) == ["gelu", "gelu_grad"]
    with backend.use_numba(False):
        y, dx = _value_and_grad(ops.gelu, x, dy)
    assert runs_of(numba_runs) == []
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-15}
    np.testing.assert_allclose(y_numba, y, **tol)
    np.testing.assert_allclose(dx_numba, dx, **tol)


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
        y_numba, dx_numba = _value_and_grad(ops.relu, x, dy)
    assert runs_of(numba_runs) == ["relu", "relu_grad"]
    with backend.use_numba(False):
        y, dx = _value_and_grad(ops.relu, x, dy)
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
        y, dx = _value_and_grad(ops.relu, x, np.asfortranarray(np.ones((4, 6))))
    assert y.flags.f_contiguous and dx.flags.f_contiguous
    np.testing.assert_array_equal(dx, (x > 0).astype(np.float64))


def test_numba_kernels_step_aside_where_they_do_not_apply(numba_runs):
    rng = np.random.default_rng(5)
    with backend.use_numba(True):
        # float16, the tanh form of gelu, empty and 0-d tensors run the generic kernels
        half = rng.standard_normal((3, 4)).astype(np.float16)
        y, dx = _value_and_grad(ops.softmax, half, np.ones((3, 4), np.float16))
        assert y.dtype == dx.dtype == np.float16
        np.testing.assert_allclose(y.astype(np.float64).sum(axis=1), 1.0, rtol=1e-3)
        _value_and_grad(ops.gelu, rng.standard_normal((3, 4)), np.ones((3, 4)), "tanh")
        empty_y, empty_dx = _value_and_grad(ops.log_softmax, np.zeros((2, 0)), np.zeros((2, 0)))
        assert empty_y.shape == empty_dx.shape == (2, 0)
        scalar_y, scalar_dx = _value_and_grad(ops.softmax, np.array(3.0), np.array(1.0))
        assert scalar_y == 1.0 and scalar_dx == 0.0
    assert runs_of(numba_runs) == []


# --- stability ---------------------------------------------------------------------------------


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "generic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_of_logits_1e4_is_finite_and_exact(use_numba, dtype):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4 + 1.0]], dtype=dtype)
    dy = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]], dtype=dtype)
    with backend.use_numba(use_numba), no_float_warnings():
        y, dx = _value_and_grad(ops.softmax, x, dy)
        log_y, log_dx = _value_and_grad(ops.log_softmax, x, dy)
    for array in (y, dx, log_y, log_dx):
        assert np.isfinite(array).all() and array.dtype == dtype
    e = math.e
    np.testing.assert_allclose(y, [[1, 0, 0], [1 / (e + 2), 1 / (e + 2), e / (e + 2)]], rtol=1e-6)
    np.testing.assert_allclose(log_y[0], [0.0, -2e4, -1e4], rtol=1e-6)
    # row 0 is one-hot: the gradient Y * (dY - sum(Y dY)) vanishes everywhere
    np.testing.assert_allclose(dx[0], 0.0, atol=1e-6)
    # log_softmax: dY - softmax * sum(dY) = dY - (1, 0, 0) * 6
    np.testing.assert_allclose(log_dx[0], [-5.0, 2.0, 3.0], rtol=1e-6)


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
    y_want, dx_want = _torch_value_and_grad(
        torch, lambda t: fn(t, -1), x.astype(np.float64), dy.astype(np.float64)
    )
    with backend.use_numba(True):
        y, dx = _value_and_grad(getattr(ops, name), x, dy)
    assert runs_of(numba_runs) == [name, name + "_grad"]
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-13, "atol": 1e-13}
    np.testing.assert_allclose(y, y_want, **tol)
    np.testing.assert_allclose(dx, dx_want, **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_of_1e4_is_exactly_0_and_1_without_warnings(dtype):
    x = mt.tensor(np.array([-1e4, -50.0, 0.0, 50.0, 1e4], dtype=dtype), requires_grad=True)
    with no_float_warnings():
        y = ops.sigmoid(x)
        y.sum().backward()
    assert y.data[0] == 0.0 and y.data[-1] == 1.0 and y.data[2] == 0.5
    assert 0.0 < y.data[1] < 1e-21  # e^-50, kept to full relative precision by the two branches
    np.testing.assert_allclose(y.data[1], math.exp(-50.0) / (1 + math.exp(-50.0)), rtol=1e-6)
    assert np.isfinite(x.grad.data).all()
    assert x.grad.data[0] == 0.0 and x.grad.data[-1] == 0.0 and x.grad.data[2] == 0.25


# Each: the call, and its limits as x -> -inf and +inf: (value, gradient) on each side, in units
# of x for the value (gelu(x) -> x for x >> 0, so "1" means the value is x itself).
TAIL_LIMITS = {
    "quick_gelu": (ops.quick_gelu, ((0, 0), (1, 1))),
    "silu": (ops.silu, ((0, 0), (1, 1))),
    "gelu": (ops.gelu, ((0, 0), (1, 1))),
    "gelu_tanh": (lambda x: ops.gelu(x, "tanh"), ((0, 0), (1, 1))),
    "quick_gelu_negative_alpha": (lambda x: ops.quick_gelu(x, -2.0), ((1, 1), (0, 0))),
}


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "generic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(TAIL_LIMITS))
def test_gelu_family_in_the_tails_is_exact_without_warnings(name, dtype, use_numba):
    call, (left, right) = TAIL_LIMITS[name]
    values = np.array([-1e30, -1e4, 1e4, 1e30], dtype=dtype)
    x = mt.tensor(values, requires_grad=True)
    with backend.use_numba(use_numba), no_float_warnings():
        y = call(x)
        y.sum().backward()
    value_units, grads = zip(left, left, right, right, strict=True)
    np.testing.assert_array_equal(y.data, values * np.array(value_units, dtype=dtype))
    np.testing.assert_array_equal(x.grad.data, grads)


# --- kinks and special cases -------------------------------------------------------------------


def test_relu_gradient_at_exactly_zero_is_zero():
    x = mt.tensor(np.array([-1.0, 0.0, -0.0, 2.0]), requires_grad=True)
    ops.relu(x).sum().backward()
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(
        ops.relu_grad(np.full(3, 5.0), np.array([-1.0, 0.0, 1.0])), [0, 0, 5]
    )


@pytest.mark.parametrize("alpha", [0.01, 0.25, 0.0, 2.0])
def test_leaky_relu_gradient_at_exactly_zero_is_alpha(alpha):
    x = mt.tensor(np.array([-3.0, 0.0, 4.0]), requires_grad=True)
    y = ops.leaky_relu(x, alpha)
    np.testing.assert_array_equal(y.data, [-3.0 * alpha, 0.0, 4.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.data, [alpha, alpha, 1.0])
    np.testing.assert_array_equal(
        ops.leaky_relu_grad(np.full(3, 2.0), np.array([-0.5, 0.0, 1.0]), alpha),
        [2 * alpha] * 2 + [2],
    )


def test_silu_is_quick_gelu_with_alpha_1_and_matches_torch(torch):
    values = np.random.default_rng(6).standard_normal((4, 5))
    x, x1 = mt.tensor(values, requires_grad=True), mt.tensor(values, requires_grad=True)
    y, y1 = ops.silu(x), ops.quick_gelu(x1, alpha=1.0)
    assert y.grad_fn.name == "QuickGeluGrad"
    np.testing.assert_array_equal(y.data, y1.data)
    y.sum().backward()
    y1.sum().backward()
    np.testing.assert_array_equal(x.grad.data, x1.grad.data)

    tx = torch.tensor(values, requires_grad=True)
    ty = torch.nn.functional.silu(tx)
    ty.sum().backward()
    np.testing.assert_allclose(y.data, ty.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "generic"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch_over_a_wide_range(torch, approximate, dtype, use_numba):
    values = np.concatenate([np.linspace(-12.0, 12.0, 481), [0.0, -40.0, 40.0]]).astype(dtype)
    upstream = np.random.default_rng(7).standard_normal(values.shape).astype(dtype)
    with backend.use_numba(use_numba):
        y, dx = _value_and_grad(lambda t: ops.gelu(t, approximate), values, upstream)
    y_want, dx_want = _torch_value_and_grad(
        torch, lambda t: torch.nn.functional.gelu(t, approximate=approximate), values, upstream
    )
    # float32 near x = -5, where tanh(u) rounds to -1 or one ulp above it, 1 - t*t is 0 or 1e-7
    # (times |x| * 4 in the gradient): PyTorch and minitrain may land on either side.
    tol = {"rtol": 1e-6, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-14}
    assert y.dtype == dx.dtype == dtype
    np.testing.assert_allclose(y, y_want, **tol)
    np.testing.assert_allclose(dx, dx_want, **tol)


def test_numpy_erfc_is_accurate_to_a_few_ulp():
    # erfc for the generic (numpy) gelu: Cody's rational approximations against libm's erfc
    grid = np.concatenate(
        [
            np.linspace(-8.0, 26.0, 20001),
            np.geomspace(1e-300, 0.5, 200),
            -np.geomspace(1e-8, 6, 200),
        ]
    )
    got = activation._erfc(grid)
    want = np.array([math.erfc(v) for v in grid])
    np.testing.assert_allclose(got, want, rtol=2e-15, atol=0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 30.0, 1e300, -1e300, np.nan])
    with no_float_warnings():
        np.testing.assert_array_equal(activation._erfc(special), [1, 1, 0, 2, 0, 0, 2, np.nan])


# --- wiring ------------------------------------------------------------------------------------

# op -> (call, kernel, saved name, the attributes backward passes on)
WIRING = {
    "relu": (ops.relu, "relu_grad", "x", ()),
    "leaky_relu": (lambda x: ops.leaky_relu(x, 0.3), "leaky_relu_grad", "out", (0.3,)),
    "sigmoid": (ops.sigmoid, "sigmoid_grad", "out", ()),
    "tanh": (ops.tanh, "tanh_grad", "out", ()),
    "quick_gelu": (lambda x: ops.quick_gelu(x, -0.5), "quick_gelu_grad", "x", (-0.5,)),
    "gelu": (lambda x: ops.gelu(x, "tanh"), "gelu_grad", "x", ("tanh",)),
    "softmax": (lambda x: ops.softmax(x, 0, 11), "softmax_grad", "out", (0, 11)),
    "log_softmax": (lambda x: ops.log_softmax(x, -2), "log_softmax_grad", "out", (0, 13)),
}


@pytest.mark.parametrize("op_name", sorted(WIRING))
def test_backward_calls_its_kernel_with_what_forward_saved(monkeypatch, op_name):
    call, kernel_name, saved_name, attrs = WIRING[op_name]
    calls = spy_on(monkeypatch, kernel_name)
    x = mt.tensor(np.random.default_rng(8).standard_normal((2, 3)), requires_grad=True)
    with backend.use_numba(False):
        y = call(x)
        saved = y.grad_fn.saved_arrays()
        assert list(saved) == [saved_name]  # exactly what the kernel reads
        assert saved[saved_name] is (y.data if saved_name == "out" else x.data)
        y.backward(np.ones((2, 3)))
    assert len(calls) == 1
    dy, saved_arg, *rest = calls[0]
    assert saved_arg is saved[saved_name]
    assert tuple(rest) == attrs
    np.testing.assert_array_equal(dy, np.ones((2, 3)))


def test_numba_backward_falls_back_to_the_kernel(monkeypatch):
    calls = spy_on(monkeypatch, "softmax_grad")
    with backend.use_numba(True):
        x = mt.tensor(np.ones((2, 3), np.float16), requires_grad=True)
        ops.softmax(x).backward(np.ones((2, 3), np.float16))
    assert len(calls) == 1


GRAD_KERNELS = {
    "relu": "ReluGrad",
    "leaky_relu": "LeakyReluGrad",
    "sigmoid": "SigmoidGrad",
    "tanh": "TanhGrad",
    "quick_gelu": "QuickGeluGrad",
    "gelu": "GeluGrad",
    "softmax": "SoftmaxGrad",
    "log_softmax": "LogSoftmaxGrad",
}


@pytest.mark.parametrize("op_name", sorted(GRAD_KERNELS))
def test_grad_kernel_display_name(op_name):
    assert ops.registry()[op_name].grad_kernel == GRAD_KERNELS[op_name]
    call = WIRING[op_name][0]
    assert (
        call(mt.tensor(np.ones((2, 3)), requires_grad=True)).grad_fn.name == GRAD_KERNELS[op_name]
    )


def test_tensor_methods():
    x = mt.tensor(np.random.default_rng(9).standard_normal((2, 3, 4)))
    for method, op in [("relu", ops.relu), ("sigmoid", ops.sigmoid), ("tanh", ops.tanh)]:
        np.testing.assert_array_equal(getattr(x, method)().data, op(x).data)
    for method, op in [("softmax", ops.softmax), ("log_softmax", ops.log_softmax)]:
        np.testing.assert_array_equal(getattr(x, method)().data, op(x, -1).data)
        np.testing.assert_array_equal(getattr(x, method)(1).data, op(x, 1).data)
        np.testing.assert_array_equal(getattr(x, method)(dim=0).data, op(x, 0).data)
        np.testing.assert_array_equal(getattr(x, method)(axis=-2).data, op(x, 1).data)
        with pytest.raises(DTypeError):
            getattr(x, method)(dim=0, axis=0)


# --- argument checks ---------------------------------------------------------------------------

KERNELS_BY_NAME = {
    "relu_grad": ops.relu_grad,
    "leaky_relu_grad": ops.leaky_relu_grad,
    "sigmoid_grad": ops.sigmoid_grad,
    "tanh_grad": ops.tanh_grad,
    "quick_gelu_grad": ops.quick_gelu_grad,
    "gelu_grad": ops.gelu_grad,
    "softmax_grad": ops.softmax_grad,
    "log_softmax_grad": ops.log_softmax_grad,
}


@pytest.mark.parametrize("name", sorted(KERNELS_BY_NAME))
def test_kernel_shape_mismatch_names_the_kernel_and_both_shapes(name):
    with pytest.raises(ShapeError) as info:
        KERNELS_BY_NAME[name](np.ones((2, 3)), np.ones((3, 2)))
    message = str(info.value)
    assert name in message and "(2, 3)" in message and "(3, 2)" in message


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda x: ops.softmax(x, opset=0), ValueError),
        (lambda x: ops.log_softmax(x, opset="13"), ValueError),
        (lambda x: ops.softmax_grad(x.data, x.data, opset=True), ValueError),
        (lambda x: ops.softmax(x, axis=3), ShapeError),
        (lambda x: ops.softmax(x, axis=(0, 1)), DTypeError),
        (lambda x: ops.log_softmax_grad(x.data, x.data, axis=-4), ShapeError),
        (lambda x: ops.softmax(x[0, 0], opset=11), ShapeError),  # 1-D: no axis 1 to flatten at
        (lambda x: ops.softmax(mt.tensor(np.ones((2, 3), np.int64))), DTypeError),
        (lambda x: ops.gelu(x, "erf"), ValueError),
        (lambda x: ops.gelu_grad(x.data, x.data, approximate=None), ValueError),
        (lambda x: ops.leaky_relu(x, -0.1), ValueError),
        (lambda x: ops.leaky_relu_grad(x.data, x.data, alpha=-1.0), ValueError),
        (lambda x: ops.quick_gelu(x, float("nan")), ValueError),
        (lambda x: ops.quick_gelu(x, "1.702"), DTypeError),
    ],
)
def test_bad_arguments_raise(call, error):
    with pytest.raises(error):
        call(mt.tensor(np.ones((2, 3, 4))))


NON_INTEGER_ACTIVATIONS = {
    "gelu": ops.gelu,
    "gelu_tanh": lambda x: ops.gelu(x, "tanh"),
    "leaky_relu": ops.leaky_relu,
    "quick_gelu": ops.quick_gelu,
    "silu": ops.silu,
    "softmax": ops.softmax,
    "log_softmax": ops.log_softmax,
}


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "generic"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("name", sorted(NON_INTEGER_ACTIVATIONS))
def test_activations_with_fractional_values_refuse_integer_and_bool_input(name, dtype, use_numba):
    # gelu of int64 [-2, 0, 1, 3, 10] was [0, 0, 0, 0, 10]: Phi(x) cast back to x's dtype
    x = mt.tensor(np.array([-2, 0, 1, 3, 10]).astype(dtype))
    op_name = name.removesuffix("_tanh")
    with backend.use_numba(use_numba), pytest.raises(DTypeError) as info:
        NON_INTEGER_ACTIVATIONS[name](x)
    assert str(info.value) == f"{op_name}: needs a floating-point input, got {np.dtype(dtype)}"


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
@pytest.mark.parametrize("name", ["sigmoid", "tanh"])
def test_sigmoid_and_tanh_of_integers_are_float32_as_in_torch(torch, name, dtype):
    # (sigmoid of uint8 used to wrap around in -abs(x), tanh of bool to come out float16)
    values = np.array([-2, 0, 1, 3, 200]).astype(dtype)
    y = getattr(ops, name)(mt.tensor(values))
    expected = getattr(torch, name)(torch.from_numpy(values))
    assert y.dtype == np.float32 and expected.dtype == torch.float32
    np.testing.assert_allclose(y.data, expected.numpy(), rtol=1e-6)


def test_relu_of_integers_stays_exact_as_in_torch():
    y = ops.relu(mt.tensor(np.array([-2, 0, 1, 3, 10], np.int64)))
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y.data, [0, 0, 1, 3, 10])


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
