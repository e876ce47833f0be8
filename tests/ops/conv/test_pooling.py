"""Pooling: PyTorch's rules worked by hand (ties go to the first max, NaN propagates,
ceil_mode's last window, count_include_pad, divisor_override, adaptive windows), the gradient
kernels called directly against PyTorch, the numba kernels against the numpy ones, and the
errors. (Gradchecks and PyTorch comparisons of the ops run from their samples,
tests/samples/convolution/max_pooling.py, average_pooling.py and adaptive_pooling.py.)"""

from __future__ import annotations

import functools
import importlib
import itertools

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's name for it)

max_pooling = importlib.import_module("minitrain.ops.convolution.max_pooling")
average_pooling = importlib.import_module("minitrain.ops.convolution.average_pooling")
window_module = importlib.import_module("minitrain.ops.convolution.window")


def _leaf(values, dtype=np.float64):
    return mt.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def _grad(out, x, upstream=None):
    out.backward(np.ones(out.shape) if upstream is None else upstream)
    return x.grad.array


USE_NUMBA = pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])


@USE_NUMBA
def test_max_pool_ties_send_the_gradient_to_the_first_max(use_numba):
    # windows of 2, stride 1 over [1, 3, 3, 2]: [1, 3] [3, 3] [3, 2], each max 3; the middle
    # window's max is the first 3 (position 1), so position 1 gets two gradients, 2 gets one
    x = _leaf([[[1.0, 3.0, 3.0, 2.0]]])
    with backend.use_numba(use_numba):
        out = ops.max_pool(x, 2, stride=1)
        np.testing.assert_array_equal(out.array, [[[3.0, 3.0, 3.0]]])
        np.testing.assert_array_equal(
            _grad(out, x, np.array([[[1.0, 10.0, 100.0]]])), [[[0.0, 11.0, 100.0, 0.0]]]
        )


