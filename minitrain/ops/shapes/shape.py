"""Ops that move elements without arithmetic: reshape, flatten, transpose, permute,
broadcast_to, concat, stack, pad, flip; and split, chunk, unbind and tile composed of them (the
indexing ops are in indexing.py)."""

from __future__ import annotations

import math

import numpy as np

from ...autograd import unbroadcast
from ...errors import ArgumentError, DTypeError, ShapeError
from ..core.checks import normalize_axis, normalize_one_axis
from ..core.op import Op, shape_of
from ..core.promotion import result_type
from ..core.variants import variants
from .indexing import GetItem

__all__ = [
    "broadcast_to",
    "chunk",
    "concat",
    "contiguous",
    "flatten",
    "flip",
    "meshgrid",
    "pad",
    "permute",
    "reshape",
    "split",
    "stack",
    "tile",
    "transpose",
    "unbind",
]


class Reshape(Op):
    name = "reshape"
    views = True
    inputs = ("x",)
    attrs = ("shape",)

    @staticmethod
    def forward(ctx, x):
        return x.reshape(ctx.shape)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad reshaped to x's shape."""
        return grad.reshape(ctx.shapes[0])


@variants("function")
def reshape(input, shape):  # noqa: A002
    """`input` with the same elements in `shape` (a sequence; one size may be -1): a view of
    its memory where the layout allows, else a copy."""
    old = shape_of(input)
    shape = tuple(int(n) for n in ((shape,) if isinstance(shape, (int, np.integer)) else shape))
    size = int(np.prod(old, dtype=np.int64))
    known = int(np.prod([n for n in shape if n != -1], dtype=np.int64))
    if shape.count(-1) > 1 or any(n < -1 for n in shape):
        raise ShapeError(f"reshape: invalid target shape {shape}")
    if -1 in shape:
        if known == 0 or size % known:
            raise ShapeError(f"reshape: cannot reshape {old} ({size} elements) to {shape}")
        shape = tuple(size // known if n == -1 else n for n in shape)
    elif known != size:
        raise ShapeError(
            f"reshape: cannot reshape {old} ({size} elements) to {shape} ({known} elements)"
        )
    return Reshape.apply(input, shape=shape)


class Flatten(Op):
    """Dims start_dim..end_dim merged into one (PyTorch's flatten)."""

    name = "flatten"
    views = True
    inputs = ("x",)
    attrs = ("start_dim", "end_dim")

    @staticmethod
    def forward(ctx, x):
        if not x.ndim:
            return x.reshape(1)
        start, end = ctx.start_dim, ctx.end_dim
        # the merged size written out: beside a dim of size 0, -1 could be any size
        merged = math.prod(x.shape[start : end + 1])
        return x.reshape(x.shape[:start] + (merged,) + x.shape[end + 1 :])

    @staticmethod
    def backward(ctx, grad):
        """dx = grad reshaped to x's shape."""
        return grad.reshape(ctx.shapes[0])


@variants("function", "method")
def flatten(input, start_dim: int = 0, end_dim: int = -1):
    """Dims start_dim..end_dim (inclusive) merged into one."""
    ndim = len(shape_of(input))
    if ndim == 0:
        return Flatten.apply(input, start_dim=0, end_dim=0)
    start, end = (
        normalize_axis(start_dim, ndim, "flatten")[0],
        normalize_axis(end_dim, ndim, "flatten")[0],
    )
    if start > end:
        raise ShapeError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return Flatten.apply(input, start_dim=start, end_dim=end)


class Transpose(Op):
    """Two dims swapped."""

    name = "transpose"
    views = True
    inputs = ("x",)
    attrs = ("dim0", "dim1")

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.swapaxes(x, ctx.dim0, ctx.dim1)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad with dim0 and dim1 swapped back."""
        return ctx.xp.swapaxes(grad, ctx.dim0, ctx.dim1)


@variants("function", "method")
def transpose(input, dim0: int, dim1: int):
    """`input` with dims dim0 and dim1 swapped."""
    ndim = len(shape_of(input))
    dims = normalize_axis(dim0, ndim, "transpose"), normalize_axis(dim1, ndim, "transpose")
    if not ndim:  # dims 0 and -1 name a 0-d tensor's one place, as in PyTorch: nothing moves
        return Permute.apply(input, dims=())
    (d0,), (d1,) = dims
    return Transpose.apply(input, dim0=d0, dim1=d1)


class Permute(Op):
    """Dims reordered: output dim i is input dim dims[i]."""

    name = "permute"
    views = True
    inputs = ("x",)
    attrs = ("dims",)

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.transpose(x, ctx.dims)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad permuted by the inverse permutation, argsort(dims)."""
        return ctx.xp.transpose(grad, tuple(int(d) for d in np.argsort(ctx.dims)))


@variants("function")
def permute(input, dims):  # noqa: A002
    """`input` with its dims reordered: output dim i is input dim dims[i] (a sequence, negative
    dims counted from the end); a view of its memory."""
    ndim = len(shape_of(input))
    dims = tuple(dims)
    if len(dims) == ndim:  # as PyTorch: a dim out of range is a DimensionError first
        for d in dims:
            normalize_one_axis(d, ndim, "permute")
    normalized = tuple(d % ndim if -ndim <= d < ndim else d for d in dims) if ndim else dims
    if sorted(normalized) != list(range(ndim)):
        raise ShapeError(
            f"permute: dims {dims} are not a permutation of the {ndim} dims of shape "
            f"{shape_of(input)}"
        )
    return Permute.apply(input, dims=normalized)


class BroadcastTo(Op):
    name = "broadcast_to"
    views = True
    inputs = ("x",)
    attrs = ("shape",)

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.broadcast_to(x, ctx.shape)

    @staticmethod
    def backward(ctx, grad):
        """dx = grad summed over the broadcast dims, back to x's shape."""
        return unbroadcast(grad, ctx.shapes[0])


@variants("function", "method")
def broadcast_to(input, size):  # noqa: A002
    """`input` repeated along new leading dims and dims of size 1 to reach `size`: a read-only
    view. A size of -1 is refused (PyTorch keeps that dim as it is)."""
    old, size = shape_of(input), tuple(int(n) for n in size)
    try:
        fits = np.broadcast_shapes(old, size) == size
    except ValueError:
        fits = False
    if not fits:
        raise ShapeError(f"broadcast_to: cannot broadcast shape {old} to {size}")
    return BroadcastTo.apply(input, shape=size)


def _one_dim(dim, axis, caller: str):
    """The dim of concat / stack, from PyTorch's `dim` or numpy's `axis` (keyword only)."""
    if axis is None:
        return dim
    if dim != 0:
        raise ArgumentError(f"{caller}: give dim or axis, not both (got dim={dim}, axis={axis})")
    return axis


def _check_same(tensors, caller: str):
    """(shapes, ndim) of tensors that must have one number of dims."""
    shapes = [shape_of(t) for t in tensors]
    ndim = len(shapes[0]) if shapes else 0
    if any(len(s) != ndim for s in shapes):
        raise ShapeError(f"{caller}: tensors have different numbers of dims: {shapes}")
    return shapes, ndim


class Concat(Op):
    name = "concat"
    inputs = ("tensors",)
    attrs = ("axis",)
    variadic = True

    @staticmethod
    def forward(ctx, *arrays):
        return ctx.xp.concatenate(arrays, axis=ctx.axis, dtype=result_type(arrays))

    @staticmethod
    def backward(ctx, grad):
        """dtensors[i] = the slice of grad along axis where tensors[i] sits (views of an array,
        getitems of a Tensor)."""
        sizes = [shape[ctx.axis] for shape in ctx.shapes]
        return tuple(grad[index] for index in _slices(ctx.axis, sizes))


def concat(tensors, dim: int = 0, *, axis: int | None = None):
    """Tensors joined along an existing dim (PyTorch's `dim`, or numpy's `axis`); the other
    dims must match. The result has their PyTorch result_type (int64 with float32 gives
    float32, where numpy widens to float64)."""
    axis = _one_dim(dim, axis, "concat")
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("concat: 'tensors' is empty")
    shapes, ndim = _check_same(tensors, "concat")
    if ndim == 0:
        raise ShapeError("concat: cannot concatenate 0-d tensors; use stack")
    (axis,) = normalize_axis(axis, ndim, "concat")
    rest = {s[:axis] + s[axis + 1 :] for s in shapes}
    if len(rest) > 1:
        raise ShapeError(f"concat: shapes {shapes} differ outside dim {axis}")
    return Concat.apply(tensors, axis=axis)


class Stack(Op):
    name = "stack"
    inputs = ("tensors",)
    attrs = ("axis",)
    variadic = True

    @staticmethod
    def forward(ctx, *arrays):
        return ctx.xp.stack(arrays, axis=ctx.axis, dtype=result_type(arrays))

    @staticmethod
    def backward(ctx, grad):
        """dtensors[i] = grad[..., i, ...], index i along the stacked axis."""
        lead = (slice(None),) * ctx.axis
        return tuple(grad[lead + (i,)] for i in range(len(ctx.shapes)))


def stack(tensors, dim: int = 0, *, axis: int | None = None):
    """Tensors of one shape joined along a new dim (`dim` or `axis`), in their PyTorch
    result_type (as concat)."""
    axis = _one_dim(dim, axis, "stack")
    tensors = list(tensors)
    if not tensors:
        raise ShapeError("stack: 'tensors' is empty")
    shapes, ndim = _check_same(tensors, "stack")
    if len(set(shapes)) > 1:
        raise ShapeError(f"stack: tensors must all have one shape, got {shapes}")
    (axis,) = normalize_axis(axis, ndim + 1, "stack")
    return Stack.apply(tensors, axis=axis)


class Pad(Op):
    """Constant padding: pad_width[d] = (before, after) elements of `value` around dim d."""

    name = "pad"
    inputs = ("x",)
    attrs = ("pad_width", "value")

    @staticmethod
    def forward(ctx, x):
        shape = tuple(n + b + a for n, (b, a) in zip(x.shape, ctx.pad_width, strict=True))
        out = ctx.xp.full(shape, ctx.value, dtype=x.dtype)
        out[_interior(ctx.pad_width, x.shape)] = x
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad with the padding cut off: grad[before:before + n] along each dim of size n."""
        return grad[_interior(ctx.pad_width, ctx.shapes[0])]


def _interior(pad_width, shape) -> tuple:
    """The slices of a padded array that hold the unpadded one."""
    return tuple(slice(b, b + n) for n, (b, _) in zip(shape, pad_width, strict=True))


def pad(x, pad_width, value: float = 0.0):
    """x surrounded by `value`: pad_width is an int (every side of every dim) or one
    (before, after) pair per dim, numpy-style."""
    shape = shape_of(x)
    if isinstance(pad_width, (int, np.integer)):
        pad_width = [(pad_width, pad_width)] * len(shape)
    try:
        pairs = tuple((int(b), int(a)) for b, a in pad_width)
    except (TypeError, ValueError):
        raise ShapeError(
            f"pad: pad_width must be (before, after) pairs, got {pad_width!r}"
        ) from None
    if len(pairs) != len(shape) or any(n < 0 for pair in pairs for n in pair):
        raise ShapeError(
            f"pad: need one non-negative (before, after) pair per dim of shape {shape}, "
            f"got {pad_width!r}"
        )
    return Pad.apply(x, pad_width=pairs, value=value)


def _whole(value) -> int:
    """An int (numpy's too, not bool) as int; a TypeError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError
    return int(value)


def _slices(axis, sizes) -> list:
    """The indices of consecutive slices of the given sizes along axis."""
    lead, ends = (slice(None),) * axis, np.cumsum([0, *sizes]).tolist()
    return [lead + (slice(start, end),) for start, end in zip(ends[:-1], ends[1:], strict=True)]


def _pieces(x, axis, sizes) -> tuple:
    """x cut along axis into consecutive slices of the given sizes."""
    return tuple(GetItem.apply(x, index=index, accumulate=False) for index in _slices(axis, sizes))


def split(x, split_size_or_sections, dim: int = 0) -> tuple:
    """x cut along `dim` into pieces of split_size_or_sections elements (the last one smaller
    when it does not divide the dim), or of the listed sizes, which must sum to the dim
    (PyTorch's split). Each piece is a getitem: its gradient is written into zeros of x's shape,
    so backward costs one x-sized array per piece used."""
    shape = shape_of(x)
    if not shape:
        raise ShapeError("split: cannot split a 0-d tensor")
    dim = normalize_one_axis(dim, len(shape), "split")
    size = shape[dim]
    if isinstance(split_size_or_sections, (int, np.integer)) and not isinstance(
        split_size_or_sections, bool
    ):
        step = int(split_size_or_sections)
        if step <= 0 and size:
            raise ArgumentError(f"split: split_size must be positive, got {step}")
        sizes = [min(step, size - start) for start in range(0, size, step)] if size else [0]
    else:
        try:
            sizes = [_whole(n) for n in split_size_or_sections]
        except TypeError:
            raise DTypeError(
                f"split: split_size_or_sections must be an int or a list of ints, got "
                f"{split_size_or_sections!r}"
            ) from None
        if any(n < 0 for n in sizes) or sum(sizes) != size:
            raise ShapeError(
                f"split: sections {sizes} must be non-negative and sum to {size}, the size of "
                f"dim {dim} of shape {shape}"
            )
    return _pieces(x, dim, sizes)


@variants("function", "method")
def chunk(input, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    """`chunks` pieces of `input` along `dim`, of ceil(size / chunks) elements each, the last one
    smaller; fewer pieces when the dim runs out first (PyTorch's chunk). Backward as split's."""
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)):
        raise DTypeError(f"chunk: chunks must be an int, got {chunks!r}")
    if chunks <= 0:
        raise ArgumentError(f"chunk: chunks must be positive, got {chunks}")
    shape = shape_of(input)
    if not shape:
        raise ShapeError("chunk: cannot chunk a 0-d tensor")
    dim = normalize_one_axis(dim, len(shape), "chunk")
    size = shape[dim]
    if size == 0:  # as PyTorch: `chunks` empty pieces
        return _pieces(input, dim, [0] * int(chunks))
    return split(input, -(-size // int(chunks)), dim)


@variants("function", "method")
def unbind(input, dim: int = 0) -> tuple:  # noqa: A002
    """The slices of `input` along `dim`, that dim removed (PyTorch's unbind). Each is a
    getitem, with split's backward cost: one input-sized array per slice used."""
    shape = shape_of(input)
    if not shape:
        raise ShapeError("unbind: cannot unbind a 0-d tensor")
    dim = normalize_one_axis(dim, len(shape), "unbind")
    lead = (slice(None),) * dim
    pieces = range(shape[dim])
    return tuple(GetItem.apply(input, index=lead + (i,), accumulate=False) for i in pieces)


class Flip(Op):
    """x with the order of its elements reversed along `axes`, copied as PyTorch's flip is (a
    view would let a write into the result change x)."""

    name = "flip"
    inputs = ("x",)
    attrs = ("axes",)

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.flip(x, ctx.axes).copy()

    @staticmethod
    def backward(ctx, grad):
        """dx = grad flipped back along the same axes."""
        return ctx.xp.flip(grad, ctx.axes)


@variants("function")
def flip(input, dims):  # noqa: A002
    """`input` with the order of its elements reversed along `dims` (an int or a tuple), a copy."""
    return Flip.apply(input, axes=normalize_axis(dims, len(shape_of(input)), "flip"))


def meshgrid(*tensors, indexing: str = "ij") -> tuple:
    """Coordinate grids of 0-d and 1-D tensors (given spread out or as one list): output i
    holds tensors[i]'s values along dim i, repeated along the others (`indexing='ij'`,
    PyTorch's default); 'xy' swaps the roles of the first two dims (numpy's default). Each
    output is a broadcast (read-only) view, as PyTorch's, and its gradient flows back."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    if not tensors:
        raise ShapeError("meshgrid: expects at least one tensor")
    shapes = [shape_of(t) for t in tensors]
    if any(len(shape) > 1 for shape in shapes):
        raise ShapeError(f"meshgrid: expects 0-d or 1-D tensors, got shapes {shapes}")
    dtypes = {str(getattr(t, "dtype", None)) for t in tensors}
    if len(dtypes) > 1:
        raise DTypeError(f"meshgrid: expects tensors of one dtype, got {sorted(dtypes)}")
    sizes = [math.prod(shape) for shape in shapes]
    places = list(range(len(tensors)))
    if indexing == "xy" and len(places) > 1:
        places[0], places[1] = 1, 0
    grid = [0] * len(sizes)
    for place, size in zip(places, sizes, strict=True):
        grid[place] = size
    outputs = []
    for place, size, t in zip(places, sizes, tensors, strict=True):
        along = tuple(size if d == place else 1 for d in range(len(grid)))
        outputs.append(BroadcastTo.apply(Reshape.apply(t, shape=along), shape=tuple(grid)))
    return tuple(outputs)


class Contiguous(Op):
    """x copied into C-ordered memory (row-major, as PyTorch's contiguous()); the values and the
    gradient pass through unchanged."""

    name = "contiguous"
    inputs = ("x",)

    @staticmethod
    def forward(ctx, x):
        return ctx.xp.array(x, order="C", copy=True)  # a copy even where x is C-ordered

    @staticmethod
    def backward(ctx, grad):
        """dx = grad."""
        return grad


def contiguous(x):
    """A C-ordered copy of x (Tensor.contiguous() returns x itself where it is C-ordered)."""
    return Contiguous.apply(x)


@variants("function")
def tile(input, dims):  # noqa: A002
    """`input` repeated dims[d] times along each dim d (numpy's tile; PyTorch's tile, and its repeat
    when dims has a number per dim): `input` gains leading dims of size 1 when dims is longer, dims
    leading 1s when shorter. Composed of reshape, broadcast_to, reshape: each element's gradient
    is the sum over its copies."""
    return tile_as("tile", input, dims)


def tile_as(caller: str, x, reps):
    """`tile`, its errors naming `caller` (Tensor.repeat's say "repeat")."""
    shape = shape_of(x)
    try:
        reps = (_whole(reps),) if isinstance(reps, (int, np.integer)) else tuple(map(_whole, reps))
    except TypeError:
        raise DTypeError(f"{caller}: reps must be ints, got {reps!r}") from None
    if not reps:
        raise ArgumentError(f"{caller}: needs at least one repetition count, got none")
    if any(r < 0 for r in reps):
        raise ArgumentError(f"{caller}: reps must be non-negative, got {reps}")
    ndim = max(len(reps), len(shape))
    reps = (1,) * (ndim - len(reps)) + reps
    shape = (1,) * (ndim - len(shape)) + shape
    # (n0, n1) -> (1, n0, 1, n1) -> (r0, n0, r1, n1) -> (r0 * n0, r1 * n1)
    pairs = list(zip(reps, shape, strict=True))
    spread = Reshape.apply(x, shape=tuple(v for _, n in pairs for v in (1, n)))
    copies = BroadcastTo.apply(spread, shape=tuple(v for pair in pairs for v in pair))
    return Reshape.apply(copies, shape=tuple(r * n for r, n in pairs))
