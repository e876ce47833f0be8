"""The activation layers written by hand (nn.ReLU6, nn.Hardtanh, nn.PReLU) against PyTorch's:
reprs, values and gradients, PReLU's learned weight, Hardtanh's deprecated names, and which layers
subclass which. (The layers the ops declare: tests/tensor/test_declared_variants.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn

LAYERS = [
    ("ReLU6", (), ()),
    ("ReLU6", (True,), (True,)),
    ("Hardtanh", (), ()),
    ("Hardtanh", (-2.0, 3, True), (-2.0, 3, True)),
]


@pytest.mark.parametrize("name, args, torch_args", LAYERS, ids=[f"{n}{a}" for n, a, _ in LAYERS])
def test_layer_matches_torchs_layer(torch, name, args, torch_args):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*torch_args)
    assert repr(ours) == repr(theirs)
    values = np.random.default_rng(4).standard_normal((3, 4, 6)) * 4
    x, x_ref = mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    # (inplace=True overwrites its input, which a leaf that requires grad may not be)
    out, expected = ours(x * 1.0), theirs(x_ref * 1.0)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-13, atol=1e-15)
    upstream = np.random.default_rng(5).standard_normal(out.shape)
    out.backward(upstream)
    expected.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(x.grad.array, x_ref.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("num_parameters, init", [(1, 0.25), (4, 0.1), (4, -0.3)])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 5), (2, 4, 3, 2)])
def test_prelu_layer_and_its_weight_gradient_match_torch(torch, num_parameters, init, shape):
    ours = nn.PReLU(num_parameters, init, dtype=np.float64)
    theirs = torch.nn.PReLU(num_parameters, init, dtype=torch.float64)
    assert repr(ours) == repr(theirs)
    assert [name for name, _ in ours.named_parameters()] == ["weight"]
    np.testing.assert_array_equal(ours.weight.array, theirs.weight.detach().numpy())
    values = np.random.default_rng(6).standard_normal(shape)
    values.flat[0] = 0.0  # the kink: weight * grad for x, grad * 0 for the weight
    x, x_ref = mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    out, expected = ours(x), theirs(x_ref)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-14)
    upstream = np.random.default_rng(7).standard_normal(shape)
    out.backward(upstream)
    expected.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(x.grad.array, x_ref.grad.numpy(), rtol=1e-14)
    np.testing.assert_allclose(ours.weight.grad.array, theirs.weight.grad.numpy(), rtol=1e-12)


def test_prelu_layer_is_float32_and_learns():
    layer = nn.PReLU(3)
    assert layer.weight.dtype == np.float32 and layer.weight.shape == (3,)
    x = mt.tensor(-np.ones((2, 3, 2), np.float32), requires_grad=True)
    out = layer(x)
    assert out.dtype == np.float32
    out.sum().backward()
    np.testing.assert_array_equal(layer.weight.grad.array, [-4.0, -4.0, -4.0])
    np.testing.assert_array_equal(x.grad.array, np.full((2, 3, 2), 0.25, np.float32))
    layer.weight.array[...] = 0.0
    layer.reset_parameters()
    np.testing.assert_array_equal(layer.weight.array, [0.25, 0.25, 0.25])


def test_hardtanh_layer_takes_torchs_deprecated_names_with_its_warning(torch):
    with pytest.warns(FutureWarning, match="`min_value` is deprecated and renamed to `min_val`"):
        ours = nn.Hardtanh(min_value=-2.0)
    with pytest.warns(FutureWarning, match="`max_value` is deprecated and renamed to `max_val`"):
        ours_max = nn.Hardtanh(max_value=3.0)
    assert (ours.min_val, ours.max_val, ours_max.min_val, ours_max.max_val) == (
        -2.0,
        1.0,
        -1.0,
        3.0,
    )
    with pytest.warns(FutureWarning):
        assert repr(ours) == repr(torch.nn.Hardtanh(min_value=-2.0))


def test_review_layers_are_related_only_where_torch_relates_them():
    torch = pytest.importorskip("torch")
    names = ["ELU", "CELU", "SELU", "Mish", "Hardswish", "Hardsigmoid", "Hardtanh", "ReLU6"]
    for child in names:
        for parent in names:
            ours = issubclass(getattr(nn, child), getattr(nn, parent))
            assert ours == issubclass(getattr(torch.nn, child), getattr(torch.nn, parent))
