"""Winograd convolution: 3x3 stride-1 2-D convs and both their gradients, in fewer multiplies.

Lavin & Gray's minimal filtering F(m x m, 3 x 3): an output tile of m x m positions is

    Y_tile = A^T [ (G g G^T) * (B^T d B) ] A          (* elementwise, alpha x alpha, alpha = m + 2)

for the filter g (3 x 3) and the input tile d (alpha x alpha) it reads. The elementwise product
summed over the input channels is, per transformed position xi (alpha^2 of them), one matrix
product over channels: U[xi] (M, C) @ V[xi] (C, tiles) -> (M, tiles), all alpha^2 of them as one
batched matmul. A direct conv takes 9 multiplies per output and channel pair; F(2x2, 3x3) takes
16/4 = 4, F(4x4, 3x3) 36/16 = 2.25, in BLAS's GEMMs; the transforms are a few adds per value
(numba kernels, minitrain.ops.convolution.winograd_kernels).

The gradients are the adjoint of the same computation, exact in exact arithmetic:
Z = A dY_tile A^T (per tile, dY zero past the output), then

    dU[xi] = Z[xi] (M, tiles) @ V[xi]^T      dW = G^T dU G          (summed over tiles)
    dV[xi] = U[xi]^T (C, M) @ Z[xi]          dX = overlap-add of B dV B^T, the padding dropped

so dY is transformed once for both, and dX needs no flipped-filter conv. The bias gradient is
dY's sum (float64), as on the im2col path.

Interpolation points: F(2x2) at 0, +-1, inf; F(4x4) at 0, +-1, +-2, inf (Lavin & Gray's), with
G's 1/4, 1/6, 1/12, 1/24 applied to the filter in float64. docs/kernels.md section 4.3 gives
the float32 error of both against im2col's and which convs the measured rule
(`winograd_tile`) gives F(2x2); none takes F(4x4), as fast here and less accurate.
"""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ...runtime.environment import switched_off
from ...runtime.threads import side_by_side, side_by_side_threads
from .window import Window
from .winograd_kernels import tile_kernels

__all__ = ["winograd_forward", "winograd_grad", "winograd_tile"]


class Transforms:
    """F(m x m, 3 x 3)'s matrices: B^T (alpha, alpha), G (alpha, 3), A^T (m, alpha)."""

    def __init__(self, input_t, filter_g, output_t):
        self.input_t = np.array(input_t, np.float64)
        self.filter_g = np.array(filter_g, np.float64)
        self.output_t = np.array(output_t, np.float64)
        self.alpha = self.input_t.shape[0]
        self.step = self.output_t.shape[0]  # m: outputs per tile side, the tiles' stride


F2 = Transforms(
    [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]],
    [[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]],
    [[1, 1, 1, 0], [0, 1, -1, -1]],
)
F4 = Transforms(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ],
    [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
)
TRANSFORMS = {2: F2, 4: F4}

# Bytes of transformed tiles (inputs and products, or dY's and dX's) computed at once, all
# threads together: a chunk's stay in the last-level cache between its transform and its GEMM.
_CHUNK_BYTES = 2 << 20
# Tiles a chunk takes at least, though its bytes exceed _CHUNK_BYTES: the GEMMs sum over the
# tiles for dW, and with fewer their (alpha^2, M, C) products cost more to add than to compute.
_CHUNK_TILES = 256
# Bytes of the whole batch's transformed tiles from which its chunks run side by side on threads.
_SIDE_BY_SIDE_BYTES = 8 << 20


def winograd_tile(x_shape, window: Window, group: int, *arrays) -> int:
    """The output tile side m (2 or 4) a Winograd conv of an X of shape x_shape takes, or 0 for
    im2col. `arrays`: the conv's arrays (None skipped), W first.

    Winograd applies to a 2-D conv with a 3x3 kernel, stride 1, dilation 1 and one group, on CPU
    arrays numba's kernels take (float32 or float64), any padding. Then a rule measured against
    im2col picks it (see `_measured_choice`). MINITRAIN_WINOGRAD=0 turns it off."""
    if (
        window.kernel != (3, 3)
        or window.strides != (1, 1)
        or window.dilations != (1, 1)
        or group != 1
        or switched_off("MINITRAIN_WINOGRAD")
        or not backend.numba_takes(*arrays)
    ):
        return 0
    W = arrays[0]
    return _measured_choice(x_shape[1], W.shape[0], window.out, W.dtype)


