"""The world of one the one-process tests of minitrain.distributed run in."""

from __future__ import annotations

import pytest

from minitrain import distributed


@pytest.fixture
def world():
    """A default process group of one process (no launcher), destroyed after the test."""
    distributed.init_process_group()
    yield
    if distributed.is_initialized():
        distributed.destroy_process_group()
