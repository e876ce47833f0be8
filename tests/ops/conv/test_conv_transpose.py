"""Transposed convolution: ops.conv_transpose (gradchecks, PyTorch's forward and gradients with
asymmetric padding as (begin, end) pairs, numba and numpy, float64 and float32), its identity
with conv_grad's dX, F.conv_transpose1d/2d/3d, the ConvTranspose layers against PyTorch's
(init, repr, output_size), and the errors. (Its samples, tests/samples/convolution/transposed.py,
run through test_ops too.)"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, nn, ops
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

transpose_module = importlib.import_module("minitrain.ops.convolution.transposed")
convolution = importlib.import_module("minitrain.ops.convolution.standard")
chunking = importlib.import_module("minitrain.ops.convolution.chunking")
columns_module = importlib.import_module("minitrain.ops.convolution.columns")


def _normal(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# (x shape, w shape (C, M/group, *kernel), strides, ONNX pads, dilations, group, output_padding)
GEOMETRIES = [
    ((2, 3, 5), (3, 2, 3), (1,), (0, 0), (1,), 1, (0,)),
    ((2, 3, 4), (3, 2, 3), (2,), (1, 0), (2,), 1, (1,)),
    ((1, 4, 5), (4, 1, 2), (3,), (0, 1), (1,), 4, (2,)),  # depthwise, stride past the kernel
    ((2, 4, 4, 3), (4, 3, 3, 2), (2, 1), (1, 0, 2, 1), (1, 2), 2, (1, 1)),
    ((1, 3, 3, 4), (3, 1, 4, 4), (2, 2), (1, 1, 1, 1), (1, 1), 3, (0, 1)),  # depthwise, DCGAN
    ((2, 2, 3, 3), (2, 2, 2, 3), (1, 1), (0, 1, 1, 0), (2, 3), 1, (1, 2)),  # op < dilation only
    ((1, 4, 3, 2, 3), (4, 1, 2, 2, 3), (2, 1, 2), (1, 0, 0, 0, 1, 1), (1, 2, 1), 2, (1, 1, 0)),
    ((2, 2, 2, 3, 2), (2, 2, 3, 2, 2), (1, 1, 1), (1, 1, 1, 0, 0, 0), (1, 1, 1), 1, (0, 0, 0)),
]
GEOMETRY_IDS = [
    "1d",
    "1d_stride_dilation_asymmetric_output_padding",
    "1d_depthwise_stride3",
    "2d_groups_asymmetric",
    "2d_depthwise_k4_s2_p1",
    "2d_output_padding_under_dilation",
    "3d_groups_strides",
    "3d_stride1_pads",
]


def _padding(onnx_pads):
    """ONNX pads as the op's padding: one int per dim where both ends agree, else (begin, end)
    pairs."""
    dims = len(onnx_pads) // 2
    begins, ends = tuple(onnx_pads[:dims]), tuple(onnx_pads[dims:])
    return begins if begins == ends else tuple(zip(begins, ends, strict=True))


def _attrs(strides, pads, dilations, group, output_padding) -> dict:
    """ops.conv_transpose's arguments for a geometry of GEOMETRIES."""
    return {
        "stride": strides,
        "padding": _padding(pads),
        "dilation": dilations,
        "groups": group,
        "output_padding": output_padding,
    }


