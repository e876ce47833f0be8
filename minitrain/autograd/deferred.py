"""Gradients summed lazily: kept as the pieces they arrive in until the backward walk reads them.

Two sums are cheaper whole than piece by piece:

- `ProductSum`. A weight that one op uses at every time step (a recurrent cell's w_hh) gets a
  gradient from every step: dW = sum over t of dG_t^T @ X_t. Summed as it arrives, that is T
  small products (inner dimension: the batch) and T additions of a weight-sized array. Held as
  the (dG_t, X_t) pairs, the sum is one product of the stacked pairs,
  [dG_1; ...; dG_T]^T @ [X_1; ...; X_T], whose inner dimension is T * batch.
- `SliceSum`. A tensor read slice by slice (x[t] for each time step) gets from each getitem a
  gradient of its whole size, zeros but for the slice: T slices, T full-size arrays summed,
  O(T^2). Held as the (index, value) pieces, the sum is one array of zeros with each piece added
  at its index, O(T).

The contract is between an op's backward and the engine's walk only: a backward may return a
DeferredSum for an input (`Op.backward`, never a public gradient kernel, which returns arrays),
the walk adds them up (`+` keeps them lazy, a new object each time), and every gradient leaves
the walk as an array: a node's gradient before its backward or hooks run, a leaf's before its
hooks and `.grad`, any gradient under anomaly mode, and all of `Node.run_backward`'s results
outside the walk.
"""

from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..errors import ShapeError

# Rows (T * batch) a ProductSum holds before folding its pairs into an array: enough for BLAS to
# run at full speed, few enough that the pairs cost about the memory of the saved gates they
# come from.
FOLD_ROWS = 2048


class DeferredSum:
    """What both sums share: shape and dtype, `+` with arrays on either side, `value()`."""

    __slots__ = ("dense", "shape", "dtype")
    __array_ufunc__ = None  # so `array + sum` comes to __radd__, not to numpy's broadcasting

    def __add__(self, other):
        if other.shape != self.shape:
            raise ShapeError(
                f"{type(self).__name__}: cannot add a gradient of shape {other.shape} to one of "
                f"{self.shape}"
            )
        if type(other) is type(self):
            return self._plus(other)
        if isinstance(other, DeferredSum):  # the other kind: both read now
            return self.value() + other.value()
        return self._with_dense(_add(self.dense, other))

    __radd__ = __add__

    def value(self):
        """The sum as one array, in new memory (a .grad may take it as its own)."""
        raise NotImplementedError

    def _plus(self, other):
        raise NotImplementedError

    def _with_dense(self, dense):
        raise NotImplementedError


def _add(a, b):
    return b if a is None else a if b is None else a + b


class ProductSum(DeferredSum):
    """dense + sum_k lefts[k]^T @ rights[k], or with rights None the column sums of the lefts
    (a bias's gradient: sum_k lefts[k]^T @ ones)."""

    __slots__ = ("lefts", "rights", "rows")

    def __init__(self, left, right=None):
        self.lefts, self.rights, self.rows, self.dense = [left], [right], left.shape[0], None
        self.shape = (left.shape[1],) if right is None else (left.shape[1], right.shape[1])
        self.dtype = left.dtype if right is None else np.result_type(left.dtype, right.dtype)

    def _made(self, dense, lefts, rights, rows) -> ProductSum:
        total = object.__new__(ProductSum)
        total.dense, total.lefts, total.rights, total.rows = dense, lefts, rights, rows
        total.shape, total.dtype = self.shape, self.dtype
        if rows >= FOLD_ROWS:
            total.dense, total.lefts, total.rights, total.rows = total.value(), [], [], 0
        return total

    def _plus(self, other):
        dense = _add(self.dense, other.dense)
        lefts, rights = self.lefts + other.lefts, self.rights + other.rights
        return self._made(dense, lefts, rights, self.rows + other.rows)

    def _with_dense(self, dense):
        return self._made(dense, self.lefts, self.rights, self.rows)

    def value(self):
        """The stacked pairs' one product, plus the dense part."""
        if not self.lefts:
            return self.dense.copy()
        xp = backend.array_module(self.lefts[0])
        left = self.lefts[0] if len(self.lefts) == 1 else xp.concatenate(self.lefts)
        if self.rights[0] is None:
            total = left.sum(axis=0)
        else:
            right = self.rights[0] if len(self.rights) == 1 else xp.concatenate(self.rights)
            total = left.T @ right
        if self.dense is not None:
            total += self.dense
        return total

    def __repr__(self):
        return f"<ProductSum {self.shape} of {len(self.lefts)} products, {self.rows} rows>"


class SliceSum(DeferredSum):
    """dense (or zeros) + each piece's value added at its index, for indices that pick each
    element at most once (basic slicing, boolean masks, integer arrays without repeats)."""

    __slots__ = ("pieces", "held")

    def __init__(self, shape: tuple, index, value):
        self.pieces, self.held, self.dense = [(index, value)], value.size, None
        self.shape, self.dtype = tuple(shape), value.dtype

    def _made(self, dense, pieces, held) -> SliceSum:
        total = object.__new__(SliceSum)
        total.dense, total.pieces, total.held = dense, pieces, held
        total.shape, total.dtype = self.shape, self.dtype
        if held > math.prod(self.shape):  # the pieces outgrew the array they add up to
            total.dense, total.pieces, total.held = total.value(), [], 0
        return total

    def _plus(self, other):
        dense = _add(self.dense, other.dense)
        return self._made(dense, self.pieces + other.pieces, self.held + other.held)

    def _with_dense(self, dense):
        return self._made(dense, self.pieces, self.held)

    def value(self):
        """zeros (or a copy of the dense part) with every piece added at its index."""
        if self.dense is not None:
            total = self.dense.copy()
        else:
            xp = backend.array_module(self.pieces[0][1])
            total = xp.zeros(self.shape, self.dtype)
        for index, value in self.pieces:
            total[index] += value
        return total

    def __repr__(self):
        return f"<SliceSum {self.shape} of {len(self.pieces)} pieces>"


def materialized(grad):
    """`grad` as an array: a DeferredSum's value, anything else as it is."""
    return grad.value() if isinstance(grad, DeferredSum) else grad