@USE_NUMBA
def test_max_pool_ties_in_2d_follow_row_major_window_order(torch, use_numba):
    # one 2x2 window of equal values: the first in row-major order, (0, 0), takes it all
    x = _leaf(np.full((1, 1, 2, 2), 5.0))
    with backend.use_numba(use_numba):
        grad = _grad(ops.max_pool(x, 2), x)
    np.testing.assert_array_equal(grad, [[[[1.0, 0.0], [0.0, 0.0]]]])
    tx = torch.full((1, 1, 2, 2), 5.0, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.max_pool2d(tx, 2).backward(torch.ones(1, 1, 1, 1, dtype=torch.float64))
    np.testing.assert_array_equal(grad, tx.grad.numpy())


@USE_NUMBA
def test_max_pool_with_nan_is_nan_like_torch(torch, use_numba):
    values = np.array([[[1.0, np.nan, 2.0, np.nan, 0.5, 4.0]]])
    x = _leaf(values)
    with backend.use_numba(use_numba):
        out = ops.max_pool(x, 3, stride=1)
        grad = _grad(out, x)
    tx = torch.tensor(values, requires_grad=True)
    expected = torch.nn.functional.max_pool1d(tx, 3, 1)
    expected.backward(torch.ones_like(expected))
    np.testing.assert_array_equal(out.array, expected.detach().numpy())  # NaN where torch's
    assert np.isnan(out.array).all()  # every window of 3 holds a NaN
    np.testing.assert_array_equal(grad, tx.grad.numpy())


@USE_NUMBA
def test_a_window_over_padding_only_is_minus_inf_with_no_gradient(torch, use_numba):
    # L = 2, kernel 2, dilation 3, pad 1: the one window reads positions -1 and 2, both padding
    x = _leaf([[[1.0, 2.0]]])
    with backend.use_numba(use_numba):
        out = ops.max_pool(x, 2, stride=1, padding=1, dilation=3)
        np.testing.assert_array_equal(out.array, [[[-np.inf]]])
        np.testing.assert_array_equal(_grad(out, x), [[[0.0, 0.0]]])
    expected = torch.nn.functional.max_pool1d(torch.tensor([[[1.0, 2.0]]]), 2, 1, 1, dilation=3)
    np.testing.assert_array_equal(out.array, expected.numpy())


@pytest.mark.parametrize(
    "length, kernel, stride, pad, dilation",
    [
        (length, kernel, stride, pad, dilation)
        for length, kernel, stride, dilation in itertools.product(
            [1, 2, 3, 4, 5, 6, 7], [2, 3], [1, 2, 3], [1, 2]
        )
        for pad in range(kernel // 2 + 1)
    ],
)
def test_ceil_mode_output_sizes_match_torch(torch, length, kernel, stride, pad, dilation):
    # including windows longer than the padded input, which ceil_mode can still fit
    x = np.zeros((1, 1, length))
    for ceil_mode in (False, True):
        try:
            theirs = torch.nn.functional.max_pool1d(
                torch.from_numpy(x), kernel, stride, pad, dilation, ceil_mode=ceil_mode
            ).shape
        except RuntimeError:  # PyTorch: "Output size is too small"
            theirs = None
        pools = [functools.partial(ops.max_pool, dilation=dilation)]
        for pool in pools + [ops.avg_pool] * (dilation == 1):
            if theirs is None:
                with pytest.raises(ShapeError, match="padded input's"):
                    pool(x, kernel, stride=stride, padding=pad, ceil_mode=ceil_mode)
            else:
                ours = pool(x, kernel, stride=stride, padding=pad, ceil_mode=ceil_mode)
                assert ours.shape == tuple(theirs)


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("shape", [(0, 3, 4, 4), (2, 0, 4, 4)], ids=["no_images", "no_channels"])
def test_max_pool_of_an_empty_batch_or_no_channels(use_numba, shape):
    # (PyTorch takes the empty batch and refuses no channels; both have one answer)
    x = mt.zeros(*shape, requires_grad=True)
    with backend.use_numba(use_numba):
        out = F.max_pool2d(x, 2)
        out.sum().backward()
    assert out.shape == shape[:2] + (2, 2)
    assert x.grad.shape == shape


def test_avg_pool1d_layer_takes_numpy_ints(torch):
    layer = mt.nn.AvgPool1d(np.int64(3), stride=np.int64(2), padding=np.int64(1))
    x = np.random.default_rng(3).standard_normal((2, 3, 9))
    expected = torch.nn.AvgPool1d(3, stride=2, padding=1)(torch.from_numpy(x))
    np.testing.assert_allclose(layer(mt.tensor(x)).array, expected.numpy(), rtol=1e-12)
    assert repr(layer) == repr(torch.nn.AvgPool1d(3, stride=2, padding=1))


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
def test_ceil_mode_windows_longer_than_the_padded_input_match_torch(torch, use_numba):
    # H = 1 and W = 2 with a 2x3 kernel, stride 2, no padding: ceil_mode fits one window per
    # dim, hanging past the input; the average and the max are over the elements it covers
    rng = np.random.default_rng(9)
    x = rng.standard_normal((2, 3, 1, 2))
    tx = torch.from_numpy(x).requires_grad_()
    with backend.use_numba(use_numba):
        for ours, theirs in [
            (F.avg_pool2d, torch.nn.functional.avg_pool2d),
            (F.max_pool2d, torch.nn.functional.max_pool2d),
        ]:
            mx = mt.tensor(x, requires_grad=True)
            out = ours(mx, (2, 3), 2, ceil_mode=True)
            expected = theirs(tx, (2, 3), 2, ceil_mode=True)
            assert out.shape == tuple(expected.shape) == (2, 3, 1, 1)
            np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12)
            grad = rng.standard_normal(out.shape)
            out.backward(grad)
            (expected_grad,) = torch.autograd.grad(expected, tx, torch.from_numpy(grad))
            np.testing.assert_allclose(mx.grad, expected_grad.numpy(), rtol=1e-12)


def test_ceil_mode_drops_a_last_window_that_starts_in_the_right_padding():
    # L = 4, kernel 2, stride 3, pad 1: ceil((4 + 2 - 2) / 3) + 1 = 3 windows, but the third
    # would start at 2 * 3 - 1 = 5, past the input (4) and its left padding: 2 windows
    x = np.arange(4.0).reshape(1, 1, 4)
    out = ops.max_pool(x, 2, stride=3, padding=1, ceil_mode=True)
    np.testing.assert_array_equal(out.array, [[[0.0, 3.0]]])  # windows [-1, 0] and [2, 3]
    # L = 6 instead: the third window starts at 6 - 1 = 5, inside the input, and stays,
    # reaching into the right padding
    out = ops.max_pool(np.arange(6.0).reshape(1, 1, 6), 2, stride=3, padding=1, ceil_mode=True)
    np.testing.assert_array_equal(out.array, [[[0.0, 3.0, 5.0]]])


@USE_NUMBA
def test_count_include_pad_by_hand(use_numba):
    # [1, 2, 3, 4], kernel 3, stride 1, pad 1: windows [0 1 2] [1 2 3] [2 3 4] [3 4 0]
    x = _leaf([[[1.0, 2.0, 3.0, 4.0]]])
    with backend.use_numba(use_numba):
        include = ops.avg_pool(x, 3, 1, 1)
        exclude = ops.avg_pool(x, 3, 1, 1, count_include_pad=False)
        np.testing.assert_allclose(include.array, [[[3 / 3, 6 / 3, 9 / 3, 7 / 3]]])
        np.testing.assert_allclose(exclude.array, [[[3 / 2, 6 / 3, 9 / 3, 7 / 2]]])
        # each element gets 1/divisor from every window holding it
        np.testing.assert_allclose(
            _grad(exclude, x), [[[1 / 2 + 1 / 3, 1 / 2 + 2 / 3, 2 / 3 + 1 / 2, 1 / 3 + 1 / 2]]]
        )


@USE_NUMBA
def test_count_include_pad_does_not_count_the_ceil_mode_overhang(torch, use_numba):
    # L = 4, kernel 3, stride 2, pad 1, ceil: windows start at -1 and 1, and a third at 3 that
    # runs to 5: the padded input ends at 4 + 1 = 5, so it counts 2 (positions 3, 4), not 3
    x = _leaf([[[1.0, 2.0, 3.0, 4.0]]])
    with backend.use_numba(use_numba):
        out = ops.avg_pool(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=True)
    np.testing.assert_allclose(out.array, [[[3 / 3, 9 / 3, 4 / 2]]])
    expected = torch.nn.functional.avg_pool1d(torch.from_numpy(x.array), 3, 2, 1, ceil_mode=True)
    np.testing.assert_allclose(out.array, expected.numpy())


@USE_NUMBA
def test_divisor_override_by_hand(use_numba):
    x = _leaf(np.arange(16.0).reshape(1, 1, 4, 4))
    with backend.use_numba(use_numba):
        out = ops.avg_pool(x, 2, divisor_override=3)
        # window sums: 0+1+4+5, 2+3+6+7, 8+9+12+13, 10+11+14+15
        np.testing.assert_allclose(out.array, [[[[10 / 3, 18 / 3], [42 / 3, 50 / 3]]]])
        np.testing.assert_allclose(_grad(out, x), np.full((1, 1, 4, 4), 1 / 3))


def test_adaptive_windows_by_hand():
    # L = 5 to 3: windows start floor(i * 5 / 3) = 0, 1, 3 and end ceil((i + 1) * 5 / 3) = 2, 4, 5
    x = _leaf([[[1.0, 2.0, 3.0, 4.0, 5.0]]])
    out = ops.adaptive_avg_pool(x, 3)
    np.testing.assert_allclose(out.array, [[[1.5, 3.0, 4.5]]])
    np.testing.assert_allclose(
        _grad(out, x), [[[1 / 2, 1 / 2 + 1 / 3, 1 / 3, 1 / 3 + 1 / 2, 1 / 2]]]
    )
    # L = 3 to 5 (larger): starts 0, 0, 1, 1, 2 and ends 1, 2, 2, 3, 3
    out = ops.adaptive_avg_pool(np.array([[[1.0, 2.0, 3.0]]]), 5)
    np.testing.assert_allclose(out.array, [[[1.0, 1.5, 2.0, 2.5, 3.0]]])


def test_global_average_pooling_is_the_spatial_mean():
    rng = np.random.default_rng(0)
    values = rng.standard_normal((2, 3, 4, 5))
    x = _leaf(values)
    out = ops.adaptive_avg_pool(x, 1)
    np.testing.assert_allclose(out.array, values.mean(axis=(2, 3), keepdims=True))
    np.testing.assert_allclose(_grad(out, x), np.full(values.shape, 1 / 20))


def test_max_pool_grad_kernel_takes_torch_indices(torch):
    rng = np.random.default_rng(1)
    values = rng.standard_normal((2, 3, 7, 6))
    tx = torch.tensor(values, requires_grad=True)
    out, indices = torch.nn.functional.max_pool2d(tx, 3, 2, 1, ceil_mode=True, return_indices=True)
    dy = rng.standard_normal(out.shape)
    out.backward(torch.from_numpy(dy))
    dx = ops.max_pool_grad(dy, indices.numpy(), values.shape)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-14)
    # indices as nested lists, as any array argument may come
    dx = ops.max_pool_grad(dy, indices.numpy().tolist(), values.shape)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-14)


