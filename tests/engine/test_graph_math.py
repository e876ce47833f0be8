"""The graph math (ops/core/graph_math.py): numpy's names over recorded ops, the module a
backward computes with under create_graph. A Tensor argument records the op of the same
meaning; what has no derivative is a constant; a name it lacks is refused, never run by numpy on
a Tensor's values."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend
from minitrain.ops.core.graph_math import GraphMath, graph_math

XP = graph_math(np)


def _leaf(values):
    return mt.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_a_tensors_array_module_is_the_graph_math_and_an_arrays_is_numpy():
    assert backend.array_module(_leaf([1.0])) is XP
    assert backend.array_module(np.ones(2), _leaf([1.0])) is XP
    assert backend.array_module(np.ones(2), 3.0) is np


def test_a_function_of_a_tensor_records_its_op_and_differentiates():
    x = _leaf([0.5, 1.5])
    y = XP.sum(XP.exp(x) * XP.sin(x), axis=0, keepdims=True)
    assert isinstance(y, mt.Tensor) and y.requires_grad
    (g,) = mt.grad(y.sum(), [x])
    values = np.array([0.5, 1.5])
    np.testing.assert_allclose(g.numpy(), np.exp(values) * (np.sin(values) + np.cos(values)))


def test_arrays_alone_stay_arrays():
    a = np.array([1.0, -2.0])
    assert type(XP.exp(a)) is np.ndarray
    assert type(XP.where(a > 0, a, 0.0)) is np.ndarray


def test_what_has_no_derivative_is_a_constant_of_the_values():
    x = _leaf([-2.0, 0.0, 3.0])
    assert type(XP.sign(x)) is np.ndarray
    np.testing.assert_array_equal(XP.sign(x), [-1.0, 0.0, 1.0])
    zeros = XP.zeros_like(x)  # as torch's zeros_like: a Tensor, outside the graph
    assert isinstance(zeros, mt.Tensor) and not zeros.requires_grad


def test_a_missing_function_is_refused_by_name_and_constants_pass_through():
    with pytest.raises(AttributeError, match="graph math has no 'fft'"):
        XP.fft  # noqa: B018
    assert XP.float32 is np.float32 and XP.inf == np.inf
    assert isinstance(XP, GraphMath) and graph_math(np) is XP
