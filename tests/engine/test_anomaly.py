"""Anomaly mode: the first nan or inf an op makes, in forward or in backward, raises a GraphError
naming the op, the phase, what it read, and the line of user code that ran it."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import minitrain as mt
from minitrain import autograd, nn
from minitrain.errors import GraphError


def here() -> str:
    """'this file:the caller's next line', where the op under test runs."""
    caller = inspect.currentframe().f_back
    return f"{__file__}:{caller.f_lineno + 1}"


def test_a_nan_made_in_forward_names_the_op_the_phase_and_the_line():
    x = mt.tensor([-1.0, 4.0], requires_grad=True)
    with np.errstate(all="ignore"), autograd.detect_anomaly():
        with pytest.raises(GraphError) as raised:
            line = here()
            x.log()
    message = str(raised.value)
    assert message.startswith("log: anomaly in forward")
    assert line in message
    assert "1 nan" in message  # the output's statistics
    assert "min -1, max 4" in message  # the input's


def test_a_nan_or_inf_made_in_backward_names_the_kernel_and_the_recording_line():
    x = mt.tensor([0.0, 4.0], requires_grad=True)
    with np.errstate(all="ignore"), autograd.detect_anomaly():
        line = here()
        y = x.sqrt()
        loss = y.sum()
        with pytest.raises(GraphError) as raised:
            loss.backward()
    message = str(raised.value)
    assert message.startswith("SqrtGrad: anomaly in backward")
    assert "sqrt's input 'x'" in message and "1 inf" in message
    assert line in message
    assert x.grad is None  # the error left .grad alone


def test_an_inf_in_forward_raises_too():
    with np.errstate(all="ignore"), autograd.detect_anomaly():
        with pytest.raises(GraphError, match=r"exp: anomaly in forward.*1 inf"):
            mt.tensor([1000.0, 0.0]).exp()  # float32 overflows; no gradient needed either


def test_the_line_is_the_users_even_inside_a_module():
    class Model(nn.Module):
        def forward(self, x):
            self.line = here()
            return (x - 3.0).log()

    model = Model()
    with np.errstate(all="ignore"), autograd.detect_anomaly():
        with pytest.raises(GraphError) as raised:
            model(mt.tensor([1.0, 5.0]))
    assert model.line in str(raised.value)


def test_off_by_default_and_restored_after_an_error():
    assert not autograd.is_anomaly_enabled()
    with np.errstate(all="ignore"):
        y = mt.tensor([-1.0]).log()  # no anomaly mode: nan, no error
        assert np.isnan(y.item())
        with pytest.raises(GraphError), autograd.detect_anomaly():
            assert autograd.is_anomaly_enabled()
            mt.tensor([-1.0]).log()
    assert not autograd.is_anomaly_enabled()


def test_set_detect_anomaly_as_a_call_a_context_and_a_decorator():
    autograd.set_detect_anomaly(True)
    try:
        assert autograd.is_anomaly_enabled()
        with autograd.set_detect_anomaly(False):
            assert not autograd.is_anomaly_enabled()
        assert autograd.is_anomaly_enabled()
    finally:
        autograd.set_detect_anomaly(False)
    assert not autograd.is_anomaly_enabled()

    @autograd.detect_anomaly
    def inside():
        return autograd.is_anomaly_enabled()

    assert inside() and not autograd.is_anomaly_enabled()


def test_finite_values_pass_and_gradients_are_unchanged():
    x = mt.tensor([0.5, 2.0], requires_grad=True)
    with autograd.detect_anomaly():
        (x.log() * x.sqrt()).sum().backward()
    expected = 1 / np.sqrt([0.5, 2.0]) * (1 + 0.5 * np.log([0.5, 2.0]))
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)