def _torch_reference(torch, x, w, b, strides, pads, dilations, group, output_padding):
    """PyTorch's conv_transpose with ONNX pads: no padding, then the pads cropped off each end
    (the output positions pads remove are those before pad_begin and after size - pad_end)."""
    dims = x.ndim - 2
    full = getattr(torch.nn.functional, f"conv_transpose{dims}d")(
        x, w, b, strides, 0, output_padding, group, dilations
    )
    crop = tuple(slice(pads[d], full.shape[2 + d] - pads[dims + d]) for d in range(dims))
    return full[(slice(None), slice(None)) + crop]


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=GEOMETRY_IDS)
def test_gradcheck_x_w_and_b(geometry, use_numba):
    x_shape, w_shape, *attrs = geometry
    rng = np.random.default_rng(0)
    group = attrs[3]
    inputs = [
        mt.tensor(_normal(rng, *x_shape), requires_grad=True),
        mt.tensor(_normal(rng, *w_shape), requires_grad=True),
        mt.tensor(_normal(rng, w_shape[1] * group), requires_grad=True),
    ]
    with backend.use_numba(use_numba):
        assert mt.gradcheck(lambda x, w, b: ops.conv_transpose(x, w, b, **_attrs(*attrs)), inputs)


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=GEOMETRY_IDS)
def test_matches_torch_forward_and_gradients(torch, geometry, use_numba):
    x_shape, w_shape, *attrs = geometry
    rng = np.random.default_rng(1)
    values = [_normal(rng, *x_shape), _normal(rng, *w_shape), _normal(rng, w_shape[1] * attrs[3])]
    theirs_in = [torch.from_numpy(v).requires_grad_() for v in values]
    expected = _torch_reference(torch, *theirs_in, *attrs)
    ours_in = [mt.tensor(v, requires_grad=True) for v in values]
    with backend.use_numba(use_numba):
        y = ops.conv_transpose(*ours_in, **_attrs(*attrs))
        assert y.shape == tuple(expected.shape)
        np.testing.assert_allclose(y.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
        dy = _normal(rng, *y.shape)
        y.backward(dy)
    expected.backward(torch.from_numpy(dy))
    for ours, theirs in zip(ours_in, theirs_in, strict=True):
        np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("geometry", GEOMETRIES[1::2], ids=GEOMETRY_IDS[1::2])
def test_float32_matches_torch_loosely(torch, geometry):
    x_shape, w_shape, *attrs = geometry
    rng = np.random.default_rng(2)
    values = [
        _normal(rng, *shape, dtype=np.float32)
        for shape in (x_shape, w_shape, (w_shape[1] * attrs[3],))
    ]
    theirs_in = [torch.from_numpy(v).requires_grad_() for v in values]
    expected = _torch_reference(torch, *theirs_in, *attrs)
    ours_in = [mt.tensor(v, requires_grad=True) for v in values]
    y = ops.conv_transpose(*ours_in, **_attrs(*attrs))
    assert y.dtype == np.float32
    np.testing.assert_allclose(y.array, expected.detach().numpy(), rtol=1e-4, atol=1e-5)
    dy = _normal(rng, *y.shape, dtype=np.float32)
    y.backward(dy)
    expected.backward(torch.from_numpy(dy))
    for ours, theirs in zip(ours_in, theirs_in, strict=True):
        assert ours.grad.dtype == np.float32
        np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "geometry", [g for g in GEOMETRIES if not any(g[-1])], ids=lambda g: str(g[0])
)
def test_forward_is_conv_grads_dx(geometry):
    # y = conv_transpose(x, w) is dX of a conv of an X shaped like y, whose output is x
    x_shape, w_shape, strides, pads, dilations, group, _ = geometry
    rng = np.random.default_rng(3)
    x, w = _normal(rng, *x_shape), _normal(rng, *w_shape)
    y = ops.conv_transpose(x, w, None, strides, _padding(pads), 0, group, dilations)
    conv_attrs = {"strides": strides, "pads": pads, "dilations": dilations, "group": group}
    dx, dw, db = ops.conv_grad(x, np.zeros(y.shape), w, **conv_attrs, need=(True, False, False))
    assert dw is None and db is None
    np.testing.assert_array_equal(y.array, dx)


def test_stride_past_the_kernel_leaves_gaps_at_zero_and_output_padding_adds_zeros():
    # L = 2, k = 2, stride 3: inputs land at 0..1 and 3..4; position 2 and the output_padding
    # positions 5, 6 get nothing
    x = np.array([[[1.0, 2.0]]])
    w = np.array([[[10.0, 100.0]]])
    y = ops.conv_transpose(x, w, stride=3, output_padding=2)
    np.testing.assert_array_equal(y.array, [[[10.0, 100.0, 0.0, 20.0, 200.0, 0.0, 0.0]]])


