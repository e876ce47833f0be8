"""ops/special.py: numpy's erfc (Cody's rational approximations) and float32 normal CDF against
libm's erfc."""

from __future__ import annotations

import math

import numpy as np
from activation_cases import no_float_warnings

from minitrain.ops.activations.special import erfc, normal_cdf


def test_numpy_erfc_is_accurate_to_a_few_ulp():
    # erfc for the generic (numpy) gelu: Cody's rational approximations against libm's erfc
    grid = np.concatenate(
        [
            np.linspace(-8.0, 26.0, 20001),
            np.geomspace(1e-300, 0.5, 200),
            -np.geomspace(1e-8, 6, 200),
        ]
    )
    got = erfc(grid)
    want = np.array([math.erfc(v) for v in grid])
    np.testing.assert_allclose(got, want, rtol=2e-15, atol=0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 30.0, 1e300, -1e300, np.nan])
    with no_float_warnings():
        np.testing.assert_array_equal(erfc(special), [1, 1, 0, 2, 0, 0, 2, np.nan])


def test_float32_normal_cdf_is_accurate_to_a_few_ulp():
    # Phi of float32 arrays by the numba kernels' formula in float32 (the generic exact gelu)
    grid = np.concatenate([np.linspace(-20.0, 20.0, 40001), -np.geomspace(1e-6, 14.0, 400)]).astype(
        np.float32
    )
    got = normal_cdf(np, grid)
    assert got.dtype == np.float32
    want = np.array([0.5 * math.erfc(-float(v) / math.sqrt(2)) for v in grid])
    normal = want > np.finfo(np.float32).tiny  # past Phi(-13), float32's subnormals
    np.testing.assert_allclose(got[normal], want[normal], rtol=1e-6, atol=0)
    assert np.all(got[~normal] <= np.finfo(np.float32).tiny)
    special = np.array([np.inf, -np.inf, -15.0, 6.0, np.nan], np.float32)
    with no_float_warnings():
        np.testing.assert_array_equal(normal_cdf(np, special), [1, 0, 0, 1, np.nan])
    assert normal_cdf(np, np.float32(1.0) * np.ones((), np.float32)).shape == ()
