"""The tile transforms of Winograd's F(2x2, 3x3) and F(4x4, 3x3) as numba kernels.

minitrain.ops.convolution.winograd runs them between its GEMMs; docs/kernels.md section 4.3
states the math. Four kernels per F(m x m, 3 x 3), alpha = m + 2, each over (image, channel)
planes, each separable: a 1-D transform down the columns and one along the rows.

- inputs:      V[a, b] = (B^T d B)[a, b] for every input tile d (alpha x alpha, stride m)
- outputs:     Y tile  = A^T P A (+ bias) for every tile's products P
- grads:       Z[a, b] = (A dY_tile A^T)[a, b], the adjoint of `outputs` (dY zero past the end)
- untransform: dX = the overlap-add of B dV B^T over the tiles, the adjoint of `inputs`

Every loop over a row of tiles indexes its arrays as [constant, j] or [m * j + constant], j the
loop's counter, so that LLVM knows the index is not negative (numba wraps negative indices
around, a select per access that stops vectorization) and vectorizes the loop. The 1-D
transforms take and give tuples, read and written by helpers with constant indices (a tuple
indexed by a loop variable compiles to a branch per element). The row transform is applied to
every (padded) row once, not once per tile row: tile rows overlap by 2 rows, which share it.
"""

from __future__ import annotations

import functools
import importlib
from types import SimpleNamespace

import numpy as np

from ... import backend
from ..core import numba_math

__all__ = ["tile_kernels"]


def _one_dim_transforms(step: int, inline):
    """F(step, 3)'s four 1-D transforms, tuples in and out: B^T x (inputs), A^T p (outputs)
    and their adjoints A z (grads) and B v (untransform), written out with their zero and unit
    coefficients dropped. Integer factors are sums (x + x, not 2 * x: an integer times a
    float32 is a float64 in numba), and F(4)'s are grouped, (x3 + x4) - 4 (x1 + x2) and the
    like: fewer operations and fewer roundings."""

    @inline
    def twice(x):
        return x + x

    if step == 2:

        @inline
        def inputs(x):
            return (x[0] - x[2], x[1] + x[2], x[2] - x[1], x[1] - x[3])

        @inline
        def outputs(p):
            return (p[0] + p[1] + p[2], p[1] - p[2] - p[3])

        @inline
        def grads(d):
            return (d[0], d[0] + d[1], d[0] - d[1], -d[1])

        @inline
        def untransform(v):
            return (v[0], v[1] - v[2] + v[3], v[1] + v[2] - v[0], -v[3])

        return inputs, outputs, grads, untransform

    @inline
    def inputs4(x):
        x0, x1, x2, x3, x4, x5 = x
        even, odd = x4 - x2, twice(x3 - x1)
        return (
            (twice(twice(x0 - x2)) - x2) + x4,
            (x3 + x4) - twice(twice(x1 + x2)),
            (x4 - x3) + twice(twice(x1 - x2)),
            even + odd,
            even - odd,
            (twice(twice(x1 - x3)) - x3) + x5,
        )

    @inline
    def outputs4(p):
        p0, p1, p2, p3, p4, p5 = p
        s12, d12, s34, d34 = p1 + p2, p1 - p2, p3 + p4, p3 - p4
        return (
            p0 + s12 + s34,
            d12 + twice(d34),
            s12 + twice(twice(s34)),
            (d12 + twice(twice(twice(d34)))) + p5,
        )

    @inline
    def grads4(d):
        d0, d1, d2, d3 = d
        e02, o13 = d0 + d2, d1 + d3
        e4, o8 = d0 + twice(twice(d2)), twice(d1 + twice(twice(d3)))
        return (d0, e02 + o13, e02 - o13, e4 + o8, e4 - o8, d3)

    @inline
    def untransform4(v):
        v0, v1, v2, v3, v4, v5 = v
        return (
            twice(twice(v0)),
            twice(twice((v2 - v1) + v5) + (v4 - v3)),
            -(twice(twice(v0 + v1 + v2)) + v0 + (v3 + v4)),
            (v1 - v2) + twice(v3 - v4) - (twice(twice(v5)) + v5),
            v0 + v1 + v2 + v3 + v4,
            v5,
        )

    return inputs4, outputs4, grads4, untransform4


