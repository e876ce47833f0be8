"""Ops that make inf or nan from finite inputs do it silently, as PyTorch's do: numpy's
RuntimeWarnings from minitrain's kernels are filtered (minitrain/runtime/float_warnings.py),
and numpy called from the user's own code still warns."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np

import minitrain as mt


def _runtime_warnings(fn) -> tuple[list[str], object]:
    """The RuntimeWarnings `fn()` shows where warnings are shown as in a fresh process (not
    pytest's error::RuntimeWarning), with minitrain's filter installed, and fn's result."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        mt.runtime.float_warnings.quiet_minitrain_modules()
        warnings.filterwarnings("default", append=True)  # after it, as Python's default action
        result = fn()
    return [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)], result


def test_log_of_zero_division_by_zero_and_sqrt_of_negatives_are_silent(torch):
    x = mt.tensor([0.0, -1.0, 2.0], requires_grad=True)

    def compute():
        values = [mt.log(x), mt.tensor([1.0, 0.0]) / mt.tensor([0.0, 0.0]), mt.sqrt(x)]
        values.append(mt.exp(mt.tensor([1000.0])))
        mt.log(x).sum().backward()
        return values

    shown, (log, quotient, root, big) = _runtime_warnings(compute)
    assert shown == []
    t = torch.tensor([0.0, -1.0, 2.0])
    np.testing.assert_array_equal(log.detach().numpy(), torch.log(t).numpy())
    np.testing.assert_array_equal(root.detach().numpy(), torch.sqrt(t).numpy())
    np.testing.assert_array_equal(quotient.numpy(), [np.inf, np.nan])
    assert big.item() == np.inf
    assert x.grad.numpy()[0] == np.inf


def test_numpy_in_user_code_still_warns():
    shown, _ = _runtime_warnings(lambda: np.log(np.zeros(1)))
    assert any("divide by zero" in message for message in shown)


def test_a_fresh_process_prints_no_warning_for_log_of_zero():
    code = (
        "import numpy, minitrain as mt; mt.log(mt.tensor([0.0, 1.0])); "
        "numpy.log(numpy.zeros(1))  # the user's own: warns"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stderr.count("RuntimeWarning") == 1 and "<string>" in run.stderr


def test_the_users_own_error_filter_still_wins():
    code = "import minitrain as mt; mt.log(mt.tensor([0.0]))"
    run = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", code], capture_output=True, text=True
    )
    assert run.returncode != 0 and "divide by zero encountered in log" in run.stderr


def test_reductions_overflowing_to_inf_are_silent(torch):
    """numpy's ndarray.sum / mean / prod / var warn from numpy's own _methods module, not from
    minitrain's: the filter covers it too. PyTorch's results are inf as well, without a word."""
    values = [3e38, 3e38]
    x = mt.tensor(values, requires_grad=True)

    def compute():
        results = [x.sum(), x.mean(), x.prod(), mt.tensor(values, dtype=mt.float64).prod() ** 8]
        x.sum().backward()
        return results

    shown, results = _runtime_warnings(compute)
    assert shown == []
    t = torch.tensor(values)
    expected = [t.sum(), t.mean(), t.prod(), torch.tensor(values, dtype=torch.float64).prod() ** 8]
    for ours, theirs in zip(results, expected, strict=True):
        assert ours.item() == theirs.item() == np.inf
