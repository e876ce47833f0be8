"""The conv op over 1 to 3 spatial dims (im2col + GEMM) and its gradient kernel conv_grad.

The kernel's contract is docs/kernels.md section 4.

Layout: X is (N, C, *spatial), W is (M, C/group, *kernel), B is (M,). With K = prod(kernel) and
P = prod(output spatial), im2col's columns of X (C*K, N*P) hold group g's rows as one contiguous
block, so one GEMM per group, W[g] (M/group, C/group*K) @ col[g], covers many images at once,
and so do the backward's dW and dX GEMMs (minitrain.ops.convolution.columns). The batch goes
through in chunks of images whose buffers stay in cache, side by side on threads for a big batch
(minitrain.ops.convolution.chunking); each chunk's product is transposed to (n, M, *out) in the
pass that adds the bias.

On a CUDA device the same code runs on CuPy arrays: im2col and col2im by one slice copy or add
per kernel tap, and the GEMMs through cuBLAS (xp.matmul). conv_forward and conv_grad_unchecked,
which every conv and transposed conv goes through, are the place a cuDNN path would branch off
(cupyx.cudnn up to CuPy 13; CuPy 14 dropped cuDNN, for NVIDIA's cuDNN frontend): none does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ... import backend
from ...errors import ArgumentError, DeviceError, ShapeError
from ...tensor import Tensor
from ..core.checks import check_floating
from ..core.op import Op, array_of, shape_of
from ..core.promotion import check_one_dtype
from .chunking import Chunked
from .columns import (
    Columns,
    bias_grad,
    col2im_into,
    columns_to_images,
    im2col_into,
    images_to_columns,
)
from .window import Window, check_conv_window, conv_window, torch_conv_window
from .winograd import winograd_forward, winograd_grad, winograd_tile

__all__ = ["conv", "conv_grad"]


def matmul(a, b, out) -> None:
    """out = a @ b (batched over groups): the one GEMM call site, BLAS through numpy.

    Which way round each product runs was measured (float32, OpenBLAS on 1 and 2 threads, the
    per-chunk shapes of the 1->16 and 3->32 first layers, 16->32 on 14x14, 32->64 on 16x16),
    against the transposed product with each operand laid out so that no copy is needed. On one
    thread the forward W (M, C*K) @ col (C*K, width) and col^T @ W^T ran within 10% of each
    other (53-89 GFLOP/s), dX as W^T @ dY within 6% of dY^T @ W or faster (48 against 36 for
    1->16), dW as col @ dY^T (WeightGradSums) level with dY @ col^T or faster. On two threads
    a product fell to 1-8 GFLOP/s in some runs, one way round in one run and the other way in
    the next, when another process held a core: the collapse follows the load, not the
    orientation. The one faster way round, dW as col @ dY laid out (width, M), twice as fast
    for C = 1, needs dY transposed on its copy into the columns, which took more than the
    GEMM saved (0.8x to 1.04x the time for 1->16, 1.25x to 2x for 3->32), so it is not used."""
    backend.array_module(a, b).matmul(a, b, out=out)


def check_float_inputs(caller: str, **values) -> None:
    """The inputs of a conv or transposed conv (Tensors, arrays, numbers or lists; None
    skipped) must be floating point and of one dtype. PyTorch's conv refuses mixed dtypes too,
    but on the CPU takes integers; minitrain's is floating point only (BLAS's GEMMs)."""
    arrays = {name: array_of(value) for name, value in values.items()}
    check_floating(caller, **arrays)
    check_one_dtype(caller, **arrays)


def check_one_device(caller: str, **values) -> None:
    """The arrays among `values` (None, numbers and lists skipped) must live on one device, as
    a public kernel's arguments must: a DeviceError naming each array's device."""
    devices = {name: backend.device_of(v) for name, v in values.items() if backend.is_array(v)}
    if len(set(devices.values())) > 1:
        given = ", ".join(f"{name} on {device}" for name, device in devices.items())
        raise DeviceError(f"{caller}: arguments must be on one device, got {given}")


def conv_forward(X, W, B, window: Window, group: int):
    """Y (N, M, *out) = conv(X, W, B) for a checked `window`, X C-contiguous: per chunk of
    images, im2col, one GEMM per group, and the product transposed to Y with the bias added."""
    step = winograd_tile(X.shape, window, group, W, X, B)
    if step:  # a 3x3 stride-1 conv the measured rule gives to Winograd (winograd.py)
        return winograd_forward(X, W, B, window, step)
    xp = backend.array_module(X)
    Y = xp.empty((X.shape[0], W.shape[0]) + window.out, X.dtype)
    if 0 in W.shape[:2]:  # no filters, or sums over no channels: Y is the bias
        Y[...] = 0 if B is None else B.reshape((-1,) + (1,) * len(window.out))
        return Y
    chunked = Chunked.of(X.shape, X.dtype, W, window, group)

    def forward(thread, part, col, out):
        im2col_into(X[part], chunked.columns, col.reshape(-1, col.shape[-1]), parallel=False)
        matmul(chunked.w_stacked, col, out)
        columns_to_images(out, chunked.columns, B, Y[part])

    chunked.each(forward)
    return Y


class WeightGradSums:
    """dW summed over a batch's chunks, one sum per thread (a thread's chunks add into its own,
    so no two threads write one array), stacked as (group, C/group * Kc, S * M/group): col @
    dY.T is the fastest orientation of this GEMM for BLAS (the long inner dim contiguous in
    both operands)."""

    def __init__(self, chunked: Chunked, dtype):
        xp = backend.array_module(chunked.w_stacked)
        shape = chunked.w_stacked.swapaxes(-1, -2).shape
        self.columns = chunked.columns
        self.sums = [xp.zeros(shape, dtype) for _ in range(chunked.threads)]
        self.products = [xp.empty(shape, dtype) for _ in range(chunked.threads)]

    def add(self, thread: int, col, rows) -> None:
        """The thread's sum += col @ rows.T, for a chunk's columns and its dY rows."""
        matmul(col, rows.swapaxes(-1, -2), self.products[thread])
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


def _check_need(need) -> tuple[bool, bool, bool]:
    try:
        flags = () if isinstance(need, (str, bytes)) else tuple(bool(flag) for flag in need)
    except TypeError:
        flags = ()
    if len(flags) != 3:
        raise ArgumentError(f"conv_grad: need must be three flags (dX, dW, dB), got {need!r}")
    return flags


def conv_grad_unchecked(dY, X, W, x_shape, window: Window, group: int, need):
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
        return dX, dW, bias_grad(dY).astype(dtype) if need_b else None
    step = winograd_tile(x_shape, window, group, W, dY, X if need_w else None)
    if step:  # a 3x3 stride-1 conv the measured rule gives to Winograd (winograd.py)
        dX, dW = winograd_grad(dY, X, W, x_shape, window, step, need_x, need_w)
        return dX, dW, bias_grad(dY).astype(dtype) if need_b else None

    X = xp.ascontiguousarray(X) if need_w else None
    chunked = Chunked.of(x_shape, dtype, W, window, group)
    columns, w_stacked = chunked.columns, chunked.w_stacked
    dX = xp.empty(x_shape, dtype) if need_x else None
    dw_sums = WeightGradSums(chunked, dtype) if need_w else None
    bias_sums = [xp.zeros(M, np.float64) for _ in range(chunked.threads)]  # one per thread

    def backward(thread, part, col, dy_chunk):
        # dY's chunk in the columns' layout, once per shift, unused columns 0: one copy serves
        # both GEMMs (and dB is summed on the way)
        images_to_columns(dY[part], columns, dy_chunk, bias_sums[thread])
        if need_w:
            im2col_into(X[part], columns, col.reshape(-1, col.shape[-1]), parallel=False)
            dw_sums.add(thread, col, dy_chunk)
        if need_x:
            matmul(w_stacked.swapaxes(-1, -2), dy_chunk, col)
            col2im_into(col.reshape(-1, col.shape[-1]), columns, dX[part], parallel=False)

    chunked.each(backward)
    dW = dw_sums.weight_grad(w_shape) if need_w else None
    return dX, dW, sum(bias_sums).astype(dtype) if need_b else None


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

    Shapes: dY (N, M, *out), X (N, C, *spatial), W (M, C/group, *kernel). Attributes in ONNX's
    spelling, this kernel's contract (the conv op translates its PyTorch arguments to them):
    strides and dilations (an int or one per spatial dim, default 1), pads in ONNX order
    [b0, b1, ..., e0, e1, ...] (one int: every side; default 0) or auto_pad ('SAME_UPPER',
    'SAME_LOWER', 'VALID'), group. Per group g, with col = im2col(X)[g] (C/group*K, N*P) and
    dY[g] laid out as (M/group, N*P):

        dW[g] = dY[g] @ col.T                  (summing over images and output positions)
        dX = col2im(W[g].T @ dY[g])            (scatter-add; taps in the padding dropped)
        dB = sum of dY over N and every output position

    `need` = which of (dX, dW, dB) to compute; the others come back None and cost nothing (no
    im2col and no GEMM for dW when the weight needs no gradient, no GEMM and no col2im for dX of
    a first layer's input). Input positions no window touches get dX = 0.
    """
    dy_shape, x_shape, w_shape = shape_of(dY), shape_of(X), shape_of(W)
    check_one_device("conv_grad", dY=dY, X=X, W=W)
    window = check_conv_window(
        "conv_grad", x_shape, w_shape, strides, pads, dilations, group, auto_pad
    )
    expected = (x_shape[0], w_shape[0]) + window.out
    if dy_shape != expected:
        raise ShapeError(
            f"conv_grad: dY {dy_shape} must be (N, M, *out) = {expected} for X {x_shape} and "
            f"W {w_shape}"
        )
    check_floating("conv_grad", X=X, W=W)
    check_one_dtype("conv_grad", X=X, W=W)
    need = _check_need(need)
    dY = backend.array_module(dY, X, W).asarray(dY, dtype=X.dtype)
    return conv_grad_unchecked(dY, X, W, x_shape, window, group, need)


