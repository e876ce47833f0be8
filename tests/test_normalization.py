"""Normalization: every gradient kernel against PyTorch's, forward and backward; the numba kernels
against the generic ones; fused batch norm against its composite; the invertible layer norm against
the standard one; mixed precision; running statistics; the N/(N-1) trap; and the errors."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import DTypeError, GradcheckError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's spelling)
from minitrain.ops import normalization

STATISTICS = {"saved_mean", "saved_inv_std", "mean", "inv_std"}  # names of saved statistics
GRAD_KERNELS = {
    "batch_norm": "BatchNormalizationGrad",
    "layer_norm": "LayerNormalizationGrad",
    "invertible_layer_norm": "InvertibleLayerNormalizationGrad",
    "rms_norm": "SimplifiedLayerNormalizationGrad",
}


@pytest.fixture(params=[False, True], ids=["generic", "numba"])
def numba(request):
    """Run the test with the generic kernels, then with the numba ones."""
    previous = backend.set_numba(request.param)
    yield request.param
    backend.set_numba(previous)


@pytest.fixture
def kernel_runs(monkeypatch):
    """The names of the numba kernels that ran, in order."""
    runs = []
    original = normalization._numba_kernels

    def recorded(name, kernel):
        def run(*args):
            runs.append(name)
            return kernel(*args)

        return run

    def spy(parallel):
        kernels = original(parallel)
        return SimpleNamespace(**{n: recorded(n, k) for n, k in vars(kernels).items()})

    monkeypatch.setattr(normalization, "_numba_kernels", spy)
    return runs


class Case(NamedTuple):
    """One op on one input shape: batch norm over (N, C, *spatial), or a layer-norm family op
    over the last `dims` dims."""

    op: str
    shape: tuple
    dims: int = 1

    def __str__(self):
        return f"{self.op}-{'x'.join(map(str, self.shape))}" + (
            f"-last{self.dims}" if self.op != "batch_norm" else ""
        )

    @property
    def normalized(self) -> tuple:
        return self.shape[len(self.shape) - self.dims :]

    @property
    def param_shape(self) -> tuple:
        return (self.shape[1],) if self.op == "batch_norm" else self.normalized

    @property
    def has_bias(self) -> bool:
        return self.op != "rms_norm"

    def make(self, dtype=np.float64, seed=0, affine=True):
        """(x, weight, bias, dy) arrays; weight and bias None without affine (or bias for RMS)."""
        rng = np.random.default_rng(seed)
        x = (2.0 * rng.standard_normal(self.shape) + 0.5).astype(dtype)
        dy = rng.standard_normal(self.shape).astype(dtype)
        weight = bias = None
        if affine:  # weights away from 0: the invertible variant divides by them
            weight = rng.choice([-1.0, 1.0], self.param_shape) * rng.uniform(0.5, 1.5)
            weight = weight.astype(dtype)
            if self.has_bias:
                bias = rng.standard_normal(self.param_shape).astype(dtype)
        return x, weight, bias, dy

    def call(self, x, weight=None, bias=None, **kw):
        if self.op == "batch_norm":
            return ops.batch_norm(x, weight, bias, **kw)
        if self.op == "batch_norm_composite":
            return ops.batch_norm_composite(x, weight, bias, **kw)
        if self.op == "rms_norm":
            return ops.rms_norm(x, self.normalized, weight, **kw)
        invertible = self.op == "invertible_layer_norm"
        return ops.layer_norm(x, self.normalized, weight, bias, invertible=invertible, **kw)

    def torch_call(self, torch, x, weight=None, bias=None):
        functional = torch.nn.functional
        if self.op == "batch_norm":
            return functional.batch_norm(x, None, None, weight, bias, training=True)
        if self.op == "rms_norm":
            return functional.rms_norm(x, self.normalized, weight)
        return functional.layer_norm(x, self.normalized, weight, bias)


CASES = [
    Case("batch_norm", (8, 3)),
    Case("batch_norm", (4, 3, 5)),
    Case("batch_norm", (3, 4, 5, 6)),
    Case("batch_norm", (2, 3, 3, 4, 5)),
    Case("layer_norm", (6, 7)),
    Case("layer_norm", (2, 3, 4, 5), dims=2),
    Case("invertible_layer_norm", (6, 7)),
    Case("invertible_layer_norm", (2, 3, 4, 5), dims=2),
    Case("rms_norm", (6, 7)),
    Case("rms_norm", (2, 3, 4, 5), dims=2),
]


def _run(case, x, weight, bias, dy, **kw):
    """The case's output and the gradients of sum(output * dy): [x, weight, bias] (None where
    absent), as arrays; the output tensor; and what its node saved for backward. The arrays keep
    their layout (Tensor does not copy)."""
    leaves = [None if a is None else mt.Tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = case.call(*leaves, **kw)
    saved = out.grad_fn.saved_arrays()
    present = [leaf for leaf in leaves if leaf is not None]
    found = iter(mt.grad(out, present, grad_outputs=mt.Tensor(dy)))
    grads = [None if leaf is None else next(found).data for leaf in leaves]
    return out.data, grads, out, saved


def _torch_run(torch, case, x, weight, bias, dy):
    leaves = [None if a is None else torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    out = case.torch_call(torch, *leaves)
    out.backward(torch.tensor(dy))
    return out.detach().numpy(), [None if t is None else t.grad.numpy() for t in leaves]


def _assert_all_close(got, want, **tol):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert (g is None) == (w is None), f"output {i}"
        if g is not None:
            assert g.shape == w.shape, f"output {i}: shape {g.shape}, expected {w.shape}"
            np.testing.assert_allclose(g, w, err_msg=f"output {i}", **tol)


# --- the ops and the kernels against PyTorch ---------------------------------------------------


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_op_matches_torch(torch, case, affine, numba):
    x, weight, bias, dy = case.make(affine=affine)
    y, grads, *_ = _run(case, x, weight, bias, dy)
    y_want, grads_want = _torch_run(torch, case, x, weight, bias, dy)
    _assert_all_close([y, *grads], [y_want, *grads_want], rtol=1e-10, atol=1e-12)


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
    _assert_all_close(got, [w.numpy() for w in want], rtol=1e-10, atol=1e-12)
    # and what the op saves for it is PyTorch's statistics
    saved = _run(case, x, weight, bias, dy)[3]
    np.testing.assert_allclose(saved["saved_mean"], saved_mean.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(saved["saved_inv_std"], saved_inv_std.detach().numpy(), rtol=1e-12)


ROW_CASES = [c for c in CASES if c.op == "layer_norm"]


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
    _assert_all_close(list(got)[: len(want)], want, rtol=1e-10, atol=1e-12)
    # the invertible kernel reads PyTorch's output instead of x
    got = ops.invertible_layer_norm_grad(dy, y, weight, bias, inv_std, axis)
    _assert_all_close(list(got)[: len(want)], want, rtol=1e-10, atol=1e-12)
    # what the op saves: PyTorch's statistics, shaped dims[:axis] + (1,) * k as theirs
    saved = _run(case, x, weight, bias, dy)[3]
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
    _, want = _torch_run(torch, case, x, weight, None, dy)
    dx, dscale = ops.simplified_layer_norm_grad(dy, x, weight, inv_std, -case.dims)
    _assert_all_close([dx, dscale if affine else None], want[:2], rtol=1e-10, atol=1e-12)
    saved = _run(case, x, weight, None, dy)[3]
    np.testing.assert_allclose(saved["inv_std"], inv_std, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rms_norm_default_eps_is_torchs(torch, dtype):
    # values of 1e-4: mean(x^2) is 1e-8, so float32's eps (1.2e-7) shows in the result
    x = 1e-4 * np.random.default_rng(1).standard_normal((4, 6)).astype(dtype)
    got = ops.rms_norm(x, (6,)).data
    want = torch.nn.functional.rms_norm(torch.tensor(x), (6,)).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    if dtype == np.float32:  # float32's eps shows at this scale: the comparison can tell
        assert not np.allclose(got, ops.rms_norm(x, (6,), eps=0.0).data, rtol=1e-2)


def test_rms_norm_default_eps_for_float16_is_float32s(torch):
    # PyTorch computes float16 in float32 and takes float32's eps; so does minitrain
    x = (1e-3 * np.random.default_rng(2).standard_normal((3, 8))).astype(np.float16)
    got = ops.rms_norm(x, (8,)).data
    np.testing.assert_array_equal(got, ops.rms_norm(x, (8,), eps=np.finfo(np.float32).eps).data)
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
            got = F.batch_norm(x, ours_mean, ours_var, w, b, training, 0.3, 1e-3).data
            want = functional.batch_norm(
                t(x), theirs_mean, theirs_var, t(w), t(b), training, 0.3, 1e-3
            )
            np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours_mean.data, theirs_mean.numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours_var.data, theirs_var.numpy(), rtol=1e-12)
        w2, b2 = rng.standard_normal(4), rng.standard_normal(4)
        got = F.layer_norm(x, (4,), w2, b2, 1e-3).data
        want = functional.layer_norm(t(x), (4,), t(w2), t(b2), 1e-3).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
        got = F.layer_norm(x, (4,), w2, b2, 1e-3, invertible=True).data
        np.testing.assert_allclose(got, want, rtol=1e-12)
        got = F.rms_norm(x, (3, 4), None, 1e-3).data
        want = functional.rms_norm(t(x), (3, 4), None, 1e-3).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)


# --- numba against the generic kernels ---------------------------------------------------------

LAYOUTS = {
    "contiguous": lambda a: a,
    "fortran": np.asfortranarray,
    "strided": lambda a: np.repeat(a, 2, axis=-1)[..., ::2],
}


def _numba_kernels_of(case) -> tuple[list[str], list[str]]:
    """The numba kernels the case's forward runs, and those its backward runs, in order."""
    if case.op != "batch_norm":
        return ["rows_forward"], ["rows_backward"]
    if math.prod(case.shape[2:]) >= normalization._CHANNEL_RUN:  # long runs: by channel
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
        y_numba, grads_numba, *_ = _run(case, x, weight, bias, dy)
    forward, backward = _numba_kernels_of(case)
    assert kernel_runs == forward + backward
    with backend.use_numba(False):
        y, grads, *_ = _run(case, x, weight, bias, dy)
    assert kernel_runs == forward + backward  # no more
    for got in [y_numba, *grads_numba]:
        assert got is None or got.dtype == dtype
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    _assert_all_close([y_numba, *grads_numba], [y, *grads], **tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_numba_serial_and_parallel_builds_agree_and_switch_at_the_threshold(
    monkeypatch, record_builds, case, dtype
):
    x, weight, bias, dy = case.make(dtype, seed=6, affine=True)
    family = "batch_norm" if case.op == "batch_norm" else "rows"
    builds = record_builds(normalization, "_numba_kernels")
    results = {}
    # at the threshold (x.size) the parallel builds run, one above it the serial ones
    for threshold, parallel in [(x.size, True), (x.size + 1, False)]:
        monkeypatch.setitem(normalization._PARALLEL_WORK, family, threshold)
        with backend.use_numba(True):
            y, grads, *_ = _run(case, x, weight, bias, dy)
        assert builds and set(builds) == {parallel}
        builds.clear()
        results[parallel] = [y, *grads]
    for got, want in zip(results[True], results[False], strict=True):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", CASES[:3] + [CASES[5], CASES[7], CASES[9]], ids=str)
def test_numba_backward_of_a_generic_forward(kernel_runs, case):
    # numba switched on between forward and backward: the numba backward reads what the generic
    # forward saved (a non-contiguous x among it)
    x, weight, bias, dy = case.make(np.float32, seed=5)
    x = np.asfortranarray(x)
    want = _run(case, x, weight, bias, dy)[1]
    leaves = [
        mt.Tensor(a, requires_grad=True) if a is not None else None for a in (x, weight, bias)
    ]
    with backend.use_numba(False):
        out = case.call(*leaves)
    kernel_runs.clear()
    with backend.use_numba(True):
        out.backward(dy)
    assert kernel_runs == _numba_kernels_of(case)[1]
    got = [None if leaf is None else leaf.grad.data for leaf in leaves]
    _assert_all_close(got, want, rtol=1e-5, atol=1e-5)


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
        y, grads, *_ = _run(case, x, weight, bias, np.ones(x.shape, x.dtype))
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
        np.testing.assert_array_equal(gw.data, 0.0)
        np.testing.assert_array_equal(gb.data, 0.0)


# --- fused against composed, invertible against standard ---------------------------------------


@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize("case", [c for c in CASES if c.op == "batch_norm"], ids=str)
def test_fused_batch_norm_equals_the_composite(case, affine, numba):
    x, weight, bias, dy = case.make()
    weight = None if affine == "none" else weight
    bias = bias if affine == "both" else None
    fused = _run(case, x, weight, bias, dy, eps=1e-3)
    composite_case = case._replace(op="batch_norm_composite")
    composed = _run(composite_case, x, weight, bias, dy, eps=1e-3)
    _assert_all_close([fused[0], *fused[1]], [composed[0], *composed[1]], rtol=1e-10, atol=1e-12)


def test_composite_is_built_from_primitive_ops():
    x, weight, bias, _ = Case("batch_norm", (4, 3, 5)).make()
    leaves = [mt.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    with mt.Tape() as tape:
        ops.batch_norm_composite(*leaves)
    names = {node.name for node in tape.nodes}
    assert "BatchNormalizationGrad" not in names
    assert {"MeanGrad", "SubGrad", "MulGrad", "SqrtGrad", "DivGrad", "AddGrad"} <= names


@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
@pytest.mark.parametrize("dims", [1, 2])
def test_invertible_layer_norm_equals_the_standard_one(dims, affine, numba):
    standard = Case("layer_norm", (3, 4, 5), dims)
    x, weight, bias, dy = standard.make(affine=affine)
    y, grads, out, _ = _run(standard, x, weight, bias, dy)
    y_inv, grads_inv, out_inv, _ = _run(
        standard._replace(op="invertible_layer_norm"), x, weight, bias, dy
    )
    assert out.grad_fn.name == "LayerNormalizationGrad"
    assert out_inv.grad_fn.name == "InvertibleLayerNormalizationGrad"
    np.testing.assert_array_equal(y_inv, y)
    _assert_all_close(grads_inv, grads, rtol=1e-10, atol=1e-12)


def test_invertible_layer_norm_keeps_its_output_not_its_input():
    x, weight, bias, _ = Case("layer_norm", (3, 5)).make()
    leaf = mt.tensor(x, requires_grad=True)
    out = ops.layer_norm(leaf, (5,), weight, bias, invertible=True)
    saved = out.grad_fn.saved_arrays()
    assert sorted(saved) == ["bias", "inv_std", "out", "scale"]
    assert saved["out"] is out.data
    assert all(array is not leaf.data for array in saved.values())


@pytest.mark.parametrize("dims", [1, 2])
def test_invertible_layer_norm_falls_back_where_weight_has_a_zero(dims, numba):
    case = Case("invertible_layer_norm", (3, 4, 5), dims)
    x, weight, bias, dy = case.make()
    weight.flat[1] = 0.0  # a zero-initialised gain, say
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        _, grads, out, _ = _run(case, x, weight, bias, dy)
    assert out.grad_fn.name == "LayerNormalizationGrad"
    assert all(np.isfinite(g).all() for g in grads)
    want = _run(case._replace(op="layer_norm"), x, weight, bias, dy)[1]
    _assert_all_close(grads, want, rtol=0, atol=0)
    assert grads[0].reshape(-1, weight.size)[:, 1].any()  # x still gets gradient there


def test_invertible_kernel_and_op_refuse_a_zero_scale():
    y, dy = np.ones((2, 3)), np.ones((2, 3))
    scale = np.array([1.0, 0.0, 2.0])
    with pytest.raises(ValueError) as info:
        ops.invertible_layer_norm_grad(dy, y, scale, None, np.ones((2, 1)))
    message = str(info.value)
    assert "invertible_layer_norm_grad" in message and "scale" in message and "(1,)" in message
    op = ops.registry()["invertible_layer_norm"]
    with pytest.raises(ValueError, match="invertible_layer_norm: weight"):
        op.apply(mt.tensor(y, requires_grad=True), scale, None, axis=1, eps=1e-5)


# --- mixed precision ---------------------------------------------------------------------------


@pytest.mark.parametrize("param_dtype", [np.float16, np.float32])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_float16_input_is_accurate_to_float16(case, param_dtype, numba):
    x, weight, bias, dy = case.make(np.float16, seed=6)
    weight = weight.astype(param_dtype)
    bias = None if bias is None else bias.astype(param_dtype)
    y, grads, _, saved = _run(case, x, weight, bias, dy)
    # the reference: the same (rounded) values in float64
    wide = [None if a is None else a.astype(np.float64) for a in (x, weight, bias, dy)]
    y_want, grads_want, *_ = _run(case, *wide)
    assert y.dtype == param_dtype  # V: the parameters' dtype
    assert [g.dtype for g in grads if g is not None] == [np.float16] + [param_dtype] * (
        1 + (bias is not None)
    )
    stats = [v for k, v in saved.items() if k in STATISTICS]
    assert stats and all(s.dtype == np.float32 for s in stats)  # U: float32, never float16
    eps16 = float(np.finfo(np.float16).eps)
    for got, want in zip([y, *grads], [y_want, *grads_want], strict=True):
        if got is not None:
            scale = np.abs(want).max()
            np.testing.assert_allclose(got, want, rtol=4 * eps16, atol=4 * eps16 * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_statistics_and_gradients_keep_float32_and_float64(case, dtype, numba):
    x, weight, bias, dy = case.make(dtype)
    y, grads, _, saved = _run(case, x, weight, bias, dy)
    assert y.dtype == dtype and all(g.dtype == dtype for g in grads if g is not None)
    stats = [v for k, v in saved.items() if k in STATISTICS]
    assert stats and all(s.dtype == dtype for s in stats)


# --- running statistics ------------------------------------------------------------------------


@pytest.mark.parametrize("momentum", [0.1, 0.6])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 2, 5)], ids=["2d", "4d"])
def test_running_statistics_match_torch(torch, shape, momentum, numba):
    rng = np.random.default_rng(7)
    channels = shape[1]
    ours = [mt.tensor(np.zeros(channels)), np.ones(channels)]  # a Tensor and an array
    theirs = [torch.zeros(channels, dtype=torch.float64), torch.ones(channels, dtype=torch.float64)]
    weight, bias = rng.standard_normal(channels), rng.standard_normal(channels)
    for step in range(4):
        x = 3.0 * rng.standard_normal(shape) + step
        F.batch_norm(x, *ours, weight, bias, training=True, momentum=momentum)
        torch.nn.functional.batch_norm(
            torch.tensor(x), *theirs, torch.tensor(weight), torch.tensor(bias), True, momentum
        )
        np.testing.assert_allclose(ours[0].data, theirs[0].numpy(), rtol=1e-12)
        np.testing.assert_allclose(ours[1], theirs[1].numpy(), rtol=1e-12)
    # evaluation uses them: values and gradients as PyTorch's, through ordinary ops
    case = Case("batch_norm", shape)
    x, _, _, dy = case.make(seed=8)
    y, grads, out, _ = _run(
        case, x, weight, bias, dy, running_mean=ours[0], running_var=ours[1], training=False
    )
    assert out.grad_fn.name == "AddGrad"
    leaves = [torch.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    want = torch.nn.functional.batch_norm(leaves[0], *theirs, *leaves[1:], training=False)
    want.backward(torch.tensor(dy))
    np.testing.assert_allclose(y, want.detach().numpy(), rtol=1e-12, atol=1e-12)
    _assert_all_close(grads, [t.grad.numpy() for t in leaves], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1].numpy(), rtol=1e-12)  # eval updates nothing


