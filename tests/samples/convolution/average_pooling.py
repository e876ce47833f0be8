"""Samples of ops/convolution/average_pooling.py: avg_pool, pads, ceil_mode, the divisors."""

from __future__ import annotations

from op_samples import Sample, draws, normal, onnx_to_padding, onnx_to_torch_pad
from reference import torch

from minitrain import ops
from minitrain.nn import functional


def _avg_exclude_pad(x, kernel, pads, stride, ceil_mode):
    """Average pooling that counts only input elements, with any pads: the windowed sum of x
    zero-padded over the windowed count of ones padded alike."""
    dims = x.ndim - 2
    pool = getattr(torch.nn.functional, f"avg_pool{dims}d")
    padding = onnx_to_torch_pad(pads)
    ones = torch.ones_like(x)
    sums = pool(torch.nn.functional.pad(x, padding), kernel, stride, ceil_mode=ceil_mode)
    counts = pool(torch.nn.functional.pad(ones, padding), kernel, stride, ceil_mode=ceil_mode)
    return sums / counts


SAMPLES: dict[str, list[Sample]] = {
    "avg_pool": [
        Sample(
            "1d_include_pad_ceil",
            draws(normal(2, 3, 8)),
            lambda x: ops.avg_pool(x, 3, stride=2, padding=1, ceil_mode=True),
            lambda x: torch.nn.functional.avg_pool1d(x, 3, 2, 1, ceil_mode=True),
        ),
        Sample(
            "1d_exclude_pad",
            draws(normal(2, 2, 7)),
            lambda x: ops.avg_pool(x, 3, stride=2, padding=1, count_include_pad=False),
            lambda x: torch.nn.functional.avg_pool1d(x, 3, 2, 1, count_include_pad=False),
        ),
        Sample(
            "2d_include_pad_ceil",
            draws(normal(2, 2, 6, 7)),
            lambda x: ops.avg_pool(x, 3, stride=2, padding=1, ceil_mode=True),
            lambda x: torch.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
        ),
        Sample(
            "2d_exclude_pad_ceil",
            draws(normal(2, 2, 6, 7)),
            lambda x: ops.avg_pool(
                x, (3, 2), stride=(2, 3), padding=1, ceil_mode=True, count_include_pad=False
            ),
            lambda x: torch.nn.functional.avg_pool2d(
                x, (3, 2), (2, 3), 1, ceil_mode=True, count_include_pad=False
            ),
        ),
        Sample(
            "2d_divisor_override",
            draws(normal(1, 2, 6, 6)),
            lambda x: ops.avg_pool(x, 3, stride=2, padding=1, divisor_override=4),
            lambda x: torch.nn.functional.avg_pool2d(x, 3, 2, 1, divisor_override=4),
        ),
        Sample(
            "2d_asymmetric_pads_exclude_pad",
            draws(normal(1, 2, 5, 6)),
            lambda x: ops.avg_pool(
                x, 3, stride=2, padding=onnx_to_padding([1, 0, 0, 1]), count_include_pad=False
            ),
            lambda x: _avg_exclude_pad(x, 3, [1, 0, 0, 1], 2, False),
        ),
        Sample(
            "3d_include_pad_ceil",
            draws(normal(1, 2, 5, 4, 5)),
            lambda x: ops.avg_pool(x, (2, 3, 2), (1, 2, 2), (1, 1, 0), ceil_mode=True),
            lambda x: torch.nn.functional.avg_pool3d(
                x, (2, 3, 2), (1, 2, 2), (1, 1, 0), ceil_mode=True
            ),
        ),
        Sample(
            "3d_exclude_pad_divisor_override",
            draws(normal(1, 2, 4, 4, 4)),
            lambda x: ops.avg_pool(x, 2, padding=1, count_include_pad=False, divisor_override=3),
            lambda x: torch.nn.functional.avg_pool3d(x, 2, 2, 1, divisor_override=3),
        ),
        Sample(
            "2d_defaults",
            draws(normal(2, 3, 6, 5)),
            lambda x: ops.avg_pool(x, (2, 3)),
            lambda x: torch.nn.functional.avg_pool2d(x, (2, 3)),
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
}
