"""Selection and scatter by index: nonzero and argwhere (indices, outside the graph),
masked_select, masked_scatter, index_select, take_along_dim, scatter, and scatter_add,
scatter_reduce and index_add, the last three over one op, ScatterReduce.

The selections are getitem, gather and setitem composed (their backward and second derivatives
come with them); ScatterReduce reduces src into x at a numpy index, and its gradients read grad
back at that index, a getitem, whose own backward is getitem_grad."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...arguments import nested_array
from ...errors import ArgumentError, DTypeError, GraphError, IndexOutOfRangeError, ShapeError
from ...tensor import Tensor
from ..core.checks import normalize_one_axis
from ..core.op import Op, array_of, device_module, shape_of
from ..core.operands import array_step
from ..core.promotion import dtype_of
from ..core.variants import variants
from .indexing import along, gather, getitem, setitem
from .shape import broadcast_to, reshape

__all__ = [
    "argwhere",
    "index_add",
    "index_select",
    "masked_scatter",
    "masked_select",
    "nonzero",
    "nonzero_static",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "take_along_dim",
]

_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))  # PyTorch's, for index (not gather's)


def _index_array(caller: str, index, name: str = "index", int64_only: bool = False):
    """index (a Tensor, an array or nested lists) as an int64 array of its own (the caller's
    index may change in place later), refused unless int64 or int32 as in PyTorch (int64 only
    where `int64_only`: take_along_dim's indices)."""
    array = array_of(index)
    if not backend.is_array(array):
        array = nested_array(array, f"{caller}: {name}")
    allowed = _INDEX_DTYPES[1:] if int64_only else _INDEX_DTYPES
    if array.dtype not in allowed:
        wanted = "int64" if int64_only else "int64 or int32"
        raise DTypeError(f"{caller}: {name} must be an {wanted} tensor, got dtype {array.dtype}")
    return array_step(_as_int64, array)  # a compiled program's step (array_step)


def _as_int64(array):
    return array.astype(np.int64)


def _check_range(caller: str, index, dim: int, size: int, shape: tuple) -> None:
    """Every index value in [0, size): an IndexOutOfRangeError naming the first bad extreme.
    Negative indices are refused, as PyTorch's scatter, gather and index_select refuse them."""
    if not index.size:
        return
    low, high = int(index.min()), int(index.max())
    if low < 0 or high >= size:
        raise IndexOutOfRangeError(
            f"{caller}: index {low if low < 0 else high} is out of range for dim {dim} of "
            f"size {size} (input shape {shape})"
        )


def _check_same_dtype(caller: str, x, other, name: str) -> None:
    """other (a tensor) must have x's dtype: PyTorch's scatter and index ops do not promote."""
    if dtype_of(other) != dtype_of(x):
        raise DTypeError(
            f"{caller}: {name} has dtype {dtype_of(other)}, but input has {dtype_of(x)}; they "
            f"must match (as in PyTorch), cast one first"
        )


def _at_least_1d(value):
    """A 0-d tensor as a 1-element 1-d one, as PyTorch reads 0-d tensors in scatter and
    index ops (a view: reshape, its gradient a reshape back)."""
    return reshape(value, (1,)) if shape_of(value) == () else value


@variants("function", "method")
def nonzero(input, *, as_tuple: bool = False):
    """The indices of `input`'s nonzero elements (NaN counts), in row-major order, outside the
    graph: an int64 tensor of shape (count, ndim), or with as_tuple one int64 tensor of count
    indices per dim (a 0-d `input` counts as 1-d there, as in PyTorch)."""
    array = array_of(input)
    if not backend.is_array(array):
        array = np.asarray(array)
    xp = backend.array_module(array)
    if as_tuple:
        found = xp.nonzero(array.reshape(1) if array.ndim == 0 else array)
        return tuple(Tensor(i.astype(np.int64)) for i in found)
    return Tensor(xp.argwhere(array).astype(np.int64))


@variants("function", "method")
def nonzero_static(input, *, size: int, fill_value: int = -1):  # noqa: A002
    """nonzero(`input`) as an int64 (size, ndim) tensor, a shape known before the values are:
    the first `size` rows of indices, and rows of `fill_value` after them where there are fewer
    (PyTorch's, for code that must not depend on the data's shape)."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise DTypeError(f"nonzero_static: size must be an int, got {size!r}")
    if size < 0:
        raise ArgumentError(f"nonzero_static: size must be non-negative, got {size}")
    if isinstance(fill_value, bool) or not isinstance(fill_value, (int, np.integer)):
        raise DTypeError(f"nonzero_static: fill_value must be an int, got {fill_value!r}")
    found = nonzero(input).array[:size]
    xp = backend.array_module(found)
    filler = xp.full((size - found.shape[0], found.shape[1]), fill_value, dtype=np.int64)
    return Tensor(xp.concatenate([found, filler]))


@variants("function", "method")
def argwhere(input):
    """The indices of `input`'s nonzero elements as rows of an int64 (count, ndim) tensor, outside
    the graph: nonzero(`input`)."""
    return nonzero(input)


@variants("function", "method")
def masked_select(input, mask):
    """`input`'s elements where the boolean mask is True, as a 1-d tensor in row-major order;
    `input` and mask broadcast against each other first. The gradient goes back to the selected
    places."""
    if dtype_of(mask) != np.bool_:
        raise DTypeError(f"masked_select: mask must be boolean, got dtype {dtype_of(mask)}")
    x_shape, mask_shape = shape_of(input), shape_of(mask)
    try:
        shape = np.broadcast_shapes(x_shape, mask_shape)
    except ValueError:
        raise ShapeError(
            f"masked_select: mask of shape {mask_shape} does not broadcast with input of shape "
            f"{x_shape}"
        ) from None
    mask = array_of(mask)
    mask = backend.array_module(mask).broadcast_to(mask, shape or (1,))  # (0-d: as 1-d)
    if x_shape != shape or not shape:
        input = broadcast_to(input, shape) if shape else reshape(input, (1,))
    return getitem(input, mask)


@variants("function", "method")
def masked_scatter(input, mask, source):
    """`input` with the places where the boolean mask is True filled, in row-major order, by the
    first elements of source (taken flat; it needs at least as many as the mask has True); mask
    broadcasts with `input`. The gradient goes to `input` outside the mask, to those elements of
    source inside it."""
    if dtype_of(mask) != np.bool_:
        raise DTypeError(f"masked_scatter: mask must be boolean, got dtype {dtype_of(mask)}")
    _check_same_dtype("masked_scatter", input, source, "source")
    x_shape, mask_shape = shape_of(input), shape_of(mask)
    try:
        shape = np.broadcast_shapes(x_shape, mask_shape)
    except ValueError:
        raise ShapeError(
            f"masked_scatter: mask of shape {mask_shape} does not broadcast with input of shape "
            f"{x_shape}"
        ) from None
    mask = array_of(mask)
    mask = backend.array_module(mask).broadcast_to(mask, shape or (1,))  # (0-d: as 1-d)
    count, size = int(mask.sum()), int(np.prod(shape_of(source), dtype=np.int64))
    if size < count:
        raise ShapeError(
            f"masked_scatter: source has {size} elements, fewer than the {count} places the "
            f"mask selects"
        )
    if x_shape != shape or not shape:
        input = broadcast_to(input, shape) if shape else reshape(input, (1,))
    out = setitem(input, mask, getitem(reshape(source, (size,)), slice(0, count)))
    return out if shape else reshape(out, ())


@variants("function", "method")
def index_select(input, dim: int, index):
    """The slices of `input` at `index` (a 1-d int64 or int32 tensor, or one 0-d index) along dim,
    in index's order, repeats allowed: `input`'s shape with dim's size len(index). An element picked
    several times receives the sum of its gradients."""
    shape = shape_of(input)
    array = _index_array("index_select", index)
    if array.ndim > 1:
        raise ShapeError(f"index_select: index must be 1-d (or 0-d), got shape {array.shape}")
    array = array_step(np.reshape, array, (-1,))  # a compiled program's step (array_step)
    dim = normalize_one_axis(dim, len(shape), "index_select") or 0
    array_step(_check_range, "index_select", array, dim, shape[dim] if shape else 1, shape)
    if shape:
        return getitem(input, (slice(None),) * dim + (array,))
    if array.size != 1:
        raise ShapeError(f"index_select: a 0-d input takes one index, got {array.size}")
    return reshape(getitem(reshape(input, (1,)), array), ())


@variants("function", "method")
def take_along_dim(input, indices, dim=None):
    """`input`'s elements at `indices` (an int64 tensor) along dim: gather after `input` and indices
    broadcast against each other in every other dim; with dim None, `input` flattened at the
    flattened indices. Negative and too large indices are refused (PyTorch reads memory
    outside `input` for them along a dim, where it refuses them with dim None)."""
    shape = shape_of(input)
    array = _index_array("take_along_dim", indices, "indices", int64_only=True)
    if dim is None:
        size = int(np.prod(shape, dtype=np.int64))
        _check_range("take_along_dim", array, 0, size, shape)
        return gather(reshape(input, (size,)), 0, array.reshape(-1))
    dim = normalize_one_axis(dim, len(shape), "take_along_dim")
    if dim is None:
        raise ShapeError("take_along_dim: a 0-d input has no dim to take along; use dim=None")
    if array.ndim != len(shape):
        raise ShapeError(
            f"take_along_dim: input and indices must have the same number of dims, got input "
            f"{shape} and indices {array.shape}"
        )
    _check_range("take_along_dim", array, dim, shape[dim], shape)
    try:
        others = np.broadcast_shapes(
            shape[:dim] + (1,) + shape[dim + 1 :], array.shape[:dim] + (1,) + array.shape[dim + 1 :]
        )
    except ValueError:
        raise ShapeError(
            f"take_along_dim: input {shape} and indices {array.shape} do not broadcast outside "
            f"dim {dim}"
        ) from None
    x_shape = others[:dim] + (shape[dim],) + others[dim + 1 :]
    index_shape = others[:dim] + (array.shape[dim],) + others[dim + 1 :]
    if x_shape != shape:
        input = broadcast_to(input, x_shape)
    return gather(input, dim, backend.array_module(array).broadcast_to(array, index_shape))


# What an element is before any value reduces into it: include_self=False starts there.
_IDENTITY = {"sum": 0, "mean": 0, "prod": 1}
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _start(reduce: str, dtype: np.dtype):
    """The identity of reduce in dtype: where include_self=False, x's touched elements start
    from it."""
    if reduce in _IDENTITY:
        return dtype.type(_IDENTITY[reduce])
    high = reduce == "amin"
    if dtype.kind == "b":
        return np.bool_(high)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.max if high else info.min)
    return dtype.type(np.inf if high else -np.inf)


def _touched(xp, shape, index):
    """A boolean mask of the elements of a `shape` array that `index` reaches."""
    mask = xp.zeros(shape, dtype=bool)
    mask[index] = True
    return mask


def _counts(xp, shape, index, dtype):
    """How many values index adds to each element of a `shape` array, in dtype."""
    counts = xp.zeros(shape, dtype=dtype)
    backend.scatter_add(xp, counts, index, dtype.type(1))
    return counts


def _reduce_into(xp, x, src, index, reduce: str, include_self: bool):
    """A copy of x with src reduced into it at index (numpy's advanced index rules); where
    include_self is False, the elements index reaches forget x's value first."""
    out = x.copy()
    if not include_self:
        out[index] = _start(reduce, out.dtype)
    if reduce in ("sum", "mean"):
        backend.scatter_add(xp, out, index, src)
    elif reduce == "prod":
        _scatter_multiply(xp, out, index, src)
    else:
        (backend.scatter_max if reduce == "amax" else backend.scatter_min)(xp, out, index, src)
    if reduce == "mean":
        counts = _counts(xp, x.shape, index, np.dtype(np.int64)) + int(include_self)
        counts = xp.maximum(counts, 1)  # untouched elements (include_self=False) keep x
        if out.dtype.kind == "f":
            out = out / counts.astype(out.dtype)
        else:  # PyTorch floors an integer mean
            out = (out // counts).astype(out.dtype)
    return out


def _scatter_multiply(xp, target, index, values) -> None:
    """target[index] *= values, index one integer array per dim of target, each repeated place
    multiplying once per occurrence: numpy's multiply.at on the CPU. CuPy has neither
    multiply.at nor a scatter_multiply: there the values are sorted by the flat position they
    reach, each run of one position multiplied together by a segmented Hillis-Steele scan (at
    step s = 1, 2, 4, ... a value takes the product with the one s before it where that reaches
    its position too: log2(n) whole-array steps), and the last of each run, its product,
    multiplies the run's element, no place repeated."""
    if xp is np:
        np.multiply.at(target, index, values)
        return
    full = xp.broadcast_arrays(*index)
    entries = [entry.reshape(-1) for entry in full]
    if not entries[0].size:
        return
    keys, stride = 0, 1
    for entry, size in zip(entries[::-1], target.shape[::-1], strict=True):
        keys, stride = keys + entry * stride, stride * size
    order = xp.argsort(keys, kind="stable")  # numpy's order within each run
    keys = keys[order]
    products = xp.broadcast_to(xp.asarray(values, target.dtype), full[0].shape)
    products = products.reshape(-1)[order]
    step = 1
    while step < keys.size:
        same = keys[step:] == keys[:-step]
        products[step:] = xp.where(same, products[step:] * products[:-step], products[step:])
        step *= 2
    last = xp.ones(keys.size, dtype=bool)
    last[:-1] = keys[1:] != keys[:-1]
    picked = order[last]
    place = tuple(entry[picked] for entry in entries)
    target[place] = target[place] * products[last]


class ScatterReduce(Op):
    """x with src reduced into it at `index`, a numpy index tuple of x (integer arrays, and
    slices for index_add) whose result has src's shape: each src element goes to the element of
    x its position indexes. reduce is sum, prod, mean, amax or amin; include_self says whether
    x's own value at a reached element takes part (else only the src values reaching it do).
    scatter_reduce, scatter_add and index_add are this op; its gradients read grad back at
    index, a getitem (gather's own form), whose backward is getitem_grad."""

    name = "scatter_reduce"
    inputs = ("x", "src")
    attrs = ("index", "reduce", "include_self")
    saved = ("x", "src", "out")

    @staticmethod
    def forward(ctx, x, src):
        out = _reduce_into(ctx.xp, x, src, ctx.index, ctx.reduce, ctx.include_self)
        keeps = ctx.reduce in ("prod", "amax", "amin")  # sum and mean read no values back
        ctx.save(x=x if keeps else None, src=src if keeps else None, out=out if keeps else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad * dout/dx, dsrc = (grad * dout/dsrc)[index]: _scales, or _prod_backward.

        Reading at index is a getitem of a Tensor grad (create_graph), whose own backward is
        getitem_grad; the scales and masks are constants."""
        if ctx.reduce == "prod":
            return _prod_backward(ctx, grad)
        self_scale, src_scale = _scales(ctx, grad.dtype)
        dx = dsrc = None
        if ctx.needs_grad[0]:
            dx = grad if self_scale is None else grad * self_scale
        if ctx.needs_grad[1]:
            dsrc = (grad if src_scale is None else grad * src_scale)[ctx.index]
            if ctx.reduce in ("amax", "amin"):
                dsrc = dsrc * (array_of(ctx.src) == array_of(ctx.out)[ctx.index])
        return dx, dsrc


def _scales(ctx, dtype) -> tuple:
    """(self_scale, src_scale): constant arrays (None for 1) that grad is multiplied by for x's
    gradient, and for src's before it is read at index, for sum, mean, amax and amin.

    sum: 1, x's reached elements 0 without include_self. mean: 1 / N, N the count of the values
    averaged at the element. amax, amin: PyTorch's even split among ties: 1 / N at the elements
    equal to the result, N the number of values that reach it (x's own included) equal to it;
    src's mask of those equal is applied after reading at index. Unlike PyTorch, x's own value
    is not counted among the ties where include_self=False leaves it out (PyTorch counts it,
    giving a src that alone reaches the result half its gradient)."""
    index, reduce, shape = ctx.index, ctx.reduce, ctx.shapes[0]
    xp = device_module(ctx)  # these are constants
    left_out = None if ctx.include_self else _touched(xp, shape, index)
    x, out = array_of(getattr(ctx, "x", None)), array_of(getattr(ctx, "out", None))
    if reduce == "sum":
        return (None if left_out is None else (~left_out).astype(dtype)), None
    if reduce == "mean":
        counts = _counts(xp, shape, index, dtype) + dtype.type(ctx.include_self)
        inverse = dtype.type(1) / xp.maximum(counts, dtype.type(1))
        return (inverse if left_out is None else xp.where(left_out, 0, inverse)), inverse
    ties = x == out
    if left_out is not None:
        ties &= ~left_out
    counts = ties.astype(dtype)
    backend.scatter_add(xp, counts, index, (array_of(ctx.src) == out[index]).astype(dtype))
    share = dtype.type(1) / counts  # no value equals a NaN result: its gradient is NaN
    return ties * share, share


def _prod_backward(ctx, grad):
    """PyTorch's: dx = grad * prod(the others), computed as result(x with zeros as 1) / x; a
    src element that is the only zero reaching its element gets grad * the product of the
    others, the others grad * result / src (zero wherever a zero reaches).

    Under create_graph the products are scatter_reduce itself, recorded, and so are PyTorch's
    second derivatives, which it refuses, as this does, for src where two or more zeros of src
    reach one element (the zeros' gradient there is not a function of src these formulas
    give)."""
    xp, index, include_self = ctx.xp, ctx.index, ctx.include_self
    x, src, out = ctx.x, ctx.src, ctx.out
    constants = device_module(ctx)  # the masks
    dx = dsrc = None
    if ctx.needs_grad[0]:
        masked_x = xp.where(xp.equal(x, 0), x.dtype.type(1), x)
        dx = grad * _product_into(xp, masked_x, src, index, include_self) / masked_x
        if not include_self:
            dx = xp.where(_touched(constants, x.shape, index), 0, dx)
    if ctx.needs_grad[1]:
        zero, zeros_there = _src_zeros(constants, x.shape, index, array_of(src))
        if isinstance(grad, Tensor) and (zeros_there > 1).any():  # create_graph: refused
            raise GraphError(
                "ScatterReduceGrad: scatter_reduce(reduce='prod') has no second derivative for "
                "src where two or more zeros of src reach one element (PyTorch refuses it too); "
                "create_graph=True cannot differentiate through it here"
            )
        single = zero & (zeros_there == 1)
        others = _product_into(xp, x, xp.where(single, src.dtype.type(1), src), index, include_self)
        divisor = xp.where(zero, src.dtype.type(1), src)
        dsrc = xp.where(single, (grad * others)[index], (grad * out)[index] / divisor)
    return dx, dsrc


def _product_into(xp, x, src, index, include_self):
    """x with src multiplied in at index (scatter_reduce's prod): on arrays its kernel; on
    Tensors (create_graph) the op, recorded: numpy multiplies at an index only in place, which a
    Tensor cannot take."""
    if isinstance(x, Tensor) or isinstance(src, Tensor):
        return ScatterReduce.apply(x, src, index=index, reduce="prod", include_self=include_self)
    return _reduce_into(xp, x, src, index, "prod", include_self)


def _src_zeros(xp, shape, index, src) -> tuple:
    """(src == 0, for each src element the number of zeros of src reaching its element)."""
    zero = src == 0
    zeros_there = xp.zeros(shape, dtype=np.int64)
    backend.scatter_add(xp, zeros_there, index, zero.astype(np.int64))
    return zero, zeros_there[index]


def _scatter_index(caller: str, x, dim, index, src=None) -> tuple:
    """(x, the numpy index along dim, src cut to index's shape, x's shape) after PyTorch's
    checks: index and src have as many dims as x (a 0-d one counting as 1-d), index is no larger
    than src in any dim nor than x outside dim, and its values are in range along dim. An empty
    index scatters nothing, whatever its shape."""
    shape = shape_of(x)
    limits = shape or (1,)
    array = _index_array(caller, index)
    dim = normalize_one_axis(dim, len(shape), caller) or 0
    array = array.reshape((0,) * len(limits) if not array.size else array.shape or (1,))
    src_shape = None if src is None else (shape_of(src) or (1,))
    if array.ndim != len(limits) or (src_shape is not None and len(src_shape) != len(limits)):
        raise ShapeError(
            f"{caller}: index and src must have as many dims as input: input {shape}, index "
            f"{array.shape}" + ("" if src_shape is None else f", src {src_shape}")
        )
    for d, size in enumerate(array.shape):
        if (src_shape is not None and size > src_shape[d]) or (d != dim and size > limits[d]):
            raise ShapeError(
                f"{caller}: index {array.shape} must be no larger than src {src_shape} in any "
                f"dim, nor than input {shape} in any dim but {dim}"
            )
    _check_range(caller, array, dim, limits[dim], shape)
    if src is not None:
        src = _at_least_1d(src)
        if src_shape != array.shape:
            src = getitem(src, tuple(slice(0, n) for n in array.shape))
    xp = backend.array_module(array_of(x))
    return _at_least_1d(x), along(xp, xp.asarray(array), dim), src, shape


def _check_reduce(caller: str, x, reduce, include_self) -> None:
    if reduce not in REDUCTIONS:
        raise ArgumentError(
            f"{caller}: reduce must be one of {', '.join(map(repr, REDUCTIONS))}, got {reduce!r}"
        )
    if reduce == "mean" and dtype_of(x) == np.bool_:
        raise DTypeError(f"{caller}: reduce='mean' does not take bool input (as in PyTorch)")
    if not isinstance(include_self, (bool, np.bool_)):
        raise DTypeError(f"{caller}: include_self must be a bool, got {include_self!r}")


@variants("function", "method")
def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True):
    """`input` with each element of src reduced into `input`[.., index[p], ..] (index[p] along dim,
    p's own coordinates elsewhere), by reduce: "sum", "prod", "mean" (an integer mean floors),
    "amax" or "amin"; include_self=False leaves `input`'s own value out where src reaches. index and
    src have `input`'s number of dims (index no larger than src, nor than `input` outside dim).
    Gradients as PyTorch's: prod's the product of the others, amax's and amin's split evenly among
    ties."""
    return _scatter_reduce("scatter_reduce", input, dim, index, src, reduce, include_self)


def _scatter_reduce(caller: str, x, dim, index, src, reduce, include_self):
    _check_reduce(caller, x, reduce, include_self)
    _check_src(caller, x, src)
    x1, index, src, shape = _scatter_index(caller, x, dim, index, src)
    out = ScatterReduce.apply(x1, src, index=index, reduce=reduce, include_self=bool(include_self))
    return reshape(out, shape) if not shape else out


def _check_src(caller: str, x, src) -> None:
    if not (isinstance(src, Tensor) or backend.is_array(src)):
        raise DTypeError(f"{caller}: src must be a tensor, got {type(src).__name__}")
    _check_same_dtype(caller, x, src, "src")


@variants("function", "method")
def scatter_add(input, dim: int, index, src):
    """`input` with each element of src added to `input`[.., index[p], ..] (scatter_reduce's "sum"):
    dx = grad, dsrc = grad gathered at index."""
    return _scatter_reduce("scatter_add", input, dim, index, src, "sum", True)


@variants("function", "method")
def scatter(input, dim: int, index, src=None, *, value=None, reduce=None):
    """`input` with `input`[.., index[p], ..] = src[p] (index[p] along dim, p's own coordinates
    elsewhere), or = value (a number, also taken in src's place); where index repeats a place, the
    last write wins (as PyTorch's CPU kernel). The gradient: to `input` where nothing was written,
    to src grad gathered at index (every src element written, as PyTorch's). reduce "add" or
    "multiply" reduces instead, as scatter_reduce's "sum" and "prod" with include_self."""
    if src is not None and value is not None:
        raise ArgumentError("scatter: give src or value, not both")
    if src is None and value is None:
        raise ArgumentError("scatter: needs src (a tensor) or value (a number)")
    if src is not None and not (isinstance(src, Tensor) or backend.is_array(src)):
        src, value = None, src  # scatter(x, dim, index, 2.0): PyTorch's value in src's place
    if value is not None and not isinstance(value, (bool, int, float, np.number, np.bool_)):
        raise DTypeError(f"scatter: value must be a number, got {type(value).__name__}")
    if src is not None:
        _check_same_dtype("scatter", input, src, "src")
    if reduce is not None and reduce not in ("add", "multiply"):
        raise ArgumentError(f"scatter: reduce must be None, 'add' or 'multiply', got {reduce!r}")
    x1, index, src, shape = _scatter_index("scatter", input, dim, index, src)
    if reduce is not None:
        if src is None:  # value everywhere index reaches: index's shape
            xp = backend.array_module(array_of(x1))
            src = xp.full(np.broadcast_shapes(*(i.shape for i in index)), value, dtype_of(x1))
        how = "sum" if reduce == "add" else "prod"
        out = ScatterReduce.apply(x1, src, index=index, reduce=how, include_self=True)
    else:
        out = setitem(x1, index, src if src is not None else value)
    return reshape(out, shape) if not shape else out


@variants("function", "method")
def index_add(input, dim: int, index, source, *, alpha=1):
    """`input` with alpha * source added at `index` (1-d, int64 or int32) along dim: source has
    `input`'s shape but len(index) along dim, and its slice i is added to `input`'s slice index[i]
    (repeats add up). dx = grad, dsource = alpha * grad at index (index_select)."""
    shape = shape_of(input)
    array = _index_array("index_add", index)
    if array.ndim > 1:
        raise ShapeError(f"index_add: index must be 1-d (or 0-d), got shape {array.shape}")
    array = array_step(np.reshape, array, (-1,))  # a compiled program's step (array_step)
    _check_same_dtype("index_add", input, source, "source")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.integer, np.floating)):
        raise DTypeError(f"index_add: alpha must be a number, got {alpha!r}")
    if dtype_of(input).kind in "biu" and not float(alpha).is_integer():
        raise DTypeError(
            f"index_add: alpha must be a whole number for an input of dtype {dtype_of(input)} (as "
            f"PyTorch's add requires), got {alpha!r}"
        )
    x1, source1 = _at_least_1d(input), _at_least_1d(source)
    dim = normalize_one_axis(dim, len(shape), "index_add") or 0
    limits, source_shape = shape_of(x1), shape_of(source1)
    expected = limits[:dim] + (array.size,) + limits[dim + 1 :]
    if source_shape != expected:
        raise ShapeError(
            f"index_add: source must have input's shape {shape} but {array.size} (the number "
            f"of indices) along dim {dim}, that is {expected}; got {shape_of(source)}"
        )
    array_step(_check_range, "index_add", array, dim, limits[dim], shape)
    if alpha != 1:
        source1 = source1 * (int(alpha) if dtype_of(input).kind in "biu" else alpha)
    xp = backend.array_module(array_of(x1))
    at = (slice(None),) * dim + (xp.asarray(array),)
    out = ScatterReduce.apply(x1, source1, index=at, reduce="sum", include_self=True)
    return reshape(out, shape) if not shape else out
