"""The activations' argument checks: bad arguments, and integer or bool input refused, or
computed in float32 or exactly where PyTorch computes it so."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DTypeError, ShapeError


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda x: ops.softmax_grad(x.array, x.array, opset=0), ValueError),
        (lambda x: ops.log_softmax_grad(x.array, x.array, opset="13"), ValueError),
        (lambda x: ops.softmax_grad(x.array, x.array, opset=True), ValueError),
        (lambda x: ops.softmax(x, 3), ShapeError),
        (lambda x: ops.softmax(x, axis=3), ShapeError),
        (lambda x: ops.softmax(x, dim=(0, 1)), DTypeError),
        (lambda x: ops.log_softmax(x, 0, axis=0), DTypeError),  # dim and axis, not both
        (lambda x: ops.log_softmax(x, 0, np.int64), DTypeError),
        (lambda x: ops.log_softmax_grad(x.array, x.array, axis=-4), ShapeError),
        # opset < 13 flattens at the axis: a 1-D tensor has no axis 1 to flatten at
        (lambda x: ops.softmax_grad(x.array[0, 0], x.array[0, 0], opset=11), ShapeError),
        (lambda x: ops.softmax(mt.tensor(np.ones((2, 3), np.int64))), DTypeError),
        (lambda x: ops.gelu(x, "erf"), ValueError),
        (lambda x: ops.gelu_grad(x.array, x.array, approximate=None), ValueError),
        (lambda x: ops.leaky_relu(x, -0.1), ValueError),
        (lambda x: ops.leaky_relu(x, negative_slope=float("inf")), ValueError),
        (lambda x: ops.leaky_relu_grad(x.array, x.array, alpha=-1.0), ValueError),
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
    np.testing.assert_allclose(y.array, expected.numpy(), rtol=1e-6)


def test_relu_of_integers_stays_exact_as_in_torch():
    y = ops.relu(mt.tensor(np.array([-2, 0, 1, 3, 10], np.int64)))
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y.array, [0, 0, 1, 3, 10])