def test_evaluation_records_ordinary_ops_and_needs_no_second_value():
    # (1, 3): one value per channel is fine with running statistics
    x = mt.tensor(np.array([[1.0, 2.0, 3.0]]), requires_grad=True)
    w = mt.tensor(np.array([2.0, 1.0, 0.5]), requires_grad=True)
    mean, var = np.array([0.0, 1.0, 2.0]), np.array([4.0, 1.0, 0.25])
    with mt.Tape() as tape:
        y = ops.batch_norm(x, w, None, 0.0, running_mean=mean, running_var=var, training=False)
    assert "BatchNormalizationGrad" not in {node.name for node in tape.nodes}
    # (x - mean) / sqrt(var) * w = (1/2 * 2, 1/1 * 1, 1/0.5 * 0.5)
    np.testing.assert_allclose(y.data, [[1.0, 1.0, 1.0]])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.data, [[1.0, 1.0, 1.0]])  # w / sqrt(var)
    np.testing.assert_allclose(w.grad.data, [0.5, 1.0, 2.0])  # (x - mean) / sqrt(var)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_evaluation_without_affine_parameters_matches_torch(torch, dtype):
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 3, 5)).astype(dtype)
    mean, var = rng.standard_normal(3).astype(dtype), rng.uniform(0.5, 2, 3).astype(dtype)
    leaf = mt.tensor(x, requires_grad=True)
    y = ops.batch_norm(leaf, running_mean=mean, running_var=var, training=False)
    y.sum().backward()
    t = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.batch_norm(t, torch.tensor(mean), torch.tensor(var))
    want.sum().backward()
    assert y.dtype == dtype and leaf.grad.dtype == dtype
    tol = {"rtol": 1e-6} if dtype == np.float32 else {"rtol": 1e-12}
    np.testing.assert_allclose(y.data, want.detach().numpy(), atol=1e-6, **tol)
    np.testing.assert_allclose(leaf.grad.data, t.grad.numpy(), **tol)


