"""Convolution: conv_grad called directly against PyTorch (with ONNX's pads and auto_pad, its
contract), `need` doing no work for skipped outputs, the op's edge cases (empty batches, no
channels, strided views), the op's padding spellings (PyTorch's, and (begin, end) pairs), and
the errors. (Gradchecks and PyTorch comparisons of the op itself run from
tests/samples/convolution/standard.py; im2col and the column layouts are in test_columns.py,
numba against numpy, chunks and layouts in test_conv_chunks.py.)
"""

from __future__ import annotations

import importlib
import itertools
import math

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's name for it)

convolution = importlib.import_module("minitrain.ops.convolution.standard")
chunking = importlib.import_module("minitrain.ops.convolution.chunking")


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


def _padding(onnx_pads):
    """ONNX pads as the op's padding: one int per dim where both ends agree, else (begin, end)
    pairs."""
    dims = len(onnx_pads) // 2
    begins, ends = tuple(onnx_pads[:dims]), tuple(onnx_pads[dims:])
    return begins if begins == ends else tuple(zip(begins, ends, strict=True))


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
        y = ops.conv(
            mt.tensor(x), mt.tensor(w), mt.tensor(b), strides, _padding(pads), dilations, group
        )
        dx, dw, db = ops.conv_grad(dy, x, w, **attrs)
    np.testing.assert_allclose(y.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dw, tw.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(db, tb.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "auto_pad, pads", [("SAME_UPPER", (0, 1, 1, 1)), ("SAME_LOWER", (1, 1, 0, 1))]
)
def test_conv_grad_honours_auto_pad_as_the_forward_does(auto_pad, pads):
    # H = 6, stride 2, kernel 3: 3 outputs need (3 - 1) * 2 + 3 - 6 = 1 pad, at the end for
    # UPPER and the beginning for LOWER; W = 5: 3 outputs need 2, one each side. The op's
    # padding='same' is SAME_UPPER; either is the op's forward with those pads as pairs.
    rng = np.random.default_rng(2)
    x, w = _leaves(rng, (2, 2, 6, 5), (3, 2, 3, 3), bias=False)
    y = ops.conv(x, w, stride=2, padding=_padding(pads))
    if auto_pad == "SAME_UPPER":
        np.testing.assert_array_equal(ops.conv(x, w, stride=2, padding="same").array, y.array)
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
    # the op's 'same' and 'valid', and conv_grad's auto_pad, which takes a dY of that size
    x = np.zeros((1, 1, length))
    w = np.zeros((1, 1, kernel))
    y = ops.conv(x, w, stride=stride, padding="same", dilation=dilation)
    assert y.shape[-1] == math.ceil(length / stride)
    for auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        dx, _, _ = ops.conv_grad(
            y.array, x, w, strides=stride, dilations=dilation, auto_pad=auto_pad
        )
        assert dx.shape == x.shape
    valid = ops.conv(x, w, stride=stride, padding="valid", dilation=dilation)
    assert valid.shape[-1] == (length - dilation * (kernel - 1) - 1) // stride + 1
    ops.conv_grad(valid.array, x, w, strides=stride, dilations=dilation, auto_pad="VALID")


@pytest.fixture
def work(monkeypatch):
    """Counts of the internal im2col, col2im and GEMM calls (read them, then clear them)."""
    counts = {"im2col": 0, "col2im": 0, "gemm": 0}
    for name, key in (("im2col_into", "im2col"), ("col2im_into", "col2im"), ("matmul", "gemm")):
        original = getattr(convolution, name)

        def counted(*args, original=original, key=key, **kwargs):
            counts[key] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(convolution, name, counted)
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
        chunking, "_shares", lambda N, *_: [[slice(i, min(i + 2, N)) for i in (0, 2, 4)]]
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
    y = ops.conv(mt.tensor(x_value), w, b, padding=1)
    assert work == {"im2col": 1, "col2im": 0, "gemm": 1}
    y.backward(np.ones(y.shape))
    assert work == {"im2col": 2, "col2im": 0, "gemm": 2}
    assert w.grad is not None and b.grad is not None
    # a frozen weight: the backward does no im2col (only the forward's)
    for key in work:
        work[key] = 0
    x = mt.tensor(x_value, requires_grad=True)
    y = ops.conv(x, mt.tensor(w_value), b_value, padding=1)
    y.backward(np.ones(y.shape))
    assert work == {"im2col": 1, "col2im": 1, "gemm": 2}
    assert x.grad.shape == x_value.shape


def test_conv_saves_x_and_w_and_its_backward_calls_conv_grad(monkeypatch):
    calls = []
    original = convolution.conv_grad

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(convolution, "conv_grad", spy)
    rng = np.random.default_rng(5)
    x = mt.tensor(_normal(rng, 2, 2, 5, 5), requires_grad=True)
    w = mt.tensor(_normal(rng, 3, 2, 3, 3))
    y = ops.conv(x, w, stride=2, padding="same")
    assert y.grad_fn.name == "ConvGrad"
    saved = y.grad_fn.saved_arrays()
    assert list(saved) == ["x", "w"]
    assert saved["x"] is x.array and saved["w"] is w.array
    y.backward(np.ones(y.shape))
    (((dy, saved_x, saved_w), kwargs),) = calls
    assert saved_x is x.array and saved_w is w.array
    # 'same' reaches the kernel as ONNX pads: 5 with stride 2 and kernel 3 needs 2 pads, 1 + 1
    assert kwargs["pads"] == (1, 1, 1, 1) and kwargs["need"] == (True, False, False)


def test_stride_longer_than_the_kernel_leaves_untouched_positions_at_zero():
    # L = 7, kernel 2, stride 3: windows at 0..1 and 3..4 in each dim; rows and columns 2, 5 and
    # 6 are in no window. With dY = 1 everywhere, dX[i, j] = W[i % 3, j % 3] where covered.
    w = np.array([[[[1.0, 2.0], [3.0, 4.0]]]])
    x = mt.tensor(np.zeros((1, 1, 7, 7)), requires_grad=True)
    y = ops.conv(x, w, stride=3)
    assert y.shape == (1, 1, 2, 2)
    y.backward(np.ones(y.shape))
    expected = np.zeros((7, 7))
    for i, j in itertools.product([0, 1, 3, 4], repeat=2):
        expected[i, j] = w[0, 0, i % 3, j % 3]
    np.testing.assert_array_equal(x.grad.array[0, 0], expected)


def test_an_empty_batch():
    x = mt.tensor(np.zeros((0, 2, 5, 5)), requires_grad=True)
    w = mt.tensor(np.ones((3, 2, 3, 3)), requires_grad=True)
    b = mt.tensor(np.ones(3), requires_grad=True)
    y = ops.conv(x, w, b, padding=1)
    assert y.shape == (0, 3, 5, 5)
    y.sum().backward()
    assert x.grad.shape == (0, 2, 5, 5)
    np.testing.assert_array_equal(w.grad.array, np.zeros((3, 2, 3, 3)))
    np.testing.assert_array_equal(b.grad.array, np.zeros(3))


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
    np.testing.assert_array_equal(y.array, np.broadcast_to(b.array[:, None, None], y.shape))
    np.testing.assert_array_equal(x.grad.array, np.zeros(x.shape))
    np.testing.assert_array_equal(w.grad.array, np.zeros(w.shape))
    np.testing.assert_allclose(b.grad.array, dy.sum(axis=(0, 2, 3)))


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
    dense = mt.tensor(np.ascontiguousarray(transposed.array))
    np.testing.assert_allclose(
        ops.conv(transposed, w_value, padding=1).array, ops.conv(dense, w_value, padding=1).array
    )
    dy = _normal(rng, 2, 4, 7, 6)
    for got, want in zip(
        ops.conv_grad(dy, transposed.array, w_value, pads=1),
        ops.conv_grad(dy, dense.array, w_value, pads=1),
        strict=True,
    ):
        np.testing.assert_allclose(got, want)


def test_float32_stays_float32_through_the_kernels():
    rng = np.random.default_rng(13)
    x, w = (v.astype(np.float32) for v in _leaves(rng, (2, 2, 5, 5), (3, 2, 3, 3), bias=False))
    y = ops.conv(x, w, padding=1)
    assert y.dtype == np.float32
    for grad in ops.conv_grad(y.array, x, w, pads=1):
        assert grad.dtype == np.float32


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
def test_padding_forms_reach_the_kernels_as_onnx_pads(padding, onnx_pads):
    # the op's and F.conv2d's padding, against the forward's kernels (im2col and a GEMM) and
    # the backward's (conv_grad) with the ONNX pads it translates to
    rng = np.random.default_rng(14)
    x, w, b = _leaves(rng, (2, 2, 5, 6), (3, 2, 3, 2))
    y = ops.conv(x, w, b, padding=padding)
    col = ops.im2col(x, (3, 2), pads=onnx_pads)
    by_columns = (w.reshape(3, -1) @ col + b[:, None]).reshape((3, 2) + y.shape[2:])
    np.testing.assert_allclose(y.array, by_columns.transpose(1, 0, 2, 3), rtol=1e-12, atol=1e-12)
    ours = F.conv2d(mt.tensor(x), mt.tensor(w), mt.tensor(b), padding=padding)
    np.testing.assert_array_equal(ours.array, y.array)
    x_leaf = mt.tensor(x, requires_grad=True)
    dy = _normal(rng, *y.shape)
    ops.conv(x_leaf, w, b, padding=padding).backward(dy)
    np.testing.assert_array_equal(x_leaf.grad.array, ops.conv_grad(dy, x, w, pads=onnx_pads)[0])


def test_functional_same_with_a_stride_pads_like_onnx_same_upper():
    # PyTorch refuses 'same' with stride 2; minitrain gives ceil(L / stride) outputs, as ONNX:
    # L = 6, kernel 3: 3 outputs need (3 - 1) * 2 + 3 - 6 = 1 pad, at the end
    rng = np.random.default_rng(15)
    x, w = _leaves(rng, (1, 2, 6), (2, 2, 3), bias=False)
    y = F.conv1d(mt.tensor(x), mt.tensor(w), stride=2, padding="same")
    assert y.shape == (1, 2, 3)
    np.testing.assert_array_equal(y.array, ops.conv(x, w, stride=2, padding=((0, 1),)).array)
    dy = _normal(rng, *y.shape)
    np.testing.assert_array_equal(
        ops.conv_grad(dy, x, w, strides=2, auto_pad="SAME_UPPER")[0],
        ops.conv_grad(dy, x, w, strides=2, pads=(0, 1))[0],
    )


def test_functional_unbatched_input(torch):
    rng = np.random.default_rng(16)
    x, w, b = _leaves(rng, (3, 5, 4), (2, 3, 2, 2))
    x_tensor = mt.tensor(x, requires_grad=True)
    y = F.conv2d(x_tensor, mt.tensor(w), mt.tensor(b), stride=(1, 2), dilation=(2, 1))
    expected = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), (1, 2), 0, (2, 1)
    )
    assert y.shape == tuple(expected.shape) == (2, 3, 2)
    np.testing.assert_allclose(y.array, expected.numpy(), rtol=1e-12)
    y.sum().backward()
    assert x_tensor.grad.shape == x.shape