def _accessors(count: int, step: int, inline) -> SimpleNamespace:
    """Inlined reads and writes of `count` values with constant indices: down a column of a
    2-D array (t[k, j]) or along a row from tile j (t[step * j + k]), k = 0 .. count - 1."""
    if count == 2:

        @inline
        def column(t, j):
            return (t[0, j], t[1, j])

        @inline
        def set_column(v, t, j):
            t[0, j], t[1, j] = v[0], v[1]

        @inline
        def row(t, j):
            return (t[step * j], t[step * j + 1])

        @inline
        def set_row(v, t, j):
            t[step * j], t[step * j + 1] = v[0], v[1]

        @inline
        def add_row(v, t, j):
            t[step * j] += v[0]
            t[step * j + 1] += v[1]

        @inline
        def add_column(v, t, j):
            t[0, j] += v[0]
            t[1, j] += v[1]

    elif count == 4:

        @inline
        def column(t, j):
            return (t[0, j], t[1, j], t[2, j], t[3, j])

        @inline
        def set_column(v, t, j):
            t[0, j], t[1, j], t[2, j], t[3, j] = v[0], v[1], v[2], v[3]

        @inline
        def row(t, j):
            at = step * j
            return (t[at], t[at + 1], t[at + 2], t[at + 3])

        @inline
        def set_row(v, t, j):
            at = step * j
            t[at], t[at + 1], t[at + 2], t[at + 3] = v[0], v[1], v[2], v[3]

        @inline
        def add_row(v, t, j):
            at = step * j
            t[at] += v[0]
            t[at + 1] += v[1]
            t[at + 2] += v[2]
            t[at + 3] += v[3]

        @inline
        def add_column(v, t, j):
            t[0, j] += v[0]
            t[1, j] += v[1]
            t[2, j] += v[2]
            t[3, j] += v[3]

    else:

        @inline
        def column(t, j):
            return (t[0, j], t[1, j], t[2, j], t[3, j], t[4, j], t[5, j])

        @inline
        def set_column(v, t, j):
            t[0, j], t[1, j], t[2, j] = v[0], v[1], v[2]
            t[3, j], t[4, j], t[5, j] = v[3], v[4], v[5]

        @inline
        def row(t, j):
            at = step * j
            return (t[at], t[at + 1], t[at + 2], t[at + 3], t[at + 4], t[at + 5])

        @inline
        def set_row(v, t, j):
            at = step * j
            t[at], t[at + 1], t[at + 2] = v[0], v[1], v[2]
            t[at + 3], t[at + 4], t[at + 5] = v[3], v[4], v[5]

        @inline
        def add_row(v, t, j):
            at = step * j
            t[at] += v[0]
            t[at + 1] += v[1]
            t[at + 2] += v[2]
            t[at + 3] += v[3]
            t[at + 4] += v[4]
            t[at + 5] += v[5]

        @inline
        def add_column(v, t, j):
            t[0, j] += v[0]
            t[1, j] += v[1]
            t[2, j] += v[2]
            t[3, j] += v[3]
            t[4, j] += v[4]
            t[5, j] += v[5]

    return SimpleNamespace(
        column=column,
        set_column=set_column,
        row=row,
        set_row=set_row,
        add_row=add_row,
        add_column=add_column,
    )


