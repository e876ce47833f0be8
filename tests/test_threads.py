"""minitrain.threads: chunks side by side, BLAS held to one thread meanwhile and given back."""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time

import numpy as np
import pytest

from minitrain import threads


@pytest.fixture
def two_blas_threads():
    """BLAS on 2 threads (where the machine has them), so that holding it to one shows."""
    controller = threads._controller()
    with controller.limit(limits=2):
        yield threads.blas_threads()


@pytest.fixture
def three_threads(monkeypatch):
    """side_by_side on 3 threads, whatever the machine's cores."""
    monkeypatch.setattr(threads, "side_by_side_threads", lambda: 3)


def test_the_main_thread_has_as_many_threads_as_blas(two_blas_threads):
    assert threads.side_by_side_threads() == two_blas_threads


def test_each_share_runs_once_on_a_thread_of_its_own_the_first_on_the_callers(
    two_blas_threads, three_threads
):
    seen = {}

    def work(t, share):
        time.sleep(0.01)  # long enough that no pool thread could take two shares in turn
        seen[t] = (share, threading.get_ident(), threads.blas_threads())

    threads.side_by_side(work, ["a", "b", "c"])
    assert sorted(seen) == [0, 1, 2]
    assert [seen[t][0] for t in range(3)] == ["a", "b", "c"]
    assert seen[0][1] == threading.get_ident()
    assert len({seen[t][1] for t in range(3)}) == 3
    assert all(seen[t][2] == 1 for t in range(3))  # BLAS held to one thread meanwhile
    assert threads.blas_threads() == two_blas_threads


def test_one_share_runs_on_the_callers_thread_and_leaves_blas_alone(two_blas_threads):
    seen = []
    threads.side_by_side(
        lambda t, s: seen.append((t, s, threading.get_ident(), threads.blas_threads())), ["only"]
    )
    assert seen == [(0, "only", threading.get_ident(), two_blas_threads)]


@pytest.mark.parametrize("failing", [0, 1])
def test_an_exception_is_raised_once_every_share_is_done(two_blas_threads, three_threads, failing):
    finished = []

    def work(t, share):
        if t == failing:
            raise ValueError(f"share {t}")
        time.sleep(0.05)
        finished.append(t)

    with pytest.raises(ValueError, match=f"share {failing}"):
        threads.side_by_side(work, [0, 1, 2])
    assert sorted(finished) == [t for t in range(3) if t != failing]
    assert threads.blas_threads() == two_blas_threads


def test_off_the_main_thread_shares_run_in_turn_on_the_callers_and_leave_blas_alone(
    two_blas_threads,
):
    # (OpenBLAS ignores a thread count set off the main thread once the main thread set one)
    seen = []

    def work(t, share):
        seen.append((t, share, threading.get_ident(), threads.blas_threads()))

    def user_thread():
        assert threads.side_by_side_threads() == 1
        threads.side_by_side(work, ["a", "b"])

    with concurrent.futures.ThreadPoolExecutor(1) as user:
        ident = user.submit(threading.get_ident).result()
        user.submit(user_thread).result()
    assert seen == [(0, "a", ident, two_blas_threads), (1, "b", ident, two_blas_threads)]


def test_where_blas_does_not_take_the_limit_shares_run_in_turn(monkeypatch, three_threads):
    monkeypatch.setattr(threads, "blas_threads", lambda: 2)  # held to one, it still says 2
    seen = []
    threads.side_by_side(lambda t, s: seen.append((t, threading.get_ident())), [0, 1])
    assert seen == [(0, threading.get_ident()), (1, threading.get_ident())]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_runs_side_by_side_on_threads_of_its_own(three_threads):
    threads.side_by_side(lambda t, s: None, [0, 1])  # the parent's pool has threads now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a pool copied with its threads gone would hang here
        try:
            out = np.zeros(3)

            def work(t, share):
                out[t] = share

            threads.side_by_side(work, [1.0, 2.0, 3.0])
            os.write(write, out.tobytes())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 30
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            pytest.fail("side_by_side hung in a forked child")
        time.sleep(0.01)
    with os.fdopen(read, "rb") as pipe:
        assert np.frombuffer(pipe.read(), np.float64).tolist() == [1.0, 2.0, 3.0]