def test_defaults_are_stride_1_no_padding_dilation_1_one_group():
    rng = np.random.default_rng(17)
    x, w = _leaves(rng, (1, 2, 5, 5), (3, 2, 3, 3), bias=False)
    explicit = ops.conv(x, w, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1)
    np.testing.assert_array_equal(ops.conv(x, w).array, explicit.array)
    np.testing.assert_array_equal(F.conv2d(x, w).array, explicit.array)
    np.testing.assert_array_equal(ops.conv(x, w, None, 1, 0, 1, 1).array, explicit.array)


def _zeros(*shape, dtype=np.float64):
    return np.zeros(shape, dtype)


ERRORS = [
    # (id, call, error, words the message must hold)
    (
        "group_not_dividing_C",
        lambda: ops.conv(_zeros(1, 4, 5, 5), _zeros(6, 2, 3, 3), groups=3),
        ShapeError,
        ["conv", "groups 3", "(1, 4, 5, 5)", "(6, 2, 3, 3)"],
    ),
    (
        "group_not_dividing_M",
        lambda: ops.conv(_zeros(1, 4, 5, 5), _zeros(5, 2, 3, 3), groups=2),
        ShapeError,
        ["conv", "groups 2", "M = 5"],
    ),
    (
        "w_channels_not_C_over_group",
        lambda: ops.conv(_zeros(1, 4, 5, 5), _zeros(6, 4, 3, 3), groups=2),
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
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), stride=(1, 0)),
        ValueError,
        ["conv", "stride", ">= 1", "(1, 0)"],
    ),
    (
        "dilation_negative",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), dilation=-1),
        ValueError,
        ["conv", "dilation", ">= 1"],
    ),
    (
        "group_zero",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), groups=0),
        ValueError,
        ["conv", "groups", "positive"],
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
        "padding_length",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), padding=(1, 1, 1)),
        ShapeError,
        ["conv", "padding", "2 values", "(1, 1, 1)"],
    ),
    (
        "padding_negative",
        lambda: ops.conv(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), padding=((1, 1), (-1, 1))),
        ValueError,
        ["conv", "padding", ">= 0"],
    ),
    (
        "unknown_padding_string",  # ONNX's auto_pad spellings are conv_grad's only
        lambda: ops.conv(_zeros(1, 1, 5), _zeros(1, 1, 3), padding="SAME_UPPER"),
        ValueError,
        ["conv", "padding", "'SAME_UPPER'", "'valid' or 'same'"],
    ),
    (
        "conv_grad_pads_length",
        lambda: ops.conv_grad(
            _zeros(1, 1, 3, 3), _zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), pads=(1, 1, 1)
        ),
        ShapeError,
        ["conv_grad", "pads", "2 * 2", "(1, 1, 1)"],
    ),
    (
        "conv_grad_pads_negative",
        lambda: ops.conv_grad(
            _zeros(1, 1, 3, 3), _zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), pads=(1, -1, 1, 1)
        ),
        ValueError,
        ["conv_grad", "pads", ">= 0"],
    ),
    (
        "conv_grad_unknown_auto_pad",
        lambda: ops.conv_grad(_zeros(1, 1, 5), _zeros(1, 1, 5), _zeros(1, 1, 3), auto_pad="SAME"),
        ValueError,
        ["conv_grad", "auto_pad", "'SAME'", "SAME_UPPER"],
    ),
    (
        "conv_grad_pads_and_auto_pad",
        lambda: ops.conv_grad(
            _zeros(1, 1, 3), _zeros(1, 1, 5), _zeros(1, 1, 3), pads=1, auto_pad="VALID"
        ),
        ValueError,
        ["conv_grad", "pads", "auto_pad"],
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
        ["conv", "input", "floating", "int64"],
    ),
    (
        "mixed_dtypes",
        lambda: ops.conv(_zeros(1, 2, 5, dtype=np.float32), _zeros(3, 2, 3)),
        DTypeError,
        ["conv", "float32", "float64"],
    ),
    (
        "float_stride",
        lambda: ops.conv(_zeros(1, 1, 5), _zeros(1, 1, 3), stride=1.5),
        DTypeError,
        ["conv", "stride", "1.5"],
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
        ops.conv(x, w, groups=3)
    assert len(tape) == 0
    assert x.grad is None and w.grad is None
