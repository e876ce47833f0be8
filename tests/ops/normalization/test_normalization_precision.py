"""Mixed precision of the normalization ops: float16 input accurate to float16, statistics in
float32 (never float16), float32 and float64 kept throughout."""

from __future__ import annotations

import numpy as np
import pytest
from normalization_cases import CASES, STATISTICS, run


@pytest.mark.parametrize("param_dtype", [np.float16, np.float32])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_float16_input_is_accurate_to_float16(case, param_dtype, numba):
    x, weight, bias, dy = case.make(np.float16, seed=6)
    weight = weight.astype(param_dtype)
    bias = None if bias is None else bias.astype(param_dtype)
    y, grads, _, saved = run(case, x, weight, bias, dy)
    # the reference: the same (rounded) values in float64
    wide = [None if a is None else a.astype(np.float64) for a in (x, weight, bias, dy)]
    y_want, grads_want, *_ = run(case, *wide)
    assert y.dtype == param_dtype  # V: the parameters' dtype
    assert [g.dtype for g in grads if g is not None] == [np.float16] + [param_dtype] * (
        1 + (bias is not None)
    )
    stats = [v for k, v in saved.items() if k in STATISTICS]
    assert stats and all(s.dtype == np.float32 for s in stats)  # U: float32, never float16
    eps16 = float(np.finfo(np.float16).eps)
    for got, want in zip([y, *grads], [y_want, *grads_want], strict=True):
        if got is not None:
            scale = np.abs(want).max()
            np.testing.assert_allclose(got, want, rtol=4 * eps16, atol=4 * eps16 * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_statistics_and_gradients_keep_float32_and_float64(case, dtype, numba):
    x, weight, bias, dy = case.make(dtype)
    y, grads, _, saved = run(case, x, weight, bias, dy)
    assert y.dtype == dtype and all(g.dtype == dtype for g in grads if g is not None)
    stats = [v for k, v in saved.items() if k in STATISTICS]
    assert stats and all(s.dtype == dtype for s in stats)
