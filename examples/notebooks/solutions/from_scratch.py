"""Solutions to the exercises of 00_from_scratch.ipynb."""

from __future__ import annotations

import math

import numpy as np


def power(x, n):
    # d(x^n)/dx = n x^(n-1): the local derivative, recorded beside x
    return x.record(x.value**n, (x, n * x.value ** (n - 1)))


def used_twice_gradients(a, b):
    # L = tanh(d) * a with d = a*b + a. Paths from a: through a*b (local b), through + a
    # (local 1), and the last product (local tanh(d)); b has one path, through a*b (local a).
    t = math.tanh(a * b + a)
    grad_d = a * (1 - t * t)
    return grad_d * (b + 1) + t, grad_d * a


def sum_vjp(v, shape, axis):
    # y = x.sum(axis): each x is used once, in the sum along its axis, with local derivative 1,
    # so it gets that sum's v: put the summed axes back (size 1) and broadcast.
    return np.broadcast_to(np.expand_dims(v, axis), shape).copy()


def softmax_vjp(y, v):
    # J_ij = y_i (delta_ij - y_j), so (J^T v)_j = y_j (v_j - sum_i y_i v_i), per row
    return y * (v - (y * v).sum(axis=-1, keepdims=True))


def linear_backward(x, W, b, dy):
    # y = x @ W + b: matmul's VJPs, and b is used in every row: its gradient sums over rows
    return dy @ W.T, x.T @ dy, dy.sum(axis=0)
