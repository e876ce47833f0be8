"""Kernels compiled in the background on a cold numba cache (minitrain/runtime/
background_compile.py): the op falls back to its generic kernels, to the same bits as with numba
off; the compile process fills the cache and the op then runs numba's kernel; off, or with
deterministic algorithms, every kernel compiles at its first call. The cold cases run in fresh
processes with an empty cache (the test session itself compiles at first call: conftest.py)."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap

import minitrain as mt
from minitrain.runtime import background_compile

TESTS = pathlib.Path(__file__).parents[1]
ROOT = TESTS.parent


def run_cold(code: str, cache, mode: str, cwd=TESTS) -> dict:
    """Run `code` in a fresh Python with an empty numba cache at `cache` and
    MINITRAIN_COMPILE_IN_BACKGROUND=`mode`, in `cwd`; returns the JSON it prints last."""
    environment = dict(
        os.environ,
        NUMBA_CACHE_DIR=str(cache),
        MINITRAIN_COMPILE_IN_BACKGROUND=mode,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(TESTS)]),
    )
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_sample_falls_back_to_the_generic_kernels_bit_for_bit(tmp_path):
    report = run_cold(
        "import runpy; runpy.run_path('engine/cold_cache_samples.py', run_name='__main__')",
        tmp_path,
        "hold",
    )
    from op_samples import COMPOSED, SAMPLES

    samples = sum(len(entries) for entries in (*SAMPLES.values(), *COMPOSED.values()))
    assert report["ran"] == 2 * samples + len(report["extra"])  # float32 and float64 each
    assert report["fallbacks"] > 100  # the numba ops did fall back, not run numba's kernels
    assert report["differ"] == []


GELU_TWICE = """
import json
import numpy as np
import minitrain as mt
from minitrain.runtime import background_compile

from minitrain.runtime import blas
from minitrain.ops.activations import activation

x = mt.tensor(np.random.default_rng(0).standard_normal((64, 512)).astype(np.float32),
              requires_grad=True)
blas_before = blas.blas_threads()
first = mt.nn.functional.gelu(x)
blas_while = blas.blas_threads()
ready = background_compile.wait_for_kernels(timeout=300)
second = mt.nn.functional.gelu(x)
with mt.backend.use_numba(False):
    generic = mt.nn.functional.gelu(x)
