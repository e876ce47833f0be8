"""Array math the activations share: stable sigmoid and softplus, the normal CDF, numpy's erfc.

Plain array functions, not ops. The xp ones take numpy or CuPy arrays, and, in a backward under
create_graph, Tensors with xp the graph math (ops/core/graph_math.py), where they record ops, so
that the backward formulas computing with them are differentiable again; `erfc`, for numpy,
which has none, computes it by Cody's rational approximations.
"""

from __future__ import annotations

import math

import numpy as np

from ... import backend
from ...tensor import Tensor

SQRT1_2 = 1.0 / math.sqrt(2.0)  # 1 / sqrt(2): Phi(x) = erfc(-x * SQRT1_2) / 2


def stable_sigmoid(xp, x):
    """1 / (1 + exp(-x)) in the stable two-branch form: with e = exp(-|x|) <= 1 (never
    overflows), 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0. Exact 0 and 1 in the tails.

    A Tensor x (xp the graph math) gets the sigmoid op, the graph math's `expit`: this form's
    slope at x = 0 would be abs's there, 0, where the sigmoid's is 1/4."""
    if isinstance(x, Tensor):
        return xp.expit(x)
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1, e) / (1 + e)


def stable_softplus(xp, v):
    """log(1 + exp(v)) as max(v, 0) + log1p(exp(-|v|)): exp never overflows, log1p keeps the
    small values exact. Recorded for Tensors, its slope is right at v = 0 too: maximum's tie
    gives half, abs's slope 0, and sigmoid(0) = 1/2."""
    return xp.maximum(v, 0) + xp.log1p(xp.exp(-xp.abs(v)))


def normal_cdf(xp, x):
    """Phi(x) = erfc(-x / sqrt(2)) / 2, in x's dtype. erfc rather than 1 + erf(x / sqrt(2)) keeps
    full relative accuracy in the left tail, where 1 + erf cancels. numpy's float32 arrays
    through ERFC_SCALED's formula in float32 (the numba kernels' own: `_normal_cdf_scaled`),
    numpy's others through `erfc` below, in float64; CuPy's through cupyx's; a Tensor x (xp the
    graph math) through the erfc op, so that Phi's derivative phi is recorded too, and so on to
    any order."""
    if isinstance(x, Tensor):
        return 0.5 * xp.erfc(-SQRT1_2 * x)  # the op keeps x's dtype
    if xp is np:
        if x.dtype == np.float32:
            return _normal_cdf_scaled(x)
        return (0.5 * erfc(-SQRT1_2 * np.asarray(x, np.float64))).astype(x.dtype, copy=False)
    return (0.5 * backend.special(xp).erfc(-SQRT1_2 * x)).astype(x.dtype, copy=False)


# |x| beyond which the Gaussian density, and tanh'(inner) of gelu's tanh form, are 0 in float64:
# clamping there first keeps x*x and x**3 from overflowing (and warning) for huge inputs.
GAUSSIAN_TAIL = 40.0

# exp(a^2) * erfc(a) for 0 <= a <= a_max as a rational function P(a) / Q(a), so that
# erfc(a) = exp(-a^2) * P(a) / Q(a) keeps its relative accuracy in the tail, with no branch and no
# libm call: LLVM vectorises it. Past a_max, exp(-a^2) is 0 in the dtype (below numba_math's
# EXP_MIN: -87 in float32, -708 in float64), so a is clamped there. P and Q (coefficients lowest
# degree first, all positive: Q has no zero for a >= 0) are a least-squares fit for relative
# error, reweighted by 1/Q (Loeb's iteration), at 600 (float32) and 500 (float64) Chebyshev
# nodes of [0, a_max], to mpmath's erfc at 40 and 50 digits. Evaluated in the dtype's own
# arithmetic, P / Q is within 5.7e-7 (float32, degrees 3 and 4) and 1e-15 (float64, degrees 9
# and 10) of exp(a^2) * erfc(a), relatively, on the whole interval.
ERFC_SCALED = {
    np.dtype(np.float32): (
        9.4,
        (0.9999995741690327, 1.0269598200666075, 0.4808494840389005, 0.09741643836490273),
        (1.0, 2.155309216197088, 1.9131830500399403, 0.8517245589642798, 0.17268570859063195),
    ),
    np.dtype(np.float64): (
        GAUSSIAN_TAIL * SQRT1_2,
        (0.9999999999999999, 2.2002253189131182, 2.3938315315093806, 1.6546518516667288,
         0.7930551084292478, 0.27224250208987427, 0.06693760141154746, 0.011407991707023798,
         0.001232486818507437, 6.528281186254762e-05),
        (1.0, 3.328604486008612, 5.149759489023032, 4.889181466672683, 3.1640981023627677,
         1.4638831661901934, 0.49258948806133634, 0.1197360722941253, 0.020277994220346644,
         0.002184526007617222, 0.00011571077128395458),
    ),
}  # fmt: skip


