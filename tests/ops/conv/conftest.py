"""Fixtures of the convolution and pooling tests."""

from __future__ import annotations

import importlib
import time

import pytest

from minitrain.runtime import threads as threads_module

chunking = importlib.import_module("minitrain.ops.convolution.chunking")
convolution = importlib.import_module("minitrain.ops.convolution.standard")
transposed_convolution = importlib.import_module("minitrain.ops.convolution.transposed")


@pytest.fixture
def side_by_side_on(monkeypatch):
    """side_by_side_on(threads): the conv ops run every batch's chunks side by side on that
    many threads (whatever the machine's cores and BLAS), one image per chunk, each GEMM
    followed by a short sleep, so that the threads' chunks overlap in time; returns the list
    each call's shares are appended to."""

    def force(threads: int) -> list:
        calls = []
        original, matmul = chunking.side_by_side, convolution.matmul

        def slow_matmul(*args):
            matmul(*args)
            time.sleep(0.002)

        monkeypatch.setattr(chunking, "_COL_CHUNK_BYTES", 1)
        monkeypatch.setattr(chunking, "_thread_count", lambda xp, N, *_: min(N, threads))
        monkeypatch.setattr(threads_module, "side_by_side_threads", lambda: threads)
        for module in (convolution, transposed_convolution):  # every GEMM call site
            monkeypatch.setattr(module, "matmul", slow_matmul)
        monkeypatch.setattr(
            chunking, "side_by_side", lambda work, s: calls.append(s) or original(work, s)
        )
        return calls

    return force
