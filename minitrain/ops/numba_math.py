"""Scalar helpers for the numba kernels where numba's own are slow: a vectorisable exp and a
lane-split row max. LLVM inlines them into the calling kernel's loop, which it can then
vectorise."""

from __future__ import annotations

import functools
import importlib
import math

import numpy as np

# exp(v) for v <= 0, written in plain arithmetic so LLVM vectorises it (numba's math.exp is a libm
# call per element, several times slower). v = k ln2 + r with k = rint(v / ln2) and |r| <= ln2 / 2;
# exp(r) by its Taylor polynomial (the terms left out are under a tenth of an ulp); 2^k from its
# exponent bits. ln2 comes in two parts (Cody and Waite): ln2_hi has so few bits that k * ln2_hi
# is exact, and ln2_lo carries the rest, so r is as accurate as v itself even for |k| near 1000
# (a one-constant ln2 errs by |k| times its rounding, hundreds of ulps in float64). Below EXP_MIN,
# 2^k would leave the normal range; the result is 0 there (exp(EXP_MIN) is 2e-38 in float32,
# 3e-308 in float64). Per dtype: (Taylor degree, EXP_MIN, ln2_hi, ln2_lo, the integer type of its
# bits, mantissa bits, exponent bias); ln2's split is Cephes's for float32, fdlibm's for float64.
_EXP_FORMATS = {
    np.dtype(np.float32): (7, -87.0, 0.693359375, -2.12194440e-4, np.int32, 23, 127),
    np.dtype(np.float64): (
        13,
        -708.0,
        6.93147180369123816490e-01,
        1.90821492927058770002e-10,
        np.int64,
        52,
        1023,
    ),
}

SUPPORTED = tuple(_EXP_FORMATS)


@functools.cache
def exp_nonpositive(dtype: np.dtype):
    """A numba function exp(v) for v <= 0 in `dtype` (float32 or float64), within 2 ulps of
    numpy's exp (1 in float64); nan stays nan. Callable only from numba code (defined on first
    use, so importing minitrain does not import numba).

    It is its own numba function, not inlined into the caller's numba IR, so that it keeps its
    own fastmath flags after LLVM inlines it: a caller's "reassoc" (which its sums need) would
    otherwise fold the two-part ln2 back into one constant.
    """
    numba = importlib.import_module("numba")
    dtype = np.dtype(dtype)
    real = dtype.type
    degree, exp_min, ln2_hi, ln2_lo, bits, mantissa, bias = _EXP_FORMATS[dtype]
    exp_min, log2_e = real(exp_min), real(1 / math.log(2))
    ln2_hi, ln2_lo = real(ln2_hi), real(ln2_lo)
    zero = real(0)
    taylor = tuple(real(1 / math.factorial(n)) for n in range(degree, -1, -1))  # highest first

    @numba.njit(fastmath={"contract"})
    def exp(v):
        k = np.rint(v * log2_e)
        r = (v - k * ln2_hi) - k * ln2_lo  # nan stays nan from here on
        e = zero
        for coefficient in taylor:
            e = e * r + coefficient
        e *= bits((bits(k) + bias) << mantissa).view(real)
        return zero if v < exp_min else e

    return exp


@functools.cache
def row_max():
    """A numba function: the largest element of a non-empty 1-D array. A plain max loop waits on
    each compare (vectorising it needs fastmath's "no NaNs"), so it runs in four interleaved
    lanes. A nan in the row may or may not come out as the max; either way exp(x - max) is nan at
    the nan, so a softmax row's sum, and with it the whole row, is nan, as in the generic kernel."""
    numba = importlib.import_module("numba")

    @numba.njit(inline="always")
    def largest(x):
        n = x.shape[0]
        lanes_end = n - n % 4
        m0 = m1 = m2 = m3 = x[0]
        for c in range(0, lanes_end, 4):
            m0, m1 = max(m0, x[c]), max(m1, x[c + 1])
            m2, m3 = max(m2, x[c + 2]), max(m3, x[c + 3])
        top = max(max(m0, m1), max(m2, m3))
        for c in range(lanes_end, n):
            top = max(top, x[c])
        return top

    return largest
