"""minitrain.runtime.threads: chunks side by side, BLAS held to one thread meanwhile, given back."""

from __future__ import annotations

import concurrent.futures
import os
import threading
import time

import numpy as np
import pytest

from minitrain.runtime import blas, threads


@pytest.fixture
def two_blas_threads():
    """BLAS on 2 threads (where the machine has them), so that holding it to one shows."""
    controller = blas.controller()
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


def test_under_a_hold_already_taken_the_shares_run_in_turn_on_the_callers_thread(
    two_blas_threads, three_threads
):
    """Background compilation holds BLAS at one thread to leave the cores to its compiler:
    side_by_side then cuts its work alike (the same sums) but runs it on the caller alone."""
    seen = []
    with blas.one_thread() as held:
        threads.side_by_side(lambda t, s: seen.append((t, threading.get_ident())), "abc")
    assert held
    assert seen == [(t, threading.get_ident()) for t in range(3)]


def test_one_share_runs_on_the_callers_thread_and_leaves_blas_alone(two_blas_threads):
    seen = []
    threads.side_by_side(
        lambda t, s: seen.append((t, s, threading.get_ident(), threads.blas_threads())), ["only"]
    )
    assert seen == [(0, "only", threading.get_ident(), two_blas_threads)]


def _recording(fail_in=None, error=ValueError):
    """work for side_by_side that records which shares started and which finished, sleeping
    in between, and raises `error` in share `fail_in`."""
    started, finished = set(), set()

    def work(t, share):
        started.add(t)
        if t == fail_in:
            raise error(f"share {t}")
        time.sleep(0.05)
        finished.add(t)

    return work, started, finished


@pytest.mark.parametrize("failing", [0, 1])
@pytest.mark.parametrize("error", [ValueError, KeyboardInterrupt])
def test_an_exception_is_raised_once_no_share_runs(two_blas_threads, three_threads, failing, error):
    work, started, finished = _recording(failing, error)
    with pytest.raises(error, match=f"share {failing}"):
        threads.side_by_side(work, [0, 1, 2])
    assert started - finished == {failing}  # every other share that started has finished
    if failing:  # the caller's own share ran to its end
        assert 0 in finished
    assert threads.blas_threads() == two_blas_threads


def test_a_ctrl_c_while_waiting_for_the_threads_still_waits_for_them(
    monkeypatch, two_blas_threads, three_threads
):
    work, started, finished = _recording()
    real_wait = threads.concurrent.futures.wait
    calls = []

    def interrupted_once(futures):
        calls.append(len(futures))
        if len(calls) == 1:
            raise KeyboardInterrupt("while waiting")
        return real_wait(futures)

    monkeypatch.setattr(threads.concurrent.futures, "wait", interrupted_once)
    with pytest.raises(KeyboardInterrupt, match="while waiting"):
        threads.side_by_side(work, [0, 1, 2])
    assert len(calls) == 2
    assert started == finished  # no share left running
    assert threads.blas_threads() == two_blas_threads


def test_at_interpreter_shutdown_the_shares_run_in_turn(monkeypatch, three_threads):
    # an atexit handler may run a big conv: the pool then refuses new work
    class ShutDown:
        def submit(self, *args):
            raise RuntimeError("cannot schedule new futures after interpreter shutdown")

    monkeypatch.setattr(threads, "_pool", ShutDown)
    seen = []
    threads.side_by_side(lambda t, s: seen.append((t, s, threading.get_ident())), "abc")
    assert seen == [(t, s, threading.get_ident()) for t, s in enumerate("abc")]


def test_off_the_main_thread_shares_run_in_turn_on_the_callers_and_leave_blas_alone(
    two_blas_threads,
):
    # (OpenBLAS ignores a thread count set off the main thread once the main thread set one)
    seen = []

    def work(t, share):
        seen.append((t, share, threading.get_ident(), threads.blas_threads()))

    def user_thread():
        # work is cut as on the main thread (so that it sums alike), its shares run in turn
        assert threads.side_by_side_threads() == two_blas_threads
        threads.side_by_side(work, ["a", "b"])

    with concurrent.futures.ThreadPoolExecutor(1) as user:
        ident = user.submit(threading.get_ident).result()
        user.submit(user_thread).result()
    assert seen == [(0, "a", ident, two_blas_threads), (1, "b", ident, two_blas_threads)]