def test_an_empty_batch_and_no_input_channels():
    w = mt.tensor(np.ones((2, 3, 2, 2)), requires_grad=True)
    y = ops.conv_transpose(mt.tensor(np.zeros((0, 2, 3, 3))), w, stride=2)
    assert y.shape == (0, 3, 6, 6)
    b = mt.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    x = mt.tensor(np.zeros((2, 0, 3, 3)), requires_grad=True)
    y = ops.conv_transpose(x, mt.tensor(np.zeros((0, 3, 2, 2))), b)
    np.testing.assert_array_equal(y.array, np.broadcast_to(b.array[:, None, None], (2, 3, 4, 4)))
    y.sum().backward()
    np.testing.assert_array_equal(b.grad.array, [32.0, 32.0, 32.0])
    assert x.grad.shape == (2, 0, 3, 3)


@pytest.mark.parametrize(
    "grad, calls, im2cols",
    [
        ((0, 1, 2), {"conv_grad_unchecked": 1, "_input_and_weight_grads": 1}, 1),
        ((0, 2), {"conv_grad_unchecked": 1, "conv_forward": 1}, 1),
        ((1,), {"conv_grad_unchecked": 2}, 1),
        ((2,), {"conv_grad_unchecked": 1}, 0),
    ],
    ids=["all", "frozen_weight", "weight_only", "bias_only"],
)
def test_backward_runs_only_the_kernels_the_inputs_need(monkeypatch, grad, calls, im2cols):
    # the forward is one call of conv's gradient kernel (col2im, no im2col); the backward's dx
    # is a conv of dy and its dw conv's dW, and with both, one im2col of dy serves the two
    counts = dict.fromkeys(["conv_grad_unchecked", "conv_forward", "_input_and_weight_grads"], 0)
    counts["im2col_into"] = 0

    def spying(name, original):
        def spy(*args, **kw):
            counts[name] += 1
            return original(*args, **kw)

        return spy

    for name in counts:
        spy = spying(name, getattr(transpose_module, name))
        monkeypatch.setattr(transpose_module, name, spy)
        if name == "im2col_into":  # also where the conv op's own code calls it
            monkeypatch.setattr(convolution, name, spy)
    rng = np.random.default_rng(4)
    values = [_normal(rng, 2, 4, 3, 3), _normal(rng, 4, 3, 2, 2), _normal(rng, 3)]
    inputs = [mt.tensor(v, requires_grad=i in grad) for i, v in enumerate(values)]
    ops.conv_transpose(*inputs, stride=2).sum().backward()
    expected = dict.fromkeys(["conv_grad_unchecked", "conv_forward", "_input_and_weight_grads"], 0)
    assert counts == {**expected, **calls, "im2col_into": im2cols}
    assert [t.grad is not None for t in inputs] == [i in grad for i in range(3)]


def _forward_and_grads(x, w, b, **attrs):
    inputs = [mt.tensor(v, requires_grad=True) for v in (x, w, b)]
    y = ops.conv_transpose(*inputs, **attrs)
    y.backward(np.random.default_rng(12).standard_normal(y.shape))
    return [y.array] + [t.grad.array for t in inputs]


# (wide, split) layouts of the conv op's columns, as in test_conv_chunks.py
LAYOUTS = [(True, 0), (True, 1), (True, 2), (True, 3)]


@pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "numpy"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=["wide", "split_depth", "split_rows", "split_all"])
@pytest.mark.parametrize(
    "x_shape, w_shape, attrs",
    [
        ((2, 4, 5), (4, 3, 3), {"padding": ((2, 1),), "dilation": 2, "groups": 2}),
        ((2, 3, 4, 3), (3, 2, 3, 2), {"padding": ((1, 0), (0, 1)), "dilation": (2, 3),
                                      "output_padding": (1, 2)}),
        ((2, 2, 3, 2, 3), (2, 2, 2, 3, 2), {"padding": 1, "dilation": (2, 1, 1),
                                            "output_padding": (1, 0, 0)}),
    ],
    ids=["1d_groups_dilated", "2d_output_padding_under_dilation", "3d"],
)  # fmt: skip
def test_every_layout_agrees_with_the_compact_one(
    monkeypatch, x_shape, w_shape, attrs, layout, use_numba
):
    # stride 1 lets the conv op pick its wide layouts, where x's size is not the natural output
    # size of a conv of y when output_padding reaches past the stride
    rng = np.random.default_rng(11)
    filters = w_shape[1] * attrs.get("groups", 1)
    values = [_normal(rng, *x_shape), _normal(rng, *w_shape), _normal(rng, filters)]
    with backend.use_numba(use_numba):
        monkeypatch.setattr(
            chunking,
            "_layout",
            lambda window, spatial, *_: columns_module.Columns.of(window, spatial, False),
        )
        compact = _forward_and_grads(*values, **attrs)
        monkeypatch.setattr(
            chunking,
            "_layout",
            lambda window, spatial, *_: columns_module.Columns.of(window, spatial, *layout),
        )
        for got, want in zip(_forward_and_grads(*values, **attrs), compact, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("attrs", [{"padding": 1}, {"stride": 2, "padding": 1}], ids=["s1", "s2"])
def test_a_batch_in_chunks_matches_one_chunk(monkeypatch, attrs):
    rng = np.random.default_rng(13)
    values = [_normal(rng, 5, 3, 4, 4), _normal(rng, 3, 2, 3, 3), _normal(rng, 2)]
    whole = _forward_and_grads(*values, **attrs)
    monkeypatch.setattr(chunking, "_COL_CHUNK_BYTES", 1)
    for got, want in zip(_forward_and_grads(*values, **attrs), whole, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("attrs", [{"padding": 1}, {"stride": 2, "padding": 1}], ids=["s1", "s2"])
def test_chunks_side_by_side_match_one_thread(monkeypatch, side_by_side_on, attrs):
    # the forward is conv_grad's dX, the backward _input_and_weight_grads: both in shares
    rng = np.random.default_rng(14)
    values = [_normal(rng, 5, 3, 4, 4), _normal(rng, 3, 2, 3, 3), _normal(rng, 2)]
    monkeypatch.setattr(chunking, "_COL_CHUNK_BYTES", 1)
    one = _forward_and_grads(*values, **attrs)
    shares = side_by_side_on(2)
    several = _forward_and_grads(*values, **attrs)
    chunks = [[slice(i, i + 1) for i in range(t, 5, 2)] for t in range(2)]
    assert shares == [chunks, chunks]
    for got, want in zip(several, one, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


FUNCTIONAL = [
    # (x shape, w shape, positional args after bias: stride, padding, output_padding, groups,
    # dilation)
    ((2, 4, 6), (4, 3, 3), (2, 1, 1, 2, 1)),
    ((3, 5), (3, 2, 2), (1, 0, 0, 1, 2)),  # unbatched
    ((2, 2, 4, 3), (2, 3, 4, 4), (2, 1, 0, 1, 1)),
    ((2, 6, 3, 4), (6, 1, 3, 2), ((2, 1), (1, 0), (1, 0), 3, (1, 2))),
    ((4, 3, 3), (4, 2, 2, 3), (1, 1, 0, 2, (2, 1))),  # unbatched, groups before dilation
    ((1, 2, 3, 2, 3), (2, 2, 2, 3, 2), (2, (0, 1, 1), 1, 1, 1)),
]


@pytest.mark.parametrize("x_shape, w_shape, args", FUNCTIONAL)
def test_functional_matches_torch_with_its_positional_arguments(torch, x_shape, w_shape, args):
    dims = len(w_shape) - 2
    rng = np.random.default_rng(5)
    group = args[3]
    values = [_normal(rng, *x_shape), _normal(rng, *w_shape), _normal(rng, w_shape[1] * group)]
    ours_in = [mt.tensor(v, requires_grad=True) for v in values]
    theirs_in = [torch.from_numpy(v).requires_grad_() for v in values]
    y = getattr(F, f"conv_transpose{dims}d")(*ours_in, *args)
    expected = getattr(torch.nn.functional, f"conv_transpose{dims}d")(*theirs_in, *args)
    assert y.shape == tuple(expected.shape)
    np.testing.assert_allclose(y.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    dy = _normal(rng, *y.shape)
    y.backward(dy)
    expected.backward(torch.from_numpy(dy))
    for ours, theirs in zip(ours_in, theirs_in, strict=True):
        np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=1e-11, atol=1e-12)


def test_functional_defaults_are_stride_1_no_padding_one_group_dilation_1():
    rng = np.random.default_rng(6)
    x, w = _normal(rng, 1, 2, 4, 4), _normal(rng, 2, 3, 3, 3)
    explicit = ops.conv_transpose(x, w, stride=1, padding=0, dilation=1, groups=1, output_padding=0)
    assert explicit.shape == (1, 3, 6, 6)
    np.testing.assert_array_equal(F.conv_transpose2d(x, w).array, explicit.array)
    np.testing.assert_array_equal(ops.conv_transpose(x, w).array, explicit.array)


LAYERS = [
    (1, {"stride": 2, "padding": 1, "output_padding": 1}),
    (2, {}),
    (2, {"stride": (2, 1), "padding": (1, 0), "groups": 2, "dilation": (1, 2), "bias": False}),
    (2, {"stride": 1, "dilation": 2, "output_padding": 1}),
    (3, {"stride": 2, "padding": (1, 0, 1), "output_padding": (1, 0, 1), "groups": 2}),
]


def _copied(torch, dims, options):
    ours = getattr(nn, f"ConvTranspose{dims}d")(4, 6, 3, dtype=np.float64, **options)
    theirs = getattr(torch.nn, f"ConvTranspose{dims}d")(4, 6, 3, **options).double()
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weight.array))
        if ours.bias is not None:
            theirs.bias.copy_(torch.from_numpy(ours.bias.array))
    return ours, theirs


def _compare(torch, ours, theirs, x, **forward_kw):
    x_ours, x_theirs = mt.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    y, expected = ours(x_ours, **forward_kw), theirs(x_theirs, **forward_kw)
    assert y.shape == tuple(expected.shape)
    np.testing.assert_allclose(y.array, expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    dy = np.random.default_rng(7).standard_normal(y.shape)
    y.backward(dy)
    expected.backward(torch.from_numpy(dy))
    np.testing.assert_allclose(x_ours.grad.array, x_theirs.grad.numpy(), rtol=1e-11, atol=1e-12)
    for name in ("weight", "bias"):
        if getattr(theirs, name) is not None:
            got, want = getattr(ours, name).grad.array, getattr(theirs, name).grad.numpy()
            np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    return y


@pytest.mark.parametrize("dims, options", LAYERS)
def test_layer_matches_torch(torch, dims, options):
    ours, theirs = _copied(torch, dims, options)
    assert repr(ours) == repr(theirs)
    assert ours.weight.shape == tuple(theirs.weight.shape) == (4, 6 // ours.groups) + (3,) * dims
    x = np.random.default_rng(8).standard_normal((2, 4) + (4,) * dims)
    _compare(torch, ours, theirs, x)
    _compare(torch, ours, theirs, x[0])  # unbatched


@pytest.mark.parametrize(
    "dims, options, x_spatial, output_size",
    [
        (1, {"stride": 3}, (4,), [13]),
        (1, {"stride": 3}, (4,), (2, 6, 14)),  # batch and channels too
        (2, {"stride": 2, "padding": 1}, (3, 4), [6, 7]),
        (2, {"stride": (2, 3), "padding": 1, "output_padding": 1}, (3, 4), [5, 10]),
        (3, {"stride": 2}, (2, 2, 3), [6, 5, 8]),
    ],
)
def test_layer_output_size_picks_output_padding_as_torch(
    torch, dims, options, x_spatial, output_size
):
    ours, theirs = _copied(torch, dims, options)
    x = np.random.default_rng(9).standard_normal((2, 4, *x_spatial))
    y = _compare(torch, ours, theirs, x, output_size=output_size)
    assert y.shape[2:] == tuple(output_size)[-dims:]


def test_layer_output_size_for_an_unbatched_input_counts_channels_only(torch):
    ours, theirs = _copied(torch, 2, {"stride": 2})
    x = np.random.default_rng(10).standard_normal((4, 3, 3))
    y = _compare(torch, ours, theirs, x, output_size=(6, 8, 8))
    assert y.shape == (6, 8, 8)


def test_layer_init_bounds_use_torchs_fan_in_for_transposed_weights(torch):
    # weight (in, out/groups, *k): PyTorch's fan_in is weight.size(1) * prod(k) = 2 * 3 = 6,
    # not in_channels * prod(k) = 24, so the bound is 1/sqrt(6) for weight and bias alike
    layer = nn.ConvTranspose1d(8, 4, 3, groups=2)
    fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(layer.weight.shape))
    bound = 1.0 / math.sqrt(fan_in)
    assert fan_in == 6
    for values in (layer.weight.array, np.concatenate([layer.bias.array] * 12)):
        assert np.abs(values).max() <= bound
    assert np.abs(layer.weight.array).max() > 0.8 * bound  # 48 draws: all under it is 0.8^48


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_layer_reset_parameters_is_reproducible_and_devices_and_dtypes_as_torch(dims):
    layer_type = getattr(nn, f"ConvTranspose{dims}d")
    mt.manual_seed(3)
    first = layer_type(2, 4, 2, 1, 0, 0, 1, True, 1, "zeros", "cpu", np.float64)
    mt.manual_seed(3)
    second = layer_type(2, 4, 2, dtype=np.float64)
    assert first.weight.dtype == np.float64 and first.bias.dtype == np.float64
    np.testing.assert_array_equal(first.weight.array, second.weight.array)
    assert layer_type(2, 4, 2).weight.dtype == np.float32


def _zeros(*shape, dtype=np.float64):
    return np.zeros(shape, dtype)


ERRORS = [
    # (id, call, error, words the message must hold)
    (
        "input_rank_too_low",
        lambda: ops.conv_transpose(_zeros(2, 3), _zeros(2, 1, 3)),
        ShapeError,
        ["conv_transpose", "input X", "(2, 3)", "1 to 3 spatial dims"],
    ),
    (
        "input_rank_too_high",
        lambda: ops.conv_transpose(_zeros(1, 1, 2, 2, 2, 2), _zeros(1, 1, 1, 1, 1, 1)),
        ShapeError,
        ["conv_transpose", "(1, 1, 2, 2, 2, 2)"],
    ),
    (
        "weight_rank",
        lambda: ops.conv_transpose(_zeros(1, 2, 5, 5), _zeros(2, 1, 3)),
        ShapeError,
        ["conv_transpose", "weight W", "(2, 1, 3)", "(C, M/group, *kernel)", "rank"],
    ),
    (
        "weight_in_channels_not_C",
        lambda: ops.conv_transpose(_zeros(1, 4, 5), _zeros(2, 3, 3)),
        ShapeError,
        ["conv_transpose", "C = 4", "dim 0", "got 2", "(2, 3, 3)", "(1, 4, 5)"],
    ),
    (
        "group_not_dividing_C",
        lambda: ops.conv_transpose(_zeros(1, 4, 5), _zeros(4, 2, 3), groups=3),
        ShapeError,
        ["conv_transpose", "groups 3", "C = 4", "(1, 4, 5)"],
    ),
    (
        "group_zero",
        lambda: ops.conv_transpose(_zeros(1, 4, 5), _zeros(4, 2, 3), groups=0),
        ArgumentError,
        ["conv_transpose", "groups", "positive", "0"],
    ),
    (
        "stride_zero",
        lambda: ops.conv_transpose(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), stride=(1, 0)),
        ArgumentError,
        ["conv_transpose", "stride", ">= 1", "(1, 0)"],
    ),
    (
        "dilation_negative",
        lambda: ops.conv_transpose(_zeros(1, 1, 5), _zeros(1, 1, 3), dilation=-1),
        ArgumentError,
        ["conv_transpose", "dilation", ">= 1", "-1"],
    ),
    (
        "padding_negative",
        lambda: ops.conv_transpose(_zeros(1, 1, 5), _zeros(1, 1, 3), padding=((1, -1),)),
        ArgumentError,
        ["conv_transpose", "padding", ">= 0", "-1"],
    ),
    (
        "padding_length",
        lambda: ops.conv_transpose(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), padding=(1, 1, 1)),
        ShapeError,
        ["conv_transpose", "padding", "2 values", "(1, 1, 1)"],
    ),
    (
        "output_padding_not_under_stride_or_dilation",
        lambda: ops.conv_transpose(
            _zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), stride=(2, 2), output_padding=(1, 2)
        ),
        ArgumentError,
        ["conv_transpose", "output_padding", "smaller than either stride or dilation", "(1, 2)"],
    ),
    (
        "output_padding_negative",
        lambda: ops.conv_transpose(_zeros(1, 1, 5), _zeros(1, 1, 3), output_padding=-1),
        ArgumentError,
        ["conv_transpose", "output_padding", ">= 0", "-1"],
    ),
    (
        "output_size_not_positive",
        lambda: ops.conv_transpose(_zeros(1, 1, 1), _zeros(1, 1, 2), padding=1),
        ShapeError,
        ["conv_transpose", "output size 0", "spatial dim 0", "(1 - 1) * 1 - 1 - 1"],
    ),
    (
        "bias_shape",
        lambda: ops.conv_transpose(_zeros(1, 4, 5), _zeros(4, 3, 3), _zeros(3), groups=2),
        ShapeError,
        ["conv_transpose", "bias", "(6,)", "(3,)", "groups 2"],
    ),
    (
        "integer_input",
        lambda: ops.conv_transpose(_zeros(1, 2, 5, dtype=np.int64), _zeros(2, 3, 3)),
        DTypeError,
        ["conv_transpose", "input", "floating", "int64"],
    ),
    (
        "mixed_dtypes",
        lambda: ops.conv_transpose(_zeros(1, 2, 5, dtype=np.float32), _zeros(2, 3, 3)),
        DTypeError,
        ["conv_transpose", "float32", "float64"],
    ),
    (
        "torch_rank",
        lambda: F.conv_transpose2d(_zeros(5, 5), _zeros(1, 1, 3, 3)),
        ShapeError,
        ["conv_transpose2d", "(5, 5)", "2 spatial dims"],
    ),
    (
        "torch_groups",
        lambda: F.conv_transpose1d(_zeros(1, 3, 5), _zeros(3, 1, 3), groups=2),
        ShapeError,
        ["conv_transpose1d", "groups 2", "C = 3"],
    ),
    (
        "torch_stride_zero",
        lambda: F.conv_transpose2d(_zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), stride=0),
        ArgumentError,
        ["conv_transpose2d", "stride must be >= 1"],
    ),
    (
        "torch_dilation_zero",
        lambda: F.conv_transpose3d(_zeros(1, 1, 3, 3, 3), _zeros(1, 1, 2, 2, 2), dilation=0),
        ArgumentError,
        ["conv_transpose3d", "dilation must be >= 1"],
    ),
    (
        "torch_padding_negative",
        lambda: F.conv_transpose1d(_zeros(1, 1, 5), _zeros(1, 1, 3), padding=-1),
        ArgumentError,
        ["conv_transpose1d", "padding must be >= 0", "-1"],
    ),
    (
        "torch_padding_same",  # PyTorch has no 'same' for transposed convs
        lambda: F.conv_transpose1d(_zeros(1, 1, 5), _zeros(1, 1, 3), padding="same"),
        DTypeError,
        ["conv_transpose1d", "padding", "'same'"],
    ),
    (
        "torch_output_padding",
        lambda: F.conv_transpose2d(
            _zeros(1, 1, 5, 5), _zeros(1, 1, 3, 3), None, 2, 1, (1, 2), 1, 2
        ),
        ArgumentError,
        ["conv_transpose2d", "output_padding (1, 2)", "stride (2, 2)", "dilation (2, 2)"],
    ),
    (
        "layer_padding_mode",
        lambda: nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"),
        ArgumentError,
        ["ConvTranspose2d", "padding_mode", "'zeros'", "'reflect'"],
    ),
    (
        "layer_padding_same",
        lambda: nn.ConvTranspose1d(2, 2, 3, padding="same"),
        DTypeError,
        ["ConvTranspose1d", "padding", "'same'"],
    ),
    (
        "layer_groups_not_dividing",
        lambda: nn.ConvTranspose1d(4, 3, 3, groups=2),
        ArgumentError,
        ["ConvTranspose1d", "in_channels (4)", "out_channels (3)", "groups (2)"],
    ),
    (
        "layer_stride_zero",
        lambda: nn.ConvTranspose3d(2, 2, 3, stride=(1, 0, 1)),
        ArgumentError,
        ["ConvTranspose3d", "stride", ">= 1", "(1, 0, 1)"],
    ),
    (
        "layer_output_padding",
        lambda: nn.ConvTranspose2d(2, 2, 3, stride=2, output_padding=2),
        ArgumentError,
        ["ConvTranspose2d", "output_padding (2, 2)", "stride (2, 2)", "dilation (1, 1)"],
    ),
    (
        "layer_output_size_out_of_range",
        lambda: nn.ConvTranspose2d(2, 2, 3, stride=2)(mt.zeros(1, 2, 4, 4), output_size=[9, 11]),
        ShapeError,
        ["ConvTranspose2d", "output size of [9, 11]", "from [9, 9] to [10, 10]", "(4, 4)"],
    ),
    (
        "layer_output_size_length",
        lambda: nn.ConvTranspose2d(2, 2, 3)(mt.zeros(2, 4, 4), output_size=[1, 6, 6, 6]),
        ShapeError,
        ["ConvTranspose2d", "3-D input", "output_size", "2 or 3 elements", "got 4"],
    ),
    (
        "layer_output_size_floats",
        lambda: nn.ConvTranspose1d(2, 2, 3)(mt.zeros(1, 2, 4), output_size=[6.0]),
        DTypeError,
        ["ConvTranspose1d", "output_size", "6.0"],
    ),
    (
        "layer_input_channels",
        lambda: nn.ConvTranspose1d(2, 2, 3)(mt.zeros(1, 3, 4)),
        ShapeError,
        ["conv_transpose1d", "C = 3", "(2, 2, 3)"],
    ),
]


