"""The activations' gradient kernels (docs/kernels.md section 1) called directly against
PyTorch, and their wiring: what each op saves, that its backward calls its kernel, display names,
the kernels' shape checks."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from activation_cases import torch_value_and_grad, value_and_grad

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DTypeError, ShapeError

SHAPES = [(7,), (3, 5), (2, 3, 4), (2, 3, 4, 5)]


def spy_on(monkeypatch, kernel_name: str) -> list:
    """Replace ops.<kernel_name>, in the module whose ops call it, by a wrapper that records its
    arguments."""
    calls = []
    kernel = getattr(ops, kernel_name)
    module = importlib.import_module(kernel.__module__)

    def recording(*args):
        calls.append(args)
        return kernel(*args)

    monkeypatch.setattr(module, kernel_name, recording)
    return calls


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
    y, want = torch_value_and_grad(torch, lambda t: forward(torch, t), x, dy)
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
    y_want, dx_want = torch_value_and_grad(torch, reference, x, dy)

    got = kernel(dy, y_want, axis, opset)  # the kernel alone, on PyTorch's Y
    np.testing.assert_allclose(got, dx_want, rtol=1e-10, atol=1e-12)
    if opset < 13:  # the op has PyTorch's dim alone
        return
    with backend.use_numba(use_numba):  # and the op, forward and backward
        y, dx = value_and_grad(op, x, dy, axis)
    np.testing.assert_allclose(y, y_want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dx, dx_want, rtol=1e-10, atol=1e-12)


def test_opset_below_13_defaults_to_axis_1():
    rng = np.random.default_rng(2)
    y = ops.softmax(rng.standard_normal((2, 12)), 1).array.reshape(2, 3, 4)
    dy = rng.standard_normal(y.shape)
    np.testing.assert_allclose(y.reshape(2, 12).sum(axis=1), 1.0)
    for kernel in (ops.softmax_grad, ops.log_softmax_grad):
        np.testing.assert_array_equal(kernel(dy, y, opset=11), kernel(dy, y, 1, 11))
        assert not np.allclose(kernel(dy, y, opset=11), kernel(dy, y, -1, 11))
    # while opset 13 defaults to the last axis
    np.testing.assert_array_equal(ops.softmax_grad(dy, y), ops.softmax_grad(dy, y, -1, 13))


# op -> (call, kernel, saved name, the attributes backward passes on)
WIRING = {
    "relu": (ops.relu, "relu_grad", "x", ()),
    "leaky_relu": (lambda x: ops.leaky_relu(x, 0.3), "leaky_relu_grad", "out", (0.3,)),
    "sigmoid": (ops.sigmoid, "sigmoid_grad", "out", ()),
    "tanh": (ops.tanh, "tanh_grad", "out", ()),
    "quick_gelu": (lambda x: ops.quick_gelu(x, -0.5), "quick_gelu_grad", "x", (-0.5,)),
    "gelu": (lambda x: ops.gelu(x, "tanh"), "gelu_grad", "x", ("tanh",)),
    "softmax": (lambda x: ops.softmax(x, 0), "softmax_grad", "out", (0,)),
    "log_softmax": (lambda x: ops.log_softmax(x, -2), "log_softmax_grad", "out", (0,)),
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
        assert saved[saved_name] is (y.array if saved_name == "out" else x.array)
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
        np.testing.assert_array_equal(getattr(x, method)().array, op(x).array)
    for method, op in [("softmax", ops.softmax), ("log_softmax", ops.log_softmax)]:
        np.testing.assert_array_equal(getattr(x, method)().array, op(x, -1).array)
        np.testing.assert_array_equal(getattr(x, method)(1).array, op(x, 1).array)
        np.testing.assert_array_equal(getattr(x, method)(dim=0).array, op(x, 0).array)
        np.testing.assert_array_equal(getattr(x, method)(axis=-2).array, op(x, 1).array)
        with pytest.raises(DTypeError):
            getattr(x, method)(dim=0, axis=0)


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
