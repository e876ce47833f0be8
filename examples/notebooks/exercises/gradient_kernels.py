"""Checks for the exercises of 02_gradient_kernels.ipynb: four backward kernels, each compared
with finite differences or with minitrain's own kernel."""

from __future__ import annotations

import numpy as np

from exercises import exercise
from minitrain import ops


def _numeric_grad(forward, x, dY, h=1e-6):
    """Central differences of sum(dY * forward(x)) with respect to x (float64)."""
    x = np.array(x, dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        original = x[i]
        x[i] = original + h
        up = np.sum(dY * forward(x))
        x[i] = original - h
        down = np.sum(dY * forward(x))
        x[i] = original
        grad[i] = (up - down) / (2 * h)
    return grad


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _as_array(name, got, shape):
    """`got` as a float array of `shape`, or an AssertionError saying what came back."""
    assert got is not None, f"{name} returned None: return dX"
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == tuple(shape), f"{name} returned shape {got.shape}, expected {shape}"
    return got


def _largest(a, b) -> float:
    return float(np.max(np.abs(a - b))) if a.size else 0.0


@exercise
def check_softplus_grad(softplus_grad):
    rng = np.random.default_rng(1)
    X = 3 * rng.standard_normal((4, 5))
    Y = np.logaddexp(0, X)  # log(1 + exp(X)), without overflow
    dY = rng.standard_normal(X.shape)
    got = _as_array("softplus_grad", softplus_grad(dY, Y.copy()), X.shape)
    want = _numeric_grad(lambda x: np.logaddexp(0, x), X, dY)
    error = _largest(got, want)
    assert error < 1e-6, (
        f"softplus_grad differs from finite differences by up to {error:.1e}. "
        f"softplus'(x) = sigmoid(x): write that with Y = log(1 + exp(x)) alone (and multiply "
        f"by dY)"
    )
    far_left = np.array([-30.0, -40.0])
    tail = _as_array("softplus_grad", softplus_grad(np.ones(2), np.logaddexp(0, far_left)), (2,))
    exact = np.exp(far_left) / (1 + np.exp(far_left))  # sigmoid(x), e^-30 ~ 1e-13
    relative = float(np.max(np.abs(tail - exact) / exact))
    assert relative < 1e-9, (
        f"at x = -30 and -40, where Y is about 1e-13 and 4e-18, softplus_grad is off by "
        f"{relative:.1e} relative: 1 - exp(-Y) subtracts two numbers that are nearly equal. "
        f"np.expm1(u) computes exp(u) - 1 without that loss"
    )


@exercise
def check_cross_entropy_smoothing_grad(cross_entropy_smoothing_grad):
    rng = np.random.default_rng(2)
    N, C = 5, 4
    logits = 2 * rng.standard_normal((N, C))
    target = np.array([0, 3, 1, 3, 2])
    for smoothing in (0.0, 0.1, 0.3):
        got = _as_array(
            "cross_entropy_smoothing_grad",
            cross_entropy_smoothing_grad(logits.copy(), target.copy(), smoothing),
            (N, C),
        )
        want = ops.softmax_cross_entropy_grad(
            np.array(1.0), _softmax(logits), target, label_smoothing=smoothing
        )
        error = _largest(got, want)
        if smoothing == 0.0:
            assert error < 1e-12, (
                f"without smoothing the result should be (p - onehot(target)) / N (section "
                f"4); it differs by up to {error:.1e}"
            )
        assert error < 1e-12, (
            f"with smoothing={smoothing}, dZ differs from minitrain's "
            f"softmax_cross_entropy_grad by up to {error:.1e}: the target distribution is "
            f"q = (1 - smoothing) * onehot + smoothing / C, and every class c has its own "
            f"term -q_c log p_c in the loss"
        )

    def loss(z):
        q = 0.9 * np.eye(C)[target] + 0.1 / C
        return -np.mean(np.sum(q * np.log(_softmax(z)), axis=1))

    got = np.asarray(cross_entropy_smoothing_grad(logits.copy(), target.copy(), 0.1))
    error = _largest(got, _numeric_grad(loss, logits, 1.0))
    assert error < 1e-6, f"dZ differs from finite differences of the loss by {error:.1e}"


@exercise
def check_conv1d_input_grad(conv1d_input_grad):
    rng = np.random.default_rng(3)
    N, C, M = 2, 3, 4
    for length, k, stride in ((7, 3, 1), (8, 3, 2), (10, 2, 3), (5, 5, 1)):
        positions = (length - k) // stride + 1
        W = rng.standard_normal((M, C, k))
        dY = rng.standard_normal((N, M, positions))
        got = _as_array(
            "conv1d_input_grad",
            conv1d_input_grad(dY.copy(), W.copy(), length, stride),
            (N, C, length),
        )
        X = np.zeros((N, C, length))  # dX does not depend on X's values, only on its shape
        want = ops.conv_grad(dY, X, W, strides=stride, need=(True, False, False))[0]
        error = _largest(got, want)
        untouched = ""
        if stride > k:
            untouched = (
                f" With stride {stride} > k = {k}, some positions are in no window and must get 0."
            )
        assert error < 1e-12, (
            f"length {length}, k {k}, stride {stride}: dX differs from conv_grad's by up to "
            f"{error:.1e}. dcol = W.reshape(M, C*k).T @ dY_mat with dY_mat = "
            f"dY.transpose(1, 0, 2).reshape(M, N*P); then dcol[c*k + t, n*P + p] adds to "
            f"dX[n, c, p*stride + t].{untouched}"
        )


@exercise
def check_avg_pool2d_grad(avg_pool2d_grad):
    rng = np.random.default_rng(4)
    x_shape = (2, 3, 7, 7)
    for kernel, stride in ((2, 2), (3, 1), (2, 3), (7, 1)):
        out = (7 - kernel) // stride + 1
        dY = rng.standard_normal((2, 3, out, out))
        got = _as_array(
            "avg_pool2d_grad", avg_pool2d_grad(dY.copy(), x_shape, kernel, stride), x_shape
        )
        want = ops.avg_pool_grad(dY, x_shape, kernel, strides=stride)
        error = _largest(got, want)
        overlap = " The windows overlap here: add, do not overwrite." if stride < kernel else ""
        assert error < 1e-12, (
            f"kernel {kernel}, stride {stride}: dX differs from ops.avg_pool_grad's by up to "
            f"{error:.1e}. Each output's dY, divided by kernel * kernel, goes to every element "
            f"of its window.{overlap}"
        )
