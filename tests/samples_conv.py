"""Sample table entries for the conv and pooling ops (merged into op_samples.SAMPLES): conv in 1-D,
2-D and 3-D with strides, dilations, groups (depthwise too), asymmetric pads and every auto_pad
mode, through ops.conv and the F forms; conv_transpose likewise, with output_padding; max,
average and adaptive average pooling with padding, dilation, ceil_mode, count_include_pad and
divisor_override.

PyTorch pads symmetrically, so the references for asymmetric pads and auto_pad pad explicitly
first (torch.nn.functional.pad), with pads worked out by hand in the comments; those for
conv_transpose crop the pads off the output instead."""

from __future__ import annotations

import math

from op_samples import Sample, distinct, draws, normal
from reference import torch

from minitrain import ops
from minitrain.nn import functional


def _torch_pad(onnx_pads) -> list[int]:
    """ONNX pads [b0, b1, ..., e0, e1, ...] as torch.nn.functional.pad's list, last dim first."""
    dims = len(onnx_pads) // 2
    return [n for d in reversed(range(dims)) for n in (onnx_pads[d], onnx_pads[dims + d])]


def _conv(name, x_shape, w_shape, bias=True, pads=None, grad=None, **kw) -> Sample:
    """ops.conv of a normal x and w (and bias); `pads` are the explicit ONNX pads the reference
    applies first (for auto_pad, worked out by hand), `kw` the other ops.conv attributes."""
    dims = len(x_shape) - 2
    reference = getattr(torch.nn.functional, f"conv{dims}d") if torch else None
    attrs = {k: v for k, v in kw.items() if k != "auto_pad"}

    def ref(x, w, b=None):
        if pads is not None:
            x = torch.nn.functional.pad(x, _torch_pad(pads))
        return reference(
            x,
            w,
            b,
            stride=attrs.get("strides", 1),
            dilation=attrs.get("dilations", 1),
            groups=attrs.get("group", 1),
        )

    def call(x, w, b=None):
        explicit = {} if "auto_pad" in kw or pads is None else {"pads": pads}
        return ops.conv(x, w, b, **explicit, **kw)

    specs = (normal(*x_shape), normal(*w_shape)) + ((normal(w_shape[0]),) if bias else ())
    return Sample(name, draws(*specs), call, ref, grad=grad)


def _functional_conv(name, x_shape, w_shape, torch_kw, ours_kw=None) -> Sample:
    """F.convNd with PyTorch's arguments (the same on both sides unless `ours_kw` is given)."""
    dims = len(x_shape) - 2
    ours = getattr(functional, f"conv{dims}d")
    return Sample(
        name,
        draws(normal(*x_shape), normal(*w_shape), normal(w_shape[0])),
        lambda x, w, b: ours(x, w, b, **(ours_kw or torch_kw)),
        lambda x, w, b: getattr(torch.nn.functional, f"conv{dims}d")(x, w, b, **torch_kw),
    )


def _conv_transpose(name, x_shape, w_shape, bias=True, pads=None, grad=None, **kw) -> Sample:
    """ops.conv_transpose of a normal x and w (C, M/group, *kernel) (and bias); the reference
    runs PyTorch's without padding and crops the ONNX `pads` off each end, `kw` holds the
    other ops.conv_transpose attributes."""
    dims = len(x_shape) - 2
    reference = getattr(torch.nn.functional, f"conv_transpose{dims}d") if torch else None
    filters = w_shape[1] * kw.get("group", 1)

    def ref(x, w, b=None):
        full = reference(
            x,
            w,
            b,
            stride=kw.get("strides", 1),
            output_padding=kw.get("output_padding", 0),
            groups=kw.get("group", 1),
            dilation=kw.get("dilations", 1),
        )
        begins, ends = (pads[:dims], pads[dims:]) if pads else ((0,) * dims, (0,) * dims)
        crop = tuple(slice(b, n - e) for b, e, n in zip(begins, ends, full.shape[2:], strict=True))
        return full[(slice(None), slice(None)) + crop]

    specs = (normal(*x_shape), normal(*w_shape)) + ((normal(filters),) if bias else ())
    return Sample(
        name,
        draws(*specs),
        lambda x, w, b=None: ops.conv_transpose(x, w, b, pads=pads, **kw),
        ref,
        grad=grad,
    )


