"""Second derivatives of the conv and pooling ops worked out by hand: conv's backward is bilinear
in (dY, W) and (dY, X), the pools' backwards are linear in dY with constant routes (the max's
position, the window's divisor), and the edge cases of each route (positions past the last
window, windows over no input, windows sharing a max, ceil_mode's overhang). The registry's
tests (tests/ops/test_second_order.py) check every sample against finite differences and
PyTorch; these pin down the formulas and a third derivative."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import ops


def _leaf(values):
    return mt.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


def test_conv_second_derivatives_by_hand():
    # y0 = w0 x0 + w1 x1, y1 = w0 x1 + w1 x2 (one image, one channel, one filter), L = g . y:
    # dx = [g0 w0, g0 w1 + g1 w0, g1 w1]; S = v . dx is bilinear, so
    # dS/dw = [g0 v0 + g1 v1, g0 v1 + g1 v2], dS/dg = [w0 v0 + w1 v1, w0 v1 + w1 v2], dS/dx = 0
    x, w, g = _leaf([[[1.0, 2.0, 3.0]]]), _leaf([[[5.0, 7.0]]]), _leaf([[[2.0, -1.0]]])
    v = mt.tensor(np.array([[[1.0, 10.0, 100.0]]]))
    (dx,) = mt.grad(ops.conv(x, w), [x], g, create_graph=True)
    np.testing.assert_allclose(dx.array, [[[10.0, 9.0, -7.0]]])
    dw, dg, dx2 = mt.grad((dx * v).sum(), [w, g, x], allow_unused=True)
    np.testing.assert_allclose(dw.array, [[[2.0 - 10.0, 20.0 - 100.0]]])
    np.testing.assert_allclose(dg.array, [[[5.0 + 70.0, 50.0 + 700.0]]])
    assert dx2 is None  # dx does not depend on x


def test_conv_weight_gradient_differentiates_in_x_and_dy():
    # stride 2 on 6 inputs with kernel 3: 2 outputs, taps at 0..2 and 2..4; dw[k] =
    # sum_p g[p] x[2p + k]; S = u . dw gives dS/dx[i] = sum over (p, k) with 2p + k = i of
    # g[p] u[k] (x[5] feeds no window: 0), dS/dg[p] = sum_k u[k] x[2p + k]
    x, w, g = (
        _leaf([[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]]]),
        _leaf([[[1.0, 1.0, 1.0]]]),
        _leaf([[[3.0, 5.0]]]),
    )
    u = mt.tensor(np.array([[[1.0, 10.0, 100.0]]]))
    (dw,) = mt.grad(ops.conv(x, w, stride=2), [w], g, create_graph=True)
    np.testing.assert_allclose(dw.array, [[[3 * 1 + 5 * 3, 3 * 2 + 5 * 4, 3 * 3 + 5 * 5]]])
    dx, dg = mt.grad((dw * u).sum(), [x, g])
    np.testing.assert_allclose(dx.array, [[[3.0, 30.0, 300.0 + 5.0, 50.0, 500.0, 0.0]]])
    np.testing.assert_allclose(dg.array, [[[1 + 20 + 300.0, 3 + 40 + 500.0]]])


def test_conv_input_gradient_keeps_positions_past_the_last_window():
    # 7 inputs, kernel 2, stride 3: windows at 0-1 and 3-4, and 6 after them reaches no
    # window: output_padding gives dx its full length, zero at 2, 5 and 6
    x, w = _leaf(np.arange(7.0).reshape(1, 1, 7)), _leaf([[[2.0, 3.0]]])
    g = _leaf([[[1.0, -1.0]]])
    (dx,) = mt.grad(ops.conv(x, w, stride=3), [x], g, create_graph=True)
    np.testing.assert_allclose(dx.array, [[[2.0, 3.0, 0.0, -2.0, -3.0, 0.0, 0.0]]])
    dw, dg = mt.grad(dx.sum(), [w, g])
    np.testing.assert_allclose(dw.array, [[[0.0, 0.0]]])  # sum(dx) = (g0 + g1) (w0 + w1)
    np.testing.assert_allclose(dg.array, [[[5.0, 5.0]]])


@pytest.mark.parametrize("group", [1, 2])
def test_conv_third_derivative_matches_torch(group):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x_np, w_np = rng.standard_normal((2, 4, 5, 6)), rng.standard_normal((4, 4 // group, 3, 2))
    g_np, v_np, u_np = (rng.standard_normal(s) for s in ((2, 4, 3, 5), x_np.shape, w_np.shape))
    results = []
    for lib in ("ours", "torch"):
        if lib == "ours":
            x, w = _leaf(x_np), _leaf(w_np)
            y = ops.conv(x, w, None, (2, 1), ((1, 1), (1, 0)), (1, 2), group)
            grad, wrap = mt.grad, mt.tensor
        else:
            x, w = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np))
            x_padded = torch.nn.functional.pad(x, [1, 0, 1, 1])
            y = torch.nn.functional.conv2d(x_padded, w, None, (2, 1), 0, (1, 2), group)
            grad, wrap = torch.autograd.grad, torch.tensor
        first = grad((y.tanh() * wrap(g_np)).sum(), [x, w], create_graph=True)
        second = grad(
            (first[0] * wrap(v_np)).sum() + (first[1] * wrap(u_np)).sum(),
            [x, w],
            create_graph=True,
        )
        third = grad((second[0] * wrap(v_np)).sum() + (second[1] * wrap(u_np)).sum(), [x, w])
        results.append([np.asarray(t.array if lib == "ours" else t.detach()) for t in third])
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-10)


def test_conv_transpose_second_derivatives_by_hand():
    # y = conv_transpose(x, w), stride 2: y[2i + k] += x[i] w[k], 2 inputs and kernel 2 give
    # y = [x0 w0, x0 w1, x1 w0, x1 w1]; dx[i] = sum_k g[2i + k] w[k]; S = v . dx:
    # dS/dw[k] = sum_i v[i] g[2i + k], dS/dg[2i + k] = v[i] w[k]
    x, w = _leaf([[[1.0, 2.0]]]), _leaf([[[3.0, 4.0]]])
    g = _leaf([[[1.0, 2.0, 3.0, 4.0]]])
    v = mt.tensor(np.array([[[1.0, 10.0]]]))
    (dx,) = mt.grad(ops.conv_transpose(x, w, stride=2), [x], g, create_graph=True)
    np.testing.assert_allclose(dx.array, [[[3.0 + 8.0, 9.0 + 16.0]]])
    dw, dg = mt.grad((dx * v).sum(), [w, g])
    np.testing.assert_allclose(dw.array, [[[1.0 + 30.0, 2.0 + 40.0]]])
    np.testing.assert_allclose(dg.array, [[[3.0, 4.0, 30.0, 40.0]]])


def test_max_pool_second_derivative_reads_grad_back_at_the_max():
    # overlapping windows (kernel 2, stride 1) over [1, 3, 2]: both maxima sit at 1, so
    # dx = [0, g0 + g1, 0]; S = v . dx gives dS/dg = [v1, v1], and dx is flat in x
    x = _leaf([[[1.0, 3.0, 2.0]]])
    g = _leaf([[[2.0, 5.0]]])
    (dx,) = mt.grad(ops.max_pool(x, 2, stride=1), [x], g, create_graph=True)
    np.testing.assert_allclose(dx.array, [[[0.0, 7.0, 0.0]]])
    dg, dx2 = mt.grad(
        (dx * mt.tensor(np.array([[[1.0, 10.0, 100.0]]]))).sum(), [g, x], allow_unused=True
    )
    np.testing.assert_allclose(dg.array, [[[10.0, 10.0]]])
    assert dx2 is None


def test_max_pool_window_over_no_input_sends_nothing():
    # one input, kernel 2, dilation 2, pad 1: the only window's taps sit at -1 and 1, both
    # outside, so its max is -inf from nowhere (index -1) in both planes; dx and its
    # derivative in g are 0 (PyTorch's pad limit lets a dim's windows miss the input all or
    # none, so no plane mixes found and missing windows)
    x = _leaf([[[4.0], [1.0]]])
    g = _leaf([[[3.0], [5.0]]])
    y = ops.max_pool(x, 2, stride=1, padding=1, dilation=2)
    assert np.all(np.isneginf(y.array))
    (dx,) = mt.grad(y, [x], g, create_graph=True)
    np.testing.assert_array_equal(dx.array, [[[0.0], [0.0]]])
    (dg,) = mt.grad(dx.sum(), [g], allow_unused=True)
    assert dg is None or not np.any(dg.array)


def test_avg_pool_second_derivative_by_hand():
    # kernel 2, stride 2 over 5 inputs, ceil_mode, no padding: windows [0, 1], [2, 3] and the
    # overhanging [4] (divisor 1: it counts input elements only); dx = g / divisor spread over
    # each window, dS/dg[o] = the mean of v over window o
    x = _leaf(np.arange(5.0).reshape(1, 1, 5))
    g = _leaf([[[2.0, 4.0, 6.0]]])
    y = ops.avg_pool(x, 2, ceil_mode=True, count_include_pad=False)
    (dx,) = mt.grad(y, [x], g, create_graph=True)
    np.testing.assert_allclose(dx.array, [[[1.0, 1.0, 2.0, 2.0, 6.0]]])
    v = mt.tensor(np.array([[[1.0, 3.0, 10.0, 30.0, 100.0]]]))
    (dg,) = mt.grad((dx * v).sum(), [g])
    np.testing.assert_allclose(dg.array, [[[2.0, 20.0, 100.0]]])


def test_avg_pool_positions_past_the_last_window_get_nothing():
    # kernel 2, stride 3 over 6 inputs, pad 1 at the beginning only: windows [-1, 0] and
    # [2, 3] (divisor 2, the pad counted); 4 and 5 (and 1) are in none
    x = _leaf(np.zeros((1, 1, 6)))
    g = _leaf([[[2.0, 4.0]]])
    y = ops.avg_pool(x, 2, stride=3, padding=((1, 0),))
    (dx,) = mt.grad(y, [x], g, create_graph=True)
    np.testing.assert_allclose(dx.array, [[[1.0, 0.0, 2.0, 2.0, 0.0, 0.0]]])
    (dg,) = mt.grad((dx * mt.tensor(np.arange(1.0, 7.0).reshape(1, 1, 6))).sum(), [g])
    np.testing.assert_allclose(dg.array, [[[0.5, 3.5]]])


def test_adaptive_avg_pool_second_derivative_by_hand():
    # 5 inputs to 2 outputs: windows [0, 2] and [2, 4] (floor(i L / out) to ceil((i + 1) L /
    # out) - 1), each of 3; dS/dg[o] = the mean of v over window o
    x = _leaf(np.zeros((1, 1, 5)))
    g = _leaf([[[3.0, 6.0]]])
    (dx,) = mt.grad(ops.adaptive_avg_pool(x, 2), [x], g, create_graph=True)
    np.testing.assert_allclose(dx.array, [[[1.0, 1.0, 3.0, 2.0, 2.0]]])
    v = mt.tensor(np.array([[[3.0, 6.0, 9.0, 12.0, 15.0]]]))
    (dg,) = mt.grad((dx * v).sum(), [g])
    np.testing.assert_allclose(dg.array, [[[6.0, 12.0]]])
    (dg_global,) = mt.grad(
        (mt.grad(ops.adaptive_avg_pool(x, 1), [x], g[:, :, :1], create_graph=True)[0] * v).sum(),
        [g],
    )
    np.testing.assert_allclose(dg_global.array, [[[9.0, 0.0]]])
