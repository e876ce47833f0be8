"""PyTorch's rearranging ops, each composed of shape and indexing ops: roll, unfold (a dim's
sliding windows), diagonal, diag, diag_embed, unflatten, repeat_interleave, movedim (moveaxis),
narrow, swapaxes (swapdims) and rot90. Their gradients are those ops' own: a getitem's backward
writes into zeros (adding only where an element was read twice), a permute's permutes back."""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ...errors import ArgumentError, DimensionError, DTypeError, IndexOutOfRangeError, ShapeError
from ...tensor import Tensor
from ..core.checks import normalize_one_axis
from ..core.op import shape_of
from ..core.variants import variants
from .indexing import GetItem, GetItemGrad
from .shape import BroadcastTo, Flip, Permute, Reshape, Transpose

__all__ = [
    "diag",
    "diag_embed",
    "diagonal",
    "movedim",
    "moveaxis",
    "narrow",
    "repeat_interleave",
    "roll",
    "rot90",
    "swapaxes",
    "swapdims",
    "unflatten",
    "unfold",
]


def _int(caller: str, name: str, value) -> int:
    """An int argument (numpy's too, not bool), or a DTypeError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DTypeError(f"{caller}: {name} must be an int, got {value!r}")
    return int(value)


def _ints(caller: str, name: str, value) -> tuple[int, ...]:
    """An int or a sequence of ints, as a tuple."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    try:
        items = tuple(value)
    except TypeError:
        raise DTypeError(
            f"{caller}: {name} must be an int or a tuple of ints, got {value!r}"
        ) from None
    return tuple(_int(caller, name, item) for item in items)


def _dim(caller: str, dim, ndim: int) -> int:
    """One dim of a tensor with at least one dim, as a non-negative int."""
    if not ndim:
        raise DimensionError(f"{caller}: dim {dim} is out of range for a 0-d tensor")
    return normalize_one_axis(dim, ndim, caller)


def _xp(x):
    return backend.array_module(x.array if isinstance(x, Tensor) else np.asarray(x))


def _along(axis: int, index) -> tuple:
    """The full index that applies `index` (a slice or an integer array) to dim `axis`."""
    return (slice(None),) * axis + (index,)


@variants("function", "method")
def roll(input, shifts, dims=None):  # noqa: A002
    """`input`'s elements moved `shifts` places along `dims` (an int or a tuple, one shift per dim),
    those pushed past the end coming back at the start; with dims None, along `input` flattened, its
    shape kept. Each dim is a getitem by a permutation: the backward writes the gradient back
    (every element is read once, so nothing sums)."""
    shape = shape_of(input)
    shifts = _ints("roll", "shifts", shifts)
    if dims is None:
        if len(shifts) != 1:
            raise ArgumentError(
                f"roll: with dims=None x is rolled flat, by one shift; got shifts {shifts}"
            )
        flat = Reshape.apply(input, shape=(math.prod(shape),))
        return Reshape.apply(_rolled(flat, shifts, (0,), (flat.shape[0],)), shape=shape)
    dims = _ints("roll", "dims", dims)
    if not shifts or len(shifts) != len(dims):
        raise ArgumentError(f"roll: needs one shift per dim, got shifts {shifts} and dims {dims}")
    axes = tuple(_dim("roll", d, len(shape)) for d in dims)
    return _rolled(input, shifts, axes, shape)


def _rolled(x, shifts, axes, shape):
    xp = _xp(x)
    for shift, axis in zip(shifts, axes, strict=True):
        size = shape[axis]
        source = (xp.arange(size) - shift) % size if size else xp.arange(0)  # out[i] = x[i - s]
        x = GetItem.apply(x, index=_along(axis, source), accumulate=False)
    return x


