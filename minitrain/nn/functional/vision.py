"""`F.pad`, `F.interpolate` (and the deprecated upsample forms), `F.unfold` / `F.fold`, pixel
and channel shuffle and max unpooling."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ... import ops
from ...errors import ArgumentError, ShapeError, UnknownModeError
from ...ops.resampling.patches import fold_patches_as, unfold_patches_as
from ...ops.resampling.unpooling import max_unpool_as
from ...tensor import Tensor
from ..torch_args import check_default

__all__ = [
    "pad",
    "interpolate",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
    "unfold",
    "fold",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
]

_PAD_MODES = ("constant", "reflect", "replicate", "circular")
# what a reflect or replicate pad must leave of a dim: its 1-D form one element, else any
_LEFT = {1: "leaving at least one element", 0: "cropping at most the whole dim"}


def pad(
    input: Tensor,  # noqa: A002
    pad,
    mode: str = "constant",
    value: float | None = None,
) -> Tensor:
    """input padded on its last len(pad) // 2 dims, the last dim first, as in PyTorch:
    pad = (left, right), (left, right, top, bottom), ... 'constant' fills with value (0 by
    default); 'reflect' mirrors the input about its edge element, 'replicate' repeats the edge
    element, 'circular' wraps around (what is left after cropping, as PyTorch's). A negative
    pad crops. An unknown mode raises UnknownModeError, PyTorch's NotImplementedError."""
    if mode not in _PAD_MODES:
        # PyTorch's "Unrecognised padding mode" is a NotImplementedError
        raise UnknownModeError(f"pad: mode must be one of {_PAD_MODES}, got {mode!r}")
    if mode != "constant" and value is not None:
        raise ArgumentError(f"pad: mode {mode!r} takes no value, got value={value!r}")
    sides = _pad_sides(input.shape, pad, mode)
    if mode == "constant":
        return _pad_constant(input, sides, 0.0 if value is None else value)
    out = input
    for dim, before, after in sides:
        # the border as an index into the input: getitem's backward sums the copies' gradients
        index = _border_index(mode, input.shape[dim], before, after)
        out = ops.getitem(out, (slice(None),) * dim + (index,))
    return out


def _pad_sides(shape: tuple, pad, mode: str) -> list[tuple[int, int, int]]:
    """F.pad's pad as checked (dim, before, after) triples, the last dim first."""
    widths = tuple(pad) if isinstance(pad, (tuple, list, np.ndarray)) else None
    if (
        widths is None
        or not all(isinstance(w, (int, np.integer)) and not isinstance(w, bool) for w in widths)
        or len(widths) % 2
        or len(widths) // 2 > len(shape)
    ):
        raise ShapeError(
            f"pad: pad must be an even number of ints, two per padded dim of shape {shape} "
            f"(the last dim first), got {pad!r}"
        )
    pairs = zip(widths[0::2], widths[1::2], strict=True)
    sides = [(len(shape) - 1 - i, int(b), int(a)) for i, (b, a) in enumerate(pairs)]
    for dim, before, after in sides:
        size = shape[dim]
        if mode == "constant":
            if size + min(before, 0) + min(after, 0) < 0:
                raise ShapeError(
                    f"pad: pads ({before}, {after}) crop more than dim {dim} of size {size} holds"
                )
            continue
        if mode == "circular":
            # PyTorch's circular pad crops first (negative pads), then wraps around what is
            # left, at most once; cropping a dim away entirely leaves it empty
            kept = size + min(before, 0) + min(after, 0)
            if kept < 0 or max(before, after) > kept:
                raise ShapeError(
                    f"pad: mode 'circular' crops first, then wraps at most once around what is "
                    f"left: dim {dim} of size {size} with pads ({before}, {after}) keeps {kept} "
                    f"elements, so each pad must lie from {-size} to {max(kept, 0)}"
                )
            continue
        most = {"reflect": size - 1, "replicate": math.inf if size else 0}[mode]
        # negative pads crop, as in PyTorch, whose 2-D and 3-D pads may crop a dim away
        # entirely where its 1-D pad must leave an element
        least = 1 if len(sides) == 1 else 0
        if min(before, after) < -size or max(before, after) > most or size + before + after < least:
            raise ShapeError(
                f"pad: mode {mode!r} takes pads from {-size} to {most} for dim {dim} of size "
                f"{size}, {_LEFT[least]}; got ({before}, {after})"
            )
    return sides


def _border_index(mode: str, size: int, before: int, after: int):
    """The input position each output element of a dim reads, padded by `mode`."""
    if mode == "circular":  # crop first, then wrap around what is left (PyTorch's order)
        start, stop = max(-before, 0), size - max(-after, 0)
        positions = np.arange(-max(before, 0), stop - start + max(after, 0))
        return positions % (stop - start) + start if stop > start else positions
    positions = np.arange(-before, size + after)
    if mode == "reflect":
        return size - 1 - np.abs(size - 1 - np.abs(positions))
    return np.clip(positions, 0, size - 1)


def _pad_constant(input: Tensor, sides, value: float) -> Tensor:  # noqa: A002
    crop = [slice(None)] * input.ndim
    widths = [(0, 0)] * input.ndim
    for dim, before, after in sides:
        crop[dim] = slice(max(-before, 0), input.shape[dim] - max(-after, 0))
        widths[dim] = (max(before, 0), max(after, 0))
    cropped = ops.getitem(input, tuple(crop)) if any(min(b, a) < 0 for _, b, a in sides) else input
    return ops.pad(cropped, widths, value)


def interpolate(
    input: Tensor,  # noqa: A002
    size=None,
    scale_factor=None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """input resampled to size or by scale_factor. See ops.interpolate."""
    check_default("interpolate", "antialias", antialias, False, "no antialiasing filter")
    return ops.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)


def _deprecated(name: str) -> None:
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=3,
    )


