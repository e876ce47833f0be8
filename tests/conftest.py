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


@pytest.fixture
def side_by_side_on(monkeypatch):
    """side_by_side_on(threads): the conv ops run every batch's chunks side by side on that
    many threads (whatever the machine's cores and BLAS), one image per chunk, each GEMM
    followed by a short sleep, so that the threads' chunks overlap in time; returns the list
    each call's shares are appended to."""
    import importlib
    import time

    from minitrain import threads as threads_module

    conv_module = importlib.import_module("minitrain.ops.conv")

    def force(threads: int) -> list:
        calls = []
        original, matmul = conv_module.side_by_side, conv_module._matmul

        def slow_matmul(*args):
            matmul(*args)
            time.sleep(0.002)

        monkeypatch.setattr(conv_module, "_COL_CHUNK_BYTES", 1)
        monkeypatch.setattr(conv_module, "_thread_count", lambda xp, N, *_: min(N, threads))
        monkeypatch.setattr(threads_module, "side_by_side_threads", lambda: threads)
        monkeypatch.setattr(conv_module, "_matmul", slow_matmul)
        monkeypatch.setattr(
            conv_module, "side_by_side", lambda work, s: calls.append(s) or original(work, s)
        )
        return calls

    return force
