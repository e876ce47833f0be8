"""Checks of the exercises in 00_from_scratch.ipynb: the tiny engine, the chain rule, VJPs."""

from __future__ import annotations

import math

import numpy as np

import minitrain as mt
from exercises import exercise


class Var:
    """The notebook's tiny engine, as the checks use it: a value, its gradient, its tape."""

    def __init__(self, value, tape):
        self.value, self.grad, self.tape = float(value), 0.0, tape

    def record(self, value, *inputs_and_local_derivatives):
        out = Var(value, self.tape)
        self.tape.append((out, inputs_and_local_derivatives))
        return out

    def __mul__(self, other):
        return self.record(self.value * other.value, (self, other.value), (other, self.value))

    def __add__(self, other):
        return self.record(self.value + other.value, (self, 1.0), (other, 1.0))


def backward(out):
    out.grad = 1.0
    for result, inputs in reversed(out.tape):
        for var, local in inputs:
            var.grad += local * result.grad


def _close(got, expected, tol=1e-6) -> bool:
    return abs(got - expected) <= tol * (1 + abs(expected))


@exercise
def check_power(power):
    for base, n in [(1.7, 3), (0.8, 2.5), (2.0, -1), (3.0, 0.5), (-1.5, 2)]:
        tape = []
        x = Var(base, tape)
        y = power(x, n)
        assert isinstance(y, Var), (
            f"power(x, {n}) returned {type(y).__name__}: return the Var that x.record(...) makes"
        )
        assert len(tape) == 1, (
            f"power(x, {n}) put {len(tape)} entries on the tape; one op records exactly one "
            "(call x.record once)"
        )
        assert _close(y.value, base**n), (
            f"power(x, {n}) at x = {base}: value {y.value}, expected {base**n}"
        )
        backward(y)
        expected = n * base ** (n - 1)
        assert _close(x.grad, expected), (
            f"power(x, {n}) at x = {base}: gradient {x.grad}, expected n * x**(n - 1) = "
            f"{expected} (the local derivative goes in the tape entry beside x)"
        )
    tape = []
    a, b = Var(3.0, tape), Var(2.0, tape)
    backward(a * power(b, -1))  # division, composed of pow and mul
    assert _close(a.grad, 0.5) and _close(b.grad, -0.75), (
        f"a / b as a * power(b, -1) at a = 3, b = 2: gradients ({a.grad}, {b.grad}), expected "
        "(1/b, -a/b**2) = (0.5, -0.75)"
    )


def _used_twice_loss(a: float, b: float) -> float:
    return math.tanh(a * b + a) * a


@exercise
def check_used_twice_gradients(used_twice_gradients):
    h = 1e-6
    for a, b in [(0.5, -0.4), (1.2, 0.3), (-0.7, 2.0), (0.1, 0.1)]:
        got = used_twice_gradients(a, b)
        assert len(got) == 2, "return a pair: (dL/da, dL/db)"
        numeric_a = (_used_twice_loss(a + h, b) - _used_twice_loss(a - h, b)) / (2 * h)
        numeric_b = (_used_twice_loss(a, b + h) - _used_twice_loss(a, b - h)) / (2 * h)
        assert _close(got[1], numeric_b, 1e-5), (
            f"at a = {a}, b = {b}: dL/db = {got[1]}, finite differences give {numeric_b:.6f}"
        )
        assert _close(got[0], numeric_a, 1e-5), (
            f"at a = {a}, b = {b}: dL/da = {got[0]}, finite differences give {numeric_a:.6f}. "
            "a is used three times (in a*b, in + a, and in the last product): one term per path"
        )


def _autograd_sum_grad(v, shape, axis, rng):
    x = mt.tensor(rng.standard_normal(shape), requires_grad=True)
    x.sum(dim=axis).backward(mt.tensor(np.asarray(v)))
    return x.grad.numpy()


@exercise
def check_sum_vjp(sum_vjp):
    rng = np.random.default_rng(0)
    for shape, axis in [((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1), ((2, 3, 4), (0, 2))]:
        out_shape = np.zeros(shape).sum(axis=axis).shape
        v = rng.standard_normal(out_shape)
        got = np.asarray(sum_vjp(v, shape, axis))
        assert got.shape == shape, (
            f"y = x.sum(axis={axis}) with x of shape {shape}: your gradient has shape "
            f"{got.shape}; a gradient has its input's shape, {shape}"
        )
        expected = _autograd_sum_grad(v, shape, axis, rng)
        assert np.allclose(got, expected), (
            f"y = x.sum(axis={axis}) with x of shape {shape}: wrong values. Every x along the "
            "summed axis gets the v of the sum it went into (hint: np.expand_dims, then "
            "np.broadcast_to)"
        )


@exercise
def check_softmax_vjp(softmax_vjp):
    rng = np.random.default_rng(1)
    for shape in [(5,), (3, 5), (2, 3, 4)]:
        x = mt.tensor(rng.standard_normal(shape), requires_grad=True)
        y = x.softmax(dim=-1)
        v = rng.standard_normal(shape)
        y.backward(mt.tensor(v))
        got = np.asarray(softmax_vjp(y.numpy(), v))
        assert got.shape == shape, f"y and v of shape {shape}: the result has shape {got.shape}"
        assert np.allclose(got, x.grad.numpy()), (
            f"softmax over the last axis of shape {shape}: your J^T v disagrees with autograd's "
            f"(largest difference {np.abs(got - x.grad.numpy()).max():.2e}). Each row is its own "
            "softmax: sum over the last axis only, with keepdims=True"
        )


@exercise
def check_linear_backward(linear_backward):
    rng = np.random.default_rng(2)
    for n, d, k in [(4, 3, 2), (1, 5, 3), (6, 2, 4)]:
        x = mt.tensor(rng.standard_normal((n, d)), requires_grad=True)
        w = mt.tensor(rng.standard_normal((d, k)), requires_grad=True)
        b = mt.tensor(rng.standard_normal(k), requires_grad=True)
        dy = rng.standard_normal((n, k))
        (x @ w + b).backward(mt.tensor(dy))
        got = linear_backward(x.numpy(), w.numpy(), b.numpy(), dy)
        assert len(got) == 3, "return three arrays: (dx, dW, db)"
        for name, mine, tensor in zip(("dx", "dW", "db"), got, (x, w, b), strict=True):
            mine = np.asarray(mine)
            assert mine.shape == tensor.shape, (
                f"x {x.shape}, W {w.shape}, b {b.shape}: {name} has shape {mine.shape}, "
                f"expected {tensor.shape} (a gradient has its input's shape)"
            )
            assert np.allclose(mine, tensor.grad.numpy()), (
                f"x {x.shape}, W {w.shape}, b {b.shape}: {name} disagrees with minitrain's "
                f"gradient (largest difference {np.abs(mine - tensor.grad.numpy()).max():.2e})"
            )
