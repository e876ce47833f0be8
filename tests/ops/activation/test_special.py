"""ops/special.py: numpy's erfc (Cody's rational approximations) against libm's."""

from __future__ import annotations

import math

import numpy as np
from activation_cases import no_float_warnings

from minitrain.ops.activations.special import erfc


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
