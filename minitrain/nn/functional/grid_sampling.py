"""`F.affine_grid` and `F.grid_sample` (2-D): sampling an image at the points of a grid, as
spatial transformer networks do, composed of matmul, gather and pointwise ops, so that both the
image and the grid get gradients."""

from __future__ import annotations

import warnings

import numpy as np

from ... import backend, ops
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor

__all__ = ["affine_grid", "grid_sample"]

_MODES = ("bilinear", "nearest")
_PADDING_MODES = ("zeros", "border")


def _align_corners(caller: str, align_corners) -> bool:
    """align_corners, None read as False with PyTorch's warning that the default changed."""
    if align_corners is None:
        warnings.warn(
            f"{caller}: default grid_sample and affine_grid behavior has changed to "
            "align_corners=False since PyTorch 1.3.0; pass align_corners explicitly",
            stacklevel=3,
        )
        return False
    return bool(align_corners)


def _base_coordinates(xp, size: int, align_corners: bool, dtype):
    """The normalised [-1, 1] coordinates of `size` pixels: their centres, or with
    align_corners the corner pixels' centres at -1 and 1."""
    if size == 1:
        return xp.zeros(1, dtype)
    points = xp.linspace(-1.0, 1.0, size, dtype=dtype)
    return points if align_corners else points * ((size - 1) / size)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine maps: theta (N, 2, 3) with size (N, C, H, W) gives
    (N, H, W, 2), each output pixel's (x, y) in the input's normalised coordinates; theta
    (N, 3, 4) with size (N, C, D, H, W) gives (N, D, H, W, 3). Differentiable in theta."""
    align_corners = _align_corners("affine_grid", align_corners)
    dtype = np.dtype(theta.dtype)
    if dtype.kind != "f":
        raise DTypeError(f"affine_grid: theta must be floating, got dtype {dtype}")
    size = tuple(int(n) for n in size)
    if len(size) not in (4, 5):
        raise ShapeError(f"affine_grid: size must be (N, C, H, W) or (N, C, D, H, W), got {size}")
    spatial = size[2:]
    dims = len(spatial)
    if tuple(theta.shape) != (size[0], dims, dims + 1):
        raise ShapeError(
            f"affine_grid: expected theta of shape ({size[0]}, {dims}, {dims + 1}) for size "
            f"{size}, got {tuple(theta.shape)}"
        )
    xp = backend.array_module(theta.array)
    # the axes from the last (x) to the first (y, then z), each pixel's homogeneous coordinates
    axes = [_base_coordinates(xp, n, align_corners, dtype) for n in reversed(spatial)]
    mesh = xp.meshgrid(*reversed(axes), indexing="ij")  # ordered as the spatial dims
    columns = [m.reshape(-1) for m in reversed(mesh)] + [xp.ones(int(np.prod(spatial)), dtype)]
    base = Tensor.wrap(xp.stack(columns, axis=1))  # (points, dims + 1)
    grid = ops.matmul(base, theta.transpose(1, 2))  # (N, points, dims)
    return ops.reshape(grid, (size[0], *spatial, dims))


def _unnormalise(coordinate: Tensor, size: int, align_corners: bool) -> Tensor:
    """A normalised coordinate in [-1, 1] as a pixel position."""
    if align_corners:
        return (coordinate + 1) * ((size - 1) / 2)
    return ((coordinate + 1) * size - 1) / 2


def grid_sample(
    input: Tensor,  # noqa: A002
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """input (N, C, H, W) sampled at grid (N, H_out, W_out, 2), normalised (x, y) in [-1, 1]
    -> (N, C, H_out, W_out). mode 'bilinear' (gradients for input and grid) or 'nearest'
    (half-way points to the even pixel, as PyTorch's; no gradient for grid); padding_mode
    'zeros' (points outside read 0) or 'border' (clamped to the edge). 5-D input, 'bicubic'
    and 'reflection' are not supported."""
    align_corners = _align_corners("grid_sample", align_corners)
    if mode not in _MODES:
        raise ArgumentError(f"grid_sample: mode must be one of {_MODES}, got {mode!r}")
    if padding_mode not in _PADDING_MODES:
        raise ArgumentError(
            f"grid_sample: padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
        )
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2 or grid.shape[0] != input.shape[0]:
        raise ShapeError(
            f"grid_sample: expected input (N, C, H, W) and grid (N, H_out, W_out, 2), got input "
            f"{tuple(input.shape)} and grid {tuple(grid.shape)}"
        )
    batch, channels, height, width = input.shape
    x = _unnormalise(grid[..., 0], width, align_corners)
    y = _unnormalise(grid[..., 1], height, align_corners)
    if padding_mode == "border":
        x, y = ops.clip(x, 0, width - 1), ops.clip(y, 0, height - 1)
    flat = ops.reshape(input, (batch, channels, height * width))
    xp = backend.array_module(x.array)
    if mode == "nearest":
        return _read(flat, xp.rint(y.array), xp.rint(x.array), None, input.shape, grid.shape)
    x0, y0 = xp.floor(x.array), xp.floor(y.array)
    right, down = x - Tensor.wrap(x0), y - Tensor.wrap(y0)  # the weights of the far corners
    out = None
    for dy, wy in ((0, 1 - down), (1, down)):
        for dx, wx in ((0, 1 - right), (1, right)):
            corner = _read(flat, y0 + dy, x0 + dx, wy * wx, input.shape, grid.shape)
            out = corner if out is None else out + corner
    return out


def _read(flat: Tensor, rows, columns, weight, input_shape, grid_shape) -> Tensor:
    """flat (N, C, H * W) read at integer pixel positions rows, columns (N, H_out, W_out),
    times weight (a Tensor of that shape, or None), 0 where the position is outside."""
    batch, channels, height, width = input_shape
    xp = backend.array_module(rows)
    inside = (rows >= 0) & (rows < height) & (columns >= 0) & (columns < width)
    index = (xp.clip(rows, 0, height - 1) * width + xp.clip(columns, 0, width - 1)).astype(np.int64)
    index = index.reshape(batch, 1, -1)
    index = xp.ascontiguousarray(xp.broadcast_to(index, (batch, channels, index.shape[-1])))
    values = ops.reshape(
        ops.gather(flat, 2, Tensor.wrap(index)), (batch, channels, *grid_shape[1:3])
    )
    scale = Tensor.wrap(inside.astype(flat.dtype))
    if weight is not None:
        scale = scale * weight
    return values * scale.unsqueeze(1)