@variants("method")
def unfold(input, dimension: int, size: int, step: int):  # noqa: A002
    """The windows of `size` elements `step` apart along `dimension` (PyTorch's Tensor.unfold):
    that dim becomes the number of windows, (n - size) // step + 1, and a new last dim of `size`
    holds each window. A copy, where PyTorch's is a view of `input`. Backward writes each window's
    gradient back, adding where windows overlap (step < size)."""
    shape = shape_of(input)
    size, step = _int("unfold", "size", size), _int("unfold", "step", step)
    if step <= 0:
        raise ArgumentError(f"unfold: step must be positive, got {step}")
    if size < 0:
        raise ArgumentError(f"unfold: size must be non-negative, got {size}")
    if not shape:  # as PyTorch: a 0-d x is one element, its windows a 1-D result of `size`
        normalize_one_axis(dimension, 0, "unfold")
        return Reshape.apply(unfold(Reshape.apply(input, shape=(1,)), 0, size, step), shape=(size,))
    axis = _dim("unfold", dimension, len(shape))
    if size > shape[axis]:
        raise ShapeError(
            f"unfold: size {size} is larger than dim {axis} of shape {shape} ({shape[axis]})"
        )
    xp = _xp(input)
    count = (shape[axis] - size) // step + 1
    windows = (xp.arange(count) * step)[:, None] + xp.arange(size)  # (count, size) positions
    picked = GetItem.apply(input, index=_along(axis, windows), accumulate=step < size)
    last = len(shape)  # the window dim, axis + 1, goes last
    if axis + 1 == last:
        return picked
    order = tuple(d for d in range(last + 1) if d != axis + 1) + (axis + 1,)
    return Permute.apply(picked, dims=order)


def _diagonal_positions(xp, rows: int, cols: int, offset: int):
    """(row indices, column indices) of the diagonal `offset` of a rows x cols matrix."""
    first_row, first_col = max(-offset, 0), max(offset, 0)
    length = max(min(rows - first_row, cols - first_col), 0)
    steps = xp.arange(length)
    return steps + first_row, steps + first_col


def _two_dims(caller: str, dim1, dim2, ndim: int) -> tuple[int, int]:
    first, second = _dim(caller, dim1, ndim), _dim(caller, dim2, ndim)
    if first == second:
        raise ArgumentError(f"{caller}: dim1 and dim2 name the same dim ({dim1}, {dim2})")
    return first, second


@variants("function", "method")
def diagonal(input, offset: int = 0, dim1: int = 0, dim2: int = 1):  # noqa: A002
    """The diagonal `offset` (above the main one when positive) of the matrices in dims dim1 and
    dim2 of `input`: those dims are removed and a last dim holds the diagonal (PyTorch's diagonal, a
    copy where PyTorch's is a view). Backward writes the gradient on the diagonal of zeros."""
    return _diagonal(input, offset, dim1, dim2)


def _diagonal(x, offset, dim1, dim2):
    shape = shape_of(x)
    offset = _int("diagonal", "offset", offset)
    if len(shape) < 2:
        raise ShapeError(f"diagonal: needs a tensor of at least 2 dims, got shape {shape}")
    first, second = _two_dims("diagonal", dim1, dim2, len(shape))
    order = tuple(d for d in range(len(shape)) if d not in (first, second)) + (first, second)
    if order != tuple(range(len(shape))):
        x = Permute.apply(x, dims=order)
    rows, cols = _diagonal_positions(_xp(x), shape[first], shape[second], offset)
    return GetItem.apply(x, index=(Ellipsis, rows, cols), accumulate=False)


@variants("function", "method")
def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: A002
    """Matrices with `input`'s last dim on their diagonal `offset`, zeros elsewhere, in the new dims
    dim1 and dim2 of the result (`input`'s other dims keep their order): the inverse of diagonal, as
    PyTorch's diag_embed. Its backward reads the diagonal back."""
    shape = shape_of(input)
    offset = _int("diag_embed", "offset", offset)
    ndim = len(shape) + 1
    first, second = _two_dims("diag_embed", dim1, dim2, ndim)
    side = shape[-1] + abs(offset)
    rows, cols = _diagonal_positions(_xp(input), side, side, offset)
    embedded = GetItemGrad.apply(
        input, shape=shape[:-1] + (side, side), index=(Ellipsis, rows, cols)
    )
    batch = iter(range(ndim - 2))
    order = tuple(
        ndim - 2 if d == first else ndim - 1 if d == second else next(batch) for d in range(ndim)
    )
    if order == tuple(range(ndim)):
        return embedded
    return Permute.apply(embedded, dims=order)


@variants("function", "method")
def diag(input, diagonal: int = 0):  # noqa: A002
    """A 1-D `input` as a square matrix with `input` on its diagonal `diagonal`; a 2-D `input`'s
    diagonal `diagonal` as a 1-D tensor (PyTorch's diag)."""
    shape = shape_of(input)
    if len(shape) == 1:
        return diag_embed(input, diagonal)
    if len(shape) == 2:
        return _diagonal(input, diagonal, 0, 1)
    raise ShapeError(f"diag: takes a 1-D or 2-D tensor, got shape {shape}")


