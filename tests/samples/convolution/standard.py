"""Samples of ops/convolution/standard.py: conv, 1-D to 3-D, (begin, end) padding pairs,
'same' and 'valid'."""

from __future__ import annotations

from op_samples import Sample, draws, normal, onnx_to_padding, onnx_to_torch_pad
from reference import torch

from minitrain import ops
from minitrain.nn import functional


def _conv(name, x_shape, w_shape, bias=True, pads=None, grad=None, **kw) -> Sample:
    """ops.conv of a normal x and w (and bias); `pads` are the explicit ONNX pads the reference
    applies first (for 'same', worked out by hand), passed to ops.conv as its padding (ints,
    or (begin, end) pairs where they differ) unless `kw` gives it; `kw` holds ops.conv's other
    arguments (PyTorch's)."""
    dims = len(x_shape) - 2
    reference = getattr(torch.nn.functional, f"conv{dims}d") if torch else None
    attrs = {k: v for k, v in kw.items() if k != "padding"}

    def ref(x, w, b=None):
        if pads is not None:
            x = torch.nn.functional.pad(x, onnx_to_torch_pad(pads))
        return reference(x, w, b, **attrs)

    def call(x, w, b=None):
        explicit = {} if "padding" in kw or pads is None else {"padding": onnx_to_padding(pads)}
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


# PyTorch pads symmetrically: the references for (begin, end) pairs and 'same' pad explicitly
# first (torch.nn.functional.pad), with pads worked out by hand in the comments.
SAMPLES: dict[str, list[Sample]] = {
    "conv": [
        # 1-D
        _conv("1d", (2, 3, 7), (4, 3, 3)),
        _conv("1d_no_bias", (2, 3, 6), (2, 3, 2), bias=False),
        _conv(
            "1d_stride2_dilation2_padding_pairs",
            (2, 2, 9),
            (3, 2, 3),
            pads=[2, 1],
            stride=2,
            dilation=2,
        ),
        _conv("1d_depthwise", (2, 3, 8), (3, 1, 3), pads=[1, 1], groups=3),
        # 2-D
        _conv("2d_pad1", (2, 3, 5, 5), (4, 3, 3, 3), pads=[1, 1, 1, 1]),
        _conv(
            "2d_strides_dilations_padding_pairs",
            (2, 2, 7, 6),
            (3, 2, 3, 2),
            pads=[1, 0, 2, 1],
            stride=(2, 1),
            dilation=(1, 2),
        ),
        _conv("2d_groups", (2, 4, 5, 5), (6, 2, 3, 3), pads=[1, 0, 0, 1], groups=2),
        _conv("2d_depthwise", (2, 3, 5, 4), (3, 1, 3, 3), pads=[1, 1, 1, 1], groups=3),
        _conv("2d_depthwise_multiplier2", (1, 3, 5, 5), (6, 1, 2, 2), stride=2, groups=3),
        _conv("2d_stride3_longer_than_kernel2", (1, 2, 7, 7), (2, 2, 2, 2), stride=3),
        # H = 6, stride 2, kernel 3: ceil(6/2) = 3 outputs need (3-1)*2 + 3 - 6 = 1 pad, at the
        # end for 'same' (ONNX's SAME_UPPER); W = 5: 3 outputs need 2*2 + 3 - 5 = 2, one each
        # side. The same pads the other way round (the odd one at the beginning, ONNX's
        # SAME_LOWER) are (begin, end) pairs.
        _conv(
            "2d_same_stride2",
            (1, 2, 6, 5),
            (3, 2, 3, 3),
            pads=[0, 1, 1, 1],
            stride=2,
            padding="same",
        ),
        _conv(
            "2d_pairs_odd_pad_first_stride2",
            (1, 2, 6, 5),
            (3, 2, 3, 3),
            pads=[1, 1, 0, 1],
            stride=2,
        ),
        # kernel 2, stride 1: one pad per dim (5 + 1 - 2 + 1 = 5 outputs), at the end for 'same'
        _conv(
            "2d_same_even_kernel",
            (1, 2, 5, 4),
            (2, 2, 2, 2),
            pads=[0, 0, 1, 1],
            padding="same",
        ),
        _conv("2d_pairs_odd_pad_first_even_kernel", (1, 2, 5, 4), (2, 2, 2, 2), pads=[1, 1, 0, 0]),
        _conv("2d_valid_stride2", (1, 2, 6, 5), (3, 2, 3, 3), stride=2, padding="valid"),
        _conv("2d_frozen_weight", (2, 2, 4, 4), (3, 2, 3, 3), pads=[1, 1, 1, 1], grad=(0, 2)),
        _conv("2d_first_layer", (2, 2, 4, 4), (3, 2, 3, 3), pads=[1, 1, 1, 1], grad=(1, 2)),
        _conv("2d_input_only", (2, 2, 4, 4), (3, 2, 2, 2), bias=False, grad=(0,)),
        # 3-D
        _conv("3d_pad1", (1, 2, 4, 4, 3), (2, 2, 2, 2, 2), pads=[1, 1, 1, 1, 1, 1]),
        _conv(
            "3d_strides_groups_padding_pairs",
            (2, 4, 5, 4, 4),
            (4, 2, 3, 2, 2),
            pads=[1, 0, 1, 0, 1, 0],
            stride=(2, 1, 2),
            groups=2,
        ),
        # D = 5 with reach 2*(2-1)+1 = 3: 2 pads, one each side; H = W = 4 with kernel 2: one,
        # at the end for 'same' (and at the beginning as pairs)
        _conv(
            "3d_same_dilation",
            (1, 2, 5, 4, 4),
            (2, 2, 2, 2, 2),
            pads=[1, 0, 0, 1, 1, 1],
            dilation=(2, 1, 1),
            padding="same",
        ),
        _conv(
            "3d_pairs_odd_pad_first_dilation",
            (1, 2, 5, 4, 4),
            (2, 2, 2, 2, 2),
            pads=[1, 1, 1, 1, 0, 0],
            dilation=(2, 1, 1),
        ),
        _conv("3d_depthwise_valid", (1, 2, 4, 3, 4), (2, 1, 2, 2, 3), groups=2, padding="valid"),
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
}
