"""Convolution over 1 to 3 spatial dims: the conv op (im2col + GEMM), its gradient kernel
conv_grad (KERNELS.md section 4), im2col / col2im with numba kernels, and the translation of
PyTorch's conv arguments that minitrain.nn.functional uses.

Layout: X is (N, C, *spatial), W is (M, C/group, *kernel), B is (M,). With K = prod(kernel) and
P = prod(output spatial), `im2col(X)` is the (C*K, N*P) matrix whose row c*K + k holds kernel tap k
of channel c at every output position of every image: group g's rows are one contiguous block, so
one GEMM per group, W[g] (M/group, C/group*K) @ col[g], covers many images at once, and so do the
backward's dW and dX GEMMs. The batch goes through in chunks of images whose buffers fit
`_COL_CHUNK_BYTES`, small enough to still be in cache when the GEMM reads them; each chunk's
product is transposed to (n, M, *out) in the pass that adds the bias. A big batch's chunks run
side by side, one thread per core BLAS uses, each GEMM on one core (minitrain.threads). Where
every stride is 1 the op lays the columns out on a zero-padded grid of the chunk's images
instead (see Columns), which turns im2col and col2im into block copies and adds, and can leave
the taps of the leading kernel dims out of the columns, as shifts of the GEMM's output (a third
of the rows for a 3x3 kernel, and a squarer GEMM); `_layout` picks the layout.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from .. import backend
from ..errors import ArgumentError, DTypeError, ShapeError
from ..tensor import Tensor
from ..threads import side_by_side, side_by_side_threads
from . import numba_math
from .registry import Op, check_one_dtype, shape_of
from .shape import reshape

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")

# Bytes of im2col columns plus GEMM output computed at once: the batch goes through in chunks
# of images whose columns stay in the last-level cache between im2col writing them and the GEMM
# reading them (measured on a 2-core Xeon: conv forward + backward a fifth faster than with the
# 75 MB of columns of a (32, 64, 32, 32) batch in one piece; from 6 to 16 MB, the differences
# stayed within the run-to-run noise of a shared host).
# Smaller is not free: glibc's malloc serves from its heap what is smaller than the largest
# block it has unmapped, and trims the heap above twice that; with 8 MB, the CNN training
# benchmark's second conv took two chunks, and its 4 MB buffers left the step page-faulting
# 2300 times on its 3 MB activations, a fifth of its time.
_COL_CHUNK_BYTES = 12 << 20
# Elements of columns from which im2col / col2im called on their own run in parallel: below it,
# waking threads costs more than it saves. Inside conv and conv_grad they run serially, between
# multi-threaded GEMMs: BLAS's worker threads keep spinning for a while after each GEMM, and
# numba's threads competing with them for the cores made the whole conv slower, not faster.
_PARALLEL_WORK = 1 << 18
# Bytes of columns plus GEMM rows of the whole batch from which conv and conv_grad run its
# chunks side by side, on as many threads as BLAS uses, each GEMM on one core (see
# minitrain.threads). On a 2-core Xeon, forward + backward of 64 3x3 filters over (8, 64, 32,
# 32), 12.8 MB, took 25 ms side by side against 30 one chunk at a time; the CNN training
# benchmark's second conv, 9.7 MB over (64, 16, 14, 14), was slower side by side (the step
# 33-39 ms against 29-33), and at (4, 64, 32, 32), 7 MB, neither way won.
_SIDE_BY_SIDE_BYTES = 12 << 20


# --- geometry -----------------------------------------------------------------------------------


class Window(NamedTuple):
    """Where the sliding windows of a conv or pool sit, per spatial dim: kernel taps, strides,
    pads in ONNX order (all begins, then all ends), dilations, and the output size."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    pads: tuple[int, ...]
    dilations: tuple[int, ...]
    out: tuple[int, ...]

    @property
    def pads_begin(self) -> tuple[int, ...]:
        return self.pads[: len(self.kernel)]

    @property
    def pads_end(self) -> tuple[int, ...]:
        return self.pads[len(self.kernel) :]

    @property
    def reach(self) -> tuple[int, ...]:
        """Input positions a window spans: dilation * (k - 1) + 1 per dim."""
        return tuple(d * (k - 1) + 1 for k, d in zip(self.kernel, self.dilations, strict=True))

    def slices(self, offset: tuple[int, ...]) -> tuple[slice, ...]:
        """Per dim, the padded-input positions kernel tap `offset` reads, one per output."""
        return tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offset, self.dilations, self.strides, self.out, strict=True)
        )

    def canonical(self) -> tuple[tuple[int, int, int], ...]:
        """kernel, strides, pads_begin, dilations and out as 3-tuples, missing leading dims
        filled with a size-1 dim, so one numba kernel serves 1, 2 and 3 spatial dims."""
        lead = 3 - len(self.kernel)
        return (
            (1,) * lead + self.kernel,
            (1,) * lead + self.strides,
            (0,) * lead + self.pads_begin,
            (1,) * lead + self.dilations,
            (1,) * lead + self.out,
        )


def spatial_ints(value, dims: int, name: str, where: str, minimum: int) -> tuple[int, ...]:
    """An int (the same for every spatial dim) or a sequence of `dims` ints, each >= minimum."""
    items = (value,) * dims if isinstance(value, (int, np.integer)) else value
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise DTypeError(f"{where}: {name} must be an int or {dims} ints, got {value!r}")
    items = tuple(items)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        raise DTypeError(f"{where}: {name} must be ints, got {value!r}")
    if len(items) != dims:
        raise ShapeError(
            f"{where}: {name} needs {dims} values (one per spatial dim), got {len(items)}: "
            f"{value!r}"
        )
    if any(v < minimum for v in items):
        raise ArgumentError(f"{where}: {name} must be >= {minimum}, got {value!r}")
    return tuple(int(v) for v in items)


def onnx_pads(pads, dims: int, where: str) -> tuple[int, ...]:
    """pads in ONNX order, [b0, b1, ..., e0, e1, ...]: None (no padding), one int (every side)
    or 2 * dims non-negative ints."""
    if pads is None:
        return (0,) * (2 * dims)
    if isinstance(pads, (int, np.integer)):
        pads = (pads,) * (2 * dims)
    if isinstance(pads, Sequence) and len(pads) != 2 * dims:
        raise ShapeError(
            f"{where}: pads needs 2 * {dims} values, all begins then all ends "
            f"[b0, b1, ..., e0, e1, ...], got {len(pads)}: {pads!r}"
        )
    return spatial_ints(pads, 2 * dims, "pads", where, 0)


def _output_size(length, begin, end, reach, stride, dim, where) -> int:
    padded = length + begin + end
    if reach > padded:
        raise ShapeError(
            f"{where}: the kernel spans {reach} positions in spatial dim {dim}, more than the "
            f"padded input's {padded} (size {length} + pads {begin}, {end})"
        )
    return (padded - reach) // stride + 1