@pytest.mark.parametrize("return_unbatched", [False, True], ids=["batched", "unbatched"])
def test_return_indices_match_torch(torch, return_unbatched):
    rng = np.random.default_rng(2)
    shape = (3, 5, 7) if return_unbatched else (2, 3, 5, 7)
    values = rng.standard_normal(shape)
    out, indices = F.max_pool2d(
        mt.tensor(values), (2, 3), (1, 2), (1, 1), ceil_mode=True, return_indices=True
    )
    expected, expected_indices = torch.nn.functional.max_pool2d(
        torch.from_numpy(values), (2, 3), (1, 2), (1, 1), ceil_mode=True, return_indices=True
    )
    np.testing.assert_array_equal(out.array, expected.numpy())
    np.testing.assert_array_equal(indices.array, expected_indices.numpy())
    assert indices.dtype == np.int64 and not indices.requires_grad


@USE_NUMBA
@pytest.mark.parametrize(
    "shape, kernel, strides, pads, ceil_mode, count_include_pad, divisor_override",
    [
        ((2, 3, 9), (3,), (2,), (1, 1), True, True, None),
        ((2, 2, 6, 7), (3, 2), (2, 3), (1, 1, 1, 1), True, False, None),
        ((1, 2, 5, 5), (2, 2), (1, 1), (1, 0, 1, 0), False, True, None),
        ((1, 2, 4, 5, 6), (2, 3, 2), (1, 2, 2), (1, 1, 0, 1, 1, 0), True, True, 5),
    ],
    ids=["1d", "2d_exclude_pad", "2d_asymmetric", "3d_divisor"],
)
def test_avg_pool_grad_kernel_matches_torch(
    torch, shape, kernel, strides, pads, ceil_mode, count_include_pad, divisor_override, use_numba
):
    rng = np.random.default_rng(3)
    values = rng.standard_normal(shape)
    dims = len(kernel)
    tx = torch.tensor(values, requires_grad=True)
    pool = getattr(torch.nn.functional, f"avg_pool{dims}d")
    if pads[:dims] == pads[dims:]:
        extra = {} if dims == 1 else {"divisor_override": divisor_override}
        expected = pool(tx, kernel, strides, pads[:dims], ceil_mode, count_include_pad, **extra)
    else:  # asymmetric: zeros padded by hand count as elements, as count_include_pad does
        padding = [n for d in reversed(range(dims)) for n in (pads[d], pads[dims + d])]
        expected = pool(torch.nn.functional.pad(tx, padding), kernel, strides)
    dy = rng.standard_normal(expected.shape)
    expected.backward(torch.from_numpy(dy))
    attrs = {
        "ceil_mode": ceil_mode,
        "count_include_pad": count_include_pad,
        "divisor_override": divisor_override,
    }
    padding = tuple(zip(pads[:dims], pads[dims:], strict=True))  # (begin, end) per dim
    with backend.use_numba(use_numba):
        out = ops.avg_pool(values, kernel, strides, padding, **attrs)
        dx = ops.avg_pool_grad(dy, shape, kernel, strides=strides, pads=pads, **attrs)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize(
    "shape, output_size", [((2, 3, 7), (3,)), ((2, 2, 6, 9), (4, 2)), ((1, 2, 5, 3, 4), (2, 5, 1))]
)
def test_adaptive_avg_pool_grad_kernel_matches_torch(torch, shape, output_size):
    rng = np.random.default_rng(4)
    values = rng.standard_normal(shape)
    tx = torch.tensor(values, requires_grad=True)
    pool = getattr(torch.nn.functional, f"adaptive_avg_pool{len(shape) - 2}d")
    expected = pool(tx, output_size)
    dy = rng.standard_normal(expected.shape)
    expected.backward(torch.from_numpy(dy))
    np.testing.assert_allclose(ops.adaptive_avg_pool_grad(dy, shape), tx.grad.numpy(), rtol=1e-13)


