"""The conv ops' column layouts and the kernels that fill and read them, im2col and col2im.

im2col and col2im are public kernels, with numba variants; beside them, the passes between a
GEMM's output columns and images.

Layout: X is (N, C, *spatial). With K = prod(kernel) and P = prod(output spatial), `im2col(X)` is
the (C*K, N*P) matrix whose row c*K + k holds kernel tap k of channel c at every output position
of every image: a group's rows are one contiguous block, so one GEMM per group covers many images
at once. Where every stride is 1 the conv op lays the columns out on a zero-padded grid of the
chunk's images instead (see Columns), which turns im2col and col2im into block copies and adds,
and can leave the taps of the leading kernel dims out of the columns, as shifts of the GEMM's
output.
"""

from __future__ import annotations

import functools
import math
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from ... import backend
from ...errors import ShapeError
from ..core import numba_math
from ..core.op import shape_of
from .window import Window, check_conv_window, check_rank, spatial_ints

__all__ = ["col2im", "im2col"]

# Elements of columns from which im2col / col2im called on their own run in parallel: below it,
# waking threads costs more than it saves. The conv ops run them serially, between BLAS's
# multi-threaded GEMMs, whose spinning worker threads a parallel region would compete with.
_PARALLEL_WORK = 1 << 18


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


def _canonical(X):
    """X (N, C, *spatial) as (N, C, D, H, W): leading size-1 spatial dims up to 3."""
    return X.reshape(X.shape[:2] + (1,) * (5 - X.ndim) + X.shape[2:])


def _input_rows(x):
    """Canonical x (N, C, D, H, W) as (N, C, D*H, W), a view: the rows the wide kernels copy."""
    return x.reshape(x.shape[:2] + (-1, x.shape[-1]))


def _grid_inputs(grid, columns: Columns, shape):
    """The cells of a grid (C, grid_length) that hold the inputs of canonical shape (N, C, D, H,
    W), as a view (C, N, D, H, W)."""
    images, channels, *spatial = shape
    block = grid[:, columns.margin : columns.margin + images * columns.span]
    cells = block.reshape((channels, images) + columns.grid)
    return cells[(slice(None), slice(None)) + tuple(slice(0, n) for n in spatial)]


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


def im2col_into(X, columns: Columns, col, parallel: bool) -> None:
    """Fill col (C*Kc, width(N)) with X's windows in the `columns` layout (Kc = the taps the
    columns hold): numba kernels where they take X and col (the parallel build when
    `parallel`), else the xp ones."""
    if not backend.numba_takes(X, col):
        (_im2col_wide_xp if columns.wide else _im2col_xp)(X, columns, col)
        return
    kernel, strides, pads, dilations, out = columns.window.canonical()
    kernels = _im2col_kernels(parallel)
    if columns.wide:
        taps, x = col.reshape((X.shape[1], -1, col.shape[-1])), _canonical(X)
        kernels.wide(_input_rows(x), *_grid_args(columns, x.shape), taps)
    else:
        taps = col.reshape((X.shape[1], math.prod(kernel), X.shape[0]) + out)
        kernels.compact(_canonical(X), kernel, strides, pads, dilations, taps)


def _pad_width(window: Window) -> tuple:
    return ((0, 0), (0, 0)) + tuple(zip(window.pads_begin, window.pads_end, strict=True))


def _im2col_xp(X, columns: Columns, col) -> None:
    xp, window = backend.array_module(X), columns.window
    N, C = X.shape[:2]
    padded = xp.pad(X, _pad_width(window))
    taps = col.reshape((C,) + window.kernel + (N,) + window.out)
    for offset in np.ndindex(*window.kernel):
        values = padded[(slice(None), slice(None)) + window.slices(offset)]
        taps[(slice(None),) + offset] = xp.moveaxis(values, 1, 0)


def _im2col_wide_xp(X, columns: Columns, col) -> None:
    xp, X = backend.array_module(X), _canonical(X)
    N, C = X.shape[:2]
    grid = xp.zeros((C, columns.grid_length(N)), X.dtype)
    _grid_inputs(grid, columns, X.shape)[...] = X.swapaxes(0, 1)
    taps = col.reshape(C, -1, col.shape[-1])
    for k, start in enumerate(columns.tap_starts()):
        taps[:, k] = grid[:, start : start + taps.shape[-1]]


@functools.cache
def _im2col_kernels(parallel: bool) -> SimpleNamespace:
    """im2col as numba kernels, `compact` and `wide` for the two column layouts (see Columns),
    defined on first use (numba.prange exists only once numba is imported, and importing
    minitrain must not import it), in a parallel and a serial build: waking threads costs more
    than a small im2col saves (and far more on a busy machine).

    Both work on 3 spatial dims (1-D and 2-D come with leading size-1 dims, see
    Window.canonical): x (N, C, D, H, W), and columns (C, Kc, width) or, compact, (C, K, N,
    OD, OH, OW). compact: the N*C planes (a channel of an image) run in parallel, each written
    from its own plane only. Along the last dim each output row splits into a left part in the
    padding, a middle read from the input and a right part in the padding, so the inner loop
    has no bounds test. wide: x comes as (N, C, D*H, W) (_input_rows), and the C channels run in
    parallel; a channel's input rows are copied to where _grid_args says they start on the
    zero-padded grid, in a scratch buffer (a few tens of KB), and each tap's columns are one
    contiguous run of it.
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

    return SimpleNamespace(compact=im2col_planes, wide=im2col_wide_channels)


def _im2col_window(caller, x_shape, kernel_shape, strides, pads, dilations) -> Window:
    """The Window of im2col / col2im, their arguments checked as a conv's."""
    check_rank(caller, x_shape, "X")
    kernel = spatial_ints(kernel_shape, len(x_shape) - 2, "kernel_shape", caller, 1)
    w_shape = (1, x_shape[1]) + kernel
    return check_conv_window(caller, x_shape, w_shape, strides, pads, dilations, 1, "NOTSET")


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
    im2col_into(xp.ascontiguousarray(X), columns, col, col.size >= _PARALLEL_WORK)
    return col


