"""Matrix products: matmul (batched, broadcasting, numpy's 1-D rules) and linear; PyTorch's
products of fixed ranks (mm, bmm, mv, dot, outer) and scaled sums (addmm, addmv), composed of
matmul with PyTorch's shape checks."""

from __future__ import annotations

import math

import numpy as np

from ...autograd import unbroadcast
from ...errors import DTypeError, ShapeError
from ..core.op import Op, array_of, as_tensor, shape_of
from ..core.variants import variants
from ..pointwise.masking import where
from ..shapes.shape import reshape

__all__ = ["addmm", "addmv", "bmm", "dot", "linear", "matmul", "mm", "mv", "outer"]


class MatMul(Op):
    """a @ b. A 1-D a is a row vector and a 1-D b a column vector, their added dim dropped from
    the result; leading (batch) dims broadcast."""

    name = "matmul"
    inputs = ("a", "b")
    saved = ("a", "b")
    grad_kernel = "MatMulGrad"
    same_dtype = True

    @staticmethod
    def forward(ctx, a, b):
        # da reads b and db reads a: keep only what a needed gradient reads
        ctx.save(a=a if ctx.needs_grad[1] else None, b=b if ctx.needs_grad[0] else None)
        return ctx.xp.matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        """da = grad @ b^T, db = a^T @ grad, batch dims summed back to each operand's shape.

        1-D operands count as a row vector (a) or a column vector (b), as in forward."""
        xp, a, b = ctx.xp, ctx.a, ctx.b  # each None when the gradient that reads it is not needed
        (a_shape, b_shape), (need_a, need_b) = ctx.shapes, ctx.needs_grad
        if len(a_shape) == 1 and len(b_shape) == 1:
            return (grad * b if need_a else None), (grad * a if need_b else None)
        # Treat 1-D operands as matrices, so grad_a = grad @ b^T and grad_b = a^T @ grad hold.
        grad2 = grad
        if len(a_shape) == 1:
            grad2 = xp.expand_dims(grad2, -2)
        if len(b_shape) == 1:
            grad2 = xp.expand_dims(grad2, -1)
        grad_a = grad_b = None
        if need_a:
            b2 = xp.expand_dims(b, -1) if len(b_shape) == 1 else b
            grad_a = xp.matmul(grad2, xp.swapaxes(b2, -1, -2))
            grad_a = grad_a[..., 0, :] if len(a_shape) == 1 else grad_a
        if need_b:
            a2 = xp.expand_dims(a, 0) if len(a_shape) == 1 else a
            grad_b = xp.matmul(xp.swapaxes(a2, -1, -2), grad2)
            grad_b = grad_b[..., :, 0] if len(b_shape) == 1 else grad_b
        # batch dims that broadcast are summed back down to each operand's own
        return (
            None if grad_a is None else unbroadcast(grad_a, a_shape),
            None if grad_b is None else unbroadcast(grad_b, b_shape),
        )


@variants("function", "method")
def matmul(input, other):  # noqa: A002
    """The matrix product `input @ other`, with numpy's rules: 1-D operands are vectors, dims
    before the last two are batch dims and broadcast. Both must share a dtype (DTypeError
    otherwise): no promotion, as in PyTorch."""
    sa, sb = shape_of(input), shape_of(other)
    if not sa or not sb:
        raise ShapeError(f"matmul: operands must have at least 1 dim, got {sa} and {sb}")
    inner_a, inner_b = sa[-1], (sb[0] if len(sb) == 1 else sb[-2])
    if inner_a != inner_b:
        raise ShapeError(
            f"matmul: input {sa} and other {sb} do not fit: input's last dim {inner_a} != "
            f"other's {'only' if len(sb) == 1 else 'second-to-last'} dim {inner_b}"
        )
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise ShapeError(
            f"matmul: batch dims of input {sa} and other {sb} do not broadcast"
        ) from None
    return MatMul.apply(input, other)