@functools.cache
def tile_kernels(step: int, parallel: bool) -> SimpleNamespace:
    """F(step x step, 3 x 3)'s four tile transforms (see the module docstring), defined on
    first use (importing minitrain must not import numba), the (image, channel) planes in a
    serial or a parallel loop.

    Array layouts: x and dx (n, C, H, W); y and dy (n, M, OH, OW); v (alpha^2, C, tiles) and
    products and z (alpha^2, M, tiles), transformed position (a, b) at a * alpha + b, tiles in
    (image, tile row i, tile column j) order, tiles_h x tiles_w per image. top and left: the
    conv's padding before the first row and column."""
    # the helpers as overloads of plain functions (register_jitable), not jitted dispatchers:
    # numba's cache keys a kernel on its closure's pickled contents, and a captured dispatcher
    # pickles differently in every process, so the kernels were compiled anew in each
    inline = importlib.import_module("numba.extending").register_jitable(inline="always")
    loop = numba_math.loop(parallel)
    alpha = step + 2
    inputs_1d, outputs_1d, grads_1d, untransform_1d = _one_dim_transforms(step, inline)
    # (numba's closures take functions, not a namespace of them)
    wide, narrow = _accessors(alpha, step, inline), _accessors(step, step, inline)
    wide_column, wide_set_column, wide_row = wide.column, wide.set_column, wide.row
    wide_add_column, wide_add_row = wide.add_column, wide.add_row
    narrow_column, narrow_set_column = narrow.column, narrow.set_column
    narrow_row, narrow_set_row = narrow.row, narrow.set_row

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def transform_inputs(x, top, left, tiles_h, tiles_w, v):
        images, channels, height, width = x.shape
        span, rows = step * tiles_w + 2, step * tiles_h + 2  # the padded input the tiles read
        copied = min(width, span - left)
        v = v.reshape(alpha, alpha, channels, images, tiles_h, tiles_w)
        for plane in loop(images * channels):
            n, c = divmod(np.int64(plane), channels)  # (parallel loops count in unsigned ints)
            row = np.zeros(span, x.dtype)  # its padding stays 0
            across = np.zeros((rows, alpha, tiles_w), x.dtype)  # each row's transform
            for y in range(max(0, top), min(rows, top + height)):
                row[left : left + copied] = x[n, c, y - top, :copied]
                dst = across[y]
                for j in range(tiles_w):
                    wide_set_column(inputs_1d(wide_row(row, j)), dst, j)
            for i in range(tiles_h):
                for b in range(alpha):
                    src, dst = across[step * i : step * i + alpha, b], v[:, b, c, n, i]
                    for j in range(tiles_w):
                        wide_set_column(inputs_1d(wide_column(src, j)), dst, j)

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def transform_outputs(products, bias, tiles_h, tiles_w, y):
        images, filters, out_h, out_w = y.shape
        products = products.reshape(alpha, alpha, filters, images, tiles_h, tiles_w)
        for plane in loop(images * filters):
            n, m = divmod(np.int64(plane), filters)
            down = np.empty((alpha, step, tiles_w), y.dtype)  # a tile row's columns transformed
            row = np.empty(step * tiles_w, y.dtype)
            for i in range(tiles_h):
                for b in range(alpha):
                    src, dst = products[:, b, m, n, i], down[b]
                    for j in range(tiles_w):
                        narrow_set_column(outputs_1d(wide_column(src, j)), dst, j)
                for p in range(min(step, out_h - step * i)):
                    src = down[:, p]
                    for j in range(tiles_w):
                        narrow_set_row(outputs_1d(wide_column(src, j)), row, j)
                    out = y[n, m, step * i + p]
                    for w in range(out_w):
                        out[w] = row[w] + bias[m]

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def transform_grads(dy, tiles_h, tiles_w, z):
        images, filters, out_h, out_w = dy.shape
        z = z.reshape(alpha, alpha, filters, images, tiles_h, tiles_w)
        for plane in loop(images * filters):
            n, m = divmod(np.int64(plane), filters)
            row = np.zeros(step * tiles_w, dy.dtype)  # past out_w stays 0
            across = np.zeros((step * tiles_h, alpha, tiles_w), dy.dtype)  # past out_h: 0
            for y in range(out_h):
                row[:out_w] = dy[n, m, y]
                dst = across[y]
                for j in range(tiles_w):
                    wide_set_column(grads_1d(narrow_row(row, j)), dst, j)
            for i in range(tiles_h):
                for b in range(alpha):
                    src, dst = across[step * i : step * i + step, b], z[:, b, m, n, i]
                    for j in range(tiles_w):
                        wide_set_column(grads_1d(narrow_column(src, j)), dst, j)

    @backend.jit(parallel=parallel, fastmath=False, nogil=True)
    def untransform_inputs(dv, top, left, tiles_h, tiles_w, dx):
        images, channels, height, width = dx.shape
        span, rows = step * tiles_w + 2, step * tiles_h + 2
        dv = dv.reshape(alpha, alpha, channels, images, tiles_h, tiles_w)
        for plane in loop(images * channels):
            n, c = divmod(np.int64(plane), channels)
            down = np.zeros((rows, alpha, tiles_w), dx.dtype)  # tile rows overlap: summed
            row = np.empty(span, dx.dtype)
            for i in range(tiles_h):
                for b in range(alpha):
                    src, dst = dv[:, b, c, n, i], down[step * i : step * i + alpha, b]
                    for j in range(tiles_w):
                        wide_add_column(untransform_1d(wide_column(src, j)), dst, j)
            for y in range(top, min(rows, top + height)):
                row[:] = 0
                src = down[y]
                for j in range(tiles_w):  # tiles overlap by 2 columns: summed
                    wide_add_row(untransform_1d(wide_column(src, j)), row, j)
                dx[n, c, y - top] = row[left : left + width]

    return SimpleNamespace(
        inputs=transform_inputs,
        outputs=transform_outputs,
        grads=transform_grads,
        untransform=untransform_inputs,
    )