def _functional_conv_transpose(name, x_shape, w_shape, args) -> Sample:
    """F.conv_transposeNd with PyTorch's positional arguments after the bias (stride, padding,
    output_padding, groups, dilation), the same on both sides."""
    dims = len(w_shape) - 2
    ours = getattr(functional, f"conv_transpose{dims}d")
    groups = args[3] if len(args) > 3 else 1
    return Sample(
        name,
        draws(normal(*x_shape), normal(*w_shape), normal(w_shape[1] * groups)),
        lambda x, w, b: ours(x, w, b, *args),
        lambda x, w, b: getattr(torch.nn.functional, f"conv_transpose{dims}d")(x, w, b, *args),
    )


def _pool(name, values, call, ref) -> Sample:
    return Sample(name, draws(values), call, ref)


def _torch_pool(kind: str, dims: int):
    return lambda *args, **kw: getattr(torch.nn.functional, f"{kind}{dims}d")(*args, **kw)


def _max_pool(name, shape, kernel, pads=None, **kw) -> Sample:
    """ops.max_pool of distinct values (no ties, so the gradient is well defined). The reference
    pads with -inf by hand, so asymmetric pads need no PyTorch support; `kw` holds strides,
    dilations, ceil_mode (PyTorch's stride defaults to the kernel, ours to 1, so it is explicit)."""
    dims = len(shape) - 2
    reference = _torch_pool("max_pool", dims)

    def ref(x):
        if pads is not None:
            x = torch.nn.functional.pad(x, _torch_pad(pads), value=-math.inf)
        return reference(
            x,
            kernel,
            stride=kw.get("strides", 1),
            dilation=kw.get("dilations", 1),
            ceil_mode=kw.get("ceil_mode", False),
        )

    return _pool(name, distinct(*shape), lambda x: ops.max_pool(x, kernel, pads=pads, **kw), ref)


def _avg_exclude_pad(x, kernel, pads, stride, ceil_mode):
    """Average pooling that counts only input elements, with any pads: the windowed sum of x
    zero-padded over the windowed count of ones padded alike."""
    dims = x.ndim - 2
    pool = _torch_pool("avg_pool", dims)
    padding = _torch_pad(pads)
    ones = torch.ones_like(x)
    sums = pool(torch.nn.functional.pad(x, padding), kernel, stride, ceil_mode=ceil_mode)
    counts = pool(torch.nn.functional.pad(ones, padding), kernel, stride, ceil_mode=ceil_mode)
    return sums / counts


