"""The conv ops' column layouts: im2col / col2im (numba and numpy) against a loop-by-loop
reference, the wide layout against the compact one, and the passes between a GEMM's output
columns and images."""

from __future__ import annotations

import importlib
import itertools
import math

import numpy as np
import pytest

from minitrain import backend, ops

columns_module = importlib.import_module("minitrain.ops.convolution.columns")
window_module = importlib.import_module("minitrain.ops.convolution.window")


def _normal(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


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
    monkeypatch.setattr(columns_module, "_PARALLEL_WORK", 0)
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
    window = window_module.conv_window(x_shape[2:], kernel, strides, pads, dilations)
    wide = columns_module.Columns.of(window, x_shape[2:], wide=True)
    rows = x_shape[1] * math.prod(kernel)
    with backend.use_numba(use_numba):
        compact = ops.im2col(x, kernel, pads=pads, dilations=dilations)
        col = np.full((rows, wide.width(x_shape[0])), np.nan)
        columns_module.im2col_into(x, wide, col, parallel)
        outputs = wide.outputs(col, x_shape[0]).reshape(rows, -1)
        np.testing.assert_array_equal(outputs, compact)
        assert np.isfinite(col).all()  # every column written, used or not
        upstream = _normal(rng, *compact.shape)
        expected = ops.col2im(upstream, x_shape, kernel, pads=pads, dilations=dilations)
        col[...] = 0
        wide.outputs(col, x_shape[0])[...] = upstream.reshape(wide.outputs(col, x_shape[0]).shape)
        dx = np.full(x_shape, np.nan)
        columns_module.col2im_into(col, wide, dx, parallel)
    np.testing.assert_allclose(dx, expected, rtol=1e-13, atol=1e-13)


def test_wide_rows_and_images_share_their_padding():
    # a row's end padding is the next row's begin padding, and an image's last padded row the
    # next image's first: 33 x 33 columns per 32 x 32 image with padding 1, not 34 x 34
    window = window_module.conv_window((32, 32), (3, 3), (1, 1), (1, 1, 1, 1), (1, 1))
    columns = columns_module.Columns.of(window, (32, 32), wide=True)
    assert columns.grid == (1, 33, 33)
    assert columns.span == 33 * 33
    # up to the last image's last output, plus the largest row shift (split 2)
    split = columns._replace(split=2)
    assert split.shifts() == (0, 33, 66)
    assert split.width(4) == 3 * 33 * 33 + 31 * 33 + 32 + 66


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
    window = window_module.conv_window(
        x_shape[2:], (2,) * dims, (1,) * dims, (1,) * 2 * dims, (1,) * dims
    )
    wide, split = layout
    columns = columns_module.Columns.of(window, x_shape[2:], wide=wide, split=split)
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
            columns_module.columns_to_images(out, columns, bias, y)
            dy_columns = np.full(out.shape, np.nan)
            bias_grad = np.ones(filters)  # accumulated into
            columns_module.images_to_columns(dy, columns, dy_columns, bias_grad)
        results.append((y, dy_columns, bias_grad))
    (y, dy_columns, bias_grad), (y_numpy, dy_columns_numpy, bias_grad_numpy) = results
    np.testing.assert_array_equal(y, y_numpy)
    np.testing.assert_array_equal(dy_columns, dy_columns_numpy)
    np.testing.assert_allclose(bias_grad, bias_grad_numpy, rtol=1e-13)
    np.testing.assert_allclose(bias_grad, 1 + dy.sum(axis=(0, *range(2, dy.ndim))), rtol=1e-13)
    assert not np.isnan(dy_columns).any()  # unused wide columns are 0
    # the output columns go back where they came from, once per shift: dY -> columns ->
    # images is S * dY
    columns_module.columns_to_images(dy_columns, columns, None, y)
    np.testing.assert_allclose(y, shifts * dy, rtol=1e-15)
