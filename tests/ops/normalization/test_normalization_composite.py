"""Fused batch norm, layer norm and RMS norm against their composites of primitive ops (and the
N/(N-1) trap that a gradient check catches), the invertible layer norm against the standard one."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from normalization_cases import CASES, Case, assert_all_close, run

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import GradcheckError
from minitrain.ops.normalization import batch as batch_normalization


@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize("case", [c for c in CASES if c.op == "batch_norm"], ids=str)
def test_fused_batch_norm_equals_the_composite(case, affine, numba):
    x, weight, bias, dy = case.make()
    weight = None if affine == "none" else weight
    bias = bias if affine == "both" else None
    fused = run(case, x, weight, bias, dy, eps=1e-3)
    composite_case = case._replace(op="batch_norm_composite")
    composed = run(composite_case, x, weight, bias, dy, eps=1e-3)
    assert_all_close([fused[0], *fused[1]], [composed[0], *composed[1]], rtol=1e-10, atol=1e-12)


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
    y, grads, out, _ = run(standard, x, weight, bias, dy)
    y_inv, grads_inv, out_inv, _ = run(
        standard._replace(op="invertible_layer_norm"), x, weight, bias, dy
    )
    assert out.grad_fn.name == "LayerNormalizationGrad"
    assert out_inv.grad_fn.name == "InvertibleLayerNormalizationGrad"
    np.testing.assert_array_equal(y_inv, y)
    assert_all_close(grads_inv, grads, rtol=1e-10, atol=1e-12)


def test_invertible_layer_norm_keeps_its_output_not_its_input():
    x, weight, bias, _ = Case("layer_norm", (3, 5)).make()
    leaf = mt.tensor(x, requires_grad=True)
    out = ops.layer_norm(leaf, (5,), weight, bias, invertible=True)
    saved = out.grad_fn.saved_arrays()
    assert sorted(saved) == ["bias", "inv_std", "out", "scale"]
    assert saved["out"] is out.array
    assert all(array is not leaf.array for array in saved.values())


@pytest.mark.parametrize("dims", [1, 2])
def test_invertible_layer_norm_falls_back_where_weight_has_a_zero(dims, numba):
    case = Case("invertible_layer_norm", (3, 4, 5), dims)
    x, weight, bias, dy = case.make()
    weight.flat[1] = 0.0  # a zero-initialised gain, say
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        _, grads, out, _ = run(case, x, weight, bias, dy)
    assert out.grad_fn.name == "LayerNormalizationGrad"
    assert all(np.isfinite(g).all() for g in grads)
    want = run(case._replace(op="layer_norm"), x, weight, bias, dy)[1]
    assert_all_close(grads, want, rtol=0, atol=0)
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


def test_the_n_over_n_minus_1_factor_fails_the_gradient_check(monkeypatch):
    # A published description of the ONNX Runtime kernel scales dX by M / (M - 1); the gradient
    # check shows that is wrong. M = 4 values per channel: a factor of 4/3.
    x, weight, bias, _ = Case("batch_norm", (4, 2)).make()
    inputs = [mt.tensor(a, requires_grad=True) for a in (x, weight, bias)]
    with backend.use_numba(False):  # the backward calls the public kernel
        assert mt.gradcheck(ops.batch_norm, inputs)
        original = batch_normalization.batch_norm_grad

        def with_factor(dY, X, scale, saved_mean, saved_inv_std):
            dX, dscale, dbias = original(dY, X, scale, saved_mean, saved_inv_std)
            count = X.size // X.shape[1]
            return dX * count / (count - 1), dscale, dbias

        monkeypatch.setattr(batch_normalization, "batch_norm_grad", with_factor)
        with pytest.raises(GradcheckError, match="input 0"):
            mt.gradcheck(ops.batch_norm, inputs)


def _rows_composite(x, weight, bias, axes, eps, centered):
    """layer norm (centered) or RMS norm over `axes`, composed of primitive ops."""
    if centered:
        x = x - x.mean(dim=axes, keepdim=True)
    y = x / ((x * x).mean(dim=axes, keepdim=True) + eps).sqrt()
    y = y * weight
    return y if bias is None else y + bias


@pytest.mark.parametrize("centered", [True, False], ids=["layer_norm", "rms_norm"])
@pytest.mark.parametrize("shape, normalized", [((4, 6), 1), ((2, 3, 5), 2), ((3, 7), 1)])
def test_fused_layer_and_rms_norm_equal_their_composites(shape, normalized, centered, numba):
    # docs/kernels.md section 5: every fused kernel against the same math composed of primitives
    rng = np.random.default_rng(7)
    values = [rng.normal(size=shape), rng.normal(size=shape[-normalized:])]
    values.append(rng.normal(size=shape[-normalized:]) if centered else None)
    upstream = rng.normal(size=shape)
    axes = tuple(range(len(shape) - normalized, len(shape)))
    results = []
    for fused in (True, False):
        leaves = [None if v is None else mt.tensor(v, requires_grad=True) for v in values]
        x, weight, bias = leaves
        if fused and centered:
            y = ops.layer_norm(x, weight=weight, bias=bias, axis=-normalized, eps=1e-3)
        elif fused:
            y = ops.rms_norm(x, weight=weight, axis=-normalized, eps=1e-3)
        else:
            y = _rows_composite(x, weight, bias, axes, 1e-3, centered)
        y.backward(upstream)
        results.append([y.numpy()] + [leaf.grad.numpy() for leaf in leaves if leaf is not None])
    assert_all_close(results[0], results[1], rtol=1e-10, atol=1e-12)
