"""`make gpu-check` (benchmarks/gpu_check.py) where CuPy is missing, and the switch it runs the
tests with: MINITRAIN_TEST_DEVICE=cuda skips the stand-in's cases and fails a cuda case without a
GPU. CuPy is hidden from the subprocesses by a `cupy` package that fails to import, so that these
tests behave alike with and without a GPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(ROOT, "tests")

TINY_TEST = """
def test_on_the_device(cuda_device):
    assert cuda_device.type == "cuda"
"""


def _without_cupy(tmp_path, **variables) -> dict:
    """The environment with a `cupy` that raises ImportError first on the path."""
    hidden = tmp_path / "hidden"
    (hidden / "cupy").mkdir(parents=True)
    (hidden / "cupy" / "__init__.py").write_text("raise ImportError('CuPy hidden by the test')\n")
    environment = dict(os.environ)
    environment.pop("MINITRAIN_TEST_DEVICE", None)
    environment.update(variables)
    path = [str(hidden), TESTS, environment.get("PYTHONPATH", "")]
    environment["PYTHONPATH"] = os.pathsep.join(p for p in path if p)
    return environment


def test_gpu_check_without_cupy_writes_a_report_saying_so_and_fails(tmp_path):
    report = tmp_path / "report.md"
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check"],
        cwd=ROOT,
        env=_without_cupy(tmp_path, GPU_CHECK_REPORT=str(report)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    text = report.read_text()
    assert "No GPU check" in text and "needs CuPy, which is not installed" in text
    assert "Nothing ran" in text and "pytest" not in text
    assert text in result.stdout


def _pytest_tiny(tmp_path, **variables) -> subprocess.CompletedProcess:
    """pytest on a one-test file using cuda_device, with tests/conftest.py as its plugin."""
    (tmp_path / "test_tiny.py").write_text(TINY_TEST)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:randomly"]
        + ["-p", "no:cacheprovider", "-rfEs", str(tmp_path / "test_tiny.py")],
        cwd=tmp_path,
        env=_without_cupy(tmp_path, **variables),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_without_the_switch_a_missing_gpu_skips_its_case(tmp_path):
    result = _pytest_tiny(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    assert "no real CUDA device: CuPy is not installed" in result.stdout


def test_the_switch_skips_the_stand_in_and_fails_a_missing_gpu(tmp_path):
    result = _pytest_tiny(tmp_path, MINITRAIN_TEST_DEVICE="cuda")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 skipped, 1 error" in result.stdout
    assert "MINITRAIN_TEST_DEVICE=cuda: real GPU only" in result.stdout
    assert "ERROR test_tiny.py::test_on_the_device[cuda]" in result.stdout
    assert "but no real CUDA device: CuPy is not installed" in result.stdout


@pytest.fixture
def gpu_check(monkeypatch):
    """benchmarks.gpu_check, with the GPU's description made up (no CuPy needed)."""
    monkeypatch.syspath_prepend(ROOT)
    from benchmarks import gpu_check

    monkeypatch.setattr(gpu_check, "versions", lambda torch: ["GPU: a made-up one"])
    return gpu_check


@pytest.mark.parametrize(
    ("cnn_s", "returncode", "status"),
    [(1.9e-3, 0, 0), (2.1e-3, 0, 1), (1.9e-3, 1, 1)],
    ids=["all-met", "cnn-target-missed", "a-case-failed"],
)
def test_the_report_fails_on_a_missed_cnn_target_or_a_failed_case(
    gpu_check, cnn_s, returncode, status
):
    from benchmarks.common import Result

    tests = gpu_check.CudaCaseRun("pytest ...", returncode, "9 passed in 1.00s")
    if returncode:
        tests.failures = ["FAILED tests/device/test_x.py::test_y[cuda]"]
    results = [
        Result("CNN", cnn_s, 1e-3, per="step", target=2.0),
        Result("char LM", 9e-3, 1e-3, per="step"),  # no target: never fails the check
    ]
    text, exit_status = gpu_check.report("", None, tests, results)
    assert exit_status == status
    assert ("Verdict: **passed**" in text) == (status == 0)
    assert ("CNN | 2.10 ms | 1.00 ms | 2.10 | <= 2.00 **missed**" in text) == (cnn_s > 2e-3)
    assert ("test_y[cuda]" in text) == bool(returncode)
