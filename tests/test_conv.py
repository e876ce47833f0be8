"""Convolution: conv_grad called directly against PyTorch, `need` doing no work for skipped
outputs, im2col / col2im (numba and numpy) against a loop-by-loop reference, the wide column
layout against the compact one, chunked batches, auto_pad and PyTorch's padding spellings, and
the errors. (Gradchecks and PyTorch comparisons of the op itself run from tests/samples_conv.py.)
"""

from __future__ import annotations

import importlib
import itertools
import math
import threading

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's name for it)

# `ops.conv` is the function; the module behind it is reached by name
conv_module = importlib.import_module("minitrain.ops.conv")


def _normal(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


def _torch_pad(onnx_pads) -> list[int]:
    dims = len(onnx_pads) // 2
    return [n for d in reversed(range(dims)) for n in (onnx_pads[d], onnx_pads[dims + d])]


def _torch_conv(torch, x, w, b, strides, pads, dilations, group):
    """PyTorch's conv of float64 arrays with ONNX pads (padded explicitly first)."""
    conv = getattr(torch.nn.functional, f"conv{x.ndim - 2}d")
    padded = torch.nn.functional.pad(torch.from_numpy(x), _torch_pad(pads))
    bias = None if b is None else torch.from_numpy(b)
    return conv(padded, torch.from_numpy(w), bias, strides, 0, dilations, group)


# (x shape, w shape, strides, ONNX pads, dilations, group)
GEOMETRIES = [
    ((2, 3, 9), (4, 3, 3), (2,), (2, 1), (2,), 1),
    ((2, 4, 8), (4, 1, 2), (1,), (0, 1), (3,), 4),
    ((2, 4, 7, 6), (6, 2, 3, 2), (2, 1), (1, 0, 2, 1), (1, 2), 2),
    ((1, 3, 6, 6), (3, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 3),
    ((2, 2, 7, 7), (3, 2, 2, 2), (3, 3), (0, 0, 0, 0), (1, 1), 1),
    ((1, 4, 5, 6, 4), (4, 2, 3, 2, 2), (2, 1, 1), (1, 0, 1, 0, 1, 1), (1, 2, 1), 2),
    ((2, 2, 4, 5, 3), (3, 2, 2, 3, 2), (1, 1, 1), (1, 1, 0, 0, 1, 1), (2, 1, 1), 1),
]
GEOMETRY_IDS = [
    "1d_stride_dilation",
    "1d_depthwise_dilation3",
    "2d_groups_asymmetric",
    "2d_depthwise_same",
    "2d_stride_longer_than_kernel",
    "3d_groups_strides",
    "3d_dilation",
]


def _leaves(rng, x_shape, w_shape, bias=True):
    values = [_normal(rng, *x_shape), _normal(rng, *w_shape)]
    if bias:
        values.append(_normal(rng, w_shape[0]))
    return values


# --- the gradient kernel against PyTorch ---------------------------------------------------------


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize(
    "x_shape, w_shape, strides, pads, dilations, group", GEOMETRIES, ids=GEOMETRY_IDS
)
def test_conv_grad_matches_torch(
    torch, x_shape, w_shape, strides, pads, dilations, group, use_numba
):
    rng = np.random.default_rng(1)
    x, w, b = _leaves(rng, x_shape, w_shape)
    attrs = {"strides": strides, "pads": pads, "dilations": dilations, "group": group}
    tx, tw, tb = (torch.from_numpy(v).requires_grad_() for v in (x, w, b))
    conv = getattr(torch.nn.functional, f"conv{len(x_shape) - 2}d")
    expected = conv(
        torch.nn.functional.pad(tx, _torch_pad(pads)), tw, tb, strides, 0, dilations, group
    )
    dy = _normal(rng, *expected.shape)
    expected.backward(torch.from_numpy(dy))
    with backend.use_numba(use_numba):
        y = ops.conv(mt.tensor(x), mt.tensor(w), mt.tensor(b), **attrs)
        dx, dw, db = ops.conv_grad(dy, x, w, **attrs)
    np.testing.assert_allclose(y.data, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(db, tb.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "auto_pad, pads", [("SAME_UPPER", (0, 1, 1, 1)), ("SAME_LOWER", (1, 1, 0, 1))]
)
def test_conv_grad_honours_auto_pad_as_the_forward_does(auto_pad, pads):
    # H = 6, stride 2, kernel 3: 3 outputs need (3 - 1) * 2 + 3 - 6 = 1 pad, at the end for
    # UPPER and the beginning for LOWER; W = 5: 3 outputs need 2, one each side
    rng = np.random.default_rng(2)
    x, w = _leaves(rng, (2, 2, 6, 5), (3, 2, 3, 3), bias=False)
    y = ops.conv(x, w, strides=2, auto_pad=auto_pad)
    np.testing.assert_array_equal(y.data, ops.conv(x, w, strides=2, pads=pads).data)
    dy = _normal(rng, *y.shape)
    automatic = ops.conv_grad(dy, x, w, strides=2, auto_pad=auto_pad)
    explicit = ops.conv_grad(dy, x, w, strides=2, pads=pads)
    for got, want in zip(automatic, explicit, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "length, kernel, stride, dilation",
    [(5, 3, 1, 1), (6, 3, 2, 1), (7, 2, 3, 1), (8, 3, 3, 2), (4, 4, 1, 1), (9, 2, 4, 3)],
)
def test_auto_pad_output_sizes(length, kernel, stride, dilation):
    x = np.zeros((1, 1, length))
    w = np.zeros((1, 1, kernel))
    for auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        y = ops.conv(x, w, strides=stride, dilations=dilation, auto_pad=auto_pad)
        assert y.shape[-1] == math.ceil(length / stride)
    valid = ops.conv(x, w, strides=stride, dilations=dilation, auto_pad="VALID")
    assert valid.shape[-1] == (length - dilation * (kernel - 1) - 1) // stride + 1


# --- `need`: None and no work for what is not needed -----------------------------------------


@pytest.fixture
def work(monkeypatch):
    """Counts of the internal im2col, col2im and GEMM calls (read them, then clear them)."""
    counts = {"im2col": 0, "col2im": 0, "gemm": 0}
    for name, key in (("_im2col_into", "im2col"), ("_col2im_into", "col2im"), ("_matmul", "gemm")):
        original = getattr(conv_module, name)

        def counted(*args, original=original, key=key, **kwargs):
            counts[key] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(conv_module, name, counted)
    return counts


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize(
    "need",
    list(itertools.product([True, False], repeat=3)),
    ids=lambda need: (
        "+".join(n for n, f in zip(("dX", "dW", "dB"), need, strict=True) if f) or "none"
    ),
)
def test_need_gives_none_and_does_no_work_for_skipped_outputs(work, monkeypatch, need, use_numba):
    rng = np.random.default_rng(3)
    x, w = _leaves(rng, (5, 4, 6, 5), (6, 2, 3, 3), bias=False)
    attrs = {"strides": (1, 2), "pads": (1, 0, 1, 1), "group": 2}
    dy = _normal(rng, 5, 6, 6, 2)
    # two images per chunk: the batch of 5 goes through in 3 chunks
    monkeypatch.setattr(
        conv_module, "_shares", lambda N, *_: [[slice(i, min(i + 2, N)) for i in (0, 2, 4)]]
    )
    with backend.use_numba(use_numba):
        full = ops.conv_grad(dy, x, w, **attrs)
        for key in work:
            work[key] = 0
        partial = ops.conv_grad(dy, x, w, **attrs, need=need)
    for wanted, got, want in zip(need, partial, full, strict=True):
        if wanted:
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
        else:
            assert got is None
    need_x, need_w, _ = need
    chunks = 3
    assert work["im2col"] == (chunks if need_w else 0)
    assert work["col2im"] == (chunks if need_x else 0)
    assert work["gemm"] == chunks * (need_x + need_w)


def test_first_layer_and_frozen_weight_skip_their_work_in_the_backward(work):
    rng = np.random.default_rng(4)
    x_value, w_value, b_value = _leaves(rng, (2, 3, 5, 5), (4, 3, 3, 3))
    # a first layer: the input needs no gradient, so the backward does no col2im
    w, b = mt.tensor(w_value, requires_grad=True), mt.tensor(b_value, requires_grad=True)
    y = ops.conv(mt.tensor(x_value), w, b, pads=1)
    assert work == {"im2col": 1, "col2im": 0, "gemm": 1}
    y.backward(np.ones(y.shape))
    assert work == {"im2col": 2, "col2im": 0, "gemm": 2}
    assert w.grad is not None and b.grad is not None
    # a frozen weight: the backward does no im2col (only the forward's)
    for key in work:
        work[key] = 0
    x = mt.tensor(x_value, requires_grad=True)
    y = ops.conv(x, mt.tensor(w_value), b_value, pads=1)
    y.backward(np.ones(y.shape))
    assert work == {"im2col": 1, "col2im": 1, "gemm": 2}
    assert x.grad.shape == x_value.shape


def test_conv_saves_x_and_w_and_its_backward_calls_conv_grad(monkeypatch):
    calls = []
    original = conv_module.conv_grad

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(conv_module, "conv_grad", spy)
    rng = np.random.default_rng(5)
    x = mt.tensor(_normal(rng, 2, 2, 5, 5), requires_grad=True)
    w = mt.tensor(_normal(rng, 3, 2, 3, 3))
    y = ops.conv(x, w, strides=2, auto_pad="SAME_LOWER")
    assert y.grad_fn.name == "ConvGrad"
    saved = y.grad_fn.saved_arrays()
    assert list(saved) == ["x", "w"]
    assert saved["x"] is x.data and saved["w"] is w.data
    y.backward(np.ones(y.shape))
    (((dy, saved_x, saved_w), kwargs),) = calls
    assert saved_x is x.data and saved_w is w.data
    # auto_pad reaches the kernel resolved: 5 with stride 2 and kernel 3 needs 2 pads, 1 + 1
    assert kwargs["pads"] == (1, 1, 1, 1) and kwargs["need"] == (True, False, False)


# --- dX where no window reaches -----------------------------------------------------------------


def test_stride_longer_than_the_kernel_leaves_untouched_positions_at_zero():
    # L = 7, kernel 2, stride 3: windows at 0..1 and 3..4 in each dim; rows and columns 2, 5 and
    # 6 are in no window. With dY = 1 everywhere, dX[i, j] = W[i % 3, j % 3] where covered.
    w = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
    x = mt.tensor(np.zeros((1, 1, 7, 7)), requires_grad=True)
    y = ops.conv(x, w, strides=3)
    assert y.shape == (1, 1, 2, 2)
    y.backward(np.ones(y.shape))
    expected = np.zeros((7, 7))
    for i, j in itertools.product([0, 1, 3, 4], repeat=2):
        expected[i, j] = w[0, 0, i % 3, j % 3]
    np.testing.assert_array_equal(x.grad.data[0, 0], expected)


# --- im2col and col2im --------------------------------------------------------------------------


def _reference_im2col(x, kernel, strides, pads, dilations):
    """col[c*K + k, n*P + p] from its definition, one element at a time."""
    N, C, *spatial = x.shape
    dims = len(spatial)
    out = [
        (spatial[d] + pads[d] + pads[dims + d] - dilations[d] * (kernel[d] - 1) - 1) // strides[d]
        + 1
        for d in range(dims)
    ]
    taps = list(itertools.product(*(range(k) for k in kernel)))
    positions = list(itertools.product(*(range(o) for o in out)))
    col = np.zeros((C * len(taps), N * len(positions)), x.dtype)
    for n, c in itertools.product(range(N), range(C)):
        for k, tap in enumerate(taps):
            for p, position in enumerate(positions):
                at = [
                    position[d] * strides[d] + tap[d] * dilations[d] - pads[d] for d in range(dims)
                ]
                if all(0 <= at[d] < spatial[d] for d in range(dims)):
                    col[c * len(taps) + k, n * len(positions) + p] = x[(n, c, *at)]
    return col


def _reference_col2im(col, x_shape, kernel, strides, pads, dilations):
    """The scatter-add of col back into x_shape, one element at a time."""
    N, C, *spatial = x_shape
    dims = len(spatial)
    out = [
        (spatial[d] + pads[d] + pads[dims + d] - dilations[d] * (kernel[d] - 1) - 1) // strides[d]
        + 1
        for d in range(dims)
    ]
    taps = list(itertools.product(*(range(k) for k in kernel)))
    positions = list(itertools.product(*(range(o) for o in out)))
    dx = np.zeros(x_shape, col.dtype)
    for n, c in itertools.product(range(N), range(C)):
        for k, tap in enumerate(taps):
            for p, position in enumerate(positions):
                at = [
                    position[d] * strides[d] + tap[d] * dilations[d] - pads[d] for d in range(dims)
                ]
                if all(0 <= at[d] < spatial[d] for d in range(dims)):
                    dx[(n, c, *at)] += col[c * len(taps) + k, n * len(positions) + p]
    return dx


# (x shape, kernel, strides, ONNX pads, dilations)
WINDOWS = [
    ((2, 2, 9), (3,), (2,), (2, 1), (2,)),
    ((1, 2, 6), (2,), (1,), (1, 2), (1,)),
    ((2, 2, 5, 6), (3, 2), (2, 1), (1, 0, 2, 1), (1, 2)),
    ((1, 3, 5, 5), (3, 3), (1, 1), (1, 1, 1, 1), (2, 1)),
    ((1, 1, 7, 7), (2, 2), (3, 3), (0, 0, 0, 0), (1, 1)),
    ((1, 2, 4, 3, 5), (2, 2, 3), (1, 2, 1), (1, 0, 1, 0, 1, 1), (2, 1, 1)),
    ((2, 1, 3, 4, 4), (2, 3, 2), (1, 1, 1), (0, 1, 1, 1, 1, 0), (1, 1, 2)),
]
WINDOW_IDS = [
    "1d_strided",
    "1d_asymmetric",
    "2d_strided",
    "2d_dilated_same",
    "2d_gaps",
    "3d_strided",
    "3d_stride1",
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("x_shape, kernel, strides, pads, dilations", WINDOWS, ids=WINDOW_IDS)
def test_im2col_and_col2im_match_a_loop_reference(
    x_shape, kernel, strides, pads, dilations, use_numba, dtype
):
    rng = np.random.default_rng(6)
    x = _normal(rng, *x_shape, dtype=dtype)
    attrs = {"strides": strides, "pads": pads, "dilations": dilations}
    expected = _reference_im2col(x, kernel, strides, pads, dilations)
    with backend.use_numba(use_numba):
        col = ops.im2col(x, kernel, **attrs)
        assert col.dtype == dtype
        np.testing.assert_array_equal(col, expected)
        upstream = _normal(rng, *col.shape, dtype=dtype)
        dx = ops.col2im(upstream, x_shape, kernel, **attrs)
    assert dx.dtype == dtype
    tolerance = 1e-5 if dtype == np.float32 else 1e-13
    want = _reference_col2im(upstream, x_shape, kernel, strides, pads, dilations)
    np.testing.assert_allclose(dx, want, rtol=tolerance, atol=tolerance)
    # col2im is im2col's adjoint: <im2col(x), u> == <x, col2im(u)>
    assert np.vdot(col, upstream) == pytest.approx(np.vdot(x, dx), rel=10 * tolerance)


def test_im2col_parallel_build_matches_the_serial_one(monkeypatch):
    rng = np.random.default_rng(7)
    x = _normal(rng, 3, 4, 9, 8, dtype=np.float32)
    attrs = {"strides": (2, 1), "pads": (1, 0, 1, 2), "dilations": (1, 2)}
    serial = ops.im2col(x, (3, 2), **attrs)
    upstream = _normal(rng, *serial.shape, dtype=np.float32)
    serial_dx = ops.col2im(upstream, x.shape, (3, 2), **attrs)
    monkeypatch.setattr(conv_module, "_PARALLEL_WORK", 0)
    np.testing.assert_array_equal(ops.im2col(x, (3, 2), **attrs), serial)
    np.testing.assert_array_equal(ops.col2im(upstream, x.shape, (3, 2), **attrs), serial_dx)


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize(
    "x_shape, kernel, pads, dilations",
    [
        ((2, 3, 7), (3,), (1, 1), (2,)),
        ((2, 3, 6, 5), (3, 3), (1, 1, 1, 1), (1, 1)),
        ((1, 2, 5, 6), (2, 3), (0, 2, 1, 0), (2, 1)),
        ((2, 2, 3, 4, 5), (2, 3, 2), (1, 0, 1, 0, 1, 1), (1, 1, 2)),
        # outputs that read only padding: the grid's rows are as long as the output's
        ((3, 2, 4, 5), (1, 1), (1, 1, 1, 1), (1, 1)),
        ((2, 2, 5, 4), (2, 3), (3, 0, 0, 2), (1, 2)),
    ],
    ids=["1d", "2d_same", "2d_asymmetric_dilated", "3d", "2d_pointwise_padded", "2d_one_sided"],
)
def test_wide_columns_hold_the_compact_ones(x_shape, kernel, pads, dilations, use_numba, parallel):
    # stride 1: the op lays columns out on a zero-padded grid (Columns.wide); its output columns
    # are im2col's, and col2im of them (unused columns 0) is col2im of the compact ones
    rng = np.random.default_rng(8)
    x = _normal(rng, *x_shape)
    strides = (1,) * len(kernel)
    window = conv_module.conv_window(x_shape[2:], kernel, strides, pads, dilations)
    wide = conv_module.Columns.of(window, x_shape[2:], wide=True)
    rows = x_shape[1] * math.prod(kernel)
    with backend.use_numba(use_numba):
        compact = ops.im2col(x, kernel, pads=pads, dilations=dilations)
        col = np.full((rows, wide.width(x_shape[0])), np.nan)
        conv_module._im2col_into(x, wide, col, parallel)
        outputs = wide.outputs(col, x_shape[0]).reshape(rows, -1)
        np.testing.assert_array_equal(outputs, compact)
        assert np.isfinite(col).all()  # every column written, used or not
        upstream = _normal(rng, *compact.shape)
        expected = ops.col2im(upstream, x_shape, kernel, pads=pads, dilations=dilations)
        col[...] = 0
        wide.outputs(col, x_shape[0])[...] = upstream.reshape(wide.outputs(col, x_shape[0]).shape)
        dx = np.full(x_shape, np.nan)
        conv_module._col2im_into(col, wide, dx, parallel)
    np.testing.assert_allclose(dx, expected, rtol=1e-13, atol=1e-13)


def test_wide_rows_and_images_share_their_padding():
    # a row's end padding is the next row's begin padding, and an image's last padded row the
    # next image's first: 33 x 33 columns per 32 x 32 image with padding 1, not 34 x 34
    window = conv_module.conv_window((32, 32), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    columns = conv_module.Columns.of(window, (32, 32), wide=True)
    assert columns.grid == (1, 33, 33)
    assert columns.span == 33 * 33
    # up to the last image's last output, plus the largest row shift (split 2)
    split = columns._replace(split=2)
    assert split.shifts() == (0, 33, 66)
    assert split.width(4) == 3 * 33 * 33 + 31 * 33 + 32 + 66


# --- the op: numba against numpy, chunks, layouts ---------------------------------------------


def _conv_and_grads(x_value, w_value, b_value, **attrs):
    x, w, b = (mt.tensor(v, requires_grad=True) for v in (x_value, w_value, b_value))
    y = ops.conv(x, w, b, **attrs)
    y.backward(np.cos(np.arange(y.data.size)).reshape(y.shape).astype(y.dtype))
    return y.data, x.grad.data, w.grad.data, b.grad.data


@pytest.mark.parametrize(
    "attrs",
    [{"pads": 1}, {"strides": 2, "pads": (1, 0, 0, 1)}, {"dilations": 2, "group": 2}],
    ids=["same_3x3", "strided", "dilated_groups"],
)
def test_numba_conv_matches_numpy_in_float32(attrs):
    rng = np.random.default_rng(9)
    values = _leaves(rng, (3, 4, 9, 8), (6, 4 // attrs.get("group", 1), 3, 3))
    values = [v.astype(np.float32) for v in values]
    with backend.use_numba(True):
        fast = _conv_and_grads(*values, **attrs)
    with backend.use_numba(False):
        generic = _conv_and_grads(*values, **attrs)
    for got, want in zip(fast, generic, strict=True):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


# (wide, split): the compact layout, the wide one, and the wide one with the taps of the
# canonical dims before `split` taken by shifting
LAYOUTS = [(False, 0), (True, 0), (True, 1), (True, 2), (True, 3)]
LAYOUT_IDS = ["compact", "wide", "wide_split_depth", "wide_split_rows", "wide_split_all"]


@pytest.mark.parametrize("group", [1, 2], ids=["one_group", "two_groups"])
@pytest.mark.parametrize("with_bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize(
    "x_shape", [(3, 2, 9), (3, 2, 7, 6), (2, 2, 4, 5, 3)], ids=["1d", "2d", "3d"]
)
def test_numba_column_transposes_match_numpy_exactly(x_shape, layout, with_bias, group):
    # the forward's (group, S*M/group, width(n)) -> (n, M, *out), shifts summed, plus bias, and
    # the backward's dY the other way, once per shift
    rng = np.random.default_rng(12)
    dims = len(x_shape) - 2
    window = conv_module.conv_window(
        x_shape[2:], (2,) * dims, (1,) * dims, (1,) * 2 * dims, (1,) * dims
    )
    wide, split = layout
    columns = conv_module.Columns.of(window, x_shape[2:], wide=wide, split=split)
    shifts = len(columns.shifts())
    assert shifts == (2 ** min(dims, split - 3 + dims) if wide and split + dims > 3 else 1)
    n, filters = x_shape[0], 6
    out = rng.standard_normal((group, shifts * filters // group, columns.width(n)))
    bias = rng.standard_normal(filters) if with_bias else None
    dy = rng.standard_normal((n, filters) + window.out)
    results = []
    for use_numba in (True, False):
        with backend.use_numba(use_numba):
            y = np.full((n, filters) + window.out, np.nan)
            conv_module._columns_to_images(out, columns, bias, y)
            dy_columns = np.full(out.shape, np.nan)
            bias_grad = np.ones(filters)  # accumulated into
            conv_module._images_to_columns(dy, columns, dy_columns, bias_grad)
        results.append((y, dy_columns, bias_grad))
    (y, dy_columns, bias_grad), (y_numpy, dy_columns_numpy, bias_grad_numpy) = results
    np.testing.assert_array_equal(y, y_numpy)
    np.testing.assert_array_equal(dy_columns, dy_columns_numpy)
    np.testing.assert_allclose(bias_grad, bias_grad_numpy, rtol=1e-13)
    np.testing.assert_allclose(bias_grad, 1 + dy.sum(axis=(0, *range(2, dy.ndim))), rtol=1e-13)
    assert not np.isnan(dy_columns).any()  # unused wide columns are 0
    # the output columns go back where they came from, once per shift: dY -> columns ->
    # images is S * dY
    conv_module._columns_to_images(dy_columns, columns, None, y)
    np.testing.assert_allclose(y, shifts * dy, rtol=1e-15)


def test_convs_in_two_threads_at_once_match_each_alone(monkeypatch):
    # nothing a conv keeps between calls (cached layouts, kernel arguments) is shared state:
    # two threads' convs, switching while BLAS runs, give what each gives alone
    monkeypatch.setattr(conv_module, "_COL_CHUNK_BYTES", 1 << 17)  # a few chunks each
    rng = np.random.default_rng(13)
    cases = [_leaves(rng, (6, 8, 12, 12), (8, 8, 3, 3)), _leaves(rng, (5, 8, 10, 9), (8, 8, 3, 3))]
    alone = [_conv_and_grads(*values, pads=1) for values in cases]
    results = [[], []]

    def run(i):
        for _ in range(10):
            results[i].append(_conv_and_grads(*cases[i], pads=1))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for runs, want in zip(results, alone, strict=True):
        assert len(runs) == 10
        for got in runs:
            for a, b in zip(got, want, strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("attrs", [{"pads": 1}, {"strides": (2, 1)}], ids=["wide", "compact"])
def test_a_batch_in_chunks_matches_one_chunk(monkeypatch, attrs):
    rng = np.random.default_rng(10)
    values = _leaves(rng, (7, 3, 6, 5), (4, 3, 3, 3))
    whole = _conv_and_grads(*values, **attrs)
    monkeypatch.setattr(conv_module, "_COL_CHUNK_BYTES", 1)  # one image per chunk
    for got, want in zip(_conv_and_grads(*values, **attrs), whole, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(
    "attrs", [{"pads": 1}, {"strides": (2, 1), "group": 2}], ids=["wide", "compact"]
)
def test_chunks_side_by_side_match_one_thread(monkeypatch, side_by_side_on, record_builds, attrs):
    rng = np.random.default_rng(12)
    w_shape = (6, 4 // attrs.get("group", 1), 3, 3)
    values = [v.astype(np.float32) for v in _leaves(rng, (7, 4, 6, 5), w_shape)]
    monkeypatch.setattr(conv_module, "_COL_CHUNK_BYTES", 1)  # one image per chunk
    one = _conv_and_grads(*values, **attrs)
    shares = side_by_side_on(3)
    builds = record_builds(conv_module, "_numba_kernels")
    y, dx, dw, db = _conv_and_grads(*values, **attrs)
    # only the serial builds: numba's default (workqueue) threading layer aborts when parallel
    # kernels are launched from two threads at once
    assert builds and not any(builds)
    # the forward and the backward, each the 7 images in 7 chunks, shared by 3 threads
    chunks = [[slice(i, i + 1) for i in range(t, 7, 3)] for t in range(3)]
    assert shares == [chunks, chunks]
    np.testing.assert_array_equal(y, one[0])  # each image's work is the same, wherever it runs
    np.testing.assert_array_equal(dx, one[1])
    np.testing.assert_allclose(dw, one[2], rtol=1e-5, atol=1e-5)  # summed in another order
    np.testing.assert_allclose(db, one[3], rtol=1e-6, atol=1e-6)


def test_only_a_big_batch_runs_side_by_side_and_memory_does_not_grow_with_the_cores(
    monkeypatch,
):
    cores = [2]
    monkeypatch.setattr(conv_module, "side_by_side_threads", lambda: cores[0])
    dtype = np.dtype(np.float32)

    def threads(x_shape, filters):
        window = conv_module.conv_window(x_shape[2:], (3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
        weight = np.zeros((filters, x_shape[1], 3, 3), np.float32)
        return conv_module._Chunked.of(x_shape, dtype, weight, window, 1).threads

    assert threads((32, 64, 32, 32), 64) == 2  # the benchmark's conv: 51 MB of buffers
    assert threads((8, 64, 32, 32), 64) == 2  # 12.8 MB
    assert threads((64, 16, 14, 14), 32) == 1  # 9.7 MB (the CNN benchmark's second conv)
    assert threads((1, 64, 256, 256), 64) == 1  # one image
    cores[0] = 16
    # a one-image chunk and dW's two sums (2.0 MB) fit 12 MB 6 times
    assert threads((32, 64, 32, 32), 64) == 6
    assert threads((4, 64, 224, 224), 64) == 1  # one image's buffers fill the budget
    assert threads((64, 512, 14, 14), 512) == 1  # dW's sum and product take 19 MB


@pytest.mark.parametrize(
    "N, threads, chunk_images, expected",
    [
        (7, 3, 1, [[0, 3, 6], [1, 4], [2, 5]]),
        (10, 2, 2, [[0, 3, 6], [1, 5, 8]]),  # 5 chunks of 2 make 6, 3 for each thread
        (3, 2, 5, [[0], [1]]),  # a multiple of the threads, even where one chunk fits
        (5, 1, 5, [[0]]),
    ],
)
def test_shares_split_the_batch_in_even_chunks_for_every_thread(
    monkeypatch, N, threads, chunk_images, expected
):
    monkeypatch.setattr(conv_module, "_COL_CHUNK_BYTES", 100 * threads * chunk_images)
    shares = conv_module._shares(N, lambda n: 100 * n, threads)
    assert [[part.start for part in share] for share in shares] == expected
    parts = sorted((part for share in shares for part in share), key=lambda p: p.start)
    assert [p.start for p in parts[1:]] == [p.stop for p in parts[:-1]]
    assert parts[0].start == 0 and parts[-1].stop == N
    sizes = [p.stop - p.start for p in parts]
    assert max(sizes) - min(sizes) <= 1 and max(sizes) <= chunk_images


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("layout", LAYOUTS[1:], ids=LAYOUT_IDS[1:])
@pytest.mark.parametrize(
    "x_shape, w_shape, attrs",
    [
        ((2, 4, 9), (6, 2, 3), {"pads": (2, 1), "dilations": 2, "group": 2}),
        ((2, 3, 6, 7), (4, 3, 3, 2), {"pads": (1, 0, 2, 1), "dilations": (1, 2)}),
        ((3, 4, 5, 6), (6, 2, 3, 3), {"pads": 1, "group": 2}),
        ((2, 2, 4, 5, 3), (3, 2, 2, 3, 2), {"pads": (1, 1, 0, 0, 1, 1), "dilations": (2, 1, 1)}),
    ],
    ids=["1d_groups_dilated", "2d_asymmetric_dilated", "2d_groups_same", "3d_dilated"],
)
def test_every_layout_agrees_with_the_compact_one_on_the_op(
    monkeypatch, x_shape, w_shape, attrs, layout, use_numba
):
    rng = np.random.default_rng(11)
    values = _leaves(rng, x_shape, w_shape)
    with backend.use_numba(use_numba):
        monkeypatch.setattr(
            conv_module,
            "_layout",
            lambda window, spatial, *_: conv_module.Columns.of(window, spatial, False),
        )
        compact = _conv_and_grads(*values, **attrs)
        wide, split = layout
        monkeypatch.setattr(
            conv_module,
            "_layout",
            lambda window, spatial, *_: conv_module.Columns.of(window, spatial, wide, split),
        )
        for got, want in zip(_conv_and_grads(*values, **attrs), compact, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize(
    "x_shape, w_shape, attrs, split",
    [
        ((32, 64, 32, 32), (64, 64, 3, 3), {"pads": 1}, 2),  # the benchmark's: (192, 192)
        ((32, 128, 16, 16), (64, 128, 3, 3), {"pads": 1}, 2),  # (192, 384), not (64, 1152)
        ((64, 1, 28, 28), (16, 1, 3, 3), {"pads": 1}, 0),  # (16, 9), not (48, 3)
        # (96, 48) would be squarer than (32, 144), but its shifts reach 13% more columns
        ((64, 16, 14, 14), (32, 16, 3, 3), {"pads": 1}, 0),
        ((8, 64, 4, 4), (64, 64, 3, 3), {"pads": 1}, 0),  # shifts would reach 40% more columns
        ((8, 64, 16, 16), (64, 64, 3, 3), {"strides": 2, "pads": 1}, None),  # compact
    ],
    ids=[
        "benchmark",
        "halving_channels",
        "first_cnn_layer",
        "second_cnn_layer",
        "small_image",
        "strided",
    ],
)
def test_layout_splits_where_the_gemm_gets_squarer(x_shape, w_shape, attrs, split):
    window = conv_module._conv_window(
        "conv", x_shape, w_shape, attrs.get("strides"), attrs["pads"], None, 1, "NOTSET"
    )
    columns = conv_module._layout(window, x_shape[2:], x_shape[1], w_shape[0])
    assert columns.wide == (split is not None)
    assert columns.split == (split or 0)


def test_an_empty_batch():
    x = mt.tensor(np.zeros((0, 2, 5, 5)), requires_grad=True)
    w = mt.tensor(np.ones((3, 2, 3, 3)), requires_grad=True)
    b = mt.tensor(np.ones(3), requires_grad=True)
    y = ops.conv(x, w, b, pads=1)
    assert y.shape == (0, 3, 5, 5)
    y.sum().backward()
    assert x.grad.shape == (0, 2, 5, 5)
    np.testing.assert_array_equal(w.grad.data, np.zeros((3, 2, 3, 3)))
    np.testing.assert_array_equal(b.grad.data, np.zeros(3))


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("channels, filters, group", [(0, 4, 1), (0, 4, 2), (3, 0, 1), (0, 0, 1)])
def test_no_channels_or_no_filters(use_numba, channels, filters, group):
    # a sum over no channels is 0, so Y is the bias; no filters, no output channels
    rng = np.random.default_rng(13)
    x = mt.tensor(_normal(rng, 2, channels, 5, 5), requires_grad=True)
    w = mt.tensor(_normal(rng, filters, channels // group, 3, 3), requires_grad=True)
    b = mt.tensor(_normal(rng, filters), requires_grad=True)
    with backend.use_numba(use_numba):
        y = F.conv2d(x, w, b, padding=1, groups=group)
        dy = _normal(rng, *y.shape)
        y.backward(dy)
    assert y.shape == (2, filters, 5, 5)
    np.testing.assert_array_equal(y.data, np.broadcast_to(b.data[:, None, None], y.shape))
    np.testing.assert_array_equal(x.grad.data, np.zeros(x.shape))
    np.testing.assert_array_equal(w.grad.data, np.zeros(w.shape))
    np.testing.assert_allclose(b.grad.data, dy.sum(axis=(0, 2, 3)))


def test_a_layer_with_no_input_channels_builds_and_warns():
    # as in PyTorch: the weight (4, 0, 3, 3) has no fan-in, so its init is a no-op with a warning
    with pytest.warns(UserWarning, match="no elements"):
        layer = mt.nn.Conv2d(0, 4, 3)
    assert layer.weight.shape == (4, 0, 3, 3)
    assert layer(mt.zeros(1, 0, 3, 3)).shape == (1, 4, 1, 1)


@pytest.mark.parametrize(
    "padding", [np.int64(1), [1, 1], [0, 0], (1, 2), "same", "valid", ((1, 0), (0, 1))]
)
def test_layer_repr_matches_torch(torch, padding):
    # padding is kept as PyTorch keeps it (a tuple per dim, or the string); numpy ints print as
    # ints, where PyTorch prints np.int64(1)
    ours = repr(mt.nn.Conv2d(4, 6, 3, padding=padding, groups=2, bias=False))
    theirs = repr(torch.nn.Conv2d(4, 6, 3, padding=padding, groups=2, bias=False))
    assert ours == theirs.replace("np.int64(1)", "1")


def test_a_non_contiguous_input():
    rng = np.random.default_rng(12)
    x_value = _normal(rng, 2, 5, 6, 3)
    w_value = _normal(rng, 4, 3, 2, 2)
    transposed = mt.tensor(x_value).transpose(1, 3)  # (2, 3, 6, 5), a strided view
    dense = mt.tensor(np.ascontiguousarray(transposed.data))
    np.testing.assert_allclose(
        ops.conv(transposed, w_value, pads=1).data, ops.conv(dense, w_value, pads=1).data
    )
    dy = _normal(rng, 2, 4, 7, 6)
    for got, want in zip(
        ops.conv_grad(dy, transposed.data, w_value, pads=1),
        ops.conv_grad(dy, dense.data, w_value, pads=1),
        strict=True,
    ):
        np.testing.assert_allclose(got, want)


def test_float32_stays_float32_through_the_kernels():
    rng = np.random.default_rng(13)
    x, w = (v.astype(np.float32) for v in _leaves(rng, (2, 2, 5, 5), (3, 2, 3, 3), bias=False))
    y = ops.conv(x, w, pads=1)
    assert y.dtype == np.float32
    for grad in ops.conv_grad(y.data, x, w, pads=1):
        assert grad.dtype == np.float32


# --- PyTorch's spellings ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "padding, onnx_pads",
    [
        (1, (1, 1, 1, 1)),
        ((2, 0), (2, 0, 2, 0)),
        (((1, 2), (0, 1)), (1, 0, 2, 1)),
        ("valid", (0, 0, 0, 0)),
        # stride 1, kernel (3, 2): 2 pads in H (one each side) and 1 in W, at the end
        ("same", (1, 0, 1, 1)),
    ],
    ids=["int", "per_dim", "pairs", "valid", "same"],
)
def test_functional_padding_forms(padding, onnx_pads):
    rng = np.random.default_rng(14)
    x, w, b = _leaves(rng, (2, 2, 5, 6), (3, 2, 3, 2))
    ours = F.conv2d(mt.tensor(x), mt.tensor(w), mt.tensor(b), padding=padding)
    np.testing.assert_array_equal(ours.data, ops.conv(x, w, b, pads=onnx_pads).data)


def test_functional_same_with_a_stride_pads_like_onnx_same_upper():
    # PyTorch refuses 'same' with stride 2; minitrain gives ceil(L / stride) outputs, as ONNX:
    # L = 6, kernel 3: 3 outputs need (3 - 1) * 2 + 3 - 6 = 1 pad, at the end
    rng = np.random.default_rng(15)
    x, w = _leaves(rng, (1, 2, 6), (2, 2, 3), bias=False)
    y = F.conv1d(mt.tensor(x), mt.tensor(w), stride=2, padding="same")
    assert y.shape == (1, 2, 3)
    np.testing.assert_array_equal(y.data, ops.conv(x, w, strides=2, pads=(0, 1)).data)


def test_functional_unbatched_input(torch):
    rng = np.random.default_rng(16)
    x, w, b = _leaves(rng, (3, 5, 4), (2, 3, 2, 2))
    x_tensor = mt.tensor(x, requires_grad=True)
    y = F.conv2d(x_tensor, mt.tensor(w), mt.tensor(b), stride=(1, 2), dilation=(2, 1))
    expected = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), (1, 2), 0, (2, 1)
    )
    assert y.shape == tuple(expected.shape) == (2, 3, 2)
    np.testing.assert_allclose(y.data, expected.numpy(), rtol=1e-12)
    y.sum().backward()
    assert x_tensor.grad.shape == x.shape


def test_defaults_are_stride_1_no_padding_dilation_1_one_group():
    rng = np.random.default_rng(17)
    x, w = _leaves(rng, (1, 2, 5, 5), (3, 2, 3, 3), bias=False)
    explicit = ops.conv(x, w, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1)
    np.testing.assert_array_equal(ops.conv(x, w).data, explicit.data)
    np.testing.assert_array_equal(F.conv2d(x, w).data, explicit.data)


# --- errors -------------------------------------------------------------------------------------


def _zeros(*shape, dtype=np.float64):
    return np.zeros(shape, dtype)


ERRORS = [
    # (id, call, error, words the message must hold)
    (
        "group_not_dividing_C",
        lambda: ops.conv(_zeros(1, 4, 5, 5), _zeros(6, 2, 3, 3), group=3),
        ShapeError,
        ["conv", "group 3", "(1, 4, 5, 5)", "(6, 2, 3, 3)"],
    ),
    (
        "group_not_dividing_M",
        lambda: ops.conv(_zeros(1, 4, 5, 5), _zeros(5, 2, 3, 3), group=2),
        ShapeError,
        ["conv", "group 2", "M = 5"],
    ),
    (
        "w_channels_not_C_over_group",
        lambda: ops.conv(_zeros(1, 4, 5, 5), _zeros(6, 4, 3, 3), group=2),
        ShapeError,
        ["conv", "C/group", "(1, 4, 5, 5)", "(6, 4, 3, 3)"],
    ),
    (
        "kernel_larger_than_padded_input",
        lambda: ops.conv(_zeros(1, 1, 2, 4), _zeros(1, 1, 3, 3)),
        ShapeError,
        ["conv", "spans 3", "spatial dim 0", "padded input's 2"],
    ),
    (
        "stride_zero",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), strides=(1, 0)),
        ValueError,
        ["conv", "strides", ">= 1", "(1, 0)"],
    ),
    (
        "dilation_negative",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), dilations=-1),
        ValueError,
        ["conv", "dilations", ">= 1"],
    ),
    (
        "group_zero",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), group=0),
        ValueError,
        ["conv", "group", "positive"],
    ),
    (
        "input_rank_too_low",
        lambda: ops.conv(_zeros(4, 5), _zeros(1, 1, 3)),
        ShapeError,
        ["conv", "input X", "(4, 5)", "1 to 3 spatial dims"],
    ),
    (
        "input_rank_too_high",
        lambda: ops.conv(_zeros(1, 1, 2, 2, 2, 2), _zeros(1, 1, 1, 1, 1, 1)),
        ShapeError,
        ["conv", "(1, 1, 2, 2, 2, 2)"],
    ),
    (
        "weight_rank",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3)),
        ShapeError,
        ["conv", "weight W", "(1, 1, 3)", "rank"],
    ),
    (
        "pads_length",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), pads=(1, 1, 1)),
        ShapeError,
        ["conv", "pads", "2 * 2", "(1, 1, 1)"],
    ),
    (
        "pads_negative",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), pads=(1, -1, 1, 1)),
        ValueError,
        ["conv", "pads", ">= 0"],
    ),
    (
        "unknown_auto_pad",
        lambda: ops.conv(_zeros(1, 1, 5), _zeros(1, 1, 3), auto_pad="SAME"),
        ValueError,
        ["conv", "auto_pad", "'SAME'", "SAME_UPPER"],
    ),
    (
        "pads_and_auto_pad",
        lambda: ops.conv(_zeros(1, 1, 5), _zeros(1, 1, 3), pads=1, auto_pad="VALID"),
        ValueError,
        ["conv", "pads", "auto_pad"],
    ),
    (
        "bias_shape",
        lambda: ops.conv(_zeros(1, 2, 5), _zeros(3, 2, 3), _zeros(2)),
        ShapeError,
        ["conv", "bias", "(3,)", "(2,)"],
    ),
    (
        "integer_input",
        lambda: ops.conv(_zeros(1, 2, 5, dtype=np.int64), _zeros(3, 2, 3)),
        DTypeError,
        ["conv", "X", "floating", "int64"],
    ),
    (
        "mixed_dtypes",
        lambda: ops.conv(_zeros(1, 2, 5, dtype=np.float32), _zeros(3, 2, 3)),
        DTypeError,
        ["conv", "float32", "float64"],
    ),
    (
        "float_stride",
        lambda: ops.conv(_zeros(1, 1, 5), _zeros(1, 1, 3), strides=1.5),
        DTypeError,
        ["conv", "strides", "1.5"],
    ),
    (
        "torch_stride_zero",
        lambda: F.conv2d(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), stride=0),
        ValueError,
        ["conv2d", "stride must be >= 1"],
    ),
    (
        "torch_groups",
        lambda: F.conv2d(_zeros(1, 3, 5, 5), _zeros(2, 2, 3, 3), groups=2),
        ShapeError,
        ["conv2d", "groups 2", "C = 3"],
    ),
    (
        "torch_padding_string",
        lambda: F.conv1d(_zeros(1, 1, 5), _zeros(1, 1, 3), padding="full"),
        ValueError,
        ["conv1d", "padding", "'full'"],
    ),
    (
        "torch_padding_pairs",
        lambda: F.conv2d(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), padding=((1, 1),)),
        ShapeError,
        ["conv2d", "padding", "pair"],
    ),
    (
        "torch_rank",
        lambda: F.conv3d(_zeros(5, 5), _zeros(1, 1, 1, 1, 1)),
        ShapeError,
        ["conv3d", "(5, 5)", "3 spatial dims"],
    ),
    (
        "conv_grad_dy_shape",
        lambda: ops.conv_grad(_zeros(1, 1, 4), _zeros(1, 1, 5), _zeros(1, 1, 3)),
        ShapeError,
        ["conv_grad", "dY", "(1, 1, 4)", "(1, 1, 3)"],
    ),
    (
        "conv_grad_need",
        lambda: ops.conv_grad(_zeros(1, 1, 3), _zeros(1, 1, 5), _zeros(1, 1, 3), need=(True,)),
        ValueError,
        ["conv_grad", "need", "three"],
    ),
    (
        "conv_grad_need_string",  # three characters are not three flags
        lambda: ops.conv_grad(_zeros(1, 1, 3), _zeros(1, 1, 5), _zeros(1, 1, 3), need="xyz"),
        ValueError,
        ["conv_grad", "need", "'xyz'"],
    ),
    (
        "layer_padding_string",
        lambda: mt.nn.Conv2d(3, 4, 3, padding="SAME"),
        ValueError,
        ["Conv2d", "padding", "'SAME'"],
    ),
    (
        "layer_groups_zero",
        lambda: mt.nn.Conv2d(3, 3, 3, groups=0),
        ValueError,
        ["Conv2d", "groups", ">= 1", "0"],
    ),
    (
        "layer_channels_float",
        lambda: mt.nn.Conv1d(3.0, 4, 3),
        DTypeError,
        ["Conv1d", "in_channels", "3.0"],
    ),
    (
        "im2col_kernel_dims",
        lambda: ops.im2col(_zeros(1, 1, 5), (3, 3)),
        ShapeError,
        ["im2col", "kernel_shape", "1 values"],
    ),
    (
        "col2im_col_shape",
        lambda: ops.col2im(_zeros(9, 5), (1, 1, 4, 4), 3),
        ShapeError,
        ["col2im", "(9, 5)", "(C*K, N*P) = (9, 4)"],
    ),
]


@pytest.mark.parametrize("call, error, words", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_op_the_argument_and_the_shapes(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"


def test_a_failing_conv_records_nothing():
    x = mt.tensor(np.zeros((1, 4, 5, 5)), requires_grad=True)
    w = mt.tensor(np.zeros((6, 2, 3, 3)), requires_grad=True)
    with mt.Tape() as tape, pytest.raises(ShapeError):
        ops.conv(x, w, group=3)
    assert len(tape) == 0
    assert x.grad is None and w.grad is None