def test_where_blas_does_not_take_the_limit_shares_run_in_turn(monkeypatch, three_threads):
    monkeypatch.setattr(blas, "blas_threads", lambda: 2)  # held to one, it still says 2
    seen = []
    threads.side_by_side(lambda t, s: seen.append((t, threading.get_ident())), [0, 1])
    assert seen == [(0, threading.get_ident()), (1, threading.get_ident())]


def _in_forked_child(child) -> bytes:
    """What child() returns (bytes), run in a forked child, which must end within 30 s."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(write, child())
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + 30
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            pytest.fail("the forked child hung")
        time.sleep(0.01)
    with os.fdopen(read, "rb") as pipe:
        return pipe.read()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_runs_side_by_side_on_threads_of_its_own(three_threads):
    threads.side_by_side(lambda t, s: None, [0, 1])  # the parent's pool has threads now

    def child():  # a pool copied with its threads gone would hang here
        out = np.zeros(3)

        def work(t, share):
            out[t] = share

        threads.side_by_side(work, [1.0, 2.0, 3.0])
        return out.tobytes()

    assert np.frombuffer(_in_forked_child(child), np.float64).tolist() == [1.0, 2.0, 3.0]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_child_forked_while_blas_is_held_gets_blas_back(two_blas_threads):
    with blas.one_thread():  # as during a conv's side_by_side
        assert threads.blas_threads() == 1
        got = _in_forked_child(lambda: bytes([threads.blas_threads()]))
    assert list(got) == [two_blas_threads]


def test_threads_calling_a_kernel_first_at_once_compile_it_once(monkeypatch):
    import numba

    from minitrain import backend

    made = []
    real_njit = numba.njit

    def counting_njit(*args, **options):
        if args:  # numba's own modules decorating their functions
            return real_njit(*args, **options)
        decorate = real_njit(**options)

        def counted(fn):
            made.append(fn.__name__)
            time.sleep(0.05)  # a slow first compile: the other threads arrive meanwhile
            return decorate(fn)

        return counted

    monkeypatch.setattr(numba, "njit", counting_njit)

    @backend.jit()
    def add_one(x):
        return x + 1

    barrier = threading.Barrier(4)

    def call(value):
        barrier.wait()
        return add_one(value)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        assert list(pool.map(call, range(4))) == [1, 2, 3, 4]
    assert made == ["add_one"]


@pytest.mark.parametrize("setting", ["0", "false", "No"])
def test_minitrain_side_by_side_0_runs_shares_in_turn_and_leaves_blas_alone(
    two_blas_threads, monkeypatch, setting
):
    monkeypatch.setenv("MINITRAIN_SIDE_BY_SIDE", setting)
    assert threads.side_by_side_threads() == 1
    seen = []

    def work(t, share):
        seen.append((t, share, threading.get_ident(), threads.blas_threads()))

    threads.side_by_side(work, ["a", "b", "c"])
    caller = threading.get_ident()
    assert seen == [(t, s, caller, two_blas_threads) for t, s in enumerate("abc")]


def test_holds_on_blas_nest_and_the_last_gives_its_count_back(two_blas_threads):
    assert blas.hold_one_thread()
    assert blas.hold_one_thread()  # a second holder (the compile process's, side_by_side's)
    assert blas.blas_threads() == 1
    blas.release_one_thread()
    assert blas.blas_threads() == 1  # the first hold still stands
    blas.release_one_thread()
    assert blas.blas_threads() == two_blas_threads


def test_only_the_main_thread_holds_blas(two_blas_threads):
    taken = []
    thread = threading.Thread(target=lambda: taken.append(blas.hold_one_thread()))
    thread.start()
    thread.join()
    assert taken == [False]
    assert blas.blas_threads() == two_blas_threads