def upsample(input: Tensor, size=None, scale_factor=None, mode="nearest", align_corners=None):  # noqa: A002
    """Deprecated in PyTorch (with its warning): interpolate."""
    _deprecated("upsample")
    return ops.interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002
    """Deprecated in PyTorch (with its warning): interpolate with mode 'nearest'."""
    _deprecated("upsample_nearest")
    return ops.interpolate(input, size, scale_factor, "nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:  # noqa: A002
    """Deprecated in PyTorch (with its warning): interpolate, 'bilinear' with align_corners."""
    _deprecated("upsample_bilinear")
    return ops.interpolate(input, size, scale_factor, "bilinear", align_corners=True)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """The sliding windows of (N, C, H, W) or (C, H, W) as columns (N, C*K, L) or (C*K, L).
    See ops.unfold_patches."""
    return unfold_patches_as("unfold", input, kernel_size, dilation, padding, stride, dims=2)


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """Columns (N, C*K, L) or (C*K, L) summed back into images (N, C, *output_size) or
    (C, *output_size). See ops.fold_patches."""
    return fold_patches_as(
        "fold", input, output_size, kernel_size, dilation, padding, stride, dims=2
    )


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """`(*, C * r^2, H, W)` -> `(*, C, H * r, W * r)`, r = upscale_factor: each group of r^2
    channels spread over r x r blocks."""
    return ops.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """`(*, C, H * r, W * r)` -> `(*, C * r^2, H, W)`, r = downscale_factor: the inverse of
    pixel_shuffle."""
    return ops.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002
    """(N, C, *) with its C channels, read as `groups` groups of C / groups, interleaved:
    channel g * (C / groups) + i goes to i * groups + g (ShuffleNet's shuffle)."""
    shape = tuple(input.shape)
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ArgumentError(f"channel_shuffle: groups must be a positive int, got {groups!r}")
    if len(shape) < 3:
        raise ShapeError(
            f"channel_shuffle: expected input of at least 3 dims (N, C, *), got shape {shape}"
        )
    if shape[1] % groups:
        raise ShapeError(
            f"channel_shuffle: the number of channels must be divisible by groups, got "
            f"{shape[1]} channels (shape {shape}) and {groups} groups"
        )
    grouped = ops.reshape(input, (shape[0], groups, shape[1] // groups) + shape[2:])
    return ops.reshape(ops.transpose(grouped, 1, 2), shape)


def _max_unpool(caller, dims, input, indices, kernel_size, stride, padding, output_size):  # noqa: A002
    """F.max_unpool1d / 2d / 3d: ops.max_unpool with PyTorch's rules for `dims` spatial dims."""
    return max_unpool_as(
        caller, input, indices, kernel_size, stride, padding, output_size, dims=dims
    )


def max_unpool1d(input: Tensor, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of max_pool1d: zeros (N, C, L_out) with input's values written where indices
    (max_pool1d's, of input's shape) point; input (N, C, L) or unbatched (C, L).

    stride defaults to kernel_size. Per spatial dim, L_out = (L - 1) * stride - 2 * padding +
    kernel_size, unless output_size (the spatial sizes, optionally after N and C) asks for one
    within a stride of it, as after an odd input size."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of max_pool2d: zeros (N, C, H_out, W_out) with input's values written where
    indices (max_pool2d's, of input's shape) point; input (N, C, H, W) or unbatched (C, H, W).

    stride defaults to kernel_size. Per spatial dim, L_out = (L - 1) * stride - 2 * padding +
    kernel_size, unless output_size (the spatial sizes, optionally after N and C) asks for one
    within a stride of it, as after an odd input size."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The inverse of max_pool3d: zeros (N, C, D_out, H_out, W_out) with input's values written
    where indices (max_pool3d's, of input's shape) point; input (N, C, D, H, W) or unbatched (C, D,
    H, W).

    stride defaults to kernel_size. Per spatial dim, L_out = (L - 1) * stride - 2 * padding +
    kernel_size, unless output_size (the spatial sizes, optionally after N and C) asks for one
    within a stride of it, as after an odd input size."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# Similarity, one-hot codes and softmin.