POOLS = [
    ("max_1d", (3, 4, 11), lambda x: ops.max_pool(x, 3, stride=2, padding=1, ceil_mode=True)),
    (
        "max_2d_dilated",
        (2, 3, 9, 8),
        lambda x: ops.max_pool(x, (3, 2), stride=(2, 1), padding=((1, 1), (1, 0)), dilation=(2, 3)),
    ),
    ("max_3d", (2, 2, 5, 6, 4), lambda x: ops.max_pool(x, 2, stride=(1, 2, 1), padding=1)),
    (
        "avg_1d",
        (3, 4, 11),
        lambda x: ops.avg_pool(x, 4, stride=3, padding=2, ceil_mode=True, count_include_pad=False),
    ),
    (
        "avg_2d_include_pad",
        (2, 3, 9, 8),
        lambda x: ops.avg_pool(x, 3, stride=2, padding=1, count_include_pad=True, ceil_mode=True),
    ),
    (
        "avg_3d_divisor",
        (2, 2, 5, 6, 4),
        lambda x: ops.avg_pool(
            x,
            (2, 3, 2),
            stride=2,
            padding=((1, 0), (1, 1), (0, 1)),
            count_include_pad=False,
            divisor_override=7,
        ),
    ),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("name, shape, call", POOLS, ids=[p[0] for p in POOLS])
def test_numba_pooling_matches_numpy(monkeypatch, name, shape, call, parallel, dtype):
    if parallel:  # these inputs are small: make the parallel build run anyway
        monkeypatch.setattr(max_pooling, "_PARALLEL_WORK", 0)
        monkeypatch.setattr(average_pooling, "_PARALLEL_WORK", 0)
    rng = np.random.default_rng(5)
    values = rng.standard_normal(shape).astype(dtype)
    upstream = None
    results = []
    for use_numba in (True, False):
        x = mt.tensor(values, requires_grad=True)
        with backend.use_numba(use_numba):
            out = call(x)
            saved = out.grad_fn.saved_arrays()
            if upstream is None:
                upstream = rng.standard_normal(out.shape).astype(dtype)
            out.backward(upstream)
        results.append((out.array, x.grad.array, saved))
    (fast, fast_dx, fast_saved), (generic, generic_dx, generic_saved) = results
    assert fast.dtype == generic.dtype == fast_dx.dtype == dtype
    tolerance = 1e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(fast, generic, rtol=tolerance, atol=tolerance)
    np.testing.assert_allclose(fast_dx, generic_dx, rtol=tolerance, atol=tolerance)
    if name.startswith("max"):  # the same element chosen in every window
        np.testing.assert_array_equal(fast_saved["indices"], generic_saved["indices"])


MAX_GEOMETRIES = {  # window (kernel, strides, pads, dilations, ceil_mode) and input shape
    "2x2_stride_2": ((2, 2, 0, 1, False), (2, 3, 9, 8)),  # every window inside, a row left over
    "3x3_pad_1": ((3, 1, 1, 1, False), (2, 2, 7, 9)),  # inside windows ringed by padded ones
    "3x2_dilated_ceil": (((3, 2), (2, 1), (1, 0, 1, 1), (2, 2), True), (1, 2, 11, 7)),
    "3d": (((2, 3, 2), (1, 2, 2), (1, 1, 0, 0, 1, 1), 1, False), (1, 2, 5, 7, 6)),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "parallel"])
