"""ProductSum: a gradient kept as a sum of matrix products until the backward walk reads it.

A weight that one op uses at every time step (a recurrent cell's w_ih and w_hh) gets a gradient
from every step: dW = sum over t of dG_t^T @ X_t. Summed as it arrives, that is T small products
(inner dimension: the batch) and T additions of a weight-sized array, each reading and writing
the whole weight: at batch 32 the products run far below BLAS's speed and the additions cost as
much again. Held as the list of (dG_t, X_t) pairs instead, the sum is one product of the stacked
pairs, [dG_1; ...; dG_T]^T @ [X_1; ...; X_T], whose inner dimension is T * batch.

The contract is between an op's backward and the engine's walk only: a backward may return a
ProductSum for an input (`Op.backward`, not the public gradient kernels, which return arrays),
the walk adds them up (`+` keeps them lazy), and every gradient leaves the walk as an array: a
node's gradient before its backward or hooks run, a leaf's before its hooks and `.grad`, any
gradient under anomaly mode, and all of `Node.run_backward`'s results outside the walk.
"""

from __future__ import annotations

import numpy as np

from .. import backend
from ..errors import ShapeError

# Rows (T * batch) held before the pairs are folded into an array: enough for BLAS to run at
# full speed, few enough that the pairs cost about the memory of the saved gates they come from.
FOLD_ROWS = 2048


class ProductSum:
    """dense + sum_k lefts[k]^T @ rights[k], or with rights None the column sums of the lefts
    (a bias's gradient: sum_k lefts[k]^T @ ones). Immutable: `+` returns a new one."""

    __slots__ = ("dense", "lefts", "rights", "rows", "shape", "dtype")
    __array_ufunc__ = None  # so `array + ProductSum` comes to __radd__, not numpy's broadcasting

    def __init__(self, left, right=None):
        self.lefts, self.rights = [left], [right]
        self.rows = left.shape[0]
        self.dense = None
        self.shape = (left.shape[1],) if right is None else (left.shape[1], right.shape[1])
        self.dtype = left.dtype if right is None else np.result_type(left.dtype, right.dtype)

    def _with(self, dense, lefts, rights, rows) -> ProductSum:
        total = object.__new__(ProductSum)
        total.dense, total.lefts, total.rights, total.rows = dense, lefts, rights, rows
        total.shape, total.dtype = self.shape, self.dtype
        if rows >= FOLD_ROWS:
            total.dense, total.lefts, total.rights, total.rows = total.value(), [], [], 0
        return total

    def __add__(self, other) -> ProductSum:
        if other.shape != self.shape:  # column sums are 1-D, products 2-D: never mixed
            raise ShapeError(
                f"ProductSum: cannot add a gradient of shape {other.shape} to one of {self.shape}"
            )
        if type(other) is ProductSum:
            dense = _add(self.dense, other.dense)
            lefts, rights = self.lefts + other.lefts, self.rights + other.rights
            return self._with(dense, lefts, rights, self.rows + other.rows)
        return self._with(_add(self.dense, other), self.lefts, self.rights, self.rows)

    __radd__ = __add__

    def value(self):
        """The sum as one array (new memory): the stacked pairs' one product, plus the dense
        part."""
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


def _add(a, b):
    return b if a is None else a if b is None else a + b


def materialized(grad):
    """`grad` as an array: a ProductSum's value, anything else as it is."""
    return grad.value() if type(grad) is ProductSum else grad
