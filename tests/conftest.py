"""Fixtures shared by the test files."""

from __future__ import annotations

import os

import pytest

# Kernels compile at their first call in the tests, as with a warm cache, so that which kernels
# run never depends on timing; test_background_compile.py runs the background compiles in
# processes of their own (minitrain/runtime/background_compile.py)
os.environ.setdefault("MINITRAIN_COMPILE_IN_BACKGROUND", "0")

try:
    from hypothesis import settings
except ImportError:  # the property tests skip without it
    settings = None
if settings is not None:
    # "ci": a few dozen examples per property, the same ones every run (derandomized), so that
    # CI stays bounded and repeatable; "fuzz" (`make fuzz`): many more, new ones each run
    settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
    settings.register_profile("fuzz", max_examples=2000, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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


def _real_cuda_missing() -> str:
    """Why the real CUDA cases cannot run here ('' where CuPy and a GPU are at hand)."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install 'minitrain[cuda]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 (CuPy raises its own CUDA errors without a driver)
        return f"CuPy finds no CUDA driver: {exc}"
    return "" if count else "CuPy finds no GPU"


@pytest.fixture(params=["strict", "cuda"])
def cuda_device(request, monkeypatch):
    """The device a test's 'cuda' case runs on: 'strict', the strict stand-in for CuPy on the
    CPU (tests/strict_device.py), and 'cuda', a real GPU through CuPy, skipped with the reason
    where CuPy or a GPU is missing. Returns the Device; mt.device('cuda') is it as well.
    MINITRAIN_TEST_DEVICE=cuda (make gpu-check) skips the stand-in and fails, rather than skips,
    a real case without CuPy or a GPU, so that a GPU run cannot pass without a GPU."""
    import minitrain as mt

    real_gpu_only = os.environ.get("MINITRAIN_TEST_DEVICE") == "cuda"
    if request.param == "strict":
        if real_gpu_only:
            pytest.skip("MINITRAIN_TEST_DEVICE=cuda: real GPU only")
        import strict_device

        strict_device.install(monkeypatch)
    else:
        missing = _real_cuda_missing()
        if missing and real_gpu_only:
            pytest.fail(f"MINITRAIN_TEST_DEVICE=cuda, but no real CUDA device: {missing}")
        if missing:
            pytest.skip(f"no real CUDA device: {missing}")
        mt.cuda.init()  # tests that reach backend.cupy directly find it imported
    return mt.device("cuda")
