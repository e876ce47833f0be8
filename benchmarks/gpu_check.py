"""`make gpu-check`: the test suite's cuda cases on the real GPU, then the GPU benchmark, written
up as a short markdown report (to $GPU_CHECK_REPORT, else $OUT/gpu-check.md where $OUT is set,
else ./gpu-check.md) and printed. Exits 0 when every cuda case passes and the CNN step meets its
target, 1 when not, 2 where CuPy or a GPU is missing (then nothing runs). Also the pytest plugin
(-p benchmarks.gpu_check) that keeps, outside tests/device, only the tests using cuda_device.

    python -m benchmarks.gpu_check"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEVICE_TESTS = "tests/device"
# The whole check must finish in 8 minutes on an H100: the tests get 6 of them, a case 2.
PYTEST_TIMEOUT_S = 360
CASE_TIMEOUT_S = 120
# pytest-xdist's processes where it is installed (GPU_CHECK_WORKERS=0: none): CuPy compiles each
# kernel on its first use, and compiling is CPU work that the GPU machine's cores share out.
WORKERS = int(os.environ.get("GPU_CHECK_WORKERS", "4"))
MAX_FAILURES_SHOWN = 40
STAND_IN_SKIP = "MINITRAIN_TEST_DEVICE=cuda: real GPU only"


@dataclass
class CudaCaseRun:
    """What the pytest run of the cuda cases came to."""

    command: str
    returncode: int | None = None  # None: not run, or stopped at PYTEST_TIMEOUT_S
    summary: str = ""
    failures: list[str] = field(default_factory=list)
    other_skips: list[str] = field(default_factory=list)  # reasons besides the stand-in's
    timed_out: bool = False
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.returncode == 0


def pytest_collection_modifyitems(config, items) -> None:
    """As a plugin: outside tests/device, deselect the tests that do not use cuda_device (the
    files given hold CPU tests too)."""
    device_folder = os.path.join(str(config.rootpath), DEVICE_TESTS)
    keep, drop = [], []
    for item in items:
        inside = str(item.path).startswith(device_folder + os.sep)
        (keep if inside or "cuda_device" in item.fixturenames else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def cuda_case_paths() -> list[str]:
    """tests/device and every other test file that mentions the cuda_device fixture."""
    paths = [DEVICE_TESTS]
    tests = os.path.join(ROOT, "tests")
    for folder, _, files in sorted(os.walk(tests)):
        if os.path.relpath(folder, ROOT).startswith(DEVICE_TESTS):
            continue
        for name in sorted(files):
            if name.startswith("test_") and name.endswith(".py"):
                with open(os.path.join(folder, name)) as source:
                    if "cuda_device" in source.read():
                        paths.append(os.path.relpath(os.path.join(folder, name), ROOT))
    return paths


def run_tests() -> CudaCaseRun:
    """pytest on the cuda cases with MINITRAIN_TEST_DEVICE=cuda (the stand-in's cases skipped, a
    missing GPU a failure), its output shown as it comes; stopped, with its xdist workers, at
    PYTEST_TIMEOUT_S."""
    arguments = ["-p", "no:randomly", "-p", "benchmarks.gpu_check", "-rfEs"]
    if importlib.util.find_spec("pytest_timeout"):
        arguments.append(f"--timeout={CASE_TIMEOUT_S}")
    if WORKERS and importlib.util.find_spec("xdist"):
        arguments += ["-n", str(WORKERS)]
    arguments.append(f"--ignore={DEVICE_TESTS}/test_gpu_check.py")  # the check's test: no GPU
    arguments += cuda_case_paths()
    run = CudaCaseRun("MINITRAIN_TEST_DEVICE=cuda python -m pytest " + " ".join(arguments))
    environment = {**os.environ, "MINITRAIN_TEST_DEVICE": "cuda", "PYTHONUNBUFFERED": "1"}
    print(f"$ {run.command}", flush=True)
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", *arguments],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, workers included, to stop at once
    )

    def stop():
        run.timed_out = True
        os.killpg(process.pid, signal.SIGKILL)

    timer = threading.Timer(PYTEST_TIMEOUT_S, stop)
    timer.start()
    lines = []
    try:
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
        process.wait()
    finally:
        timer.cancel()
    print(flush=True)  # after a line that a stopped pytest left unfinished
    run.seconds = time.perf_counter() - start
    run.returncode = None if run.timed_out else process.returncode
    _read_outcome(run, lines)
    return run


_SUMMARY = re.compile(r"^[= ]*(no tests ran|\d+ [a-z]+\b.*) in [\d.]+s\b")
_SKIP = re.compile(r"SKIPPED \[(\d+)\] [^:]+:\d+: (.*)")


def _read_outcome(run: CudaCaseRun, lines: list[str]) -> None:
    """The summary line, the failing tests' ids and the skip reasons other than the stand-in's,
    from pytest's -rfEs report."""
    for line in lines:
        if line.startswith(("FAILED ", "ERROR ")):
            run.failures.append(line.split(" - ")[0])
        skip = _SKIP.match(line)
        if skip and STAND_IN_SKIP not in skip.group(2):
            run.other_skips.append(f"{skip.group(1)} x {skip.group(2)}")
    summaries = [line.strip("= ") for line in lines if _SUMMARY.match(line)]
    run.summary = summaries[-1] if summaries else "no summary line (pytest's output above)"
    if run.timed_out:
        run.summary = f"stopped after {PYTEST_TIMEOUT_S} s, unfinished (pytest's output above)"


