"""Fixtures of the loss tests."""

from __future__ import annotations

import pytest

from minitrain import backend


@pytest.fixture(params=[False, True], ids=["generic", "numba"])
def numba(request):
    """Run the test with the generic kernels, then with the numba ones."""
    previous = backend.set_numba(request.param)
    yield request.param
    backend.set_numba(previous)
