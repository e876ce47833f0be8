"""minitrain.runtime.numba_pool: numba's pool starts once, before the first parallel kernel, with
libgomp's idle spin short unless the user chose one, and the environment is given back."""

from __future__ import annotations

import concurrent.futures
import os
import subprocess
import sys

import numba
import pytest

from minitrain.runtime import numba_pool

_SETTINGS = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "MINITRAIN_SHORT_OMP_SPIN")


@pytest.fixture
def pool_start(monkeypatch):
    """start_numba_threads' body (run each time), with numba's pool start replaced by a recorder of
    the spin settings it would have started under; returns (start, seen)."""
    for name in _SETTINGS:
        monkeypatch.delenv(name, raising=False)
    seen = []

    def record():
        seen.append({name: os.environ.get(name) for name in _SETTINGS[:2]})
        return 2

    monkeypatch.setattr(numba, "get_num_threads", record)
    monkeypatch.setattr(numba, "threading_layer", lambda: "omp")
    return numba_pool._start_pool, seen


def test_the_pool_starts_with_a_short_spin_and_the_variable_goes_back(pool_start):
    start, seen = pool_start
    assert start() == "omp"
    assert seen == [{"GOMP_SPINCOUNT": str(numba_pool.SHORT_SPIN), "OMP_WAIT_POLICY": None}]
    assert "GOMP_SPINCOUNT" not in os.environ


@pytest.mark.parametrize("name, value", [("GOMP_SPINCOUNT", "50"), ("OMP_WAIT_POLICY", "active")])
def test_a_spin_the_user_chose_is_kept(pool_start, monkeypatch, name, value):
    start, seen = pool_start
    monkeypatch.setenv(name, value)
    start()
    assert seen[0][name] == value
    assert os.environ[name] == value
    if name == "OMP_WAIT_POLICY":
        assert seen[0]["GOMP_SPINCOUNT"] is None


@pytest.mark.parametrize("switch", ["0", "false", "No"])
def test_the_switch_leaves_libgomps_spin_alone(pool_start, monkeypatch, switch):
    start, seen = pool_start
    monkeypatch.setenv("MINITRAIN_SHORT_OMP_SPIN", switch)
    start()
    assert seen == [{"GOMP_SPINCOUNT": None, "OMP_WAIT_POLICY": None}]


def test_numba_threads_starts_the_pool_first_then_reads_numbas_count(monkeypatch):
    order = []
    monkeypatch.setattr(numba_pool, "start_numba_threads", lambda: order.append("start"))
    monkeypatch.setattr(numba, "get_num_threads", lambda: order.append("count") or 3)
    assert numba_pool.numba_threads() == 3
    assert order == ["start", "count"]


_FIRST_PARALLEL_KERNEL = """
import os, numba, numpy as np
seen = []
real = numba.get_num_threads
def recording():
    seen.append(os.environ.get("GOMP_SPINCOUNT"))
    return real()
numba.get_num_threads = recording
from minitrain.ops.activations import activation
x = np.linspace(-5, 5, 1000, dtype=np.float32)
serial, parallel = np.empty_like(x), np.empty_like(x)
activation._gelu_kernels(False).gelu(x, serial)
assert seen == [], seen  # a serial build leaves the pool alone
activation._gelu_kernels(True).gelu(x, parallel)
assert seen[0] == "1000", seen
assert "GOMP_SPINCOUNT" not in os.environ
assert np.array_equal(serial, parallel)
print("ok", numba.threading_layer())
"""


def test_the_first_parallel_build_starts_the_pool_with_the_short_spin():
    environment = {k: v for k, v in os.environ.items() if k not in _SETTINGS}
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_PARALLEL_KERNEL],
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")


def test_threads_starting_it_at_once_start_one_pool(monkeypatch):
    starts = []
    monkeypatch.setattr(numba_pool, "_layer", [])
    monkeypatch.setattr(numba_pool, "_start_pool", lambda: starts.append(1) or "omp")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        layers = list(pool.map(lambda _: numba_pool.start_numba_threads(), range(32)))
    assert layers == ["omp"] * 32
    assert starts == [1]
