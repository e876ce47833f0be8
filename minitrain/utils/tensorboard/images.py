"""Image arrays laid out as TensorBoard shows them, as torch.utils.tensorboard lays them out: any
`dataformats` to height x width x channels, a batch tiled into one grid, values scaled to uint8
bytes, PNG bytes (Pillow, a dependency of tensorboard), and matplotlib figures rendered to
arrays."""

from __future__ import annotations

import io
import math

import numpy as np

from ...errors import ArgumentError, ShapeError

__all__ = ["to_hwc", "to_uint8", "tile_grid", "encode_png", "figure_to_array"]

# how many images of a batch one row of the grid holds, as PyTorch's make_grid
GRID_COLUMNS = 8


def tile_grid(images: np.ndarray, caller: str) -> np.ndarray:
    """A batch N x C x H x W (C 1 or 3) as one 3 x rows*H x columns*W image: up to eight
    images a row, in order, the cells after the last one left zero; a grey batch (C 1) is
    repeated into three channels."""
    if images.shape[1] == 1:
        images = np.concatenate([images] * 3, axis=1)
    if images.shape[1] != 3:
        raise ShapeError(
            f"{caller}: a batch of images needs 1 or 3 channels to be tiled into a grid, got "
            f"shape {images.shape} (N, C, H, W)"
        )
    count, _, height, width = images.shape
    columns = min(count, GRID_COLUMNS)
    rows = math.ceil(count / columns)
    grid = np.zeros((3, height * rows, width * columns), dtype=images.dtype)
    for index, image in enumerate(images):
        row, column = divmod(index, columns)
        grid[:, row * height : (row + 1) * height, column * width : (column + 1) * width] = image
    return grid


def to_hwc(image: np.ndarray, dataformats: str, caller: str) -> np.ndarray:
    """`image` laid out as `dataformats` (letters N, C, H, W in any order: "CHW", "HWC", "HW",
    "NCHW", ...) as a height x width x channels array: a batch (N) tiled into a grid, one
    channel or none (a grey image) repeated into three."""
    layout = dataformats.upper()
    if len(set(layout)) != len(layout) or not set(layout) <= set("NCHW"):
        raise ArgumentError(
            f"{caller}: dataformats must name each of N, C, H, W at most once, got {dataformats!r}"
        )
    if image.ndim != len(layout):
        raise ShapeError(
            f"{caller}: an image of shape {image.shape} does not match dataformats "
            f"{dataformats!r} ({len(layout)} dims)"
        )
    needed = {4: "NCHW", 3: "HWC", 2: "HW"}.get(len(layout))
    if needed is None or set(layout) != set(needed):
        raise ArgumentError(
            f"{caller}: dataformats {dataformats!r} must be a layout of NCHW, CHW (HWC, ...) or HW"
        )
    ordered = image.transpose([layout.index(letter) for letter in needed])
    if needed == "NCHW":
        return tile_grid(ordered, caller).transpose(1, 2, 0)
    if needed == "HW":
        return np.stack([ordered] * 3, axis=2)
    if ordered.shape[2] == 1:
        return np.concatenate([ordered] * 3, axis=2)
    return ordered


def to_uint8(image: np.ndarray) -> np.ndarray:
    """Bytes 0..255: a uint8 image as it is, any other dtype read as values in [0, 1] and
    scaled by 255; out-of-range values are clipped (PyTorch's rule: the dtype, not the values,
    says which)."""
    scale = 1 if image.dtype == np.uint8 else 255
    return (image.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def encode_png(image: np.ndarray, caller: str) -> bytes:
    """The PNG bytes of a uint8 height x width x channels image (3 channels: RGB, 4: RGBA)."""
    from PIL import Image  # Pillow comes with tensorboard

    if image.shape[2] not in (3, 4):
        raise ShapeError(
            f"{caller}: an image needs 1, 3 or 4 channels (grey, RGB, RGBA), got "
            f"{image.shape[2]} (image of height x width x channels {image.shape})"
        )
    buffer = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buffer, format="PNG")
    return buffer.getvalue()


def figure_to_array(figure, close: bool) -> np.ndarray:
    """A matplotlib figure drawn on an Agg canvas, as a uint8 3 x H x W (RGB) array; the
    figure is closed after if `close`."""
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    if close:
        plt.close(figure)
    return np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))