@pytest.mark.parametrize("geometry", sorted(MAX_GEOMETRIES))
def test_numba_max_pool_picks_the_numpy_element_among_ties_and_nans(
    monkeypatch, geometry, parallel, dtype
):
    if parallel:
        monkeypatch.setattr(max_pooling, "_PARALLEL_WORK", 0)
    (kernel, strides, pads, dilations, ceil_mode), shape = MAX_GEOMETRIES[geometry]
    rng = np.random.default_rng(11)
    values = rng.integers(-3, 4, shape).astype(dtype)  # many ties
    values[rng.random(shape) < 0.05] = np.nan
    values[rng.random(shape) < 0.05] = -np.inf
    window = window_module.pool_window("t", shape, kernel, strides, pads, dilations, ceil_mode)
    with backend.use_numba(True):
        y_numba, at_numba = max_pooling.max_pool_forward(values, window)
    with backend.use_numba(False):
        y, at = max_pooling.max_pool_forward(values, window)
    assert y_numba.dtype == dtype and at_numba.dtype == np.int64
    np.testing.assert_array_equal(y_numba, y)
    np.testing.assert_array_equal(at_numba, at)
    assert np.isnan(y).any() and (at >= 0).all()


@USE_NUMBA
@pytest.mark.parametrize(
    "pool",
    [
        lambda x: F.max_pool2d(x, 3, 2, 1),
        lambda x: F.avg_pool2d(x, 3, 2, 1),
        lambda x: F.avg_pool2d(x, 3, 1, 1, count_include_pad=False),
    ],
    ids=["max", "avg", "avg_exclude_pad"],
)
def test_float16_pools_in_float32_and_rounds_once(use_numba, pool):
    """float16 input: the output and the gradient are the float32 computation on the same
    (exactly widened) values, rounded to float16 once, not float16 sums of the taps."""
    x = (np.random.default_rng(5).standard_normal((2, 3, 9, 10)) * 100).astype(np.float16)
    results = []
    with backend.use_numba(use_numba):
        for dtype in (np.float16, np.float32):
            leaf = mt.tensor(x.astype(dtype), requires_grad=True)
            out = pool(leaf)
            dy = np.random.default_rng(6).standard_normal(out.shape).astype(np.float16)
            out.backward(dy.astype(dtype))
            results.append((out.numpy(), leaf.grad.numpy()))
    (y16, dx16), (y32, dx32) = results
    assert y16.dtype == dx16.dtype == np.float16
    np.testing.assert_array_equal(y16, y32.astype(np.float16))
    np.testing.assert_array_equal(dx16, dx32.astype(np.float16))


