"""Fixtures shared by the test files."""

from __future__ import annotations

import pytest


@pytest.fixture
def torch():
    """PyTorch, the reference; the test skips where it is not installed."""
    return pytest.importorskip("torch")
