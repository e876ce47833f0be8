"""Indexing: getitem (x[index], with PyTorch's rules where numpy's differ), setitem and assign
(x[index] = value, out of place and in place), and gather."""

from __future__ import annotations

import numpy as np

from ... import backend
from ...arguments import nested_array
from ...autograd.deferred import SliceSum
from ...autograd.grad_mode import is_grad_enabled, recording
from ...errors import DTypeError, IndexOutOfRangeError, IndexTypeError, ShapeError
from ...inplace import write_in_place
from ...tensor import Tensor
from ..core.checks import normalize_one_axis
from ..core.op import Op, array_of, device_module, shape_of
from ..core.operands import array_step
from ..core.variants import variants

__all__ = ["assign", "gather", "getitem", "getitem_grad", "setitem"]


class GetItem(Op):
    """x[index]: basic slicing, integer arrays and boolean masks, as numpy.

    Backward writes the gradient into zeros of x's shape; with integer-array indices an element
    picked several times receives the sum of its gradients (scatter-add)."""

    name = "getitem"
    views = True
    inputs = ("x",)
    attrs = ("index", "accumulate")

    @staticmethod
    def forward(ctx, x):
        try:
            return x[ctx.index]
        except IndexError as exc:
            raise IndexError(f"getitem: {exc} (tensor shape {x.shape})") from None

    @staticmethod
    def backward(ctx, grad):
        """dx = zeros of x's shape with dx[index] += grad (an element picked twice gets both).

        Where the index picks each element once (slices, ints, masks), dx is a SliceSum
        (autograd/deferred.py): the gradients of x's slices add up into one array of x's size,
        not one each (x[t] for every t: O(T), not O(T^2)). Under create_graph, getitem_grad."""
        return _added_at(ctx.xp, grad, ctx.shapes[0], ctx.index, once=not ctx.accumulate)


class GetItemGrad(Op):
    """getitem's backward as an op of its own (as ONNX Runtime makes its gradients graph
    ops): zeros of `shape` with grad added at `index`, an element indexed twice receiving
    both. Its own gradient reads grad back at the index, a getitem, so the derivatives of a
    getitem's gradient (create_graph) go on to any order. Also gather's and the pooling ops'
    backward, whose indices are advanced indices of x."""

    name = "getitem_grad"
    inputs = ("grad",)
    attrs = ("shape", "index")

    @staticmethod
    def forward(ctx, grad):
        return _zeros_added_at(ctx.xp, grad, ctx.shape, ctx.index)

    @staticmethod
    def backward(ctx, grad):
        """dgrad = grad[index]: the values added at the index, read back (a getitem of a
        Tensor grad: the index never mixes ints with arrays, where PyTorch's reading and
        numpy's differ, as getitem_grad splits such an index in two)."""
        return grad[ctx.index]


def _zeros_added_at(xp, grad, shape, index):
    """Zeros of `shape` with grad added at `index`, an element indexed twice receiving both:
    getitem_grad's kernel."""
    out = xp.zeros(shape, dtype=grad.dtype)
    if any(backend.is_array(entry) for entry in index):
        backend.scatter_add(xp, out, index, grad)
    else:  # basic indices pick each element once (and may hold None, which add.at refuses)
        out[index] = grad
    return out


def placed_at(xp, values, shape, index, dtype=None):
    """Zeros of `shape` (and `dtype`, by default values') with `values` written at `index`,
    which picks each element once (a diagonal, one class per position). numpy writes at an index
    only in place, which a Tensor cannot take: for Tensor values (create_graph) the getitem_grad
    op, recorded, whose own gradient reads the values back at the index."""
    if isinstance(values, Tensor):
        return GetItemGrad.apply(values, shape=tuple(shape), index=index)
    out = xp.zeros(shape, dtype=values.dtype if dtype is None else dtype)
    out[index] = values
    return out


def _added_at(xp, grad, shape, index, once: bool = False):
    """The gradient of x (of `shape`) from that of x[index] (getitem's, gather's backward): zeros
    with grad added at index. On arrays (a first-order backward), where the index picks each
    element once (`once`), a SliceSum, which the engine adds up with the other slices of x in
    one array; else getitem_grad's kernel. On a Tensor (create_graph), the getitem_grad op,
    recorded: numpy adds at an index only in place, which a Tensor cannot take."""
    if isinstance(grad, Tensor):
        return GetItemGrad.apply(grad, shape=tuple(shape), index=index)
    if once:
        return SliceSum(shape, index, grad)
    return _zeros_added_at(xp, grad, shape, index)