def _measured_choice(channels: int, filters: int, out, dtype) -> int:
    """F(2x2, 3x3) for convs of 32 to 64 channels and 32 to 64 filters whose output is at least
    24 x 24; else im2col (0). float32 and float64 alike.

    Measured through ops.conv, forward plus backward, padding 1, batch 32, float32, on 2 cores
    shared with other jobs (OpenBLAS), the medians of per-round time ratios over rounds in
    random order: F(2x2) over im2col, 64 -> 64 on 32x32 0.91 and 0.92 (160 and 78 rounds),
    32 -> 64 on 32x32 0.95 and 0.87 (265 and 162 rounds); F(4x4) over im2col there 1.00 and
    0.98. Where it stays on im2col (F(4x4) over im2col, alternating rounds): 32 -> 64 on 16x16
    1.02 to 1.11 (F(2x2) 1.08 to 1.16: short rows of tiles, the transforms vectorize poorly),
    16 -> 16 on 32x32 1.34, 3 -> 32 on 32x32 1.6 (too few channels for the GEMMs to dominate),
    128 -> 128 on 32x32 1.13 and 64 -> 128 1.21 (dW's alpha^2 (M, C) products outgrow the
    cache). float64, 64 -> 64 on 32x32: F(4x4) over im2col 0.74. F(4x4) is not picked: no
    faster than F(2x2) here (the transforms and their memory traffic bound both), and up to
    25x im2col's float32 error where F(2x2) matches it (docs/kernels.md 4.3)."""
    if min(out) < 24 or not (32 <= channels <= 64 and 32 <= filters <= 64):
        return 0
    return 2


def winograd_forward(X, W, B, window: Window, step: int):
    """Y (N, M, OH, OW) = conv(X, W) + B for a 3x3 stride-1 window, by F(step x step, 3 x 3):
    per chunk of images, the inputs transformed, one batched GEMM, the outputs transformed."""
    X = np.ascontiguousarray(X)
    plan = _Plan(X.shape, W.shape, window, step, X.dtype)
    kernels, top, left = tile_kernels(step, False), *window.pads_begin
    u = plan.transformed_filters(W)
    bias = np.zeros(W.shape[0], X.dtype) if B is None else np.asarray(B, X.dtype)
    Y = np.empty((X.shape[0], W.shape[0]) + tuple(window.out), X.dtype)
    shares = plan.shares(X.shape[1] + W.shape[0])
    v_buffers, p_buffers = plan.buffers(shares, X.shape[1]), plan.buffers(shares, W.shape[0])

    def forward(thread: int, parts: list[slice]) -> None:
        for part in parts:
            v, products = v_buffers[thread](part), p_buffers[thread](part)
            kernels.inputs(X[part], top, left, plan.tiles_h, plan.tiles_w, v)
            np.matmul(u, v, out=products)  # (alpha^2, M, tiles)
            kernels.outputs(products, bias, plan.tiles_h, plan.tiles_w, Y[part])

    side_by_side(forward, shares)
    return Y


