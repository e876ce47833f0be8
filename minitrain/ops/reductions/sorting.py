"""Sorting and selection by order: sort, argsort, topk, kthvalue; and the stable order and the
index-routed picking the order statistics (median, quantile) and the running extremes share.

None of them is an op of its own: the order is computed outside the graph (integer indices,
which have no gradient), and the values are x gathered at those indices, so their gradient goes
to the elements picked (a scatter-add, `getitem_grad`), and on to any order through gather's.

Orders are always stable, NaN the largest value, as PyTorch's `stable=True` sort. PyTorch's
default sort and its topk and kthvalue leave the order of equal elements unspecified (the CPU
and CUDA kernels differ); the stable one is one of the orders they allow, and the same on every
device.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError
from ...tensor import Tensor
from ..core.checks import normalize_one_axis
from ..core.op import as_tensor
from ..core.variants import variants
from ..shapes.indexing import gather
from ..shapes.shape import reshape

__all__ = ["argsort", "kthvalue", "sort", "topk"]

# what sort, topk, kthvalue, median(dim), cummax and cummin return, as torch.return_types do
ValuesIndices = namedtuple("ValuesIndices", ["values", "indices"])


def stable_order(array, dim: int, descending: bool = False):
    """The permutation that sorts `array` along dim (int64 indices of array's shape), ascending
    or descending, equal elements kept in their order and NaN the largest (PyTorch's stable
    sort)."""
    xp = backend.array_module(array)
    if not descending:
        return xp.argsort(array, axis=dim, kind="stable")
    # The ascending stable order of the reversed array puts equal elements last-first; reversed
    # again it is descending with equal elements first-first (and NaN, the largest, first).
    reversed_order = xp.argsort(xp.flip(array, dim), axis=dim, kind="stable")
    return xp.flip(array.shape[dim] - 1 - reversed_order, dim)


def first_in_order(array, dim: int, k: int, descending: bool = False):
    """stable_order(array, dim, descending) cut to its first k along dim, picked without sorting
    the rest where k is small: a partition finds the k-th value, the elements beyond it and the
    first of those equal to it are taken in index order, and only those k are sorted (O(n) and
    a sort of k, where the full order is O(n log n)). NaN the largest, ties first-first."""
    n = array.shape[dim]
    if not k or 4 * k >= n or array.dtype.kind not in "iuf":
        return take_along(stable_order(array, dim, descending), dim, 0, k)
    xp = backend.array_module(array)
    a = xp.moveaxis(array, dim, -1)
    floating = a.dtype.kind == "f"
    nans = xp.isnan(a) if floating else xp.zeros(a.shape, bool)
    kth = n - k if descending else k - 1
    threshold = xp.take(xp.partition(a, kth, axis=-1), [kth], axis=-1)
    nan_threshold = xp.isnan(threshold) if floating else xp.zeros(threshold.shape, bool)
    with np.errstate(invalid="ignore"):  # comparisons with NaN: False, as intended
        beyond = (a > threshold) | nans if descending else (a < threshold) & ~nans
    beyond = xp.where(nan_threshold, ~nans if not descending else False, beyond)
    ties = xp.where(nan_threshold, nans, a == threshold)
    need = k - beyond.sum(-1, keepdims=True)
    chosen = beyond | (ties & (xp.cumsum(ties, -1) <= need))
    picked = xp.argsort(~chosen, axis=-1, kind="stable")[..., :k]  # in index order
    within = stable_order(xp.take_along_axis(a, picked, -1), a.ndim - 1, descending)
    return xp.moveaxis(xp.take_along_axis(picked, within, -1), -1, dim)


def values_at(x, dim: int | None, indices) -> Tensor:
    """x's elements at `indices` (an integer array) along dim, gathered: the gradient goes back
    to the elements picked. A 0-d x has dim None and a 0-d index (0)."""
    if dim is None:
        return reshape(gather(reshape(x, (1,)), 0, indices.reshape(1)), ())
    return gather(x, dim, indices)


def only_element(x) -> ValuesIndices:
    """(values, indices) of a selection from a 0-d x: its one element, at index 0 (an int64
    0-d tensor on x's device)."""
    zero = x.xp.zeros((), np.int64)
    return ValuesIndices(values_at(x, None, zero), Tensor(zero.copy()))


def take_along(array, dim: int, start: int, stop: int):
    """array[..., start:stop, ...], the slice along dim."""
    return array[(slice(None),) * dim + (slice(start, stop),)]


def order_input(input, caller: str, bool_ok: bool = True) -> Tensor:  # noqa: A002
    """The input of a sort or selection as a Tensor (its graph kept), refusing bool where
    PyTorch does (topk, kthvalue, median)."""
    x = as_tensor(input)
    if x.dtype.kind not in ("biuf" if bool_ok else "iuf"):
        wanted = "numeric (not bool)" if not bool_ok and x.dtype == np.bool_ else "numeric"
        raise DTypeError(f"{caller}: input must be {wanted}, got {x.dtype}")
    return x


def _count(caller: str, name: str, value, low: int, high: int, x, dim) -> int:
    """topk's k or kthvalue's k: an int in [low, high], high the size of the dim."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DTypeError(f"{caller}: {name} must be an int, got {value!r}")
    if not low <= value <= high:
        raise ArgumentError(
            f"{caller}: {name}={value} is out of range for dim {dim} of size {high} (input "
            f"shape {x.shape}); it must be in [{low}, {high}]"
        )
    return int(value)


@variants("function", "method")
def sort(input, dim: int = -1, descending: bool = False, *, stable: bool = False):  # noqa: A002
    """(values, indices): input sorted along dim, ascending unless `descending`, and where each
    value came from; NaN sorts as the largest value. The order is always stable (`stable` is
    accepted for PyTorch's signature: an unstable sort may return this order too). The values'
    gradient goes to the elements they came from; the indices are outside the graph."""
    x = order_input(input, "sort")
    dim = normalize_one_axis(dim, x.ndim, "sort")
    if dim is None:  # a 0-d tensor: its one element
        return only_element(x)
    indices = stable_order(x.array, dim, bool(descending))
    return ValuesIndices(values_at(x, dim, indices), Tensor(indices))


@variants("function", "method")
def argsort(input, dim: int = -1, descending: bool = False, *, stable: bool = False):  # noqa: A002
    """The indices that sort input along dim (sort's indices, stable, NaN the largest), an int64
    tensor outside the graph."""
    x = order_input(input, "argsort")
    dim = normalize_one_axis(dim, x.ndim, "argsort")
    if dim is None:
        return Tensor(x.xp.zeros((), np.int64))
    return Tensor(stable_order(x.array, dim, bool(descending)))


@variants("function", "method")
def topk(input, k: int, dim: int | None = None, largest: bool = True, sorted: bool = True):  # noqa: A002
    """(values, indices) of the k largest elements along dim (the last by default), or the k
    smallest with largest=False, NaN the largest value. The result is always sorted, largest
    (smallest) first, and among equal elements the first come first (`sorted=False` allows any
    order, PyTorch's too). The values' gradient goes to the elements picked."""
    x = order_input(input, "topk", bool_ok=False)
    dim = normalize_one_axis(-1 if dim is None else dim, x.ndim, "topk")
    size = 1 if dim is None else x.shape[dim]
    k = _count("topk", "k", k, 0, size, x, -1 if dim is None else dim)
    if dim is None:  # a 0-d tensor: k is 0 or 1, and either gives its one element (as PyTorch)
        return only_element(x)
    indices = first_in_order(x.array, dim, k, descending=bool(largest))
    return ValuesIndices(values_at(x, dim, indices), Tensor(indices))


@variants("function", "method")
def kthvalue(input, k: int, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """(values, indices) of the k-th smallest element (k from 1) along dim (the last by
    default), NaN the largest value; among equal elements, the k-th in the stable order. The
    values' gradient goes to the element picked."""
    x = order_input(input, "kthvalue", bool_ok=False)
    dim = normalize_one_axis(-1 if dim is None else dim, x.ndim, "kthvalue")
    size = 1 if dim is None else x.shape[dim]
    k = _count("kthvalue", "k", k, 1, size, x, -1 if dim is None else dim)
    if dim is None:
        return only_element(x)
    indices = take_along(first_in_order(x.array, dim, k), dim, k - 1, k)
    values = values_at(x, dim, indices)
    if keepdim:
        return ValuesIndices(values, Tensor(indices))
    return ValuesIndices(values.squeeze(dim), Tensor(indices.squeeze(dim)))