def getitem_grad(grad, shape, index):
    """The backward of x[index] for an x of `shape`, recorded: zeros of `shape` with `grad`
    added where x[index] picked its elements (getitem's index rules; an element picked twice
    gets both). grad must have x[index]'s shape."""
    shape = tuple(int(n) for n in shape)
    xp = backend.array_module(grad.array if isinstance(grad, Tensor) else grad)
    stand_in = xp.broadcast_to(xp.zeros((), np.int8), shape)  # x's shape, no memory
    first, second, _ = _index_steps(stand_in, index)
    picked = _region(stand_in, first, second).shape
    if shape_of(grad) != picked:
        raise ShapeError(
            f"getitem_grad: grad has shape {shape_of(grad)}, but x[index] of x {shape} has "
            f"shape {picked}"
        )
    if second is None:
        return GetItemGrad.apply(grad, shape=shape, index=first)
    middle = GetItemGrad.apply(grad, shape=stand_in[first].shape, index=second)
    return GetItemGrad.apply(middle, shape=shape, index=first)


def _index_item(item, xp):
    """One index entry as numpy takes it; tensors, lists, tuples and ranges (inside the index
    tuple, x[(1, 0, -1), :], a tuple reads as a list, as in PyTorch) become arrays on x's
    device; an empty list or range indexes nothing, as PyTorch's int64 empty index."""
    if isinstance(item, Tensor):
        item = item.array
    elif isinstance(item, (list, tuple, range)):
        item = np.asarray(item)
        item = item.astype(np.int64) if item.size == 0 else item
    if backend.is_array(item):
        # a copy: the index tensor may change in place later (a step of a compiled program)
        item = array_step(xp.array, item)
        if item.dtype != np.bool_ and item.dtype.kind not in "iu":
            raise IndexTypeError(
                f"getitem: index arrays must be integer or boolean, got {item.dtype}"
            )
        # a 0-d integer index (labels[0]) is an int to PyTorch: it selects before the arrays
        if item.ndim == 0 and item.dtype != np.bool_:
            if recording.capture is not None:  # minitrain.compile cannot replay this read
                recording.capture.breaks("a 0-d tensor used as an index (its value read)")
            return int(item)
        return item
    if item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer)):
        return item
    if isinstance(item, (float, np.floating)):
        raise IndexTypeError(f"getitem: a float cannot index, got {item!r}")
    raise DTypeError(f"getitem: cannot index with {type(item).__name__} ({item!r})")


def _index_tuple(index) -> tuple:
    """The index as a tuple of entries. A list (not a tuple) of fewer than 32 entries holding a
    sequence, a tensor, a slice, None or Ellipsis is read as a tuple, x[[range(2), range(2)]]
    as x[range(2), range(2)]: PyTorch's legacy rule, which it still follows (with a warning);
    any other list is one index array."""
    if isinstance(index, tuple):
        return index
    if (
        isinstance(index, list)
        and len(index) < 32
        and any(
            entry is None
            or entry is Ellipsis
            or isinstance(entry, (list, tuple, range, slice, Tensor))
            or backend.is_array(entry)
            for entry in index
        )
    ):
        return tuple(index)
    return (index,)


def _is_mask(item) -> bool:
    """Whether an index entry is a boolean array."""
    return backend.is_array(item) and item.dtype == np.bool_


def _is_int(entry) -> bool:
    return isinstance(entry, (int, np.integer)) and not isinstance(entry, bool)


def _is_advanced(entry) -> bool:
    """An array, or a bool (numpy's 0-d mask): beside one, numpy reads ints as arrays too."""
    return backend.is_array(entry) or isinstance(entry, bool)


def _plain_part(entry):
    """PyTorch's first step of an index with arrays: ints select, a bool adds a dim."""
    if backend.is_array(entry):
        return slice(None)
    return None if isinstance(entry, bool) else entry


def _array_part(entry, xp):
    """The second: the arrays index what is left, a bool's new dim with [0] (True) or no
    index (False), as PyTorch reads a bool beside arrays."""
    if isinstance(entry, bool):
        return xp.zeros(int(entry), np.int64)
    return entry if backend.is_array(entry) or entry is Ellipsis else slice(None)