def test_without_running_statistics_batch_statistics_always():
    x, weight, bias, _ = Case("batch_norm", (5, 3, 4)).make()
    train = ops.batch_norm(x, weight, bias, training=True).data
    evaluate = F.batch_norm(x, None, None, weight, bias, training=False).data
    np.testing.assert_array_equal(evaluate, train)


# --- the N/(N-1) trap -------------------------------------------------------------------------


def test_the_n_over_n_minus_1_factor_fails_the_gradient_check(monkeypatch):
    # A published description of the ONNX Runtime kernel scales dX by M / (M - 1); the gradient
    # check shows that is wrong. M = 4 values per channel: a factor of 4/3.
    x, weight, bias, _ = Case("batch_norm", (4, 2)).make()
    inputs = [mt.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    with backend.use_numba(False):  # the backward calls the public kernel
        assert mt.gradcheck(ops.batch_norm, inputs)
        original = normalization.batch_norm_grad

        def with_factor(dY, X, scale, saved_mean, saved_inv_std):
            dX, dscale, dbias = original(dY, X, scale, saved_mean, saved_inv_std)
            count = X.size // X.shape[1]
            return dX * count / (count - 1), dscale, dbias

        monkeypatch.setattr(normalization, "batch_norm_grad", with_factor)
        with pytest.raises(GradcheckError, match="input 0"):
            mt.gradcheck(ops.batch_norm, inputs)


# --- wiring ------------------------------------------------------------------------------------

# op -> (its kernel, what forward saves, in the kernel's argument order)
WIRING = {
    "batch_norm": ("batch_norm_grad", ["x", "scale", "saved_mean", "saved_inv_std"]),
    "layer_norm": ("layer_norm_grad", ["x", "scale", "mean", "inv_std"]),
    "invertible_layer_norm": ("invertible_layer_norm_grad", ["out", "scale", "bias", "inv_std"]),
    "rms_norm": ("simplified_layer_norm_grad", ["x", "scale", "inv_std"]),
}


@pytest.mark.parametrize("case", [CASES[2], CASES[5], CASES[7], CASES[9]], ids=str)
def test_backward_calls_its_kernel_with_what_forward_saved(monkeypatch, case):
    kernel_name, saved_names = WIRING[case.op]
    calls = []
    kernel = getattr(normalization, kernel_name)
    monkeypatch.setattr(
        normalization, kernel_name, lambda *args: calls.append(args) or kernel(*args)
    )
    x, weight, bias, dy = case.make()
    leaf = mt.tensor(x, requires_grad=True)
    with backend.use_numba(False):
        out = case.call(leaf, weight, bias)
        saved = out.grad_fn.saved_arrays()
        assert sorted(saved) == sorted(saved_names)  # exactly what the kernel reads
        assert saved.get("x", leaf.data) is leaf.data
        assert saved.get("out", out.data) is out.data
        out.backward(dy)
    assert len(calls) == 1
    dy_arg, *args = calls[0]
    np.testing.assert_array_equal(dy_arg, dy)
    assert all(a is saved[name] for a, name in zip(args, saved_names, strict=False))
    if case.op != "batch_norm":
        assert args[len(saved_names)] == x.ndim - case.dims  # the axis


@pytest.mark.parametrize("case", [CASES[0], CASES[2], CASES[5], CASES[7], CASES[9]], ids=str)
def test_only_the_parameters_need_gradients(case, numba):
    # x a constant (a frozen input): the parameters' gradients are those of the full run
    x, weight, bias, dy = case.make(np.float32)
    want = _run(case, x, weight, bias, dy)[1]
    params = [mt.Tensor(a, requires_grad=True) for a in (weight, bias) if a is not None]
    out = case.call(x, *params)
    got = mt.grad(out, params, grad_outputs=mt.Tensor(dy))
    _assert_all_close([g.data for g in got], [w for w in want[1:] if w is not None], rtol=1e-6)


@pytest.mark.parametrize("op_name", sorted(GRAD_KERNELS))
def test_grad_kernel_display_names(op_name):
    assert ops.registry()[op_name].grad_kernel == GRAD_KERNELS[op_name]
    case = next(c for c in CASES if c.op == op_name)
    x, weight, bias, _ = case.make()
    assert (
        case.call(mt.tensor(x, requires_grad=True), weight, bias).grad_fn.name
        == GRAD_KERNELS[op_name]
    )


# --- errors ------------------------------------------------------------------------------------


def _ones(*shape):
    return mt.tensor(np.ones(shape), requires_grad=True)


def _arrays(*shape):
    return np.ones(shape)


# (call, error type, fragments the message must hold)
ERRORS = {
    "batch_norm_M_1": (
        lambda: ops.batch_norm(_ones(1, 3)),
        ShapeError,
        ["batch_norm", "(1, 3)", "M = "],
    ),
    "batch_norm_M_1_spatial": (
        lambda: ops.batch_norm(_ones(1, 2, 1, 1)),
        ShapeError,
        ["batch_norm", "(1, 2, 1, 1)", "M = 1"],
    ),
    "batch_norm_grad_M_1": (
        lambda: ops.batch_norm_grad(_arrays(1, 3), _arrays(1, 3), None, _arrays(3), _arrays(3)),
        ShapeError,
        ["batch_norm_grad", "(1, 3)", "M = 1"],
    ),
    "layer_norm_M_0": (
        lambda: ops.layer_norm(_ones(3, 0), (0,)),
        ShapeError,
        ["layer_norm", "(3, 0)", "M = 0"],
    ),
    "invertible_M_0": (
        lambda: ops.layer_norm(_ones(3, 2, 0), (2, 0), invertible=True),
        ShapeError,
        ["layer_norm", "(3, 2, 0)", "M = 0"],
    ),
    "rms_norm_M_0": (
        lambda: ops.rms_norm(_ones(2, 0), axis=-1),
        ShapeError,
        ["rms_norm", "(2, 0)", "M = 0"],
    ),
    "layer_norm_grad_M_0": (
        lambda: ops.layer_norm_grad(
            _arrays(3, 0), _arrays(3, 0), None, _arrays(3, 1), _arrays(3, 1)
        ),
        ShapeError,
        ["layer_norm_grad", "(3, 0)", "M = 0"],
    ),
    "batch_norm_weight_shape": (
        lambda: ops.batch_norm(_ones(2, 3, 4), _ones(4)),
        ShapeError,
        ["batch_norm", "weight", "(4,)", "(3,)"],
    ),
    "batch_norm_bias_shape": (
        lambda: ops.batch_norm(_ones(2, 3), None, _ones(3, 1)),
        ShapeError,
        ["batch_norm", "bias", "(3, 1)", "(3,)"],
    ),
    "batch_norm_grad_scale_shape": (
        lambda: ops.batch_norm_grad(
            _arrays(2, 3), _arrays(2, 3), _arrays(4), _arrays(3), _arrays(3)
        ),
        ShapeError,
        ["batch_norm_grad", "scale", "(4,)", "(3,)"],
    ),
    "layer_norm_weight_shape": (
        lambda: ops.layer_norm(_ones(2, 4), (4,), _ones(5)),
        ShapeError,
        ["layer_norm", "weight", "(5,)", "(4,)"],
    ),
    "rms_norm_weight_shape": (
        lambda: ops.rms_norm(_ones(2, 3, 4), (3, 4), _ones(4)),
        ShapeError,
        ["rms_norm", "weight", "(4,)", "(3, 4)"],
    ),
    "layer_norm_grad_scale_shape": (
        lambda: ops.layer_norm_grad(
            _arrays(2, 4), _arrays(2, 4), _arrays(2), _arrays(2, 1), _arrays(2, 1)
        ),
        ShapeError,
        ["layer_norm_grad", "scale", "(2,)", "(4,)"],
    ),
    "simplified_grad_inv_std_shape": (
        lambda: ops.simplified_layer_norm_grad(_arrays(2, 4), _arrays(2, 4), None, _arrays(2)),
        ShapeError,
        ["simplified_layer_norm_grad", "inv_std", "(2,)", "(2, 1)"],
    ),
    "invertible_grad_bias_shape": (
        lambda: ops.invertible_layer_norm_grad(
            _arrays(2, 4), _arrays(2, 4), None, _arrays(3), _arrays(2, 1)
        ),
        ShapeError,
        ["invertible_layer_norm_grad", "bias", "(3,)", "(4,)"],
    ),
    "kernel_dY_shape": (
        lambda: ops.layer_norm_grad(
            _arrays(2, 5), _arrays(2, 4), None, _arrays(2, 1), _arrays(2, 1)
        ),
        ShapeError,
        ["layer_norm_grad", "dY", "(2, 5)", "(2, 4)"],
    ),
    "batch_norm_rank_1": (
        lambda: ops.batch_norm(_ones(5)),
        ShapeError,
        ["batch_norm", "(5,)", "(N, C)"],
    ),
    "batch_norm_rank_6": (
        lambda: ops.batch_norm(_ones(2, 2, 1, 1, 1, 2)),
        ShapeError,
        ["batch_norm", "(2, 2, 1, 1, 1, 2)"],
    ),
    "batch_norm_grad_rank_1": (
        lambda: ops.batch_norm_grad(_arrays(4), _arrays(4), None, _arrays(1), _arrays(1)),
        ShapeError,
        ["batch_norm_grad", "(4,)"],
    ),
    "layer_norm_0d": (
        lambda: ops.layer_norm(mt.tensor(np.float64(1.0))),
        ShapeError,
        ["layer_norm", "0-d"],
    ),
    "layer_norm_axis_out_of_range": (
        lambda: ops.layer_norm(_ones(2, 3), axis=2),
        ShapeError,
        ["layer_norm", "axis 2"],
    ),
    "normalized_shape_mismatch": (
        lambda: ops.layer_norm(_ones(2, 3, 4), (5,)),
        ShapeError,
        ["layer_norm", "(5,)", "(2, 3, 4)"],
    ),
    "normalized_shape_and_axis": (
        lambda: ops.rms_norm(_ones(2, 3), (3,), axis=-1),
        ValueError,
        ["rms_norm", "not both"],
    ),
    "running_stats_one_missing": (
        lambda: ops.batch_norm(_ones(2, 3), running_mean=np.zeros(3)),
        ValueError,
        ["batch_norm", "running_var"],
    ),
    "running_stats_shape": (
        lambda: ops.batch_norm(_ones(2, 3), running_mean=np.zeros(4), running_var=np.ones(3)),
        ShapeError,
        ["batch_norm", "running_mean", "(4,)", "(3,)"],
    ),
    "running_stats_shape_eval": (
        lambda: ops.batch_norm(
            _ones(2, 3), running_mean=np.zeros(3), running_var=np.ones(2), training=False
        ),
        ShapeError,
        ["batch_norm", "running_var", "(2,)", "(3,)"],
    ),
    "integer_x": (
        lambda: ops.batch_norm(mt.tensor(np.ones((2, 3), np.int64))),
        DTypeError,
        ["batch_norm", "x", "int64"],
    ),
    "negative_eps": (
        lambda: ops.layer_norm(_ones(2, 3), eps=-1e-5),
        ValueError,
        ["layer_norm", "eps"],
    ),
    "eps_not_a_number": (
        lambda: ops.rms_norm(_ones(2, 3), eps="1e-5"),
        DTypeError,
        ["rms_norm", "eps"],
    ),
    "momentum_not_finite": (
        lambda: ops.batch_norm(_ones(2, 3), momentum=float("nan")),
        ValueError,
        ["batch_norm", "momentum"],
    ),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_name_the_op_the_argument_and_the_shapes(name, numba):
    call, error, fragments = ERRORS[name]
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"


def test_an_error_leaves_the_running_statistics_untouched(numba):
    mean, var = np.zeros(3), np.ones(3)
    x = np.random.default_rng(9).standard_normal((4, 3)) + 5.0
    with pytest.raises(ShapeError):
        ops.batch_norm(x, np.ones(4), running_mean=mean, running_var=var)
    np.testing.assert_array_equal(mean, 0.0)
    np.testing.assert_array_equal(var, 1.0)
    ops.batch_norm(x, np.ones(3), running_mean=mean, running_var=var)  # and a good call moves them
    assert (mean > 0).all() and not np.allclose(var, 1.0)


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
