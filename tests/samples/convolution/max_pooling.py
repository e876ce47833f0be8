"""Samples of ops/convolution/max_pooling.py: max_pool, pads, dilations, ceil_mode."""

from __future__ import annotations

import math

from op_samples import Sample, distinct, draws, onnx_to_padding, onnx_to_torch_pad
from reference import torch

from minitrain import ops
from minitrain.nn import functional


def _pool(name, values, call, ref) -> Sample:
    return Sample(name, draws(values), call, ref)


def _torch_pool(kind: str, dims: int):
    return lambda *args, **kw: getattr(torch.nn.functional, f"{kind}{dims}d")(*args, **kw)


def _max_pool(name, shape, kernel, pads=None, **kw) -> Sample:
    """ops.max_pool of distinct values (no ties, so the gradient is well defined), padded by the
    ONNX `pads` (passed as its padding: ints, or (begin, end) pairs where they differ). The
    reference pads with -inf by hand, so (begin, end) pairs need no PyTorch support; `kw` holds
    ops.max_pool's other arguments (PyTorch's: stride, dilation, ceil_mode)."""
    dims = len(shape) - 2
    reference = _torch_pool("max_pool", dims)
    padding = 0 if pads is None else onnx_to_padding(pads)

    def ref(x):
        if pads is not None:
            x = torch.nn.functional.pad(x, onnx_to_torch_pad(pads), value=-math.inf)
        return reference(x, kernel, **kw)

    return _pool(
        name, distinct(*shape), lambda x: ops.max_pool(x, kernel, padding=padding, **kw), ref
    )


SAMPLES: dict[str, list[Sample]] = {
    "max_pool": [
        _max_pool("1d_k2_s2", (2, 3, 8), 2, stride=2),
        # L = 4, kernel 2, stride 3, pad 1, ceil: ceil((4 + 2 - 2) / 3) + 1 = 3 windows, but the
        # third would start at 6 - 1 = 5, past the input: 2 windows
        Sample(
            "1d_ceil_mode_drops_a_window_in_the_padding",
            draws(distinct(2, 2, 4)),
            lambda x: ops.max_pool(x, 2, stride=3, padding=1, ceil_mode=True),
            lambda x: torch.nn.functional.max_pool1d(x, 2, 3, 1, ceil_mode=True),
        ),
        Sample(
            "2d_k3_s2_p1_ceil",
            draws(distinct(2, 2, 6, 7)),
            lambda x: ops.max_pool(x, 3, stride=2, padding=1, ceil_mode=True),
            lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True),
        ),
        _max_pool("2d_overlapping_windows", (1, 2, 5, 5), (3, 2), stride=1),
        _max_pool("2d_dilation", (2, 2, 7, 6), 2, stride=(2, 1), dilation=(2, 3)),
        _max_pool("2d_asymmetric_pads", (1, 2, 5, 6), 3, pads=[1, 0, 0, 1], stride=2),
        Sample(
            "2d_dilation_padding_ceil",
            draws(distinct(1, 2, 7, 8)),
            lambda x: ops.max_pool(
                x, (3, 2), stride=(2, 3), padding=(1, 1), dilation=2, ceil_mode=True
            ),
            lambda x: torch.nn.functional.max_pool2d(
                x, (3, 2), (2, 3), (1, 1), dilation=2, ceil_mode=True
            ),
        ),
        _max_pool("3d", (1, 2, 4, 5, 4), 2, stride=(1, 2, 2)),
        _max_pool("2d_default_stride_is_the_kernel_size", (2, 2, 6, 5), (2, 3)),
        Sample(
            "3d_padding_ceil",
            draws(distinct(1, 2, 5, 4, 5)),
            lambda x: ops.max_pool(x, 3, stride=2, padding=1, ceil_mode=True),
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
}
