"""Solutions to the exercises of 02_gradient_kernels.ipynb."""

from __future__ import annotations

import numpy as np


def softplus_grad(dY, Y):
    """dX of Y = log(1 + exp(X)), computed from dY and the output Y only.

    softplus'(x) = sigmoid(x), and exp(-Y) = 1 / (1 + exp(x)) = 1 - sigmoid(x), so
    sigmoid(x) = 1 - exp(-Y) = -expm1(-Y): expm1 keeps its digits where Y is tiny."""
    return dY * -np.expm1(-Y)


def cross_entropy_smoothing_grad(logits, target, smoothing):
    """dL/dlogits of the mean cross entropy with label smoothing: logits (N, C), target (N,).

    L = -1/N sum_n sum_c q_nc log p_nc, and d log p_nc / dz_nk = [c = k] - p_nk, so
    dL/dz_nk = -1/N (q_nk - p_nk sum_c q_nc) = (p_nk - q_nk) / N, since sum_c q_nc = 1."""
    n, c = logits.shape
    shifted = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(shifted)
    p /= p.sum(axis=1, keepdims=True)
    q = (1 - smoothing) * np.eye(c)[target] + smoothing / c
    return (p - q) / n


def conv1d_input_grad(dY, W, length, stride):
    """dX (N, C, length) of a 1-D convolution without padding: dY (N, M, P), W (M, C, k).

    col[c*k + t, n*P + p] = X[n, c, p*stride + t] and Y_mat = W_mat @ col, so
    dcol = W_mat.T @ dY_mat, and col2im adds every dcol entry back to the X it came from."""
    n, m, p = dY.shape
    _, c, k = W.shape
    dy_mat = dY.transpose(1, 0, 2).reshape(m, n * p)
    dcol = (W.reshape(m, c * k).T @ dy_mat).reshape(c, k, n, p)
    dX = np.zeros((n, c, length), dtype=np.result_type(dY, W))
    for t in range(k):
        for position in range(p):
            dX[:, :, position * stride + t] += dcol[:, t, :, position].T
    return dX


def avg_pool2d_grad(dY, x_shape, kernel, stride):
    """dX of average pooling with kernel x kernel windows, stride `stride`, no padding.

    dY_o / dX_i = 1 / kernel^2 where i is in window o, else 0: each output's gradient is
    shared evenly by its window, and overlapping windows add up."""
    dX = np.zeros(x_shape, dtype=dY.dtype)
    out_h, out_w = dY.shape[2:]
    share = dY / kernel**2
    for i in range(out_h):
        for j in range(out_w):
            rows = slice(i * stride, i * stride + kernel)
            cols = slice(j * stride, j * stride + kernel)
            dX[:, :, rows, cols] += share[:, :, i, j, None, None]
    return dX