class Linear(Op):
    """x @ weight^T + bias, with weight (out_features, in_features) as in PyTorch."""

    name = "linear"
    inputs = ("x", "weight", "bias")
    saved = ("x", "weight")
    same_dtype = True

    @staticmethod
    def forward(ctx, x, weight, bias):
        # dx reads weight and dweight reads x: keep only what a needed gradient reads
        ctx.save(x=x if ctx.needs_grad[1] else None, weight=weight if ctx.needs_grad[0] else None)
        if x.ndim > 2:  # as one (rows, features) product: numpy's stacked matmul is far slower
            out = (x.reshape(math.prod(x.shape[:-1]), x.shape[-1]) @ weight.T).reshape(
                x.shape[:-1] + (weight.shape[0],)
            )
        else:
            out = x @ weight.T
        if bias is not None:
            out += bias
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad @ weight, dweight = grad^T @ x, dbias = grad summed over all but the last dim.

        dweight takes x and grad with their leading dims merged into one: (rows, features).

        Each product is the way round OpenBLAS runs it fastest: timed in float32 on 1 and 2
        threads for rows 128 to 8192 and widths 10 to 2048, computing x @ W^T, grad @ W and
        grad^T @ x instead as (W @ x^T)^T, (W^T @ grad^T)^T and (x^T @ grad)^T, made
        contiguous, was slower or level in every case but x @ W^T with 128 rows and 784 to
        2048 inputs (6-11% faster, in one run), and up to 17x slower for grad @ W with 10
        outputs."""
        x, weight = ctx.x, ctx.weight
        rows = math.prod(grad.shape[:-1])  # not reshape(-1, ...): ambiguous with 0 features
        grad_2d = grad.reshape(rows, grad.shape[-1])
        grad_x = (grad_2d @ weight).reshape(ctx.shapes[0]) if ctx.needs_grad[0] else None
        grad_w = grad_2d.T @ x.reshape(rows, x.shape[-1]) if ctx.needs_grad[1] else None
        grad_b = grad_2d.sum(axis=0) if ctx.needs_grad[2] else None
        return grad_x, grad_w, grad_b


def linear(x, weight, bias=None):
    """x @ weight.T + bias: x (..., in_features), weight (out_features, in_features),
    bias (out_features,) or None, all of one dtype, as in PyTorch."""
    sx, sw = shape_of(x), shape_of(weight)
    if len(sw) != 2 or not sx or sx[-1] != sw[1]:
        raise ShapeError(
            f"linear: input {sx} and weight {sw} do not fit: weight must be "
            f"(out_features, in_features) with in_features == input's last dim"
        )
    if bias is not None and shape_of(bias) != (sw[0],):
        raise ShapeError(f"linear: bias must have shape ({sw[0]},), got {shape_of(bias)}")
    return Linear.apply(x, weight, bias)


# PyTorch's products of fixed ranks: matmul with the ranks checked, each error naming the op and
# the shapes (matmul's numpy rules would take a 1-D or batched operand silently)


def _ranks(name: str, expected: int, **operands) -> list[tuple]:
    """The shapes of `operands` (PyTorch's names), each checked to have `expected` dims."""
    word = {1: "a vector (1-D)", 2: "a matrix (2-D)", 3: "a batch of matrices (3-D)"}[expected]
    shapes = []
    for argument, value in operands.items():
        shape = shape_of(value)
        if len(shape) != expected:
            raise ShapeError(f"{name}: {argument} must be {word}, got shape {shape}")
        shapes.append(shape)
    return shapes


def _one_dtype(name: str, **operands) -> None:
    """The operands share one dtype (no promotion, as in PyTorch's products)."""
    dtypes = {argument: array_of(value).dtype for argument, value in operands.items()}
    if len(set(dtypes.values())) > 1:
        found = ", ".join(f"{argument} {dtype}" for argument, dtype in dtypes.items())
        raise DTypeError(f"{name}: operands must share one dtype, got {found} (cast one first)")


def _sizes(shape: tuple) -> str:
    return "x".join(str(n) for n in shape)


@variants("function", "method", aliases=("spmm",))  # spmm: PyTorch's sparse product; dense here
def mm(input, mat2):  # noqa: A002
    """The matrix product of two matrices, `input` (n, m) and `mat2` (m, p), as (n, p); both
    2-D and of one dtype (matmul takes vectors and batches)."""
    (n, m), (k, p) = _ranks("mm", 2, input=input, mat2=mat2)
    if m != k:
        raise ShapeError(f"mm: input and mat2 shapes cannot be multiplied ({n}x{m} and {k}x{p})")
    _one_dtype("mm", input=input, mat2=mat2)
    return MatMul.apply(input, mat2)


@variants("function", "method")
def bmm(input, mat2):  # noqa: A002
    """The matrix products of two batches of matrices, `input` (b, n, m) and `mat2` (b, m, p),
    as (b, n, p): both 3-D, the batch sizes equal (no broadcasting), of one dtype."""
    (b, n, m), (c, k, p) = _ranks("bmm", 3, input=input, mat2=mat2)
    if b != c or m != k:
        raise ShapeError(
            f"bmm: input ({_sizes((b, n, m))}) and mat2 ({_sizes((c, k, p))}) do not fit: mat2 "
            f"must be ({b}x{m}x*), the same batch and input's columns as its rows"
        )
    _one_dtype("bmm", input=input, mat2=mat2)
    return MatMul.apply(input, mat2)


@variants("function", "method")
def mv(input, vec):  # noqa: A002
    """The product of a matrix `input` (n, m) and a vector `vec` (m,), as (n,); of one dtype."""
    ((n, m),), ((k,),) = _ranks("mv", 2, input=input), _ranks("mv", 1, vec=vec)
    if m != k:
        raise ShapeError(f"mv: input ({_sizes((n, m))}) and vec ({k}) cannot be multiplied")
    _one_dtype("mv", input=input, vec=vec)
    return MatMul.apply(input, vec)


@variants("function", "method")
def dot(input, tensor):  # noqa: A002
    """The dot product of two vectors of one size and one dtype, a 0-d tensor."""
    (n,), (m,) = _ranks("dot", 1, input=input, tensor=tensor)
    if n != m:
        raise ShapeError(
            f"dot: input and tensor must have the same number of elements, got {n} and {m}"
        )
    _one_dtype("dot", input=input, tensor=tensor)
    return MatMul.apply(input, tensor)


@variants("function", "method", aliases=("ger",))
def outer(input, vec2):  # noqa: A002
    """The outer product of two vectors, `input` (n,) and `vec2` (m,), as (n, m): input[i] *
    vec2[j], the dtypes promoted as `*` promotes them. `ger` is the same (PyTorch's older
    name)."""
    ((n,),) = _ranks("outer", 1, input=input)
    _ranks("outer", 1, vec2=vec2)
    return reshape(as_tensor(input), (n, 1)) * vec2


def _scalars(name: str, dtype: np.dtype, beta, alpha) -> tuple:
    """beta and alpha: numbers; integers where the tensors are integers (PyTorch truncates a
    float one there silently; minitrain refuses it)."""
    for argument, value in (("beta", beta), ("alpha", alpha)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
            raise DTypeError(f"{name}: {argument} must be a number, got {type(value).__name__}")
        if dtype.kind != "f" and value != int(value):
            raise DTypeError(
                f"{name}: {argument} must be an integer for {dtype} operands, got {value}"
            )
    if dtype.kind != "f":  # 2.0 as 2: a float number would make an integer result float
        return int(beta), int(alpha)
    return beta, alpha


def _scaled_sum(name: str, input, product, beta, alpha):  # noqa: A002
    """beta * input + alpha * product, input broadcast to product's shape and read not at all
    where beta is 0 (its nan and inf left out, its gradient zero), as in PyTorch."""
    sa, shape = shape_of(input), product.shape
    try:
        fits = len(sa) <= len(shape) and np.broadcast_shapes(sa, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"{name}: input {sa} does not broadcast to the product's shape {shape}")
    input = as_tensor(input)  # noqa: A001
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return where(np.False_, input, scaled)
    return scaled + (input if beta == 1 else input * beta)


@variants("function", "method")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat1 @ mat2): mat1 (n, m) and mat2 (m, p) matrices, input
    broadcasting to (n, p), all of one dtype; with beta 0, input is not read (a nan in it stays
    out). `addmm_` writes the result into input."""
    (n, m), (k, p) = _ranks("addmm", 2, mat1=mat1, mat2=mat2)
    if m != k:
        raise ShapeError(f"addmm: mat1 and mat2 shapes cannot be multiplied ({n}x{m} and {k}x{p})")
    _one_dtype("addmm", input=input, mat1=mat1, mat2=mat2)
    beta, alpha = _scalars("addmm", array_of(mat1).dtype, beta, alpha)
    return _scaled_sum("addmm", input, MatMul.apply(mat1, mat2), beta, alpha)


@variants("function", "method")
def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """beta * input + alpha * (mat @ vec): mat (n, m) a matrix and vec (m,) a vector, input
    broadcasting to (n,), all of one dtype; with beta 0, input is not read. `addmv_` writes the
    result into input."""
    ((n, m),), ((k,),) = _ranks("addmv", 2, mat=mat), _ranks("addmv", 1, vec=vec)
    if m != k:
        raise ShapeError(f"addmv: mat ({_sizes((n, m))}) and vec ({k}) cannot be multiplied")
    _one_dtype("addmv", input=input, mat=mat, vec=vec)
    beta, alpha = _scalars("addmv", array_of(mat).dtype, beta, alpha)
    return _scaled_sum("addmv", input, MatMul.apply(mat, vec), beta, alpha)