def _normal_cdf_scaled(x: np.ndarray) -> np.ndarray:
    """Phi(x) of a float32 numpy array by ERFC_SCALED's formula, as the numba kernels compute
    it (activation.py's `_normal_cdf_and_pdf`), in float32: with a = |x| / sqrt(2),
    Phi(-|x|) = exp(-a^2) P(a) / Q(a) / 2, exp(-a^2) = exp(-x^2 / 2) by Cody's split on |x|
    (`_exp_minus_square`: the rounding of a^2 is not amplified in the tail), and 0 past
    _PHI_ZERO_FLOAT32, as erfc underflows. Within 1e-6 of the true value, relatively, where
    that is a normal float32 (x above -13; 7.6e-7 the largest error on 2 million points of
    [-13, 20]), and absolutely below; 3.5 times faster than Cody's erfc in float64 on 2^19
    elements (7 against 25 ms), which a cold start's first steps run while numba's kernels
    compile."""
    a_max, numerator, denominator = ERFC_SCALED[x.dtype]
    real = x.dtype.type
    y = np.minimum(np.abs(x), real(_PHI_ZERO_FLOAT32))  # nan stays nan
    a = np.minimum(y * real(SQRT1_2), real(a_max))
    lower_tail = _rational(a, (numerator[::-1], denominator[::-1]))
    # exp(-a^2) = exp(-y^2 / 2), split on y itself: a = y / sqrt(2) is already rounded
    lower_tail *= _exp_minus_square(y, real(0.5))
    lower_tail *= real(0.5)
    return np.where(x > 0, real(1) - lower_tail, lower_tail)


# |x| from which exp(-x^2 / 2) is 0 in float32 (below 2^-149 from |x| = 14.4)
_PHI_ZERO_FLOAT32 = 14.5


# erfc for numpy: W. J. Cody, "Rational Chebyshev approximations for the error function",
# Math. Comp. 23 (1969) 631-637, as in netlib's CALERF (SPECFUN), good to about 1e-16 relative
# over the whole line, so float64 gradient checks and PyTorch comparisons hold.
# (Abramowitz-Stegun 7.1.26 is good only to 1.5e-7; np.vectorize(math.erfc) is exact but makes a
# Python call per element.) Each pair is p(t) / q(t), coefficients highest degree first.
_ERF_NEAR = (  # erf(x) = x * p(x^2) / q(x^2) for |x| <= 0.46875
    (1.85777706184603153e-1, 3.16112374387056560e00, 1.13864154151050156e02,
     3.77485237685302021e02, 3.20937758913846947e03),
    (1.0, 2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
     2.84423683343917062e03),
)  # fmt: skip
_ERFC_MID = (  # erfc(y) = exp(-y^2) * p(y) / q(y) for 0.46875 < y <= 4
    (2.15311535474403846e-8, 5.64188496988670089e-1, 8.88314979438837594e00,
     6.61191906371416295e01, 2.98635138197400131e02, 8.81952221241769090e02,
     1.71204761263407058e03, 2.05107837782607147e03, 1.23033935479799725e03),
    (1.0, 1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
     1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
     3.43936767414372164e03, 1.23033935480374942e03),
)  # fmt: skip
_ERFC_FAR = (  # erfc(y) = exp(-y^2) / y * (1/sqrt(pi) - z p(z) / q(z)), z = 1/y^2, for y > 4
    (1.63153871373020978e-2, 3.05326634961232344e-1, 3.60344899949804439e-1,
     1.25781726111229246e-1, 1.60837851487422766e-2, 6.58749161529837803e-4),
    (1.0, 2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
     6.05183413124413191e-2, 2.33520497626869185e-3),
)  # fmt: skip
_ONE_OVER_SQRT_PI = 5.6418958354775628695e-1
_ERFC_UNDERFLOW = 30.0  # erfc(30) < 1e-392: 0 in float64, as is everything beyond


def erfc(x: np.ndarray) -> np.ndarray:
    """erfc(x) of a float64 numpy array, by Cody's three rational approximations."""
    y = np.abs(x)
    out = np.empty_like(y)
    near = y <= 0.46875
    if near.any():  # erfc = 1 - erf, with the sign of x inside erf
        x_near = x[near]
        z = x_near * x_near
        out[near] = 1.0 - x_near * _rational(z, _ERF_NEAR)
    tail = ~near  # NaN lands here and stays NaN
    if tail.any():
        y_tail = np.minimum(y[tail], _ERFC_UNDERFLOW)
        ratio = np.empty_like(y_tail)
        mid = y_tail <= 4.0
        ratio[mid] = _rational(y_tail[mid], _ERFC_MID)
        y_far = y_tail[~mid]
        z = 1.0 / (y_far * y_far)
        ratio[~mid] = (_ONE_OVER_SQRT_PI - z * _rational(z, _ERFC_FAR)) / y_far
        ratio *= _exp_minus_square(y_tail)
        out[tail] = np.where(x[tail] < 0, 2.0 - ratio, ratio)  # erfc(-y) = 2 - erfc(y)
    return out


def _rational(t, coefficients):
    """p(t) / q(t) by Horner's rule, updating one array in place (numpy temporaries of large
    arrays cost more than the arithmetic)."""
    p, q = (_horner(t, c) for c in coefficients)
    p /= q
    return p


def _horner(t, coefficients):
    """The polynomial with these coefficients (highest degree first) at t, in one array."""
    acc = np.full_like(t, coefficients[0])
    for c in coefficients[1:]:
        acc *= t
        acc += c
    return acc


def _exp_minus_square(y, scale=1.0):
    """exp(-scale y^2) without exp amplifying the rounding error of y*y (Cody's split): y = s + r
    with s = y rounded down to a multiple of 1/16, so s*s is exact (in float32 too, for y below
    2^7) and y^2 = s^2 + (y - s)(y + s). `scale` a power of 2 (exact too). In y's dtype."""
    s = np.floor(y * 16) / 16
    result = np.exp(-scale * (s * s))
    result *= np.exp(-scale * ((y - s) * (y + s)))
    return result