def conv_window(spatial, kernel, strides, pads, dilations, where: str = "conv") -> Window:
    """The Window of a conv: per dim `floor((L + pad_begin + pad_end - reach) / stride) + 1`
    outputs, reach = dilation * (k - 1) + 1. Raises when a kernel outspans the padded input."""
    dims = len(kernel)
    begin, end = pads[:dims], pads[dims:]
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    out = tuple(
        _output_size(*args, dim, where)
        for dim, args in enumerate(zip(spatial, begin, end, reach, strides, strict=True))
    )
    return Window(tuple(kernel), tuple(strides), tuple(pads), tuple(dilations), out)


def auto_pads(auto_pad: str, spatial, kernel, strides, dilations, where: str) -> tuple[int, ...]:
    """ONNX auto_pad as explicit pads. SAME_UPPER / SAME_LOWER: ceil(L / stride) outputs, from
    `max(0, (out - 1) * stride + reach - L)` padding split in two, the odd one at the end (UPPER)
    or at the beginning (LOWER). VALID: no padding."""
    if auto_pad not in AUTO_PADS[1:]:
        raise ArgumentError(f"{where}: auto_pad must be one of {AUTO_PADS}, got {auto_pad!r}")
    dims = len(kernel)
    if auto_pad == "VALID":
        return (0,) * (2 * dims)
    begins, ends = [], []
    for length, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        total = max(0, (-(-length // s) - 1) * s + d * (k - 1) + 1 - length)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return tuple(begins + ends)


def check_rank(where: str, x_shape, name: str = "input") -> None:
    """x_shape must be (N, C, *spatial) with 1 to 3 spatial dims."""
    if len(x_shape) not in (3, 4, 5):
        raise ShapeError(
            f"{where}: {name} must be (N, C, *spatial) with 1 to 3 spatial dims, got shape "
            f"{x_shape}"
        )


# What the conv attributes are called in errors: ONNX's names in ops, PyTorch's in F.
_ONNX_NAMES = {"strides": "strides", "dilations": "dilations", "group": "group"}
_TORCH_NAMES = {"strides": "stride", "dilations": "dilation", "group": "groups"}


def _conv_window(
    where, x_shape, w_shape, strides, pads, dilations, group, auto_pad, names=_ONNX_NAMES
) -> Window:
    """Check a conv's shapes and attributes (before anything runs) and return its Window."""
    check_rank(where, x_shape, "input X")
    dims = len(x_shape) - 2
    if len(w_shape) != len(x_shape):
        raise ShapeError(
            f"{where}: weight W {w_shape} must be (M, C/group, *kernel) with the rank of "
            f"X {x_shape}"
        )
    if isinstance(group, bool) or not isinstance(group, (int, np.integer)) or group < 1:
        raise ArgumentError(f"{where}: {names['group']} must be a positive int, got {group!r}")
    channels, filters = x_shape[1], w_shape[0]
    if channels % group or filters % group:
        raise ShapeError(
            f"{where}: {names['group']} {group} must divide both X's channels C = {channels} "
            f"(X {x_shape}) and W's filters M = {filters} (W {w_shape})"
        )
    if w_shape[1] != channels // group:
        raise ShapeError(
            f"{where}: W {w_shape} must have C/group = {channels}/{group} = {channels // group} "
            f"input channels in dim 1, got {w_shape[1]} (X {x_shape})"
        )
    kernel = tuple(int(k) for k in w_shape[2:])
    if 0 in kernel:
        raise ShapeError(f"{where}: W {w_shape} has an empty kernel")
    strides = spatial_ints(1 if strides is None else strides, dims, names["strides"], where, 1)
    dilations = spatial_ints(
        1 if dilations is None else dilations, dims, names["dilations"], where, 1
    )
    if auto_pad == "NOTSET":
        pads = onnx_pads(pads, dims, where)
    elif pads is not None:
        raise ArgumentError(f"{where}: give pads or auto_pad={auto_pad!r}, not both (got {pads!r})")
    else:
        pads = auto_pads(auto_pad, x_shape[2:], kernel, strides, dilations, where)
    return conv_window(x_shape[2:], kernel, strides, pads, dilations, where)


def _check_float(where: str, **arrays) -> None:
    """Floating arrays of one dtype (None entries skipped). PyTorch's conv refuses mixed dtypes
    too, but on the CPU takes integers; minitrain's is floating point only (BLAS's GEMMs)."""
    for name, a in arrays.items():
        if a is not None and a.dtype.kind != "f":
            raise DTypeError(f"{where}: {name} must be floating point, got {a.dtype}")
    check_one_dtype(where, **arrays)


# --- im2col and col2im --------------------------------------------------------------------------


class Columns(NamedTuple):
    """How the conv op lays out the columns of a chunk of images, in one of two layouts, each
    image `span` columns after the one before; `width(n)` columns for n images.

    compact: one column per output position, P = prod(out) of them, output p of image i at
    column i * P + p.

    wide (every stride 1): the columns follow a zero-padded grid of the input, so each kernel
    tap's columns are one contiguous run of the grid: im2col and col2im become block copies and
    adds instead of row-by-row gathers, at the cost of a few unused columns, which the forward
    drops and the backward feeds zeros. The grid is shared by the chunk's images: per spatial
    dim its pitch is size + max(pad_begin, pad_end) (or the output size, if larger), the gap
    after one row (plane, image) being both the end padding of that row and the begin padding
    of the next, where a window that reaches past the row reads zeros either way; the images
    follow each other along the leading dim. For a 3x3 conv with padding 1 on 32x32 images,
    33 * 33 columns per image where a grid padded on every side takes 34 * 34, and 1024 hold
    outputs. Output (i, od, oh, ow) is column i * span + (od * H' + oh) * W' + ow, (D', H', W')
    the grid's pitches, and the columns read the grid `margin` cells (the begin pads) before
    their output's input position.

    wide with a `split`: the taps of the canonical dims [0, split) leave the columns and become
    shifts. A tap's columns are its neighbour's shifted along the grid by a fixed offset, so
    the columns hold only the taps of dims [split, 3) (C * Kc rows instead of C * K), the
    GEMM multiplies them by the weights of every shift stacked, (S * M, C * Kc), and the
    output sums the S products, each read at its shift's offset: for a 3x3 conv split at the
    rows, a third of the rows and a squarer GEMM, which BLAS runs faster. `width(n)` then
    reaches past the last output by the largest shift. (`split` counts canonical dims,
    Window.canonical: 2 splits a 2-D conv at its rows, a 3-D one at its depth and rows.)
    """

    window: Window
    grid: tuple[int, int, int]  # the pitches of the columns' grid, canonical 3-D
    wide: bool
    span: int
    split: int = 0

    @classmethod
    def of(cls, window: Window, spatial, wide: bool | None = None, split: int = 0) -> Columns:
        """The layout for `window` over input `spatial`: wide where every stride is 1 and it
        costs at most twice the compact columns, unless `wide` says otherwise; `split` applies
        to the wide layout only."""
        lead = (1,) * (3 - len(spatial))
        positions = math.prod(window.out)
        grid = lead + tuple(
            max(n + max(b, e), o)
            for n, b, e, o in zip(
                spatial, window.pads_begin, window.pads_end, window.out, strict=True
            )
        )
        if wide is None:
            wide = all(s == 1 for s in window.strides) and math.prod(grid) <= 2 * positions
        if not wide:
            return cls(window, lead + window.out, False, positions)
        return cls(window, grid, True, math.prod(grid), split)

    def width(self, images: int) -> int:
        """Columns for `images` images: past the last image's last output by the largest shift
        (wide), so that no shift reads outside the columns."""
        if not self.wide or images == 0:
            return images * self.span
        out = self.window.canonical()[4]
        _, height, width = self.grid
        last = ((out[0] - 1) * height + out[1] - 1) * width + out[2]
        return (images - 1) * self.span + last + max(self.shifts())

    @property
    def margin(self) -> int:
        """Grid cells before the first image's first input position: the begin pads."""
        _, _, pads, _, _ = self.window.canonical()
        _, height, width = self.grid
        return (pads[0] * height + pads[1]) * width + pads[2]

    def grid_length(self, images: int) -> int:
        """Cells of the grid of `images` images: their inputs, and every cell a column reads."""
        reads = self.width(images) + max(self.tap_starts())
        return max(self.margin + images * self.span, reads)

    @property
    def column_kernel(self) -> tuple[int, int, int]:
        """The canonical kernel of the taps the columns hold: the split dims' taps are 1."""
        kernel = self.window.canonical()[0]
        return (1,) * self.split + kernel[self.split :]

    def shifts(self) -> tuple[int, ...]:
        """Column offsets of the split dims' taps, in the kernel's order ((0,) without a split)."""
        kernel = self.window.canonical()[0]
        return _offsets(kernel[: self.split] + (1,) * (3 - self.split), self.window, self.grid)

    def tap_starts(self) -> tuple[int, ...]:
        """For the wide layout: where each column tap's run starts in the grid."""
        return _offsets(self.column_kernel, self.window, self.grid)

    def outputs(self, matrix, images: int, shift: int = 0):
        """The columns of matrix (..., width(images)) that hold outputs, `shift` columns on,
        as a view (..., images, *out)."""
        xp = backend.array_module(matrix)
        _, height, width = self.grid
        steps = (self.span,) + (height * width, width, 1)[3 - len(self.window.out) :]
        return xp.lib.stride_tricks.as_strided(
            matrix[..., shift:],
            matrix.shape[:-1] + (images,) + self.window.out,
            matrix.strides[:-1] + tuple(step * matrix.itemsize for step in steps),
        )

    def pitch(self) -> tuple[int, int, int]:
        """Columns from one image, and along the canonical dims 1 and 2 from one output, to the
        next (dim 0's pitch is the product of the last two)."""
        return self.span, self.grid[1], self.grid[2]


@functools.lru_cache(maxsize=1024)
def _offsets(kernel, window: Window, grid) -> tuple[int, ...]:
    """Where each tap of `kernel` (canonical 3-D) reads, relative to the first, on the grid,
    with the window's dilations."""
    _, _, _, dilations, _ = window.canonical()
    _, height, width = grid
    return tuple(
        ((a * dilations[0]) * height + b * dilations[1]) * width + t * dilations[2]
        for a, b, t in np.ndindex(*kernel)
    )


def _numba_applies(*arrays) -> bool:
    """Whether the numba kernels take these arrays: numpy, float32 or float64, numba enabled."""
    return (
        backend.numba_enabled()
        and all(type(a) is np.ndarray for a in arrays)
        and arrays[0].dtype in (np.float32, np.float64)
    )


def _im2col_into(X, columns: Columns, col, parallel: bool) -> None:
    """Fill col (C*Kc, width(N)) with X's windows (Kc = the taps the columns hold): numba kernels
    on the CPU (the parallel build when `parallel`), else the xp ones."""
    if not _numba_applies(X, col):
        (_im2col_wide_xp if columns.wide else _im2col_xp)(X, columns, col)
        return
    kernel, strides, pads, dilations, out = columns.window.canonical()
    kernels = _numba_kernels(parallel)
    if columns.wide:
        taps, x = col.reshape((X.shape[1], -1, col.shape[-1])), _canonical(X)
        kernels.im2col_wide(_by_rows(x), *_grid_args(columns, x.shape), taps)
    else:
        taps = col.reshape((X.shape[1], math.prod(kernel), X.shape[0]) + out)
        kernels.im2col(_canonical(X), kernel, strides, pads, dilations, taps)


def _col2im_into(col, columns: Columns, dX, parallel: bool) -> None:
    """dX (N, C, *spatial) = col (C*Kc, width(N)) added back where it came from (the adjoint of
    im2col): numba kernels on the CPU (the parallel build when `parallel`), else the xp ones."""
    if not _numba_applies(col, dX):
        (_col2im_wide_xp if columns.wide else _col2im_xp)(col, columns, dX)
        return
    kernel, strides, pads, dilations, out = columns.window.canonical()
    kernels = _numba_kernels(parallel)
    if columns.wide:
        taps, dx = col.reshape((dX.shape[1], -1, col.shape[-1])), _canonical(dX)
        kernels.col2im_wide(taps, *_grid_args(columns, dx.shape), _by_rows(dx))
    else:
        taps = col.reshape((dX.shape[1], math.prod(kernel), dX.shape[0]) + out)
        kernels.col2im(taps, kernel, strides, pads, dilations, _canonical(dX))


@functools.lru_cache(maxsize=256)
def _grid_args(columns: Columns, shape):
    """What the wide numba kernels take of the grid of inputs of canonical shape (N, C, D, H,
    W): its length, where each input row (n, d, h) starts in it (the cells _grid_inputs gives),
    and where each column tap's run starts (cached: computing them took a fifth of a 32x32
    image's im2col)."""
    images, _, *spatial = shape
    length = columns.grid_length(images)
    cells = _grid_inputs(np.arange(length)[None], columns, (images, 1, *spatial))
    rows = np.ascontiguousarray(cells[0, ..., 0]).reshape(-1)
    starts = np.array(columns.tap_starts(), np.int64)
    rows.flags.writeable = starts.flags.writeable = False
    return length, rows, starts


def _by_rows(x):
    """Canonical x (N, C, D, H, W) as (N, C, D*H, W), a view: the rows the wide kernels copy."""
    return x.reshape(x.shape[:2] + (-1, x.shape[-1]))


def _canonical(X):
    """X (N, C, *spatial) as (N, C, D, H, W): leading size-1 spatial dims up to 3."""
    return X.reshape(X.shape[:2] + (1,) * (5 - X.ndim) + X.shape[2:])


def _pad_width(window: Window) -> tuple:
    return ((0, 0), (0, 0)) + tuple(zip(window.pads_begin, window.pads_end, strict=True))


def _interior(window: Window, spatial) -> tuple:
    """The padded input's slices that hold the input."""
    lead = (slice(None), slice(None))
    return lead + tuple(slice(b, b + n) for b, n in zip(window.pads_begin, spatial, strict=True))


def _im2col_xp(X, columns: Columns, col) -> None:
    xp, window = backend.array_module(X), columns.window
    N, C = X.shape[:2]
    padded = xp.pad(X, _pad_width(window))
    taps = col.reshape((C,) + window.kernel + (N,) + window.out)
    for offset in np.ndindex(*window.kernel):
        values = padded[(slice(None), slice(None)) + window.slices(offset)]
        taps[(slice(None),) + offset] = xp.moveaxis(values, 1, 0)


def _col2im_xp(col, columns: Columns, dX) -> None:
    xp, window = backend.array_module(col), columns.window
    N, C = dX.shape[:2]
    spatial = zip(dX.shape[2:], window.pads_begin, window.pads_end, strict=True)
    padded = xp.zeros((N, C) + tuple(n + b + e for n, b, e in spatial), dX.dtype)
    taps = col.reshape((C,) + window.kernel + (N,) + window.out)
    lead = (slice(None), slice(None))
    for offset in np.ndindex(*window.kernel):
        # one tap's windows never overlap each other (stride >= 1), so += on the view is exact
        padded[lead + window.slices(offset)] += xp.moveaxis(taps[(slice(None),) + offset], 0, 1)
    dX[...] = padded[_interior(window, dX.shape[2:])]


def _grid_inputs(grid, columns: Columns, shape):
    """The cells of a grid (C, grid_length) that hold the inputs of canonical shape (N, C, D, H,
    W), as a view (C, N, D, H, W)."""
    images, channels, *spatial = shape
    block = grid[:, columns.margin : columns.margin + images * columns.span]
    cells = block.reshape((channels, images) + columns.grid)
    return cells[(slice(None), slice(None)) + tuple(slice(0, n) for n in spatial)]


def _im2col_wide_xp(X, columns: Columns, col) -> None:
    xp, X = backend.array_module(X), _canonical(X)
    N, C = X.shape[:2]
    grid = xp.zeros((C, columns.grid_length(N)), X.dtype)
    _grid_inputs(grid, columns, X.shape)[...] = X.swapaxes(0, 1)
    taps = col.reshape(C, -1, col.shape[-1])
    for k, start in enumerate(columns.tap_starts()):
        taps[:, k] = grid[:, start : start + taps.shape[-1]]


def _col2im_wide_xp(col, columns: Columns, dX) -> None:
    xp, shape = backend.array_module(col), _canonical(dX).shape
    N, C = shape[:2]
    grid = xp.zeros((C, columns.grid_length(N)), dX.dtype)
    taps = col.reshape(C, -1, col.shape[-1])
    for k, start in enumerate(columns.tap_starts()):
        grid[:, start : start + taps.shape[-1]] += taps[:, k]
    dX[...] = _grid_inputs(grid, columns, shape).swapaxes(0, 1).reshape(dX.shape)


def _im2col_window(where, x_shape, kernel_shape, strides, pads, dilations) -> Window:
    check_rank(where, x_shape, "X")
    kernel = spatial_ints(kernel_shape, len(x_shape) - 2, "kernel_shape", where, 1)
    w_shape = (1, x_shape[1]) + kernel
    return _conv_window(where, x_shape, w_shape, strides, pads, dilations, 1, "NOTSET")


def im2col(X, kernel_shape, *, strides=None, pads=None, dilations=None):
    """The sliding windows of X as columns: X (N, C, *spatial) -> col (C*K, N*P), K =
    prod(kernel_shape), P = prod(output spatial). With the input zero-padded by pads (ONNX
    order), kernel tap k = (k_0, k_1, ...) and output position p = (p_0, p_1, ...):

        col[c*K + k, n*P + p] = X_padded[n, c, p_i * strides_i + k_i * dilations_i (each dim i)]

    so conv(X, W) for one group is W.reshape(M, C*K) @ col, all images at once. Strides and
    dilations default to 1, pads to 0. A numba kernel (parallel over images and channels) runs
    on CPU arrays when numba is enabled. (The conv op itself uses a wider layout when every
    stride is 1; see Columns.)
    """
    x_shape = shape_of(X)
    window = _im2col_window("im2col", x_shape, kernel_shape, strides, pads, dilations)
    xp = backend.array_module(X)
    rows = x_shape[1] * math.prod(window.kernel)
    col = xp.empty((rows, x_shape[0] * math.prod(window.out)), X.dtype)
    columns = Columns.of(window, x_shape[2:], wide=False)
    _im2col_into(xp.ascontiguousarray(X), columns, col, col.size >= _PARALLEL_WORK)
    return col


def col2im(col, x_shape, kernel_shape, *, strides=None, pads=None, dilations=None):
    """The adjoint of im2col: every column entry added back to the input position it came from,
    entries that fall in the padding dropped. col (C*K, N*P) -> (N, C, *spatial) = x_shape.
    Positions no window reaches (a stride longer than the kernel) get 0."""
    x_shape = tuple(int(n) for n in x_shape)
    window = _im2col_window("col2im", x_shape, kernel_shape, strides, pads, dilations)
    expected = (x_shape[1] * math.prod(window.kernel), x_shape[0] * math.prod(window.out))
    if shape_of(col) != expected:
        raise ShapeError(
            f"col2im: col {shape_of(col)} must be (C*K, N*P) = {expected} for X {x_shape}, "
            f"kernel {window.kernel} and output {window.out}"
        )
    xp = backend.array_module(col)
    dX = xp.empty(x_shape, col.dtype)
    columns = Columns.of(window, x_shape[2:], wide=False)
    _col2im_into(xp.ascontiguousarray(col), columns, dX, col.size >= _PARALLEL_WORK)
    return dX


# --- the forward and the gradient kernel --------------------------------------------------------


def _matmul(a, b, out) -> None:
    """out = a @ b (batched over groups): the one GEMM call site, BLAS through numpy."""
    backend.array_module(a, b).matmul(a, b, out=out)


def _shares(N: int, chunk_bytes, threads: int) -> list[list[slice]]:
    """The batch in about equal chunks of images, as many for each of `threads` threads (at most
    N), whose buffers, chunk_bytes(n) for n images, fit _COL_CHUNK_BYTES for all the threads
    together (one image per chunk when even one does not fit): thread t's share is every
    threads-th chunk from the t-th."""
    if N == 0:
        return [[]]
    budget = _COL_CHUNK_BYTES // threads
    size = max(1, min(N, budget // max(1, chunk_bytes(1))))
    while size > 1 and chunk_bytes(size) > budget:
        size -= 1
    count = math.ceil(math.ceil(N / size) / threads) * threads  # a multiple of threads
    bounds = [N * i // count for i in range(count + 1)]
    chunks = [slice(lo, hi) for lo, hi in zip(bounds, bounds[1:], strict=False) if hi > lo]
    return [chunks[t::threads] for t in range(threads)]


def _thread_count(xp, N: int, chunk_bytes, weight_bytes: int) -> int:
    """Threads to run the batch's chunks on: as many as minitrain.threads has (BLAS's, on the
    main thread), where the whole batch's buffers, chunk_bytes(N), take at least
    _SIDE_BY_SIDE_BYTES; else 1 (always on the GPU). At most one per image, and only as many
    as have their smallest working sets fit _COL_CHUNK_BYTES together: a one-image chunk's
    buffers and, in the backward, dW's sum and product (so that memory does not grow with the
    cores where one image fills the budget)."""
    if xp is not np or N < 2 or chunk_bytes(N) < _SIDE_BY_SIDE_BYTES:
        return 1
    fitting = _COL_CHUNK_BYTES // (chunk_bytes(1) + 2 * weight_bytes)
    return max(1, min(N, fitting, side_by_side_threads()))


@functools.lru_cache(maxsize=256)
def _layout(window: Window, spatial, channels: int, filters: int) -> Columns:
    """The columns the conv op uses, given C/group and M/group: the compact layout where
    Columns.of picks it, else of the wide layout and its splits the least estimated time
    (splits that shift nothing, like 1 for a 2-D conv, tie with 0, which wins), taken as the
    columns per image, plus the largest shift for the shifted sums and copies a split adds,
    times 1 + a tenth of |ln(S * M / (C * Kc))|, how lopsided the GEMM is. (On a 2-core Xeon,
    OpenBLAS ran (192 x 192) @ (192 x n) at 170-220 GFLOP/s and (64 x 576) @ (576 x n) at
    115-130; the model picked the fastest layout for each of eight 3x3 convs timed, 4x4 to
    64x64 images, 1 to 128 channels.)"""
    candidates = [Columns.of(window, spatial)]
    if not (candidates[0].wide and channels and filters):  # (with no rows, any layout does)
        return candidates[0]
    candidates += [Columns.of(window, spatial, split=split) for split in (1, 2, 3)]

    def cost(columns: Columns) -> float:
        rows = channels * math.prod(columns.column_kernel)
        lopsided = abs(math.log(len(columns.shifts()) * filters / rows))
        return (columns.span + max(columns.shifts())) * (1 + lopsided / 10)

    return min(candidates, key=cost)


def _stacked_weights(W, group: int, columns: Columns):
    """W (M, C/group, *kernel) as (group, S * M/group, C/group * Kc): per group, the weights of
    each shift (see Columns) stacked, shift-major, rows (s, m), columns (c, column tap)."""
    xp = backend.array_module(W)
    shifts = len(columns.shifts())
    M, per_group = W.shape[:2]
    taps = W.reshape(group, M // group, per_group, shifts, -1).transpose(0, 3, 1, 2, 4)
    return xp.ascontiguousarray(taps).reshape(group, shifts * M // group, -1)


class _Chunked(NamedTuple):
    """What conv and conv_grad both set up: the layout, W stacked for it, the batch's chunks,
    one share of them per thread (see minitrain.threads), and each thread's buffers a chunk
    works in, its columns (group, C/group * Kc, width(n)) and the rows the GEMM multiplies
    them with, (group, S * M/group, width(n)): the GEMM's output in the forward, dY once per
    shift in the backward."""

    columns: Columns
    w_stacked: object
    shares: list[list[slice]]
    col_buffers: list
    out_buffers: list
    group: int

    @classmethod
    def of(cls, x_shape, dtype, W, window: Window, group: int) -> _Chunked:
        """For a conv of an X of shape x_shape (N, C, *spatial) and this dtype with W."""
        xp = backend.array_module(W)
        N, C = x_shape[:2]
        M = W.shape[0]
        columns = _layout(window, tuple(x_shape[2:]), C // group, M // group)
        rows, shifts = C * math.prod(columns.column_kernel), len(columns.shifts())

        def chunk_bytes(n: int) -> int:
            return (rows + shifts * M) * columns.width(n) * dtype.itemsize

        threads = _thread_count(xp, N, chunk_bytes, W.size * dtype.itemsize)
        shares = _shares(N, chunk_bytes, threads)
        size = max((part.stop - part.start for share in shares for part in share), default=0)
        return cls(
            columns,
            _stacked_weights(W, group, columns),
            shares,
            # every thread's buffers come from the caller's thread: glibc gives each thread an
            # arena of its own, which would keep its freed buffers from the caller's next ones
            [xp.empty(rows * columns.width(size), dtype) for _ in shares],
            [xp.empty(shifts * M * columns.width(size), dtype) for _ in shares],
            group,
        )

    @property
    def threads(self) -> int:
        return len(self.shares)

    def each(self, work) -> None:
        """work(thread, part, col, out) for every chunk `part` (a slice of the batch), with
        the thread's column buffer and GEMM-output / dY buffer sized for it, each share of the
        chunks on a thread of its own."""

        def run(thread: int, parts: list[slice]) -> None:
            for part in parts:
                n = part.stop - part.start
                col = self._view(self.col_buffers[thread], self.w_stacked.shape[2], n)
                out = self._view(self.out_buffers[thread], self.w_stacked.shape[1], n)
                work(thread, part, col, out)

        side_by_side(run, self.shares)

    def _view(self, buffer, rows_per_group: int, n: int):
        length = self.group * rows_per_group * self.columns.width(n)
        return buffer[:length].reshape(self.group, rows_per_group, -1)


def _conv_forward(X, W, B, window: Window, group: int):
    xp = backend.array_module(X)
    Y = xp.empty((X.shape[0], W.shape[0]) + window.out, X.dtype)
    if 0 in W.shape[:2]:  # no filters, or sums over no channels: Y is the bias
        Y[...] = 0 if B is None else B.reshape((-1,) + (1,) * len(window.out))
        return Y
    chunked = _Chunked.of(X.shape, X.dtype, W, window, group)

    def forward(thread, part, col, out):
        _im2col_into(X[part], chunked.columns, col.reshape(-1, col.shape[-1]), parallel=False)
        _matmul(chunked.w_stacked, col, out)
        _columns_to_images(out, chunked.columns, B, Y[part])

    chunked.each(forward)
    return Y


def _columns_to_images(out, columns: Columns, B, Y) -> None:
    """Y (n, M, *out) = the sum over shifts s of out's output columns for s, read s's offset on,
    transposed, plus B (M,) if given; out is (group, S * M/group, width(n)), rows (s, m) per
    group. The transpose, the sum, dropping the unused columns and the bias in one pass (a
    serial numba kernel on the CPU, three times faster than numpy's strided add)."""
    xp, n, M = backend.array_module(out), Y.shape[0], Y.shape[1]
    shifts = columns.shifts()
    group = out.shape[0]
    per_shift = out.reshape(group, len(shifts), M // group, -1)
    if _numba_applies(out, Y):
        bias = np.zeros(M, Y.dtype) if B is None else np.ascontiguousarray(B, Y.dtype)
        _numba_kernels(False).columns_to_images(
            per_shift,
            bias,
            np.array(shifts, np.int64),
            columns.pitch(),
            _canonical(Y),
        )
        return
    y_groups = Y.reshape((n, group, M // group) + columns.window.out)
    for s, shift in enumerate(shifts):
        values = xp.moveaxis(columns.outputs(per_shift[:, s], n, shift), 2, 0)
        if s > 0:
            y_groups += values
            continue
        y_groups[...] = values  # then the bias, in the numba kernel's order of the sum
        if B is not None:
            Y += B.reshape((M,) + (1,) * len(columns.window.out))


def _images_to_columns(dY, columns: Columns, dy_columns, bias_grad) -> None:
    """dy_columns (group, S * M/group, width(n)), rows (s, m) per group = dY (n, M, *out) in the
    columns' layout, once per shift s, s's offset on, every other column 0, and bias_grad
    (M,) float64 += dY summed over images and positions: the adjoint of _columns_to_images
    (a serial numba kernel on the CPU; the sum costs next to nothing in the pass that reads dY
    anyway, where numpy's took a sixtieth of the benchmark conv's forward + backward)."""
    xp, n, M = backend.array_module(dY), dY.shape[0], dY.shape[1]
    shifts = columns.shifts()
    group = dy_columns.shape[0]
    per_shift = dy_columns.reshape(group, len(shifts), M // group, -1)
    if _numba_applies(dY, dy_columns):
        _numba_kernels(False).images_to_columns(
            _canonical(dY),
            columns.pitch(),
            np.array(shifts, np.int64),
            per_shift,
            bias_grad,
        )
        return
    bias_grad += _bias_grad(dY)
    if columns.wide:
        dy_columns[...] = 0
    dy_groups = xp.moveaxis(dY.reshape((n, group, M // group) + columns.window.out), 0, 2)
    for s, shift in enumerate(shifts):
        columns.outputs(per_shift[:, s], n, shift)[...] = dy_groups


def _check_need(need) -> tuple[bool, bool, bool]:
    try:
        flags = () if isinstance(need, (str, bytes)) else tuple(bool(flag) for flag in need)
    except TypeError:
        flags = ()
    if len(flags) != 3:
        raise ArgumentError(f"conv_grad: need must be three flags (dX, dW, dB), got {need!r}")
    return flags


def conv_grad(
    dY,
    X,
    W,
    *,
    strides: Sequence[int] | int | None = None,
    pads: Sequence[int] | int | None = None,
    dilations: Sequence[int] | int | None = None,
    group: int = 1,
    auto_pad: str = "NOTSET",
    need: Sequence[bool] = (True, True, True),
):
    """ConvGrad: the gradients (dX, dW, dB) of Y = conv(X, W, B) given dY = dL/dY.

    Shapes: dY (N, M, *out), X (N, C, *spatial), W (M, C/group, *kernel). Attributes as in
    `conv` (pads in ONNX order, or auto_pad resolved exactly as the forward does). Per group g,
    with col = im2col(X)[g] (C/group*K, N*P) and dY[g] laid out as (M/group, N*P):

        dW[g] = dY[g] @ col.T                  (summing over images and output positions)
        dX = col2im(W[g].T @ dY[g])            (scatter-add; taps in the padding dropped)
        dB = sum of dY over N and every output position

    `need` = which of (dX, dW, dB) to compute; the others come back None and cost nothing (no
    im2col and no GEMM for dW when the weight needs no gradient, no GEMM and no col2im for dX of
    a first layer's input). Input positions no window touches get dX = 0.
    """
    dy_shape, x_shape, w_shape = shape_of(dY), shape_of(X), shape_of(W)
    window = _conv_window("conv_grad", x_shape, w_shape, strides, pads, dilations, group, auto_pad)
    expected = (x_shape[0], w_shape[0]) + window.out
    if dy_shape != expected:
        raise ShapeError(
            f"conv_grad: dY {dy_shape} must be (N, M, *out) = {expected} for X {x_shape} and "
            f"W {w_shape}"
        )
    _check_float("conv_grad", X=X, W=W)
    need = _check_need(need)
    dY = backend.array_module(dY, X, W).asarray(dY, dtype=X.dtype)
    return _conv_grad(dY, X, W, x_shape, window, group, need)


def _conv_grad(dY, X, W, x_shape, window: Window, group: int, need):
    """conv_grad once its arguments are checked, dY in the gradients' dtype. X is read only for
    dW: where dW is not needed it may be None, x_shape giving dX's shape (conv_transpose's
    forward is this dX)."""
    need_x, need_w, need_b = need
    xp, dtype, w_shape = backend.array_module(dY, W), dY.dtype, W.shape
    M = w_shape[0]
    if not (need_x or need_w) or 0 in w_shape[:2]:
        # no GEMM to run: dB alone, or no filters or no channels, so nothing reaches X or W
        dX = xp.zeros(x_shape, dtype) if need_x else None
        dW = xp.zeros(w_shape, dtype) if need_w else None
        return dX, dW, _bias_grad(dY).astype(dtype) if need_b else None

    X = xp.ascontiguousarray(X) if need_w else None
    chunked = _Chunked.of(x_shape, dtype, W, window, group)
    columns, w_stacked = chunked.columns, chunked.w_stacked
    dX = xp.empty(x_shape, dtype) if need_x else None
    dw_sums = _WeightGradSums(chunked, dtype) if need_w else None
    bias_sums = [xp.zeros(M, np.float64) for _ in range(chunked.threads)]  # one per thread

    def backward(thread, part, col, dy_chunk):
        # dY's chunk in the columns' layout, once per shift, unused columns 0: one copy serves
        # both GEMMs (and dB is summed on the way)
        _images_to_columns(dY[part], columns, dy_chunk, bias_sums[thread])
        if need_w:
            _im2col_into(X[part], columns, col.reshape(-1, col.shape[-1]), parallel=False)
            dw_sums.add(thread, col, dy_chunk)
        if need_x:
            _matmul(w_stacked.swapaxes(-1, -2), dy_chunk, col)
            _col2im_into(col.reshape(-1, col.shape[-1]), columns, dX[part], parallel=False)

    chunked.each(backward)
    dW = dw_sums.weight_grad(w_shape) if need_w else None
    return dX, dW, sum(bias_sums).astype(dtype) if need_b else None


class _WeightGradSums:
    """dW summed over a batch's chunks, one sum per thread (a thread's chunks add into its own,
    so no two threads write one array), stacked as (group, C/group * Kc, S * M/group): col @
    dY.T is the fastest orientation of this GEMM for BLAS (the long inner dim contiguous in
    both operands)."""

    def __init__(self, chunked: _Chunked, dtype):
        xp = backend.array_module(chunked.w_stacked)
        shape = chunked.w_stacked.swapaxes(-1, -2).shape
        self.columns = chunked.columns
        self.sums = [xp.zeros(shape, dtype) for _ in range(chunked.threads)]
        self.products = [xp.empty(shape, dtype) for _ in range(chunked.threads)]

    def add(self, thread: int, col, rows) -> None:
        """The thread's sum += col @ rows.T, for a chunk's columns and its dY rows."""
        _matmul(col, rows.swapaxes(-1, -2), self.products[thread])
        self.sums[thread] += self.products[thread]

    def weight_grad(self, w_shape):
        """dW (M, C/group, *kernel): the threads' sums added, in thread order."""
        return _unstacked_weight_grad(sum(self.sums[1:], self.sums[0]), self.columns, w_shape)


def _unstacked_weight_grad(dw_stacked, columns: Columns, w_shape):
    """dW (M, C/group, *kernel) from its (group, C/group * Kc, S * M/group) accumulation: rows
    (c, column tap), columns (shift, m) per group."""
    xp, group, shifts = backend.array_module(dw_stacked), dw_stacked.shape[0], len(columns.shifts())
    M, per_group = w_shape[:2]
    taps = dw_stacked.reshape(group, per_group, -1, shifts, M // group)
    return xp.ascontiguousarray(taps.transpose(0, 4, 1, 3, 2)).reshape(w_shape)


def _bias_grad(dY):
    """dB (M,) float64: dY (N, M, *out) summed over images and output positions."""
    return dY.sum(axis=(0,) + tuple(range(2, dY.ndim)), dtype=np.float64)


# --- numba kernels ------------------------------------------------------------------------------


@functools.cache
def _numba_kernels(parallel: bool) -> SimpleNamespace:
    """im2col and col2im as numba kernels, for both column layouts (see Columns), defined on
    first use (numba.prange exists only once numba is imported, and importing minitrain must
    not import it), in a parallel and a serial build: waking threads costs more than a small
    im2col saves (and far more on a busy machine).

    All work on 3 spatial dims (1-D and 2-D come with leading size-1 dims, see
    Window.canonical): x (N, C, D, H, W), and columns (C, Kc, width) or, compact, (C, K, N,
    OD, OH, OW). compact: the N*C planes (a channel of an image) run in parallel; a plane's
    columns come from, and go back to, that plane only, so col2im's scatter-add never races.
    Along the last dim each output row splits into a left part in the padding, a middle read
    from the input and a right part in the padding, so the inner loop has no bounds test.
    wide: x comes as (N, C, D*H, W) (_by_rows), and the C channels run in parallel; a channel's
    input rows are copied to where _grid_args says they start on the zero-padded grid, in a
    scratch buffer (a few tens of KB), and each tap's columns are one contiguous run of it.
    """
    loop = numba_math.loop(parallel)  # also keeps the two builds apart in numba's cache

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def im2col_planes(x, kernel, strides, pads, dilations, col):
        images, channels, depth, height, width = x.shape
        kd, kh, kw = kernel
        sd, sh, sw = strides
        pd, ph, pw = pads
        dd, dh, dw = dilations
        out_d, out_h, out_w = col.shape[3:]
        for plane in loop(images * channels):
            c, n = divmod(np.int64(plane), images)  # (parallel loops count in unsigned ints)
            k = 0
            for a in range(kd):
                for b in range(kh):
                    for t in range(kw):
                        shift = t * dw - pw  # input column = ow * sw + shift
                        lo = min(out_w, max(0, -(shift // sw)))
                        hi = max(lo, min(out_w, -((shift - width) // sw)))
                        for od in range(out_d):
                            i_d = od * sd + a * dd - pd
                            for oh in range(out_h):
                                i_h = oh * sh + b * dh - ph
                                dst = col[c, k, n, od, oh]
                                if i_d < 0 or i_d >= depth or i_h < 0 or i_h >= height:
                                    dst[:] = 0
                                    continue
                                src = x[n, c, i_d, i_h]
                                dst[:lo] = 0
                                for ow in range(lo, hi):
                                    dst[ow] = src[ow * sw + shift]
                                dst[hi:] = 0
                        k += 1

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def col2im_planes(col, kernel, strides, pads, dilations, dx):
        images, channels, depth, height, width = dx.shape
        kd, kh, kw = kernel
        sd, sh, sw = strides
        pd, ph, pw = pads
        dd, dh, dw = dilations
        out_d, out_h, out_w = col.shape[3:]
        for plane in loop(images * channels):
            c, n = divmod(np.int64(plane), images)
            dx[n, c] = 0
            k = 0
            for a in range(kd):
                for b in range(kh):
                    for t in range(kw):
                        shift = t * dw - pw
                        lo = min(out_w, max(0, -(shift // sw)))
                        hi = max(lo, min(out_w, -((shift - width) // sw)))
                        for od in range(out_d):
                            i_d = od * sd + a * dd - pd
                            if i_d < 0 or i_d >= depth:
                                continue
                            for oh in range(out_h):
                                i_h = oh * sh + b * dh - ph
                                if i_h < 0 or i_h >= height:
                                    continue
                                src, dst = col[c, k, n, od, oh], dx[n, c, i_d, i_h]
                                for ow in range(lo, hi):
                                    dst[ow * sw + shift] += src[ow]
                        k += 1

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def im2col_wide_channels(x, length, rows, starts, col):
        images, channels, rows_per_image, width = x.shape
        columns = col.shape[2]
        for c in loop(channels):
            scratch = np.zeros(length, x.dtype)
            for n in range(images):
                for y in range(rows_per_image):
                    row, src = scratch[rows[n * rows_per_image + y] :], x[n, c, y]
                    for i in range(width):
                        row[i] = src[i]
            for k in range(len(starts)):
                run, dst = scratch[starts[k] :], col[c, k]
                for q in range(columns):
                    dst[q] = run[q]

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def col2im_wide_channels(col, length, rows, starts, dx):
        images, channels, rows_per_image, width = dx.shape
        columns = col.shape[2]
        for c in loop(channels):
            scratch = np.zeros(length, dx.dtype)
            for k in range(len(starts)):
                run, src = scratch[starts[k] :], col[c, k]
                for q in range(columns):
                    run[q] += src[q]
            for n in range(images):
                for y in range(rows_per_image):
                    row, dst = scratch[rows[n * rows_per_image + y] :], dx[n, c, y]
                    for i in range(width):
                        dst[i] = row[i]

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def columns_to_images(out, bias, shifts, pitch, y):
        images, filters, out_d, out_h, out_w = y.shape
        per_group = out.shape[2]  # out (group, S, M/group, width)
        span, pitch_h, pitch_w = pitch
        for i in loop(images):
            for m in range(filters):
                g, local = divmod(np.int64(m), per_group)
                for od in range(out_d):
                    for oh in range(out_h):
                        start, dst = i * span + (od * pitch_h + oh) * pitch_w, y[i, m, od, oh]
                        row = out[g, 0, local, start + shifts[0] :]
                        for ow in range(out_w):
                            dst[ow] = row[ow] + bias[m]
                        for s in range(1, len(shifts)):
                            row = out[g, s, local, start + shifts[s] :]
                            for ow in range(out_w):
                                dst[ow] += row[ow]

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def images_to_columns(dy, pitch, shifts, col, bias_grad):
        images, filters, out_d, out_h, out_w = dy.shape
        per_group = col.shape[2]  # col (group, S, M/group, width)
        span, pitch_h, pitch_w = pitch
        for m in loop(filters):
            g, local = divmod(np.int64(m), per_group)
            sums = np.zeros(out_w)  # one float64 sum per output column: these vectorize
            for s in range(len(shifts)):
                dst = col[g, s, local]
                done = 0  # each column written once: dY's rows, and 0 in the gaps (wide)
                for i in range(images):
                    for od in range(out_d):
                        for oh in range(out_h):
                            start = i * span + (od * pitch_h + oh) * pitch_w + shifts[s]
                            gap = dst[done:start]
                            for q in range(len(gap)):
                                gap[q] = 0
                            row, src = dst[start:], dy[i, m, od, oh]
                            for ow in range(out_w):
                                row[ow] = src[ow]
                            if s == 0:
                                for ow in range(out_w):
                                    sums[ow] += src[ow]
                            done = start + out_w
                tail = dst[done:]
                for q in range(len(tail)):
                    tail[q] = 0
            bias_grad[m] += sums.sum()

    return SimpleNamespace(
        columns_to_images=columns_to_images,
        images_to_columns=images_to_columns,
        im2col=im2col_planes,
        col2im=col2im_planes,
        im2col_wide=im2col_wide_channels,
        col2im_wide=col2im_wide_channels,
    )


# --- the op -------------------------------------------------------------------------------------


class Conv(Op):
    """Convolution (cross-correlation, as in PyTorch and ONNX) of X (N, C, *spatial) with
    W (M, C/group, *kernel), plus B (M,): im2col and a GEMM per group and chunk of images.
    Saves X and W; the backward is conv_grad, computing only the gradients the inputs need."""

    name = "conv"
    inputs = ("x", "w", "b")
    attrs = ("strides", "pads", "dilations", "group")
    saved = ("x", "w")

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save(x=x, w=w)
        xp = ctx.xp
        window = conv_window(x.shape[2:], w.shape[2:], ctx.strides, ctx.pads, ctx.dilations)
        return _conv_forward(xp.ascontiguousarray(x), w, b, window, ctx.group)

    @staticmethod
    def backward(ctx, grad):
        """dX = col2im(W^T @ dY), dW = dY @ im2col(X)^T, dB = sum(dY); per group."""
        return conv_grad(
            grad,
            ctx.x,
            ctx.w,
            strides=ctx.strides,
            pads=ctx.pads,
            dilations=ctx.dilations,
            group=ctx.group,
            need=ctx.needs_grad,
        )


def conv(
    x,
    w,
    b=None,
    *,
    strides: Sequence[int] | int | None = None,
    pads: Sequence[int] | int | None = None,
    dilations: Sequence[int] | int | None = None,
    group: int = 1,
    auto_pad: str = "NOTSET",
) -> Tensor:
    """Convolution of x (N, C, *spatial), 1 to 3 spatial dims, with w (M, C/group, *kernel) and
    optional bias b (M,), ONNX's Conv:

        Y[n, m, p] = b[m] + sum over c in m's group and taps k of
                     w[m, c, k] * x_padded[n, c, p * strides + k * dilations]

    Output size per dim: floor((L + pad_begin + pad_end - (dilation * (k - 1) + 1)) / stride) + 1.
    strides and dilations: an int or one per spatial dim (default 1). pads: ONNX order
    [b0, b1, ..., e0, e1, ...] (asymmetric allowed) or one int (default 0). auto_pad:
    'NOTSET' (use pads), 'SAME_UPPER' / 'SAME_LOWER' (ceil(L / stride) outputs, the odd pad at
    the end / the beginning) or 'VALID' (no padding). group: C and M both divide by it.
    """
    return _conv("conv", x, w, b, strides, pads, dilations, group, auto_pad, _ONNX_NAMES)


def _conv(where, x, w, b, strides, pads, dilations, group, auto_pad, names) -> Tensor:
    x_shape, w_shape = shape_of(x), shape_of(w)
    window = _conv_window(where, x_shape, w_shape, strides, pads, dilations, group, auto_pad, names)
    if b is not None and shape_of(b) != (w_shape[0],):
        raise ShapeError(
            f"{where}: bias B must be (M,) = ({w_shape[0]},) for W {w_shape}, got {shape_of(b)}"
        )
    _check_float(where, X=_array(x), W=_array(w), B=_array(b))
    return Conv.apply(
        x,
        w,
        b,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
        group=int(group),
    )


def _array(value):
    """The array behind an input, for dtype checks (None stays None)."""
    if value is None or isinstance(value, Tensor):
        return None if value is None else value.data
    return value if backend.is_array(value) else np.asarray(value)


# --- PyTorch's spelling (minitrain.nn.functional) -----------------------------------------------


def torch_pads(padding, dims: int, where: str, named: bool = True) -> tuple[tuple | None, str]:
    """PyTorch's `padding` as (ONNX pads, auto_pad): an int, one int per spatial dim, one
    (begin, end) pair per spatial dim, or (when `named`) 'valid' / 'same'. 'same' is
    SAME_UPPER: for stride 1, PyTorch's 'same' exactly (the odd pad at the end); for larger
    strides, where PyTorch refuses, ceil(L / stride) outputs as in ONNX."""
    if isinstance(padding, str):
        if not named or padding not in ("valid", "same"):
            allowed = "an int, ints or (begin, end) pairs" + (", 'valid' or 'same'" * named)
            raise ArgumentError(f"{where}: padding must be {allowed}, got {padding!r}")
        return None, "VALID" if padding == "valid" else "SAME_UPPER"
    if isinstance(padding, Sequence) and any(isinstance(p, Sequence) for p in padding):
        if len(padding) != dims or not all(
            isinstance(p, Sequence) and len(p) == 2 for p in padding
        ):
            raise ShapeError(
                f"{where}: padding as pairs needs one (begin, end) pair per spatial dim "
                f"({dims}), got {padding!r}"
            )
        begins = spatial_ints([p[0] for p in padding], dims, "padding", where, 0)
        ends = spatial_ints([p[1] for p in padding], dims, "padding", where, 0)
        return begins + ends, "NOTSET"
    per_dim = spatial_ints(padding, dims, "padding", where, 0)
    return per_dim + per_dim, "NOTSET"


def batched(input, dims: int, where: str, fn) -> Tensor:
    """fn(input) for input (N, C, *spatial) with `dims` spatial dims, or for an unbatched
    (C, *spatial) input, which gets a batch of one and loses it again, as in PyTorch."""
    shape = shape_of(input)
    if len(shape) == dims + 1:
        out = fn(reshape(input, (1,) + shape))
        return reshape(out, out.shape[1:])
    if len(shape) != dims + 2:
        raise ShapeError(
            f"{where}: input must be (N, C, *spatial) or (C, *spatial) with {dims} spatial "
            f"dims, got shape {shape}"
        )
    return fn(input)


def conv_nd(
    input, weight, bias, stride, padding, dilation, groups, *, dims: int, where: str
) -> Tensor:
    """F.conv1d / conv2d / conv3d: PyTorch's arguments (stride, padding, dilation, groups)
    translated to `conv`'s; errors name the PyTorch function and arguments."""
    pads, auto_pad = torch_pads(padding, dims, where)
    return batched(
        input,
        dims,
        where,
        lambda x: _conv(
            where, x, weight, bias, stride, pads, dilation, groups, auto_pad, _TORCH_NAMES
        ),
    )