class Conv(Op):
    """Convolution (cross-correlation, as in PyTorch and ONNX) of X (N, C, *spatial) with
    W (M, C/group, *kernel), plus B (M,): im2col and a GEMM per group and chunk of images.
    Saves X and W; the backward is conv_grad, computing only the gradients the inputs need."""

    name = "conv"
    inputs = ("x", "w", "b")
    attrs = ("strides", "pads", "dilations", "group")
    saved = ("x", "w")
    fused_backward = "conv2d 32x64x32x32"

    @staticmethod
    def forward(ctx, x, w, b):
        ctx.save(x=x, w=w)
        xp = ctx.xp
        window = conv_window(x.shape[2:], w.shape[2:], ctx.strides, ctx.pads, ctx.dilations)
        return conv_forward(xp.ascontiguousarray(x), w, b, window, ctx.group)

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

    @staticmethod
    def tensor_backward(ctx, grad):
        """conv's backward in conv ops, bilinear in (grad, x, w), so differentiable again:
        dx = conv_transpose(grad, w), dw = a conv of x with grad (conv_weight_grad), db = sum."""
        need_x, need_w, need_b = ctx.needs_grad
        x, w = ctx.x, ctx.w
        attrs = (ctx.strides, ctx.pads, ctx.dilations, ctx.group)
        dx = conv_input_grad(grad, w, x.shape, *attrs) if need_x else None
        dw = conv_weight_grad(x, grad, w.shape, *attrs) if need_w else None
        db = grad.sum(axis=(0, *range(2, grad.ndim))) if need_b else None
        return dx, dw, db