@pytest.mark.parametrize("call, error, words", [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_name_the_function_the_argument_and_the_values(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{word!r} not in {str(info.value)!r}"


@pytest.mark.parametrize(
    "call",
    [
        lambda x, w: ops.conv_transpose(x, w, groups=3),
        lambda x, w: ops.conv_transpose(x, w, stride=2, output_padding=2),
        lambda x, w: F.conv_transpose2d(x, w, padding=-1),
    ],
    ids=["group", "output_padding", "padding"],
)
def test_a_failing_conv_transpose_records_nothing(call):
    x = mt.tensor(np.zeros((1, 4, 5, 5)), requires_grad=True)
    w = mt.tensor(np.zeros((4, 2, 3, 3)), requires_grad=True)
    with mt.Tape() as tape, pytest.raises((ShapeError, ArgumentError)):
        call(x, w)
    assert len(tape) == 0
    assert x.grad is None and w.grad is None


def test_an_empty_spatial_dim_is_a_shape_error_as_in_torch():
    x, w = mt.tensor(np.zeros((3, 2, 0))), mt.tensor(np.ones((2, 2, 3)))
    with pytest.raises(ShapeError, match=r"conv_transpose1d: X \(3, 2, 0\) has an empty spatial"):
        F.conv_transpose1d(x, w)
