"""Samples of ops/convolution/transposed.py: conv_transpose, with output_padding."""

from __future__ import annotations

from op_samples import Sample, draws, normal, onnx_to_padding
from reference import torch

from minitrain import ops
from minitrain.nn import functional


def _conv_transpose(name, x_shape, w_shape, bias=True, pads=None, grad=None, **kw) -> Sample:
    """ops.conv_transpose of a normal x and w (C, M/groups, *kernel) (and bias), padded by the
    ONNX `pads` (passed as its padding: ints, or (begin, end) pairs where they differ); the
    reference runs PyTorch's without padding and crops the pads off each end. `kw` holds
    ops.conv_transpose's other arguments (PyTorch's)."""
    dims = len(x_shape) - 2
    reference = getattr(torch.nn.functional, f"conv_transpose{dims}d") if torch else None
    filters = w_shape[1] * kw.get("groups", 1)
    padding = 0 if pads is None else onnx_to_padding(pads)

    def ref(x, w, b=None):
        full = reference(x, w, b, **kw)
        begins, ends = (pads[:dims], pads[dims:]) if pads else ((0,) * dims, (0,) * dims)
        crop = tuple(slice(b, n - e) for b, e, n in zip(begins, ends, full.shape[2:], strict=True))
        return full[(slice(None), slice(None)) + crop]

    specs = (normal(*x_shape), normal(*w_shape)) + ((normal(filters),) if bias else ())
    return Sample(
        name,
        draws(*specs),
        lambda x, w, b=None: ops.conv_transpose(x, w, b, padding=padding, **kw),
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


SAMPLES: dict[str, list[Sample]] = {
    "conv_transpose": [
        _conv_transpose("1d", (2, 3, 5), (3, 4, 3)),
        _conv_transpose("1d_no_bias", (2, 2, 4), (2, 3, 2), bias=False),
        _conv_transpose(
            "1d_stride2_dilation2_asymmetric_pads_output_padding",
            (2, 2, 4),
            (2, 3, 3),
            pads=[2, 1],
            stride=2,
            dilation=2,
            output_padding=1,
        ),
        _conv_transpose("1d_depthwise_stride3", (2, 3, 4), (3, 1, 2), stride=3, groups=3),
        _conv_transpose("2d_k4_s2_p1", (2, 3, 3, 4), (3, 2, 4, 4), pads=[1, 1, 1, 1], stride=2),
        _conv_transpose(
            "2d_groups_asymmetric_pads",
            (2, 4, 4, 3),
            (4, 3, 3, 2),
            pads=[1, 0, 2, 1],
            stride=(2, 1),
            dilation=(1, 2),
            groups=2,
            output_padding=(1, 1),
        ),
        _conv_transpose("2d_depthwise", (1, 3, 3, 3), (3, 2, 3, 3), pads=[1, 1, 1, 1], groups=3),
        # stride 1, dilation 3: output_padding 2 is allowed (smaller than the dilation) and adds
        # positions no input reaches
        _conv_transpose(
            "2d_output_padding_under_dilation",
            (1, 2, 3, 3),
            (2, 2, 2, 2),
            dilation=3,
            output_padding=(2, 1),
        ),
        _conv_transpose("2d_frozen_weight", (2, 2, 3, 3), (2, 3, 3, 3), stride=2, grad=(0, 2)),
        _conv_transpose("2d_first_layer", (2, 2, 3, 3), (2, 3, 3, 3), stride=2, grad=(1, 2)),
        _conv_transpose("2d_input_only", (2, 2, 3, 3), (2, 3, 2, 2), bias=False, grad=(0,)),
        _conv_transpose(
            "3d_strides_groups_asymmetric_pads",
            (1, 4, 3, 2, 3),
            (4, 1, 2, 2, 3),
            pads=[1, 0, 0, 0, 1, 1],
            stride=(2, 1, 2),
            dilation=(1, 2, 1),
            groups=2,
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
}