def conv_input_grad(dy, w, x_shape, strides, pads, dilations, group: int) -> Tensor:
    """dX of Y = conv(X, W) given dY, as the transposed conv of dY with W (Tensors in, a Tensor
    in the graph out). Its output_padding gives back the positions of X past the last window's
    reach, which the floor in conv's output size left out (fewer than a stride)."""
    from .transposed import ConvTranspose  # it builds on this module

    dims = len(x_shape) - 2
    uncovered = tuple(
        (length + pads[dim] + pads[dims + dim] - (d * (k - 1) + 1)) % s
        for dim, (length, k, s, d) in enumerate(
            zip(x_shape[2:], w.shape[2:], strides, dilations, strict=True)
        )
    )
    return ConvTranspose.apply(
        dy,
        w,
        None,
        strides=tuple(strides),
        pads=tuple(pads),
        dilations=tuple(dilations),
        group=group,
        output_padding=uncovered,
    )


def conv_weight_grad(x, dy, w_shape, strides, pads, dilations, group: int) -> Tensor:
    """dW of Y = conv(X, W) given dY, as a conv of X with dY (Tensors in, a Tensor in the graph
    out): dW[m, c, k] = sum over n, p of dY[n, m, p] * X_padded[n, c, p * stride + k * dilation]
    is a conv with X's channels as its batch, the images as its channels and dY as its kernel,
    stride and dilation swapped. Per group g, X's channels (g, c) become batch c and channels
    (g, n), so the conv's group g meets dY's filters of group g. Its output covers every tap
    and possibly more (where the padded input outreaches the last window): cropped to W's."""
    images, channels = x.shape[:2]
    spatial, kernel = tuple(x.shape[2:]), tuple(w_shape[2:])
    per_group = channels // group
    dims = len(spatial)
    rows = x.reshape((images, group, per_group) + spatial)
    rows = rows.permute((2, 1, 0) + tuple(range(3, 3 + dims)))
    rows = rows.reshape((per_group, group * images) + spatial)
    taps = Conv.apply(
        rows,
        dy.transpose(0, 1),
        None,
        strides=tuple(dilations),
        pads=tuple(pads),
        dilations=tuple(strides),
        group=group,
    )  # (C/group, M, K')
    taps = taps.transpose(0, 1)
    if tuple(taps.shape[2:]) != kernel:
        taps = taps[(slice(None), slice(None)) + tuple(slice(0, k) for k in kernel)]
    return taps