def winograd_grad(dY, X, W, x_shape, window: Window, step: int, need_x: bool, need_w: bool):
    """(dX, dW) of Y = conv(X, W) for a 3x3 stride-1 window, by the adjoint of F(step x step,
    3 x 3), per chunk of images; None where not needed. X may be None where dW is not needed.
    dW is summed per thread (no two threads write one array), then over threads in order."""
    dY = np.ascontiguousarray(dY)
    X = np.ascontiguousarray(X) if need_w else None
    plan = _Plan(x_shape, W.shape, window, step, dY.dtype)
    kernels, top, left = tile_kernels(step, False), *window.pads_begin
    C, M = x_shape[1], W.shape[0]
    u = plan.transformed_filters(W) if need_x else None
    dX = np.empty(x_shape, dY.dtype) if need_x else None
    shares = plan.shares(C + M)
    z_buffers, v_buffers = plan.buffers(shares, M), plan.buffers(shares, C)
    du_sums = [np.zeros((plan.alpha**2, M, C), dY.dtype) for _ in shares] if need_w else None
    du_products = [np.empty((plan.alpha**2, M, C), dY.dtype) for _ in shares] if need_w else None

    def backward(thread: int, parts: list[slice]) -> None:
        for part in parts:
            z, v = z_buffers[thread](part), v_buffers[thread](part)
            kernels.grads(dY[part], plan.tiles_h, plan.tiles_w, z)
            if need_w:
                kernels.inputs(X[part], top, left, plan.tiles_h, plan.tiles_w, v)
                np.matmul(z, v.swapaxes(-1, -2), out=du_products[thread])  # (alpha^2, M, C)
                du_sums[thread] += du_products[thread]
            if need_x:
                np.matmul(u.swapaxes(-1, -2), z, out=v)  # dV (alpha^2, C, tiles)
                kernels.untransform(v, top, left, plan.tiles_h, plan.tiles_w, dX[part])

    side_by_side(backward, shares)
    dW = plan.filters_from_transformed(sum(du_sums[1:], du_sums[0])) if need_w else None
    return dX, dW


class _Plan:
    """The tiling of one Winograd conv (tiles_h x tiles_w tiles per image) and its chunks."""

    def __init__(self, x_shape, w_shape, window: Window, step: int, dtype):
        self.transforms, self.window, self.dtype = TRANSFORMS[step], window, np.dtype(dtype)
        self.alpha, self.step, self.images = step + 2, step, x_shape[0]
        self.tiles_h, self.tiles_w = (-(-n // step) for n in window.out)
        self.tiles_per_image = self.tiles_h * self.tiles_w

    def shares(self, rows: int) -> list[list[slice]]:
        """The batch in chunks of images whose transformed tiles, `rows` (alpha^2, rows,
        tiles) values, fit _CHUNK_BYTES for all threads together, dealt round to the threads
        side_by_side would run (one where the batch's fit one chunk)."""
        N = self.images
        per_image = self.alpha**2 * rows * self.tiles_per_image * self.dtype.itemsize
        threads = max(1, min(N, side_by_side_threads()))
        if N * per_image < _SIDE_BY_SIDE_BYTES:
            threads = 1
        size = max(1, _CHUNK_BYTES // threads // max(1, per_image))
        size = min(N, max(size, -(-_CHUNK_TILES // self.tiles_per_image)))
        count = math.ceil(math.ceil(N / size) / threads) * threads  # a multiple of threads
        bounds = [N * k // count for k in range(count + 1)]
        chunks = [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True) if hi > lo]
        return [chunks[t::threads] for t in range(threads)] if chunks else [[]]

    def buffers(self, shares, rows: int) -> list:
        """Per thread, a function of a chunk giving its (alpha^2, rows, tiles) buffer: a view
        of one flat buffer sized for the thread's largest chunk (allocated on the caller's
        thread: glibc gives other threads arenas of their own, which keep their frees)."""

        def viewer(flat):
            def view(part: slice):
                tiles = (part.stop - part.start) * self.tiles_per_image
                return flat[: self.alpha**2 * rows * tiles].reshape(self.alpha**2, rows, tiles)

            return view

        largest = max((p.stop - p.start for share in shares for p in share), default=0)
        size = self.alpha**2 * rows * largest * self.tiles_per_image
        return [viewer(np.empty(size, self.dtype)) for _ in shares]

    def transformed_filters(self, W):
        """U (alpha^2, M, C) = G g G^T for every filter g, computed in float64."""
        g = self.transforms.filter_g
        u = np.einsum("ak,mckl,bl->abmc", g, np.asarray(W, np.float64), g, optimize=True)
        return np.ascontiguousarray(u.astype(self.dtype)).reshape(self.alpha**2, *W.shape[:2])

    def filters_from_transformed(self, du):
        """dW (M, C, 3, 3) = G^T dU G, the adjoint of transformed_filters (in float64)."""
        g, alpha = self.transforms.filter_g, self.alpha
        du = du.reshape(alpha, alpha, *du.shape[1:]).astype(np.float64)
        return np.einsum("ak,abmc,bl->mckl", g, du, g, optimize=True).astype(self.dtype)