def getitem(x, index):
    """x[index]: ints, slices, None, Ellipsis, integer and boolean arrays, with PyTorch's rules.

    These are numpy's, but for one case: numpy counts an int beside an index array as an index
    array too, so x[0, :, [0, 2]] of x (2, 3, 4) is (2, 3), the indexed dims first as they are
    not side by side; PyTorch takes the int first, as a plain index, and gives (3, 2). Here,
    as there, ints and Python bools index first and the arrays then index what is left."""
    first, second, accumulate = _index_steps(x, index)
    if second is None:
        return GetItem.apply(x, index=first, accumulate=accumulate)
    x = GetItem.apply(x, index=first, accumulate=False)
    return GetItem.apply(x, index=second, accumulate=accumulate)


def _index_steps(x, index) -> tuple:
    """(first, second, accumulate): x[index] as numpy indexes, x[first], or x[first][second]
    where PyTorch's ints come before the arrays (see getitem); accumulate where an element may
    be picked twice (integer arrays)."""
    xp = backend.array_module(x.array if isinstance(x, Tensor) else x)
    shape = shape_of(x)
    items = [_index_item(item, xp) for item in _index_tuple(index)]
    # The dims of x each item indexes: a mask as many as it has, None none, Ellipsis the rest
    # (a Python bool is numpy's 0-d mask: it adds a dim and indexes none)
    spans = [
        0 if i is None or i is Ellipsis or isinstance(i, bool) else i.ndim if _is_mask(i) else 1
        for i in items
    ]
    entries, dim = [], 0
    for item, span in zip(items, spans, strict=True):
        if item is Ellipsis:
            span = len(shape) - sum(spans)
        if _is_mask(item):
            # numpy checks the mask's shape; the indices it becomes here would pass unchecked
            if item.shape != shape[dim : dim + span]:
                raise IndexError(
                    f"getitem: boolean mask of shape {item.shape} does not match dims "
                    f"{list(range(dim, dim + span))} of sizes {shape[dim : dim + span]} in "
                    f"tensor shape {shape}"
                )
            entries.extend(item.nonzero())
        else:
            entries.append(item)
        dim += span
    accumulate = any(backend.is_array(i) and not _is_mask(i) for i in items)
    if any(map(_is_int, entries)) and any(map(_is_advanced, entries)):
        second = tuple(_array_part(e, xp) for e in entries if not _is_int(e))
        return tuple(map(_plain_part, entries)), second, accumulate
    if entries and all(map(_is_int, entries)):
        entries.append(Ellipsis)  # numpy's 0-d view of one element, not a copied scalar
    return tuple(entries), None, accumulate


def _region(array, first, second):
    """array[first], or array[first][second]: a view where the indices are basic."""
    return array[first] if second is None else array[first][second]


def _assign(array, first, second, value, caller: str = "setitem") -> None:
    """array[first] = value, or array[first][second] = value (array[first] is then a view)."""
    try:
        if second is None:
            array[first] = value
        else:
            array[first][second] = value
    except ValueError:  # numpy's "could not broadcast": name the shapes, as PyTorch does
        region = _region(array, first, second).shape
        raise ShapeError(
            f"{caller}: a value of shape {shape_of(value)} does not fit x[index] of shape {region}"
        ) from None


class SetItem(Op):
    """x with x[index] = value, out of place (PyTorch's index_put): what `x[index] = value`
    records when it needs a gradient. value broadcasts to x[index] and takes x's dtype."""

    name = "setitem"
    inputs = ("x", "value")
    attrs = ("first", "second")
    broadcast = True

    @staticmethod
    def forward(ctx, x, value):
        out = x.copy()
        _assign(out, ctx.first, ctx.second, value)
        return out

    @staticmethod
    def backward(ctx, grad):
        """dx = grad with zeros where value went (a setitem of grad); dvalue = grad[index],
        summed back over the dims value broadcast along."""
        dx = dvalue = None
        if ctx.needs_grad[0]:
            dx = _written(ctx.xp, grad, ctx.first, ctx.second, 0)
        if ctx.needs_grad[1]:
            dvalue = _region(grad, ctx.first, ctx.second)
            missing = len(ctx.shapes[1]) - dvalue.ndim  # value (1, 3) assigned to (3,)
            if missing > 0:
                dvalue = dvalue.reshape((1,) * missing + dvalue.shape)
        return dx, dvalue