def conv(
    input,  # noqa: A002 (PyTorch's name)
    weight,
    bias=None,
    stride: Sequence[int] | int = 1,
    padding: Sequence[int] | Sequence[Sequence[int]] | int | str = 0,
    dilation: Sequence[int] | int = 1,
    groups: int = 1,
) -> Tensor:
    """Convolution (cross-correlation, as PyTorch's conv1d/2d/3d) of input (N, C, *spatial),
    1 to 3 spatial dims (taken from input's rank), with weight (M, C/groups, *kernel) and an
    optional bias (M,):

        Y[n, m, p] = bias[m] + sum over c in m's group and taps k of
                     weight[m, c, k] * input_padded[n, c, p * stride + k * dilation]

    Output size per dim: floor((L + pad_begin + pad_end - (dilation * (k - 1) + 1)) / stride)
    + 1. stride and dilation: an int or one per spatial dim. padding: an int or one per spatial
    dim (both ends), one (begin, end) pair per spatial dim (beyond PyTorch), 'valid' (none) or
    'same' (as many outputs as inputs for stride 1, the odd pad at the end; with a larger
    stride, which PyTorch refuses, ceil(L / stride) outputs). groups: C and M both divide by it.
    """
    return conv_as("conv", input, weight, bias, stride, padding, dilation, groups)


def conv_as(caller, input, weight, bias, stride, padding, dilation, groups) -> Tensor:  # noqa: A002
    """`conv` called as `caller` (F.conv2d passes its own name): its errors name caller."""
    x_shape, w_shape = shape_of(input), shape_of(weight)
    window = torch_conv_window(caller, x_shape, w_shape, stride, padding, dilation, groups)
    if bias is not None and shape_of(bias) != (w_shape[0],):
        raise ShapeError(
            f"{caller}: bias must be (M,) = ({w_shape[0]},) for weight {w_shape}, got "
            f"{shape_of(bias)}"
        )
    check_float_inputs(caller, input=input, weight=weight, bias=bias)
    return Conv.apply(
        input,
        weight,
        bias,
        strides=window.strides,
        pads=window.pads,
        dilations=window.dilations,
        group=int(groups),
    )