@pytest.mark.parametrize(
    "name, display",
    [
        ("conv", "ConvGrad"),
        ("max_pool", "MaxPoolGrad"),
        ("avg_pool", "AveragePoolGrad"),
        ("adaptive_avg_pool", "AdaptiveAveragePoolGrad"),
    ],
)
def test_registry_names_the_backward_kernels(name, display):
    assert ops.registry()[name].grad_kernel == display


def test_max_pool_saves_only_where_each_max_came_from():
    x = _leaf(np.arange(16.0).reshape(1, 1, 4, 4))
    out = ops.max_pool(x, 2)
    assert out.grad_fn.name == "MaxPoolGrad"
    saved = out.grad_fn.saved_arrays()
    assert list(saved) == ["indices"]
    # the max of each 2x2 block of 0..15 is its bottom-right element: 5, 7, 13, 15
    np.testing.assert_array_equal(saved["indices"], [[[[5, 7], [13, 15]]]])
    avg = ops.avg_pool(x, 2)
    assert avg.grad_fn.saved_arrays() == {}


def test_defaults_stride_to_the_kernel_size():
    rng = np.random.default_rng(6)
    values = rng.standard_normal((2, 3, 6, 6))
    for pool in (ops.max_pool, F.max_pool2d):
        np.testing.assert_array_equal(
            pool(values, 3).array, ops.max_pool(values, 3, stride=3).array
        )
    for pool in (ops.avg_pool, F.avg_pool2d):
        np.testing.assert_array_equal(
            pool(values, 2).array,
            ops.avg_pool(values, 2, stride=2, count_include_pad=True).array,
        )
    np.testing.assert_array_equal(
        F.avg_pool1d(values[0], 2, stride=[]).array, ops.avg_pool(values[0], 2, stride=2).array
    )
    np.testing.assert_array_equal(
        ops.avg_pool(values[0], 2, stride=()).array, ops.avg_pool(values[0], 2, stride=2).array
    )


def test_return_indices_of_the_op_are_max_pool_grads_routes(torch):
    # the op's indices, for 1 to 3 spatial dims, are PyTorch's and what its gradient follows
    rng = np.random.default_rng(10)
    for shape in ((2, 3, 9), (2, 3, 7, 6), (1, 2, 5, 4, 5)):
        values = rng.standard_normal(shape)
        x = mt.tensor(values, requires_grad=True)
        out, indices = ops.max_pool(x, 3, 2, 1, ceil_mode=True, return_indices=True)
        pool = getattr(torch.nn.functional, f"max_pool{len(shape) - 2}d")
        _, expected = pool(torch.from_numpy(values), 3, 2, 1, ceil_mode=True, return_indices=True)
        np.testing.assert_array_equal(indices.array, expected.numpy())
        assert indices.dtype == np.int64 and not indices.requires_grad
        dy = rng.standard_normal(out.shape)
        out.backward(dy)
        np.testing.assert_array_equal(x.grad.array, ops.max_pool_grad(dy, indices.array, shape))