@variants("function", "method")
def unflatten(input, dim: int, sizes):  # noqa: A002
    """`input` with dim `dim` split into dims of `sizes` (one may be -1, inferred), whose product
    must be that dim's size: the inverse of flatten (PyTorch's unflatten)."""
    shape = shape_of(input)
    axis = _dim("unflatten", dim, len(shape))
    sizes = _ints("unflatten", "sizes", sizes)
    size = shape[axis]
    if not sizes:
        raise ArgumentError("unflatten: sizes must not be empty")
    if sizes.count(-1) > 1 or any(n < -1 for n in sizes):
        raise ArgumentError(
            f"unflatten: sizes {sizes} must be non-negative, but for one -1 (inferred)"
        )
    known = math.prod(n for n in sizes if n != -1)
    if -1 in sizes and known and size % known == 0:
        sizes = tuple(size // known if n == -1 else n for n in sizes)
    elif -1 in sizes or known != size:
        raise ShapeError(
            f"unflatten: sizes {sizes} do not multiply up to {size}, the size of dim {axis} of "
            f"shape {shape}"
        )
    return Reshape.apply(input, shape=shape[:axis] + sizes + shape[axis + 1 :])


@variants("function", "method")
def repeat_interleave(input, repeats=None, dim: int | None = None, *, output_size=None):  # noqa: A002
    """Each element of `input` repeated `repeats` times in place along `dim` (x flattened when
    dim is None): repeats is an int, or an integer tensor of one count per element of that dim
    (or of one count for all). Given only `input`, an integer tensor of counts, it returns
    the indices 0, 1, ... each repeated its count, as PyTorch's repeat_interleave(repeats).
    An int count is a broadcast (its gradient sums the copies), counts per element a getitem."""
    if repeats is None:
        counts = _counts(input, None)
        xp = _xp(input)
        return Tensor(xp.repeat(xp.arange(counts.shape[0]), counts))
    shape = shape_of(input)
    if dim is None:  # input flattened
        shape, axis = (math.prod(shape),), 0
        input = Reshape.apply(input, shape=shape)
    else:
        axis = _dim("repeat_interleave", dim, len(shape))
    size = shape[axis]
    counts = _counts(repeats, size)
    total = int(counts.sum()) if counts.ndim else int(counts) * size
    if output_size is not None and _int("repeat_interleave", "output_size", output_size) != total:
        raise ArgumentError(
            f"repeat_interleave: output_size is {output_size}, but the repeats make {total}"
        )
    if counts.ndim == 0:
        count = int(counts)
        lead, rest = shape[: axis + 1], shape[axis + 1 :]
        spread = Reshape.apply(input, shape=lead + (1,) + rest)
        copies = BroadcastTo.apply(spread, shape=lead + (count,) + rest)
        return Reshape.apply(copies, shape=shape[:axis] + (size * count,) + rest)
    xp = _xp(input)
    source = xp.repeat(xp.arange(size), counts)  # each position as often as its count
    return GetItem.apply(input, index=_along(axis, source), accumulate=True)


def _counts(repeats, size):
    """repeat_interleave's counts: a 0-d array (one count for every element) or a 1-D array of
    `size` counts (`size` None: any length, the counts given alone), all non-negative."""
    caller = "repeat_interleave"
    if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, bool):
        counts = np.asarray(int(repeats))
    else:
        counts = repeats.array if isinstance(repeats, Tensor) else repeats
        if not backend.is_array(counts):
            counts = np.asarray(counts)
        if counts.dtype.kind not in "iu":
            raise DTypeError(f"{caller}: repeats must be integers, got dtype {counts.dtype}")
    if counts.ndim > 1 or (size is None and counts.ndim != 1):
        wanted = "1-D" if size is None else "an int, 0-d or 1-D"
        raise ShapeError(f"{caller}: repeats must be {wanted}, got shape {counts.shape}")
    if size is not None and counts.shape == (1,):
        counts = counts.reshape(())
    if counts.size and int(counts.min()) < 0:
        raise ArgumentError(f"{caller}: repeats must be non-negative, got {int(counts.min())}")
    if counts.ndim == 1 and size is not None and counts.shape[0] != size:
        raise ShapeError(
            f"{caller}: repeats has {counts.shape[0]} counts, but the dim repeated has {size} "
            f"elements"
        )
    return counts


