"""The normalization ops and their gradient kernels against PyTorch's, forward and backward:
values, gradients, saved statistics, default eps and positional arguments."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from normalization_cases import CASES, ROW_CASES, assert_all_close, run, torch_run

import minitrain as mt
from minitrain import backend, ops
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's spelling)


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_op_matches_torch(torch, case, affine, numba):
    x, weight, bias, dy = case.make(affine=affine)
    y, grads, *_ = run(case, x, weight, bias, dy)
    y_want, grads_want = torch_run(torch, case, x, weight, bias, dy)
    assert_all_close([y, *grads], [y_want, *grads_want], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("case", [c for c in CASES if c.op == "batch_norm"], ids=str)
def test_batch_norm_grad_matches_torch(torch, case, affine, numba):
    x, weight, bias, dy = case.make(affine=affine)
    tensors = [
        None if a is None else torch.tensor(a, requires_grad=True) for a in (x, weight, bias)
    ]
    y, saved_mean, saved_inv_std = torch.ops.aten.native_batch_norm(
        *tensors, None, None, True, 0.1, 1e-5
    )
    want = torch.autograd.grad(y, [t for t in tensors if t is not None], torch.tensor(dy))
    # the kernel alone, on PyTorch's statistics
    dx, dscale, dbias = ops.batch_norm_grad(
        dy, x, weight, saved_mean.detach().numpy(), saved_inv_std.detach().numpy()
    )
    got = [dx, dscale, dbias][: len(want)]
    assert_all_close(got, [w.numpy() for w in want], rtol=1e-10, atol=1e-12)
    # and what the op saves for it is PyTorch's statistics
    saved = run(case, x, weight, bias, dy)[3]
    np.testing.assert_allclose(saved["saved_mean"], saved_mean.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(saved["saved_inv_std"], saved_inv_std.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("case", ROW_CASES, ids=str)
def test_layer_norm_kernels_match_torch(torch, case, affine, numba):
    x, weight, bias, dy = case.make(affine=affine)
    tensors = [
        None if a is None else torch.tensor(a, requires_grad=True) for a in (x, weight, bias)
    ]
    y, mean, inv_std = torch.ops.aten.native_layer_norm(
        tensors[0], case.normalized, *tensors[1:], 1e-5
    )
    want = torch.autograd.grad(y, [t for t in tensors if t is not None], torch.tensor(dy))
    want = [w.numpy() for w in want]
    mean, inv_std, y = (t.detach().numpy() for t in (mean, inv_std, y))
    axis = -case.dims
    got = ops.layer_norm_grad(dy, x, weight, mean, inv_std, axis)
    assert_all_close(list(got)[: len(want)], want, rtol=1e-10, atol=1e-12)
    # the invertible kernel reads PyTorch's output instead of x
    got = ops.invertible_layer_norm_grad(dy, y, weight, bias, inv_std, axis)
    assert_all_close(list(got)[: len(want)], want, rtol=1e-10, atol=1e-12)
    # what the op saves: PyTorch's statistics, shaped dims[:axis] + (1,) * k as theirs
    saved = run(case, x, weight, bias, dy)[3]
    assert saved["mean"].shape == mean.shape and saved["inv_std"].shape == inv_std.shape
    np.testing.assert_allclose(saved["mean"], mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(saved["inv_std"], inv_std, rtol=1e-12)


@pytest.mark.parametrize("affine", [True, False], ids=["weight", "plain"])
@pytest.mark.parametrize("case", [c for c in CASES if c.op == "rms_norm"], ids=str)
def test_simplified_layer_norm_grad_matches_torch(torch, case, affine, numba):
    x, weight, _, dy = case.make(affine=affine)
    dims = tuple(range(x.ndim - case.dims, x.ndim))
    eps = float(np.finfo(np.float64).eps)  # torch's default for float64
    inv_std = torch.rsqrt(torch.tensor(x).square().mean(dims, keepdim=True) + eps).numpy()
    _, want = torch_run(torch, case, x, weight, None, dy)
    dx, dscale = ops.simplified_layer_norm_grad(dy, x, weight, inv_std, -case.dims)
    assert_all_close([dx, dscale if affine else None], want[:2], rtol=1e-10, atol=1e-12)
    saved = run(case, x, weight, None, dy)[3]
    np.testing.assert_allclose(saved["inv_std"], inv_std, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rms_norm_default_eps_is_torchs(torch, dtype):
    # values of 1e-4: mean(x^2) is 1e-8, so float32's eps (1.2e-7) shows in the result
    x = 1e-4 * np.random.default_rng(1).standard_normal((4, 6)).astype(dtype)
    got = ops.rms_norm(x, (6,)).array
    want = torch.nn.functional.rms_norm(torch.tensor(x), (6,)).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    if dtype == np.float32:  # float32's eps shows at this scale: the comparison can tell
        assert not np.allclose(got, ops.rms_norm(x, (6,), eps=0.0).array, rtol=1e-2)


def test_rms_norm_default_eps_for_float16_is_float32s(torch):
    # PyTorch computes float16 in float32 and takes float32's eps; so does minitrain
    x = (1e-3 * np.random.default_rng(2).standard_normal((3, 8))).astype(np.float16)
    got = ops.rms_norm(x, (8,)).array
    np.testing.assert_array_equal(got, ops.rms_norm(x, (8,), eps=np.finfo(np.float32).eps).array)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns that it has no fused float16 kernel
        want = torch.nn.functional.rms_norm(torch.tensor(x), (8,)).numpy()
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3)


@pytest.mark.parametrize("numba_on", [False, True], ids=["generic", "numba"])
def test_functional_forms_take_torchs_positional_arguments(torch, numba_on):
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((5, 3, 4)), rng.standard_normal(3), rng.standard_normal(3)
    mean, var = rng.standard_normal(3), rng.uniform(0.5, 2.0, 3)
    ours_mean, ours_var = mt.tensor(mean), mt.tensor(var)
    theirs_mean, theirs_var = torch.tensor(mean), torch.tensor(var)
    functional = torch.nn.functional
    t = torch.tensor
    with backend.use_numba(numba_on):
        for training in (True, False):
            got = F.batch_norm(x, ours_mean, ours_var, w, b, training, 0.3, 1e-3).array
            want = functional.batch_norm(
                t(x), theirs_mean, theirs_var, t(w), t(b), training, 0.3, 1e-3
            )
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours_mean.array, theirs_mean.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours_var.array, theirs_var.numpy(), rtol=1e-12)
        w2, b2 = rng.standard_normal(4), rng.standard_normal(4)
        got = F.layer_norm(x, (4,), w2, b2, 1e-3).array
        want = functional.layer_norm(t(x), (4,), t(w2), t(b2), 1e-3).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
        got = F.layer_norm(x, (4,), w2, b2, 1e-3, invertible=True).array
        np.testing.assert_allclose(got, want, rtol=1e-12)
        got = F.rms_norm(x, (3, 4), None, 1e-3).array
        want = functional.rms_norm(t(x), (3, 4), None, 1e-3).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
