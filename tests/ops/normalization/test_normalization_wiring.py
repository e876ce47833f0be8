"""How the normalization ops are wired: each backward calls its kernel with exactly what its
forward saved, parameters alone get gradients, and the grad kernels' display names."""

from __future__ import annotations

import numpy as np
import pytest
from normalization_cases import CASES, assert_all_close, run

import minitrain as mt
from minitrain import backend, ops
from minitrain.ops.normalization import batch as batch_normalization
from minitrain.ops.normalization import layer as layer_normalization
from minitrain.ops.normalization import rms as rms_normalization

GRAD_KERNELS = {
    "batch_norm": "BatchNormalizationGrad",
    "layer_norm": "LayerNormalizationGrad",
    "invertible_layer_norm": "InvertibleLayerNormalizationGrad",
    "rms_norm": "SimplifiedLayerNormalizationGrad",
}

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
    module = {"batch_norm": batch_normalization, "rms_norm": rms_normalization}.get(
        case.op, layer_normalization
    )
    kernel = getattr(module, kernel_name)
    monkeypatch.setattr(module, kernel_name, lambda *args: calls.append(args) or kernel(*args))
    x, weight, bias, dy = case.make()
    leaf = mt.tensor(x, requires_grad=True)
    with backend.use_numba(False):
        out = case.call(leaf, weight, bias)
        saved = out.grad_fn.saved_arrays()
        assert sorted(saved) == sorted(saved_names)  # exactly what the kernel reads
        assert saved.get("x", leaf.array) is leaf.array
        assert saved.get("out", out.array) is out.array
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
    want = run(case, x, weight, bias, dy)[1]
    params = [mt.Tensor(a, requires_grad=True) for a in (weight, bias) if a is not None]
    out = case.call(x, *params)
    got = mt.grad(out, params, grad_outputs=mt.Tensor(dy))
    assert_all_close([g.array for g in got], [w for w in want[1:] if w is not None], rtol=1e-6)


@pytest.mark.parametrize("op_name", sorted(GRAD_KERNELS))
def test_grad_kernel_display_names(op_name):
    assert ops.registry()[op_name].grad_kernel == GRAD_KERNELS[op_name]
    case = next(c for c in CASES if c.op == op_name)
    x, weight, bias, _ = case.make()
    assert (
        case.call(mt.tensor(x, requires_grad=True), weight, bias).grad_fn.name
        == GRAD_KERNELS[op_name]
    )