@variants("function", "method", aliases=("moveaxis",))
def movedim(input, source, destination):  # noqa: A002
    """`input` with its dims `source` (an int or a tuple) moved to the places `destination`, the
    others keeping their order in the places left (PyTorch's movedim, numpy's moveaxis)."""
    shape = shape_of(input)
    source = _ints("movedim", "source", source)
    destination = _ints("movedim", "destination", destination)
    if len(source) != len(destination):
        raise ArgumentError(
            f"movedim: source {source} and destination {destination} must name as many dims"
        )
    ndim = len(shape)
    if not ndim:  # a 0-d tensor's dims 0 and -1 name its one place: nothing moves
        for d in source + destination:
            normalize_one_axis(d, 0, "movedim")
        return Permute.apply(input, dims=())
    moved = tuple(_dim("movedim", d, ndim) for d in source)
    places = tuple(_dim("movedim", d, ndim) for d in destination)
    for name, dims, given in (("source", moved, source), ("destination", places, destination)):
        if len(set(dims)) != len(dims):
            raise ArgumentError(f"movedim: {name} {given} repeats a dim")
    order = [None] * ndim
    for d, place in zip(moved, places, strict=True):
        order[place] = d
    rest = iter(d for d in range(ndim) if d not in moved)
    return Permute.apply(input, dims=tuple(next(rest) if d is None else d for d in order))


moveaxis = movedim


@variants("function", "method")
def narrow(input, dim: int, start, length: int):  # noqa: A002
    """The `length` elements of `input` from `start` along `dim` (start may be negative, counting
    from the end, or a 0-d integer tensor): a view, as PyTorch's narrow."""
    shape = shape_of(input)
    if not shape:
        raise ShapeError("narrow: cannot narrow a 0-d tensor")
    axis = _dim("narrow", dim, len(shape))
    if isinstance(start, Tensor) and start.ndim == 0 and start.dtype.kind in "iu":
        start = start.item()
    start, length = _int("narrow", "start", start), _int("narrow", "length", length)
    size = shape[axis]
    if not -size <= start <= size:
        raise IndexOutOfRangeError(
            f"narrow: start {start} is out of range for dim {axis} of size {size}"
        )
    if start < 0:
        start += size
    if length < 0 or start + length > size:
        raise ArgumentError(
            f"narrow: start ({start}) + length ({length}) must lie within dim {axis} of size "
            f"{size}, with length >= 0"
        )
    return GetItem.apply(input, index=_along(axis, slice(start, start + length)), accumulate=False)


def _swapped(caller: str, x, first, second):
    ndim = len(shape_of(x))
    if not ndim:  # dims 0 and -1 name a 0-d tensor's one place: nothing moves
        normalize_one_axis(first, 0, caller)
        normalize_one_axis(second, 0, caller)
        return Permute.apply(x, dims=())
    return Transpose.apply(x, dim0=_dim(caller, first, ndim), dim1=_dim(caller, second, ndim))


@variants("function", "method")
def swapaxes(input, axis0: int, axis1: int):  # noqa: A002
    """`input` with dims axis0 and axis1 swapped (PyTorch's swapaxes, a transpose)."""
    return _swapped("swapaxes", input, axis0, axis1)


@variants("function", "method")
def swapdims(input, dim0: int, dim1: int):  # noqa: A002
    """`input` with dims dim0 and dim1 swapped (PyTorch's swapdims, a transpose)."""
    return _swapped("swapdims", input, dim0, dim1)


@variants("function", "method")
def rot90(input, k: int = 1, dims=(0, 1)):  # noqa: A002
    """`input` rotated k quarter turns in the plane of `dims`, from the first dim towards the second
    (PyTorch's rot90): a flip and a transpose; k = 0 a copy."""
    shape = shape_of(input)
    k = _int("rot90", "k", k)
    dims = _ints("rot90", "dims", dims)
    if len(dims) != 2:
        raise ArgumentError(f"rot90: dims must name 2 dims, got {dims}")
    if len(shape) < 2:
        raise ShapeError(f"rot90: needs a tensor of at least 2 dims, got shape {shape}")
    first, second = (_dim("rot90", d, len(shape)) for d in dims)
    if first == second:
        raise ArgumentError(f"rot90: dims must be two different dims, got {dims}")
    turns = k % 4
    if turns == 0:
        return Flip.apply(input, axes=())
    if turns == 2:
        return Flip.apply(input, axes=(first, second))
    flipped = Flip.apply(input, axes=(second if turns == 1 else first,))
    return Transpose.apply(flipped, dim0=first, dim1=second)
