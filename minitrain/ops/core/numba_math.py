"""Scalar helpers for the numba kernels where numba's own are slow (a vectorisable exp and a
lane-split row max) or where a kernel's fastmath would change the result (a subtraction kept as
written), and the loop that tells a kernel's serial build from its parallel one."""

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
# exp_nonpositive_loose's polynomial for float32 (lowest degree first): 1 + r + r^2 c(r), c of
# degree 3 nearest (exp(r) - 1 - r) / r^2 in exp's relative error on |r| <= ln2 / 2 (a weighted
# least-squares fit on 2000 Chebyshev nodes, reweighted by its error until it equioscillates:
# Lawson's iteration; the two leading coefficients held at 1, which float32 holds exactly),
# 1.05e-7 relative at worst: two multiply-adds an element fewer than the degree-7 Taylor one.
_EXP_LOOSE_FLOAT32 = (
    1.0,
    1.0,
    0.49999231780921616,
    0.1666711446068459,
    0.041890114271710396,
    0.0083125256140525,
)


def exp_nonpositive(v):
    """exp(v) for v <= 0, float32 or float64, within 2 ulps of numpy's exp (1 in float64), 0
    below EXP_MIN; nan stays nan. In numba code (after `register()`) the arithmetic version
    above, picked by v's dtype; in Python, numpy's exp."""
    return np.exp(v)


def exp_nonpositive_loose(v):
    """exp(v) for v <= 0 as `exp_nonpositive`, a little cheaper and looser in float32: within 3
    ulps of numpy's exp (a degree-5 minimax polynomial, _EXP_LOOSE_FLOAT32); in float64 the same
    as `exp_nonpositive`. For kernels whose own error is larger anyway (exact gelu's erfc)."""
    return np.exp(v)


def row_max(x):
    """The largest element of a non-empty 1-D array. In numba code (after `register()`) a loop
    in four interleaved lanes: a plain max loop waits on each compare (vectorising it needs
    fastmath's "no NaNs"). A nan in the row may or may not come out as the max; either way
    exp(x - max) is nan at the nan, so a softmax row's sum, and with it the whole row, is nan, as
    in the generic kernel. In Python, numpy's max."""
    return x.max()


def log_probability(x, top, log_total):
    """(x - top) - log_total: the log-softmax of x in a row with max top and sum of exp(x - top)
    exp(log_total), rounded as written. In numba code (after `register()`) it stays so in a
    caller compiled with fastmath "reassoc", which would otherwise rewrite it as
    x - (top + log_total) to hoist the sum out of the row loop: top + log_total rounds to the
    spacing of top (an error of 0.5 at logits of 1e7 in float32), where x - top is exact for x
    within a factor of 2 of top. In Python, the same arithmetic."""
    return (x - top) - log_total


@functools.cache
def register() -> None:
    """Give `exp_nonpositive`, `exp_nonpositive_loose`, `row_max` and `log_probability` their
    numba implementations (on first use, so that importing minitrain does not import numba).
    Call it before compiling a kernel that calls them.

    They are overloads of plain functions, not jitted closures, because numba's on-disk cache
    keys a kernel on the pickled contents of its closure cells: a captured dispatcher pickles
    differently in every process, so a kernel capturing one was compiled anew in each. exp is
    compiled as a function of its own with its own fastmath flags, kept after LLVM inlines it: a
    caller's "reassoc" (which its sums need) would otherwise fold the two-part ln2 back into one
    constant.

    numba's cache does not know that a kernel elsewhere depends on this file: after editing an
    overload here, delete the cached kernels (minitrain/ops/*/__pycache__/*.nbi and *.nbc), or the
    callers keep the old code.
    """
    extending = importlib.import_module("numba.extending")
    types = importlib.import_module("numba.core.types")

    def exp_of(v, loose):
        if not isinstance(v, types.Float) or np.dtype(v.name) not in _EXP_FORMATS:
            return None
        real = np.dtype(v.name).type
        degree, exp_min, ln2_hi, ln2_lo, bits, mantissa, bias = _EXP_FORMATS[np.dtype(real)]
        exp_min, log2_e = real(exp_min), real(1 / math.log(2))
        ln2_hi, ln2_lo = real(ln2_hi), real(ln2_lo)
        zero = real(0)
        if loose and real is np.float32:
            polynomial = tuple(real(c) for c in reversed(_EXP_LOOSE_FLOAT32))  # highest first
        else:  # Taylor's, highest degree first
            polynomial = tuple(real(1 / math.factorial(n)) for n in range(degree, -1, -1))

        def exp(v):
            k = np.rint(v * log2_e)
            r = (v - k * ln2_hi) - k * ln2_lo  # nan stays nan from here on
            e = zero
            for coefficient in polynomial:
                e = e * r + coefficient
            e *= bits((bits(k) + bias) << mantissa).view(real)
            return zero if v < exp_min else e

        return exp

    @extending.overload(exp_nonpositive, jit_options={"fastmath": {"contract"}})
    def _exp_nonpositive(v):
        return exp_of(v, loose=False)

    @extending.overload(exp_nonpositive_loose, jit_options={"fastmath": {"contract"}})
    def _exp_nonpositive_loose(v):
        return exp_of(v, loose=True)

    # Not inline="always": numba's IR inlining retypes the loop inside every caller, which cost
    # about 0.1-0.6 s of each caller's first compile (attention's forward_block, cross_entropy's
    # forward_rows, softmax), on an empty cache. As its own function it compiles once; a call per
    # row is lost in the row's work (measured: no slower at 1024 rows of 65 to 1000 classes).
    @extending.overload(row_max)
    def _row_max(x):
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

    # Compiled on its own without "reassoc", like exp: the flags stay on its instructions when
    # LLVM inlines it, and the caller's "reassoc" alone cannot regroup them.
    @extending.overload(log_probability, jit_options={"fastmath": False})
    def _log_probability(x, top, log_total):
        def as_written(x, top, log_total):
            return (x - top) - log_total

        return as_written


def loop(parallel: bool):
    """The outer loop of a kernel's parallel build (numba.prange) or its serial one (range).

    A kernel family defined in a factory takes it as a closure variable: besides choosing the
    loop, that keeps the two builds apart in numba's on-disk cache, whose key ignores the
    `parallel` option but includes the closure's contents. Which build a call runs is the
    caller's choice, by the size of its work (each family's threshold): a parallel region wakes
    a thread, and after a multi-threaded GEMM OpenBLAS's workers spin on the cores for a while,
    so a parallel loop between GEMMs waits for a core; only work well above that wait pays for
    a parallel build."""
    return importlib.import_module("numba").prange if parallel else range