def versions(torch) -> list[str]:
    """Lines naming the GPU and the versions of CuPy, CUDA, cuDNN, PyTorch, numpy and Python."""
    import cupy
    import numpy as np

    runtime = cupy.cuda.runtime
    properties = runtime.getDeviceProperties(0)
    name = properties["name"]
    name = name.decode() if isinstance(name, bytes) else name
    memory_gib = properties["totalGlobalMem"] / 2**30
    try:
        from cupy.cuda import cudnn

        cudnn_version = str(cudnn.getVersion())
    except Exception:  # noqa: BLE001 (CuPy without cuDNN raises ImportError or a CUDA error)
        cudnn_version = "not available"
    lines = [
        f"GPU: {name} ({memory_gib:.0f} GiB), {runtime.getDeviceCount()} visible",
        f"CuPy {cupy.__version__}, CUDA runtime {_cuda_version(runtime.runtimeGetVersion())}, "
        f"driver {_cuda_version(runtime.driverGetVersion())}, cuDNN {cudnn_version}",
    ]
    if torch is not None:
        lines.append(f"PyTorch {torch.__version__} (CUDA {torch.version.cuda})")
    lines.append(f"numpy {np.__version__}, Python {platform.python_version()}")
    return lines


def _cuda_version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


def report(missing: str, torch, tests: CudaCaseRun | None, results: list) -> tuple[str, int]:
    """The markdown report and the exit status."""
    lines = ["# minitrain GPU check", ""]
    if missing:
        lines += [
            f"**No GPU check: {missing}**",
            "",
            "Nothing ran. `pip install 'minitrain[cuda]'` (or the cupy-cudaXXx wheel matching "
            "the driver's CUDA) on a machine with an NVIDIA GPU, then `make gpu-check`.",
            "",
            f"PyTorch {torch.__version__ if torch else 'not installed'}, "
            f"Python {platform.python_version()}",
        ]
        return "\n".join(lines) + "\n", 2
    lines += [f"- {line}" for line in versions(torch)]
    lines += ["", "## Tests (the cuda cases)", "", f"`{tests.command}`", ""]
    lines += [f"**{tests.summary}** ({tests.seconds:.0f} s)"]
    if tests.failures:
        shown = tests.failures[:MAX_FAILURES_SHOWN]
        lines += ["", "Failed:"] + [f"- `{failure}`" for failure in shown]
        if len(tests.failures) > len(shown):
            lines.append(f"- and {len(tests.failures) - len(shown)} more (pytest's output above)")
    if tests.other_skips:
        lines += ["", "Skipped besides the stand-in's cases:"]
        lines += [f"- {reason}" for reason in tests.other_skips]
    lines += ["", "## Benchmark (minitrain on the GPU against PyTorch CUDA, same GPU)", ""]
    missed = []
    if results:
        lines += [
            "| step | minitrain | PyTorch | ratio | target |",
            "| --- | ---: | ---: | ---: | --- |",
        ]
        for result in results:
            target = "" if result.target is None else f"<= {result.target:.2f}"
            if result.target is not None and not result.ratio <= result.target:
                missed.append(result.name)
                target += " **missed**"
            elif result.target is not None:
                target += " ok"
            lines.append(
                f"| {result.name} | {result.minitrain_s * 1e3:.2f} ms | "
                f"{result.torch_s * 1e3:.2f} ms | {result.ratio:.2f} | {target} |"
            )
        lines += [""] + [f"{result.name}: {result.note}" for result in results if result.note]
    else:
        missed.append("the benchmark (no rows: see its output above)")
        lines.append("Not run: PyTorch sees no GPU (a CPU-only build?).")
    problems = ([] if tests.passed else ["cuda test cases"]) + missed
    verdict = "**passed**" if not problems else "**failed**: " + "; ".join(problems)
    lines += ["", f"Verdict: {verdict}"]
    return "\n".join(lines) + "\n", 0 if not problems else 1


def report_path() -> str:
    if os.environ.get("GPU_CHECK_REPORT"):
        return os.environ["GPU_CHECK_REPORT"]
    if os.environ.get("OUT"):
        return os.path.join(os.environ["OUT"], "gpu-check.md")
    return "gpu-check.md"


def main() -> int:
    sys.path.insert(0, ROOT)
    from benchmarks import gpu
    from benchmarks.common import print_table, try_import_torch

    torch = try_import_torch()
    missing = gpu.cuda_missing()
    tests, results = None, []
    if not missing:
        tests = run_tests()
        results = gpu.run()
        print_table(results)
    text, status = report(missing, torch, tests, results)
    path = report_path()
    with open(path, "w") as out:
        out.write(text)
    print(text)
    print(f"wrote {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
