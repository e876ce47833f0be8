"""Fixtures of the normalization tests: both kinds of kernels in turn, and the numba kernels
that ran."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from minitrain import backend
from minitrain.ops.normalization import batch as batch_normalization
from minitrain.ops.normalization import rows as row_normalization

# each module's factory of numba kernels
KERNEL_FACTORIES = [
    (batch_normalization, "_batch_norm_kernels"),
    (row_normalization, "_row_kernels"),
]


@pytest.fixture(params=[False, True], ids=["generic", "numba"])
def numba(request):
    """Run the test with the generic kernels, then with the numba ones."""
    previous = backend.set_numba(request.param)
    yield request.param
    backend.set_numba(previous)


@pytest.fixture
def kernel_runs(monkeypatch):
    """The names of the numba kernels that ran, in order."""
    runs = []

    def recorded(name, kernel):
        def run(*args):
            runs.append(name)
            return kernel(*args)

        return run

    def spy(original):
        def build(parallel):
            kernels = original(parallel)
            return SimpleNamespace(**{n: recorded(n, k) for n, k in vars(kernels).items()})

        return build

    for module, factory in KERNEL_FACTORIES:
        monkeypatch.setattr(module, factory, spy(getattr(module, factory)))
    return runs