def test_functional_pooling_of_an_unbatched_input(torch):
    rng = np.random.default_rng(7)
    values = rng.standard_normal((3, 7, 5, 6))
    x = mt.tensor(values, requires_grad=True)
    out = F.max_pool3d(x, 2, 1, 1)
    expected = torch.nn.functional.max_pool3d(torch.from_numpy(values), 2, 1, 1)
    assert out.shape == tuple(expected.shape)
    np.testing.assert_array_equal(out.array, expected.numpy())
    out.sum().backward()
    assert x.grad.shape == values.shape
    pooled = F.adaptive_avg_pool3d(mt.tensor(values), (2, None, 3))
    assert pooled.shape == (3, 2, 5, 3)


def _zeros(*shape, dtype=np.float64):
    return np.zeros(shape, dtype)


ERRORS = [
    (
        "empty_spatial_dim",  # PyTorch refuses it too: such a window has no max and no mean
        lambda: F.avg_pool2d(_zeros(1, 1, 0, 4), 2, padding=1, count_include_pad=False),
        ShapeError,
        ["avg_pool2d", "(1, 1, 0, 4)", "empty spatial dim"],
    ),
    (
        "adaptive_empty_spatial_dim",
        lambda: F.adaptive_avg_pool2d(_zeros(1, 1, 0, 4), 1),
        ShapeError,
        ["adaptive_avg_pool2d", "(1, 1, 0, 4)", "empty spatial dim"],
    ),
    (
        "avg_pool_grad_divisor_override_zero",
        lambda: ops.avg_pool_grad(_zeros(1, 1, 2), (1, 1, 4), 2, strides=2, divisor_override=0),
        ValueError,
        ["avg_pool_grad", "divisor_override", "0"],
    ),
    (
        "max_pool_grad_index_past_the_plane",  # the numba kernel would write past dX
        lambda: ops.max_pool_grad(_zeros(1, 1, 2), np.array([[[0, 10**9]]]), (1, 1, 4)),
        ValueError,
        ["max_pool_grad", "[-1, 4)", "1000000000"],
    ),
    (
        "max_pool_grad_index_below_minus_one",
        lambda: ops.max_pool_grad(_zeros(1, 1, 2), np.array([[[-2, 1]]]), (1, 1, 4)),
        ValueError,
        ["max_pool_grad", "[-1, 4)", "-2"],
    ),
    (
        "max_pool_grad_float_indices",
        lambda: ops.max_pool_grad(_zeros(1, 1, 2), np.array([[[0.0, 1.0]]]), (1, 1, 4)),
        DTypeError,
        ["max_pool_grad", "indices", "float64"],
    ),
    (
        "max_pool_grad_x_shape_rank",
        lambda: ops.max_pool_grad(_zeros(1, 1, 2, 2), np.zeros((1, 1, 2, 2), int), (1, 1, 4)),
        ShapeError,
        ["max_pool_grad", "(1, 1, 2, 2)", "(1, 1, 4)"],
    ),
    (
        "pad_over_half_kernel",
        lambda: ops.max_pool(_zeros(1, 1, 5, 5), 3, padding=2),
        ValueError,
        ["max_pool", "padding", "at most 1", "kernel 3"],
    ),
    (
        "avg_pool_grad_pad_over_half_kernel",
        lambda: ops.avg_pool_grad(_zeros(1, 1, 3, 3), (1, 1, 5, 5), 3, pads=(0, 0, 2, 2)),
        ValueError,
        ["avg_pool_grad", "pads", "at most 1", "kernel 3"],
    ),
    (
        "torch_pad_over_half_kernel",
        lambda: F.avg_pool2d(_zeros(1, 1, 5, 5), 2, padding=(0, 2)),
        ValueError,
        ["avg_pool2d", "padding", "at most 1"],
    ),
    (
        "window_larger_than_input",
        lambda: ops.avg_pool(_zeros(1, 1, 2, 5), 3),
        ShapeError,
        ["avg_pool", "spans 3", "spatial dim 0", "padded input's 2"],
    ),
    (
        "rank",
        lambda: ops.max_pool(_zeros(3, 4), 2),
        ShapeError,
        ["max_pool", "(3, 4)", "1 to 3 spatial dims"],
    ),
    (
        "torch_rank",
        lambda: F.max_pool2d(_zeros(2, 3, 4, 5, 6), 2),
        ShapeError,
        ["max_pool2d", "(2, 3, 4, 5, 6)"],
    ),
    (
        "stride_zero",
        lambda: ops.max_pool(_zeros(1, 1, 5), 2, stride=0),
        ValueError,
        ["max_pool", "stride", ">= 1"],
    ),
    (
        "torch_stride_zero",
        lambda: F.max_pool1d(_zeros(1, 1, 5), 2, stride=0),
        ValueError,
        ["max_pool1d", "stride", ">= 1"],
    ),
    (
        "dilation_zero",
        lambda: F.max_pool1d(_zeros(1, 1, 5), 2, dilation=0),
        ValueError,
        ["max_pool1d", "dilation", ">= 1"],
    ),
    (
        "kernel_dims",
        lambda: ops.avg_pool(_zeros(1, 1, 5, 5), (2, 2, 2)),
        ShapeError,
        ["avg_pool", "kernel_size", "2 values"],
    ),
    (
        "padding_length",
        lambda: ops.avg_pool(_zeros(1, 1, 5, 5), 2, padding=(1, 1, 1)),
        ShapeError,
        ["avg_pool", "padding", "2 values"],
    ),
    (
        "avg_pool_grad_kernel_dims",
        lambda: ops.avg_pool_grad(_zeros(1, 1, 2, 2), (1, 1, 5, 5), (2, 2, 2)),
        ShapeError,
        ["avg_pool_grad", "kernel_shape", "2 values"],
    ),
    (
        "avg_pool_grad_pads_length",
        lambda: ops.avg_pool_grad(_zeros(1, 1, 2, 2), (1, 1, 5, 5), 2, pads=(1, 1)),
        ShapeError,
        ["avg_pool_grad", "pads", "2 * 2"],
    ),
    (
        "divisor_zero",
        lambda: ops.avg_pool(_zeros(1, 1, 4), 2, divisor_override=0),
        ValueError,
        ["avg_pool", "divisor_override", "nonzero"],
    ),
    (
        "ceil_mode_not_bool",
        lambda: ops.max_pool(_zeros(1, 1, 4), 2, ceil_mode="yes"),
        DTypeError,
        ["max_pool", "ceil_mode"],
    ),
    (
        "count_include_pad_not_bool",
        lambda: ops.avg_pool(_zeros(1, 1, 4), 2, count_include_pad=None),
        DTypeError,
        ["avg_pool", "count_include_pad"],
    ),
    (
        "bool_input",  # integers are pooled, as in PyTorch; bools are refused, as there
        lambda: ops.max_pool(_zeros(1, 1, 4, dtype=np.bool_), 2),
        DTypeError,
        ["max_pool", "not bool", "bool"],
    ),
    (
        "output_size_length",
        lambda: ops.adaptive_avg_pool(_zeros(1, 1, 4, 4), (2, 2, 2)),
        ShapeError,
        ["adaptive_avg_pool", "output_size", "2 values"],
    ),
    (
        "output_size_zero",
        lambda: F.adaptive_avg_pool1d(_zeros(1, 1, 4), 0),
        ValueError,
        ["adaptive_avg_pool1d", "output_size", ">= 1"],
    ),
    (
        "grad_shapes",
        lambda: ops.max_pool_grad(_zeros(1, 1, 2), _zeros(1, 1, 3), (1, 1, 4)),
        ShapeError,
        ["max_pool_grad", "(1, 1, 2)", "(1, 1, 3)"],
    ),
    (
        "avg_grad_shape",
        lambda: ops.avg_pool_grad(_zeros(1, 1, 3), (1, 1, 4), 2, strides=2),
        ShapeError,
        ["avg_pool_grad", "(1, 1, 3)", "(1, 1, 2)"],
    ),
]


@pytest.mark.parametrize("call, error, words", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_op_the_argument_and_the_values(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
def test_max_pool_takes_integer_input_as_torch(dtype):
    torch = pytest.importorskip("torch")
    values = np.random.default_rng(0).integers(0, 100, (2, 3, 7, 6)).astype(dtype)
    for keywords in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                     {"kernel_size": 2, "ceil_mode": True, "dilation": 2}):  # fmt: skip
        out, at = F.max_pool2d(mt.tensor(values), return_indices=True, **keywords)
        want, want_at = torch.nn.functional.max_pool2d(
            torch.from_numpy(values), return_indices=True, **keywords
        )
        assert out.dtype == dtype and not out.requires_grad
        np.testing.assert_array_equal(out.numpy(), want.numpy())
        np.testing.assert_array_equal(at.numpy(), want_at.numpy())