def col2im_into(col, columns: Columns, dX, parallel: bool) -> None:
    """dX (N, C, *spatial) = col (C*Kc, width(N)) in the `columns` layout added back where it
    came from (the adjoint of im2col_into): numba kernels where they take col and dX (the
    parallel build when `parallel`), else the xp ones."""
    if not backend.numba_takes(col, dX):
        (_col2im_wide_xp if columns.wide else _col2im_xp)(col, columns, dX)
        return
    kernel, strides, pads, dilations, out = columns.window.canonical()
    kernels = _col2im_kernels(parallel)
    if columns.wide:
        taps, dx = col.reshape((dX.shape[1], -1, col.shape[-1])), _canonical(dX)
        kernels.wide(taps, *_grid_args(columns, dx.shape), _input_rows(dx))
    else:
        taps = col.reshape((dX.shape[1], math.prod(kernel), dX.shape[0]) + out)
        kernels.compact(taps, kernel, strides, pads, dilations, _canonical(dX))


def _interior(window: Window, spatial) -> tuple:
    """The padded input's slices that hold the input."""
    lead = (slice(None), slice(None))
    return lead + tuple(slice(b, b + n) for b, n in zip(window.pads_begin, spatial, strict=True))


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


def _col2im_wide_xp(col, columns: Columns, dX) -> None:
    xp, shape = backend.array_module(col), _canonical(dX).shape
    N, C = shape[:2]
    grid = xp.zeros((C, columns.grid_length(N)), dX.dtype)
    taps = col.reshape(C, -1, col.shape[-1])
    for k, start in enumerate(columns.tap_starts()):
        grid[:, start : start + taps.shape[-1]] += taps[:, k]
    dX[...] = _grid_inputs(grid, columns, shape).swapaxes(0, 1).reshape(dX.shape)


@functools.cache
def _col2im_kernels(parallel: bool) -> SimpleNamespace:
    """col2im as numba kernels, `compact` and `wide`, the adjoints of _im2col_kernels' and built
    as they are. compact: a plane's columns go back to that plane only, so the scatter-add never
    races; wide: a channel's taps are added up on its zero-padded grid in a scratch buffer, and
    the input rows copied out of it."""
    loop = numba_math.loop(parallel)

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

    return SimpleNamespace(compact=col2im_planes, wide=col2im_wide_channels)


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
    col2im_into(xp.ascontiguousarray(col), columns, dX, col.size >= _PARALLEL_WORK)
    return dX


def bias_grad(dY):
    """dB (M,) float64: dY (N, M, *out) summed over images and output positions."""
    return dY.sum(axis=(0,) + tuple(range(2, dY.ndim)), dtype=np.float64)


def columns_to_images(out, columns: Columns, B, Y) -> None:
    """Y (n, M, *out) = the sum over shifts s of out's output columns for s, read s's offset on,
    transposed, plus B (M,) if given; out is (group, S * M/group, width(n)), rows (s, m) per
    group. The transpose, the sum, dropping the unused columns and the bias in one pass (a
    serial numba kernel on the CPU, three times faster than numpy's strided add)."""
    xp, n, M = backend.array_module(out), Y.shape[0], Y.shape[1]
    shifts = columns.shifts()
    group = out.shape[0]
    per_shift = out.reshape(group, len(shifts), M // group, -1)
    if backend.numba_takes(out, Y):
        bias = np.zeros(M, Y.dtype) if B is None else np.ascontiguousarray(B, Y.dtype)
        _columns_to_images_kernel(False)(
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


@functools.cache
def _columns_to_images_kernel(parallel: bool):
    """columns_to_images as a numba kernel (the conv ops build it serial: it runs between
    GEMMs), on the canonical 3-D layout of Window.canonical."""
    loop = numba_math.loop(parallel)

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

    return columns_to_images


def images_to_columns(dY, columns: Columns, dy_columns, bias_grad_sum) -> None:
    """dy_columns (group, S * M/group, width(n)), rows (s, m) per group = dY (n, M, *out) in the
    columns' layout, once per shift s, s's offset on, every other column 0, and bias_grad_sum
    (M,) float64 += dY summed over images and positions: the adjoint of columns_to_images
    (a serial numba kernel on the CPU; the sum costs next to nothing in the pass that reads dY
    anyway, where numpy's took a sixtieth of the benchmark conv's forward + backward)."""
    xp, n, M = backend.array_module(dY), dY.shape[0], dY.shape[1]
    shifts = columns.shifts()
    group = dy_columns.shape[0]
    per_shift = dy_columns.reshape(group, len(shifts), M // group, -1)
    if backend.numba_takes(dY, dy_columns):
        _images_to_columns_kernel(False)(
            _canonical(dY),
            columns.pitch(),
            np.array(shifts, np.int64),
            per_shift,
            bias_grad_sum,
        )
        return
    bias_grad_sum += bias_grad(dY)
    if columns.wide:
        dy_columns[...] = 0
    dy_groups = xp.moveaxis(dY.reshape((n, group, M // group) + columns.window.out), 0, 2)
    for s, shift in enumerate(shifts):
        columns.outputs(per_shift[:, s], n, shift)[...] = dy_groups


@functools.cache
def _images_to_columns_kernel(parallel: bool):
    """images_to_columns as a numba kernel (the conv ops build it serial: it runs between
    GEMMs), on the canonical 3-D layout of Window.canonical."""
    loop = numba_math.loop(parallel)

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

    return images_to_columns