def _written(xp, x, first, second, value):
    """A copy of x with x[first][second] = value (setitem's backward, on grad): on arrays in
    place into the copy; on a Tensor (create_graph) the setitem op, recorded: numpy writes at an
    index only in place, which a Tensor cannot take."""
    if isinstance(x, Tensor):
        return SetItem.apply(x, value, first=first, second=second)
    out = xp.array(x, copy=True)  # x may be a numpy scalar (a 0-d gradient)
    _assign(out, first, second, value)
    return out


def setitem(x, index, value):
    """A copy of x with x[index] = value (getitem's index rules), value broadcast to the
    indexed region and cast to x's dtype; the gradient flows to x outside the region and to
    value inside it."""
    first, second, _ = _index_steps(x, index)
    return SetItem.apply(x, value, first=first, second=second)


def assign(x, index, value):
    """`x[index] = value`, in place: written straight into x's array where no gradient is
    recorded, else recorded as setitem (minitrain/inplace.py has the rules). Returns x."""
    first, second, _ = _index_steps(x, index)
    value_grad = isinstance(value, Tensor) and value.requires_grad
    if is_grad_enabled() and (x.requires_grad or value_grad):
        return write_in_place(
            x, lambda: SetItem.apply(x, value, first=first, second=second), "__setitem__"
        )
    if not getattr(x.array.flags, "writeable", True):  # (CuPy has no such flag)
        raise ShapeError(
            "__setitem__: the tensor's memory is read-only (a broadcast view shares one element "
            "among many); clone it first"
        )
    _assign(
        x.array, first, second, value.array if isinstance(value, Tensor) else value, "__setitem__"
    )
    x.bump_version()
    return x


class Gather(Op):
    """Elements of x picked along one axis by an integer index of x's rank: out has index's
    shape, out[i, j] = x[index[i, j], j] along axis 0 and x[i, index[i, j]] along axis 1."""

    name = "gather"
    inputs = ("x", "index")
    attrs = ("axis",)
    saved = ("index",)

    @staticmethod
    def forward(ctx, x, index):
        ctx.save(index=index)
        return x[along(ctx.xp, index, ctx.axis)]

    @staticmethod
    def backward(ctx, grad):
        """dx = zeros of x's shape with dx[.., index, ..] += grad (a repeated index gets both):
        getitem_grad (the index a constant)."""
        index = along(device_module(ctx), array_of(ctx.index), ctx.axis)
        return _added_at(ctx.xp, grad, ctx.shapes[0], index), None


def along(xp, index, axis) -> tuple:
    """The full index that reads x at index[p] along `axis` for every position p of index: index
    itself there, and in each other dim d the position's own coordinate (an arange along d)."""
    ndim = index.ndim
    return tuple(
        index if d == axis else xp.arange(n).reshape((n,) + (1,) * (ndim - 1 - d))
        for d, n in enumerate(index.shape)
    )


@variants("function", "method")
def gather(input, dim: int, index):  # noqa: A002
    """input's elements picked along `dim` by `index` (PyTorch's gather): an integer tensor with
    input's number of dims, no larger than input outside `dim`; the result has index's shape, and
    an element picked several times receives the sum of its gradients."""
    shape = shape_of(input)
    array = index.array if isinstance(index, Tensor) else index
    if not backend.is_array(array):
        array = nested_array(array, "gather: index")
    if array.dtype.kind not in "iu":
        raise DTypeError(f"gather: index must be an integer tensor, got dtype {array.dtype}")
    if not shape or array.ndim != len(shape):
        raise ShapeError(
            f"gather: index must have as many dims as input, at least one: input has shape "
            f"{shape}, index {array.shape}"
        )
    dim = normalize_one_axis(dim, len(shape), "gather")
    for other, (size, limit) in enumerate(zip(array.shape, shape, strict=True)):
        if other != dim and size > limit:
            raise ShapeError(
                f"gather: index of shape {array.shape} is larger than input of shape {shape} in "
                f"dim {other} (only dim {dim} may differ)"
            )
    if array.size:
        low, high = int(array.min()), int(array.max())
        if low < 0 or high >= shape[dim]:
            raise IndexOutOfRangeError(
                f"gather: index {low if low < 0 else high} is out of range for dim {dim} of "
                f"size {shape[dim]} (input shape {shape})"
            )
    return Gather.apply(input, array, axis=dim)
