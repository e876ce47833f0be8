"""Fixtures shared by the test files."""

from __future__ import annotations

import pytest


@pytest.fixture
def torch():
    """PyTorch, the reference; the test skips where it is not installed."""
    return pytest.importorskip("torch")


@pytest.fixture
def record_builds(monkeypatch):
    """record_builds(module, name) wraps module.<name>, a factory of numba kernels taking
    `parallel`, and returns the list it appends each requested build's `parallel` flag to."""

    def record(module, name: str) -> list:
        builds = []
        original = getattr(module, name)

        def spy(parallel):
            builds.append(parallel)
            return original(parallel)

        monkeypatch.setattr(module, name, spy)
        return builds

    return record
