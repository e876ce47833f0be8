"""Grad modes (no_grad, enable_grad, set_grad_enabled) as contexts and decorators, per thread.

Nothing is recorded or saved where no gradient is needed."""

import threading

import numpy as np
import pytest

import minitrain
from minitrain.errors import GraphError


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_no_grad_records_nothing():
    x = leaf([1.0, 2.0])
    with minitrain.no_grad():
        assert not minitrain.is_grad_enabled()
        out = (x * x).sum()
    assert minitrain.is_grad_enabled()
    assert out.requires_grad is False
    assert out.node is None
    np.testing.assert_allclose(out.item(), 5.0)
    with pytest.raises(GraphError):
        out.backward()


def test_no_grad_as_decorator():
    x = leaf([1.0, 2.0])

    @minitrain.no_grad()
    def f(t):
        assert not minitrain.is_grad_enabled()
        return t * 3.0

    out = f(x)
    assert out.node is None and not out.requires_grad
    assert minitrain.is_grad_enabled()
    assert f.__name__ == "f"
    # still recording outside the decorated function
    assert (x * 3.0).node is not None


def test_no_grad_restores_state_after_an_exception():
    with pytest.raises(KeyError):
        with minitrain.no_grad():
            raise KeyError("boom")
    assert minitrain.is_grad_enabled()


def test_enable_grad_inside_no_grad_records_again():
    x = leaf([1.0, 2.0])
    with minitrain.no_grad():
        with minitrain.enable_grad():
            assert minitrain.is_grad_enabled()
            inner = x * 2.0
        assert not minitrain.is_grad_enabled()
        outer = x * 2.0
    assert inner.requires_grad and inner.node is not None
    assert not outer.requires_grad and outer.node is None
    inner.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_enable_grad_as_decorator_inside_no_grad():
    x = leaf([1.0])

    @minitrain.enable_grad()
    def f(t):
        return t * 2.0

    with minitrain.no_grad():
        out = f(x)
    assert out.node is not None


def test_set_grad_enabled_context_and_decorator():
    x = leaf([1.0, 2.0])
    with minitrain.set_grad_enabled(False):
        assert not minitrain.is_grad_enabled()
        off = x * 2.0
        with minitrain.set_grad_enabled(True):
            on = x * 2.0
    assert minitrain.is_grad_enabled()
    assert off.node is None and not off.requires_grad
    assert on.node is not None

    @minitrain.set_grad_enabled(False)
    def f(t):
        return t * 2.0

    assert f(x).node is None
    assert (x * 2.0).node is not None


def test_set_grad_enabled_called_as_a_function_like_torch():
    # torch.set_grad_enabled(False) called as a plain function switches recording off at once.
    x = leaf([1.0, 2.0])
    try:
        minitrain.set_grad_enabled(False)
        enabled_after_call = minitrain.is_grad_enabled()
        recorded = (x * 2.0).node is not None
    finally:
        minitrain.set_grad_enabled(True)
    assert enabled_after_call is False
    assert recorded is False


def test_no_grad_is_thread_local():
    x = leaf([1.0, 2.0])
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def worker():
        with minitrain.no_grad():
            seen["enabled"] = minitrain.is_grad_enabled()
            seen["recorded"] = (x * 2.0).node is not None
            entered.set()
            release.wait(10)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        assert entered.wait(10)
        # the worker sits inside no_grad right now; this thread still records
        assert minitrain.is_grad_enabled()
        out = x * 2.0
        assert out.requires_grad and out.node is not None
    finally:
        release.set()
        thread.join(10)
    assert seen == {"enabled": False, "recorded": False}


def test_new_thread_records_while_main_thread_is_in_no_grad():
    x = leaf([1.0, 2.0])
    seen = {}

    def worker():
        seen["enabled"] = minitrain.is_grad_enabled()
        seen["recorded"] = (x * 2.0).node is not None

    with minitrain.no_grad():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(10)
        assert (x * 2.0).node is None
    assert seen == {"enabled": True, "recorded": True}


def test_nothing_recorded_or_saved_when_no_input_requires_grad():
    a = minitrain.tensor(np.arange(6.0).reshape(2, 3))
    b = minitrain.tensor(np.ones((2, 3)))
    with minitrain.Tape() as tape:
        out = ((a * b).exp() / (b + 1.0)).sum()
        out2 = (a @ b.T).sum(dim=0).mean()
    assert len(tape.nodes) == 0
    assert tape.saved_bytes() == 0
    assert out.node is None and out2.node is None
    assert not out.requires_grad


def test_nothing_recorded_or_saved_under_no_grad_in_a_tape():
    x = leaf(np.ones(100))
    with minitrain.Tape() as tape, minitrain.no_grad():
        (x * x).exp().sum()
    assert len(tape.nodes) == 0
    assert tape.saved_bytes() == 0


def test_one_no_grad_instance_can_be_reentered():
    guard = minitrain.no_grad()
    with guard:
        with guard:
            assert not minitrain.is_grad_enabled()
        assert not minitrain.is_grad_enabled()
    assert minitrain.is_grad_enabled()