kernel = activation._gelu_kernels(False).gelu.dispatcher()  # numba's own counts
print(json.dumps({
    "first_ran_numba": first.node.ctx.ran_numba,
    "second_ran_numba": second.node.ctx.ran_numba,
    "ready": ready,
    "fallbacks": background_compile.fallbacks,
    "first_is_generic": bool(np.array_equal(first.array, generic.array)),
    "close": bool(np.allclose(second.array, generic.array, rtol=1e-5, atol=1e-6)),
    "blas_held_while_compiling": blas_while == 1,
    "blas_given_back": blas.blas_threads() == blas_before,
    "loaded_from_the_cache": sum(kernel._cache_hits.values()),
    "compiled_here": sum(kernel._cache_misses.values()),
}))
"""


def test_a_kernel_compiled_by_the_compile_process_is_used_from_the_cache(tmp_path):
    report = run_cold(GELU_TWICE, tmp_path, "1")
    assert report == {
        "first_ran_numba": False,  # the generic kernel, while the compile process worked
        "second_ran_numba": True,  # then numba's, loaded from the cache it wrote
        "ready": True,
        "fallbacks": 1,
        "first_is_generic": True,
        "close": True,
        "blas_held_while_compiling": True,  # so that the compile process gets a core
        "blas_given_back": True,  # at the next numba choice once nothing is pending
        "loaded_from_the_cache": 1,  # written there by the compile process,
        "compiled_here": 0,  # not compiled again in this one
    }
    assert list(tmp_path.rglob("*gelu_flat*.nbi")), "the compile process wrote no cache entry"


def test_a_relative_cache_folder_is_the_same_one_for_the_compile_process(tmp_path):
    report = run_cold(GELU_TWICE, "cache", "1", cwd=tmp_path)
    assert report["loaded_from_the_cache"] == 1 and report["compiled_here"] == 0
    assert list((tmp_path / "cache").rglob("*gelu_flat*.nbi"))


def test_the_compile_process_ends_with_the_program(tmp_path):
    code = """
    import atexit
    import json

    def report():  # registered first, so run last: after minitrain's own exit handlers
        process = background_compile._compiler.process
        print(json.dumps({"fallbacks": background_compile.fallbacks,
                          "ended_by": process.returncode}))

    atexit.register(report)
    import numpy as np
    import minitrain as mt
    from minitrain.runtime import background_compile

    x = mt.tensor(np.random.default_rng(2).standard_normal((8, 16)).astype(np.float32))
    mt.nn.functional.gelu(x), mt.nn.functional.relu(x), mt.nn.functional.softmax(x, -1)
    """  # and ends at once, its three kernels still compiling (or all done, the process idle)
    report = run_cold(code, tmp_path, "1")
    assert report["fallbacks"] == 3
    # terminated by the program's exit: nothing left running or writing into the cache folder
    assert report["ended_by"] == -signal.SIGTERM


def test_switched_off_a_kernel_compiles_at_its_first_call(tmp_path):
    report = run_cold(GELU_TWICE, tmp_path, "0")
    assert report["first_ran_numba"] and report["fallbacks"] == 0


def test_deterministic_algorithms_compile_at_the_first_call(tmp_path):
    code = GELU_TWICE.replace(
        "from minitrain.runtime import background_compile\n",
        "from minitrain.runtime import background_compile\nmt.use_deterministic_algorithms(True)\n",
    )
    report = run_cold(code, tmp_path, "1")
    assert report["first_ran_numba"] and report["fallbacks"] == 0


def test_a_kernel_called_outside_any_op_compiles_at_once(tmp_path):
    # max_pool2d's indices come from a second pass of the pooling kernel outside the op: nothing
    # there runs generic kernels instead, so even held back, the kernel compiles at its call
    code = """
    import json
    import numpy as np
    import minitrain as mt
    from minitrain.runtime import background_compile

    x = mt.tensor(np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32))
    _, indices = mt.nn.functional.max_pool2d(x, 2, return_indices=True)
    with mt.backend.use_numba(False):
        _, generic = mt.nn.functional.max_pool2d(x, 2, return_indices=True)
    print(json.dumps({"same": bool(np.array_equal(indices.array, generic.array)),
                      "fallbacks": background_compile.fallbacks}))
    """
    report = run_cold(code, tmp_path, "hold")
    assert report["same"]
    assert report["fallbacks"] == 1  # the op's own pass fell back; the indices' pass did not
    assert list(tmp_path.rglob("*max_pool*.nbi")), "the kernel was not compiled at its call"


def test_use_deterministic_algorithms_is_pytorchs_switch():
    assert not mt.are_deterministic_algorithms_enabled()
    try:
        mt.use_deterministic_algorithms(True, warn_only=True)
        assert mt.are_deterministic_algorithms_enabled()
        assert mt.is_deterministic_algorithms_warn_only_enabled()
        assert not background_compile.compiles_in_background()
    finally:
        mt.use_deterministic_algorithms(False)
    assert not mt.are_deterministic_algorithms_enabled()


def test_warn_only_reads_false_before_use_deterministic_algorithms_is_called():
    # a fresh process: this one's tests may have called it (a NameError there before the fix)
    code = "import minitrain as mt; print(mt.is_deterministic_algorithms_warn_only_enabled())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_use_deterministic_algorithms_refuses_a_non_bool():
    import pytest

    with pytest.raises(mt.errors.DTypeError, match="use_deterministic_algorithms"):
        mt.use_deterministic_algorithms("yes")
    assert not mt.are_deterministic_algorithms_enabled()


def test_a_registered_function_on_the_stack_is_what_falls_back():
    def plain():
        return background_compile.caller_falls_back()

    def user_code():
        return plain()

    def catching(inner):
        return inner()

    assert not plain()
    background_compile.falls_back(catching)
    background_compile.runs_user_code(user_code)
    try:
        assert catching(plain)
        assert not catching(user_code)  # user code between: its kernels compile at their call
    finally:
        background_compile._fallback_codes.discard(catching.__code__)
        background_compile._user_code_codes.discard(user_code.__code__)


def test_a_custom_functions_forward_and_backward_are_user_code():
    from minitrain.autograd import function

    registered = background_compile._user_code_codes
    assert function._call_backward.__code__ in registered
    assert function.Function.__dict__["apply"].__func__.__code__ in registered
