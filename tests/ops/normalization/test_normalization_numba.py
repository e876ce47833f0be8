"""The normalization numba kernels against the generic ones: which kernels run, in which layouts
and dtypes, serial and parallel builds, and where numba steps aside."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from normalization_cases import CASES, assert_all_close, run

import minitrain as mt
from minitrain import backend, ops
from minitrain.ops.normalization import batch as batch_normalization
from minitrain.ops.normalization import rows as row_normalization

LAYOUTS = {
    "contiguous": lambda a: a,
    "fortran": np.asfortranarray,
    "strided": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],
}


def _numba_kernels_of(case) -> tuple[list[str], list[str]]:
    """The numba kernels the case's forward runs, and those its backward runs, in order."""
    if case.op != "batch_norm":
        return ["rows_forward"], ["rows_backward"]
    if math.prod(case.shape[2:]) >= batch_normalization._CHANNEL_RUN:  # long runs: by channel
        return ["channels_forward"], ["channels_backward"]
    return ["columns_sums", "columns_sums", "columns_combine"], [
        "columns_grad_sums",
        "columns_combine",
    ]


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_numba_matches_generic(kernel_runs, case, dtype, layout, affine):
    x, weight, bias, dy = case.make(dtype, seed=4, affine=affine)
    x, dy = LAYOUTS[layout](x), LAYOUTS[layout](dy)
    assert x.flags.c_contiguous == dy.flags.c_contiguous == (layout == "contiguous")
    with backend.use_numba(True):
        y_numba, grads_numba, *_ = run(case, x, weight, bias, dy)
    forward, backward = _numba_kernels_of(case)
    assert kernel_runs == forward + backward
    with backend.use_numba(False):
        y, grads, *_ = run(case, x, weight, bias, dy)
    assert kernel_runs == forward + backward  # no more
    for got in [y_numba, *grads_numba]:
        assert got is None or got.dtype == dtype
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    assert_all_close([y_numba, *grads_numba], [y, *grads], **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_numba_serial_and_parallel_builds_agree_and_switch_at_the_threshold(
    monkeypatch, record_builds, case, dtype
):
    x, weight, bias, dy = case.make(dtype, seed=6, affine=True)
    module, factory = (batch_normalization, "_batch_norm_kernels")
    if case.op != "batch_norm":
        module, factory = row_normalization, "_row_kernels"
    builds = record_builds(module, factory)
    results = {}
    # at the threshold (x.size) the parallel builds run, one above it the serial ones
    for threshold, parallel in [(x.size, True), (x.size + 1, False)]:
        monkeypatch.setattr(module, "_PARALLEL_WORK", threshold)
        with backend.use_numba(True):
            y, grads, *_ = run(case, x, weight, bias, dy)
        assert builds and set(builds) == {parallel}
        builds.clear()
        results[parallel] = [y, *grads]
    for got, want in zip(results[True], results[False], strict=True):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "forward_numba", [False, True], ids=["on-for-backward", "off-for-backward"]
)
@pytest.mark.parametrize("case", CASES[:3] + [CASES[5], CASES[7], CASES[9]], ids=str)
def test_backward_runs_numba_where_its_forward_did_and_numba_is_on(
    kernel_runs, case, forward_numba
):
    # numba switched between forward and backward: the backward runs the generic kernel either
    # way (Op.apply chose for the forward; numba off is off), on what the forward saved (the
    # numba forward's arrays, or a non-contiguous x)
    x, weight, bias, dy = case.make(np.float32, seed=5)
    x = np.asfortranarray(x)
    want = run(case, x, weight, bias, dy)[1]
    leaves = [
        mt.Tensor(a, requires_grad=True) if a is not None else None for a in (x, weight, bias)
    ]
    kernel_runs.clear()
    with backend.use_numba(forward_numba):
        out = case.call(*leaves)
    assert bool(kernel_runs) == forward_numba
    kernel_runs.clear()
    with backend.use_numba(not forward_numba):
        out.backward(dy)
    assert kernel_runs == []
    got = [None if leaf is None else leaf.grad.array for leaf in leaves]
    assert_all_close(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda c: (c.make(np.float16)[0], None, None),  # float16: no numba kernel
        lambda c: (c.make(np.float32)[0], c.make(np.float64)[1], None),  # mixed dtypes
    ],
    ids=["float16", "mixed"],
)
@pytest.mark.parametrize("case", [CASES[2], CASES[4], CASES[8]], ids=str)
def test_numba_steps_aside_where_it_does_not_apply(kernel_runs, case, make):
    x, weight, bias = make(case)
    with backend.use_numba(True):
        y, grads, *_ = run(case, x, weight, bias, np.ones(x.shape, x.dtype))
    assert kernel_runs == []
    assert grads[0].dtype == x.dtype and np.isfinite(grads[0]).all()
    assert y.dtype == (x.dtype if weight is None else weight.dtype)


def test_empty_rows_normalize_to_empty(numba):
    x = mt.tensor(np.zeros((0, 4)), requires_grad=True)
    w = mt.tensor(np.ones(4), requires_grad=True)
    b = mt.tensor(np.zeros(4), requires_grad=True)
    for invertible in (False, True):
        out = ops.layer_norm(x, (4,), w, b, invertible=invertible)
        assert out.shape == (0, 4)
        gx, gw, gb = mt.grad(out, [x, w, b], grad_outputs=mt.tensor(np.zeros((0, 4))))
        assert gx.shape == (0, 4)
        np.testing.assert_array_equal(gw.array, 0.0)
        np.testing.assert_array_equal(gb.array, 0.0)


def test_numba_off_imports_no_numba():
    script = (
        "import sys, numpy as np, minitrain as mt\n"
        "x = mt.tensor(np.random.rand(4, 3, 5), requires_grad=True)\n"
        "mt.ops.batch_norm(x).sum().backward(); mt.ops.rms_norm(x, (5,)).sum().backward()\n"
        "mt.ops.layer_norm(x, (3, 5), invertible=True).sum().backward()\n"
        "assert 'numba' not in sys.modules\n"
    )
    env = dict(os.environ, MINITRAIN_NUMBA="0")
    subprocess.run([sys.executable, "-c", script], check=True, env=env)