SAMPLES: dict[str, list[Sample]] = {
    "conv": [
        # 1-D
        _conv("1d", (2, 3, 7), (4, 3, 3)),
        _conv("1d_no_bias", (2, 3, 6), (2, 3, 2), bias=False),
        _conv(
            "1d_stride2_dilation2_asymmetric_pads",
            (2, 2, 9),
            (3, 2, 3),
            pads=[2, 1],
            strides=2,
            dilations=2,
        ),
        _conv("1d_depthwise", (2, 3, 8), (3, 1, 3), pads=[1, 1], group=3),
        # 2-D
        _conv("2d_pad1", (2, 3, 5, 5), (4, 3, 3, 3), pads=[1, 1, 1, 1]),
        _conv(
            "2d_strides_dilations_asymmetric_pads",
            (2, 2, 7, 6),
            (3, 2, 3, 2),
            pads=[1, 0, 2, 1],
            strides=(2, 1),
            dilations=(1, 2),
        ),
        _conv("2d_groups", (2, 4, 5, 5), (6, 2, 3, 3), pads=[1, 0, 0, 1], group=2),
        _conv("2d_depthwise", (2, 3, 5, 4), (3, 1, 3, 3), pads=[1, 1, 1, 1], group=3),
        _conv("2d_depthwise_multiplier2", (1, 3, 5, 5), (6, 1, 2, 2), strides=2, group=3),
        _conv("2d_stride3_longer_than_kernel2", (1, 2, 7, 7), (2, 2, 2, 2), strides=3),
        # H = 6, stride 2, kernel 3: ceil(6/2) = 3 outputs need (3-1)*2 + 3 - 6 = 1 pad, at the
        # end for UPPER; W = 5: 3 outputs need 2*2 + 3 - 5 = 2, one each side.
        _conv(
            "2d_same_upper_stride2",
            (1, 2, 6, 5),
            (3, 2, 3, 3),
            pads=[0, 1, 1, 1],
            strides=2,
            auto_pad="SAME_UPPER",
        ),
        _conv(
            "2d_same_lower_stride2",
            (1, 2, 6, 5),
            (3, 2, 3, 3),
            pads=[1, 1, 0, 1],
            strides=2,
            auto_pad="SAME_LOWER",
        ),
        # kernel 2, stride 1: one pad per dim (5 + 1 - 2 + 1 = 5 outputs), end or beginning
        _conv(
            "2d_same_upper_even_kernel",
            (1, 2, 5, 4),
            (2, 2, 2, 2),
            pads=[0, 0, 1, 1],
            auto_pad="SAME_UPPER",
        ),
        _conv(
            "2d_same_lower_even_kernel",
            (1, 2, 5, 4),
            (2, 2, 2, 2),
            pads=[1, 1, 0, 0],
            auto_pad="SAME_LOWER",
        ),
        _conv("2d_valid_stride2", (1, 2, 6, 5), (3, 2, 3, 3), strides=2, auto_pad="VALID"),
        _conv("2d_frozen_weight", (2, 2, 4, 4), (3, 2, 3, 3), pads=[1, 1, 1, 1], grad=(0, 2)),
        _conv("2d_first_layer", (2, 2, 4, 4), (3, 2, 3, 3), pads=[1, 1, 1, 1], grad=(1, 2)),
        _conv("2d_input_only", (2, 2, 4, 4), (3, 2, 2, 2), bias=False, grad=(0,)),
        # 3-D
        _conv("3d_pad1", (1, 2, 4, 4, 3), (2, 2, 2, 2, 2), pads=[1, 1, 1, 1, 1, 1]),
        _conv(
            "3d_strides_groups_asymmetric_pads",
            (2, 4, 5, 4, 4),
            (4, 2, 3, 2, 2),
            pads=[1, 0, 1, 0, 1, 0],
            strides=(2, 1, 2),
            group=2,
        ),
        # D = 5 with reach 2*(2-1)+1 = 3: 2 pads, one each side; H = W = 4 with kernel 2: one,
        # at the beginning for LOWER.
        _conv(
            "3d_same_lower_dilation",
            (1, 2, 5, 4, 4),
            (2, 2, 2, 2, 2),
            pads=[1, 1, 1, 1, 0, 0],
            dilations=(2, 1, 1),
            auto_pad="SAME_LOWER",
        ),
        _conv("3d_depthwise_valid", (1, 2, 4, 3, 4), (2, 1, 2, 2, 3), group=2, auto_pad="VALID"),
        # PyTorch's functional forms
        _functional_conv("F_conv1d_padding_int", (2, 3, 6), (2, 3, 3), {"padding": 2}),
        _functional_conv(
            "F_conv2d_same_dilation",
            (1, 2, 5, 6),
            (3, 2, 2, 3),
            {"padding": "same", "dilation": 2},
        ),
        _functional_conv(
            "F_conv2d_stride_tuple_padding_groups",
            (2, 4, 5, 5),
            (4, 2, 3, 3),
            {"stride": (2, 1), "padding": (1, 0), "groups": 2},
        ),
        _functional_conv(
            "F_conv3d_valid", (1, 2, 4, 3, 3), (2, 2, 2, 2, 2), {"padding": "valid", "stride": 2}
        ),
        # (begin, end) pairs, beyond PyTorch: the reference gets the same padding symmetric
        _functional_conv(
            "F_conv2d_pairs",
            (1, 2, 4, 4),
            (2, 2, 3, 3),
            {"padding": (1, 2)},
            {"padding": ((1, 1), (2, 2))},
        ),
        Sample(
            "F_conv2d_unbatched",
            draws(normal(2, 5, 4), normal(3, 2, 3, 2), normal(3)),
            lambda x, w, b: functional.conv2d(x, w, b, padding=1),
            lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=1),
        ),
    ],
    "conv_transpose": [
        _conv_transpose("1d", (2, 3, 5), (3, 4, 3)),
        _conv_transpose("1d_no_bias", (2, 2, 4), (2, 3, 2), bias=False),
        _conv_transpose(
            "1d_stride2_dilation2_asymmetric_pads_output_padding",
            (2, 2, 4),
            (2, 3, 3),
            pads=[2, 1],
            strides=2,
            dilations=2,
            output_padding=1,
        ),
        _conv_transpose("1d_depthwise_stride3", (2, 3, 4), (3, 1, 2), strides=3, group=3),
        _conv_transpose("2d_k4_s2_p1", (2, 3, 3, 4), (3, 2, 4, 4), pads=[1, 1, 1, 1], strides=2),
        _conv_transpose(
            "2d_groups_asymmetric_pads",
            (2, 4, 4, 3),
            (4, 3, 3, 2),
            pads=[1, 0, 2, 1],
            strides=(2, 1),
            dilations=(1, 2),
            group=2,
            output_padding=(1, 1),
        ),
        _conv_transpose("2d_depthwise", (1, 3, 3, 3), (3, 2, 3, 3), pads=[1, 1, 1, 1], group=3),
        # stride 1, dilation 3: output_padding 2 is allowed (smaller than the dilation) and adds
        # positions no input reaches
        _conv_transpose(
            "2d_output_padding_under_dilation",
            (1, 2, 3, 3),
            (2, 2, 2, 2),
            dilations=3,
            output_padding=(2, 1),
        ),
        _conv_transpose("2d_frozen_weight", (2, 2, 3, 3), (2, 3, 3, 3), strides=2, grad=(0, 2)),
        _conv_transpose("2d_first_layer", (2, 2, 3, 3), (2, 3, 3, 3), strides=2, grad=(1, 2)),
        _conv_transpose("2d_input_only", (2, 2, 3, 3), (2, 3, 2, 2), bias=False, grad=(0,)),
        _conv_transpose(
            "3d_strides_groups_asymmetric_pads",
            (1, 4, 3, 2, 3),
            (4, 1, 2, 2, 3),
            pads=[1, 0, 0, 0, 1, 1],
            strides=(2, 1, 2),
            dilations=(1, 2, 1),
            group=2,
            output_padding=(1, 1, 0),
        ),
        _conv_transpose("3d_pad1", (1, 2, 2, 3, 2), (2, 2, 3, 2, 2), pads=[1, 1, 1, 1, 0, 0]),
        # PyTorch's functional forms, positional (groups comes before dilation)
        _functional_conv_transpose("F_conv_transpose1d", (2, 4, 5), (4, 3, 3), (2, 1, 1, 2, 1)),
        _functional_conv_transpose(
            "F_conv_transpose2d_tuples", (2, 6, 3, 4), (6, 1, 3, 2), ((2, 1), (1, 0), (1, 0), 3)
        ),
        _functional_conv_transpose(
            "F_conv_transpose3d", (1, 2, 2, 3, 2), (2, 2, 2, 2, 3), (2, (0, 1, 1), 1, 1, 1)
        ),
        Sample(
            "F_conv_transpose2d_unbatched",
            draws(normal(4, 3, 3), normal(4, 1, 2, 3), normal(2)),
            lambda x, w, b: functional.conv_transpose2d(x, w, b, 1, 1, 0, 2, (2, 1)),
            lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, 1, 1, 0, 2, (2, 1)),
        ),
    ],
    "max_pool": [
        _max_pool("1d_k2_s2", (2, 3, 8), 2, strides=2),
        # L = 4, kernel 2, stride 3, pad 1, ceil: ceil((4 + 2 - 2) / 3) + 1 = 3 windows, but the
        # third would start at 6 - 1 = 5, past the input: 2 windows
        Sample(
            "1d_ceil_mode_drops_a_window_in_the_padding",
            draws(distinct(2, 2, 4)),
            lambda x: ops.max_pool(x, 2, strides=3, pads=1, ceil_mode=True),
            lambda x: torch.nn.functional.max_pool1d(x, 2, 3, 1, ceil_mode=True),
        ),
        Sample(
            "2d_k3_s2_p1_ceil",
            draws(distinct(2, 2, 6, 7)),
            lambda x: ops.max_pool(x, 3, strides=2, pads=1, ceil_mode=True),
            lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True),
        ),
        _max_pool("2d_overlapping_windows", (1, 2, 5, 5), (3, 2), strides=1),
        _max_pool("2d_dilation", (2, 2, 7, 6), 2, strides=(2, 1), dilations=(2, 3)),
        _max_pool("2d_asymmetric_pads", (1, 2, 5, 6), 3, pads=[1, 0, 0, 1], strides=2),
        Sample(
            "2d_dilation_padding_ceil",
            draws(distinct(1, 2, 7, 8)),
            lambda x: ops.max_pool(
                x, (3, 2), strides=(2, 3), pads=[1, 1, 1, 1], dilations=2, ceil_mode=True
            ),
            lambda x: torch.nn.functional.max_pool2d(
                x, (3, 2), (2, 3), (1, 1), dilation=2, ceil_mode=True
            ),
        ),
        _max_pool("3d", (1, 2, 4, 5, 4), 2, strides=(1, 2, 2)),
        Sample(
            "3d_padding_ceil",
            draws(distinct(1, 2, 5, 4, 5)),
            lambda x: ops.max_pool(x, 3, strides=2, pads=1, ceil_mode=True),
            lambda x: torch.nn.functional.max_pool3d(x, 3, 2, 1, ceil_mode=True),
        ),
        Sample(
            "F_max_pool2d_default_stride",
            draws(distinct(2, 3, 6, 5)),
            lambda x: functional.max_pool2d(x, 2),
            lambda x: torch.nn.functional.max_pool2d(x, 2),
        ),
        Sample(
            "F_max_pool1d_unbatched",
            draws(distinct(3, 9)),
            lambda x: functional.max_pool1d(x, 3, 2, 1),
            lambda x: torch.nn.functional.max_pool1d(x, 3, 2, 1),
        ),
    ],
    "avg_pool": [
        Sample(
            "1d_include_pad_ceil",
            draws(normal(2, 3, 8)),
            lambda x: ops.avg_pool(x, 3, strides=2, pads=1, ceil_mode=True, count_include_pad=True),
            lambda x: torch.nn.functional.avg_pool1d(x, 3, 2, 1, ceil_mode=True),
        ),
        Sample(
            "1d_exclude_pad",
            draws(normal(2, 2, 7)),
            lambda x: ops.avg_pool(x, 3, strides=2, pads=1),
            lambda x: torch.nn.functional.avg_pool1d(x, 3, 2, 1, count_include_pad=False),
        ),
        Sample(
            "2d_include_pad_ceil",
            draws(normal(2, 2, 6, 7)),
            lambda x: ops.avg_pool(x, 3, strides=2, pads=1, ceil_mode=True, count_include_pad=True),
            lambda x: torch.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
        ),
        Sample(
            "2d_exclude_pad_ceil",
            draws(normal(2, 2, 6, 7)),
            lambda x: ops.avg_pool(x, (3, 2), strides=(2, 3), pads=1, ceil_mode=True),
            lambda x: torch.nn.functional.avg_pool2d(
                x, (3, 2), (2, 3), 1, ceil_mode=True, count_include_pad=False
            ),
        ),
        Sample(
            "2d_divisor_override",
            draws(normal(1, 2, 6, 6)),
            lambda x: ops.avg_pool(x, 3, strides=2, pads=1, divisor_override=4),
            lambda x: torch.nn.functional.avg_pool2d(x, 3, 2, 1, divisor_override=4),
        ),
        Sample(
            "2d_asymmetric_pads_exclude_pad",
            draws(normal(1, 2, 5, 6)),
            lambda x: ops.avg_pool(x, 3, strides=2, pads=[1, 0, 0, 1]),
            lambda x: _avg_exclude_pad(x, 3, [1, 0, 0, 1], 2, False),
        ),
        Sample(
            "3d_include_pad_ceil",
            draws(normal(1, 2, 5, 4, 5)),
            lambda x: ops.avg_pool(
                x,
                (2, 3, 2),
                strides=(1, 2, 2),
                pads=(1, 1, 0, 1, 1, 0),
                ceil_mode=True,
                count_include_pad=True,
            ),
            lambda x: torch.nn.functional.avg_pool3d(
                x, (2, 3, 2), (1, 2, 2), (1, 1, 0), ceil_mode=True
            ),
        ),
        Sample(
            "3d_exclude_pad_divisor_override",
            draws(normal(1, 2, 4, 4, 4)),
            lambda x: ops.avg_pool(x, 2, strides=2, pads=1, divisor_override=3),
            lambda x: torch.nn.functional.avg_pool3d(x, 2, 2, 1, divisor_override=3),
        ),
        Sample(
            "F_avg_pool2d_defaults",
            draws(normal(2, 3, 6, 5)),
            lambda x: functional.avg_pool2d(x, 2),
            lambda x: torch.nn.functional.avg_pool2d(x, 2),
        ),
        Sample(
            "F_avg_pool1d_padding_ceil",
            draws(normal(2, 3, 7)),
            lambda x: functional.avg_pool1d(x, 3, 2, 1, ceil_mode=True),
            lambda x: torch.nn.functional.avg_pool1d(x, 3, 2, 1, ceil_mode=True),
        ),
    ],
    "adaptive_avg_pool": [
        Sample(
            "1d_global",
            draws(normal(2, 3, 7)),
            lambda x: ops.adaptive_avg_pool(x, 1),
            lambda x: torch.nn.functional.adaptive_avg_pool1d(x, 1),
        ),
        Sample(
            "1d_uneven_windows",
            draws(normal(2, 3, 7)),
            lambda x: ops.adaptive_avg_pool(x, 3),
            lambda x: torch.nn.functional.adaptive_avg_pool1d(x, 3),
        ),
        Sample(
            "2d_3x4",
            draws(normal(2, 2, 7, 9)),
            lambda x: ops.adaptive_avg_pool(x, (3, 4)),
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (3, 4)),
        ),
        Sample(
            "2d_global",
            draws(normal(2, 3, 5, 4)),
            lambda x: ops.adaptive_avg_pool(x, 1),
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, 1),
        ),
        Sample(
            "2d_larger_than_input",
            draws(normal(1, 2, 3, 4)),
            lambda x: ops.adaptive_avg_pool(x, (5, 6)),
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (5, 6)),
        ),
        Sample(
            "3d_none_keeps_a_dim",
            draws(normal(1, 2, 5, 4, 6)),
            lambda x: ops.adaptive_avg_pool(x, (2, None, 4)),
            lambda x: torch.nn.functional.adaptive_avg_pool3d(x, (2, None, 4)),
        ),
        Sample(
            "F_adaptive_avg_pool2d",
            draws(normal(2, 3, 6, 5)),
            lambda x: functional.adaptive_avg_pool2d(x, (2, 3)),
            lambda x: torch.nn.functional.adaptive_avg_pool2d(x, (2, 3)),
        ),
        Sample(
            "F_adaptive_avg_pool3d_global",
            draws(normal(2, 2, 3, 4, 3)),
            lambda x: functional.adaptive_avg_pool3d(x, 1),
            lambda x: torch.nn.functional.adaptive_avg_pool3d(x, 1),
        ),
    ],
}
