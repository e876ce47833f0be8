"""InstanceNorm1d/2d/3d and F.instance_norm against PyTorch: values, input and parameter
gradients from the same weights, running statistics in training and their use in eval, finite
differences in float64, printouts, state_dict keys and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

SHAPES = {1: (3, 4, 6), 2: (2, 4, 3, 5), 3: (2, 4, 2, 3, 3)}


def _pair(torch, dims: int, **options):
    ours = getattr(nn, f"InstanceNorm{dims}d")(4, **options)
    theirs = getattr(torch.nn, f"InstanceNorm{dims}d")(4, **options).double()
    generator = torch.Generator().manual_seed(dims)
    with torch.no_grad():
        for parameter in theirs.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64))
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()}, strict=True)
    return ours.double(), theirs


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("unbatched", [False, True])
def test_values_and_gradients_match_torch(dims, affine, unbatched):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(torch, dims, affine=affine)
    shape = SHAPES[dims][1:] if unbatched else SHAPES[dims]
    x = np.random.default_rng(0).standard_normal(shape) * 3 + 1
    x_ours, x_theirs = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_ours, out_theirs = ours(x_ours), theirs(x_theirs)
    assert np.allclose(out_ours.numpy(), out_theirs.detach().numpy(), atol=1e-10)
    weights = np.random.default_rng(1).standard_normal(shape)
    (out_ours * mt.tensor(weights)).sum().backward()
    (out_theirs * torch.tensor(weights)).sum().backward()
    assert np.allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), atol=1e-10)
    for name, parameter in theirs.named_parameters():
        assert np.allclose(getattr(ours, name).grad.numpy(), parameter.grad.numpy())
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("dims", [1, 2])
def test_running_statistics_match_torch_in_training_and_are_used_in_eval(dims):
    torch = pytest.importorskip("torch")
    ours, theirs = _pair(torch, dims, affine=True, track_running_stats=True, momentum=0.3)
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = rng.standard_normal(SHAPES[dims]) * 2 + 0.5
        ours(mt.tensor(x))
        theirs(torch.tensor(x))
    for name, buffer in theirs.state_dict().items():
        assert np.allclose(ours.state_dict()[name].numpy(), buffer.numpy()), name
    ours.eval(), theirs.eval()
    x = rng.standard_normal(SHAPES[dims])
    assert np.allclose(ours(mt.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy())
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_running_statistics_by_hand():
    layer = nn.InstanceNorm1d(2, track_running_stats=True, momentum=0.5).double()
    x = np.array([[[1.0, 3.0], [0.0, 4.0]], [[3.0, 5.0], [2.0, 2.0]]])  # (N=2, C=2, L=2)
    layer(mt.tensor(x))
    # per instance means: c0: 2, 4; c1: 2, 2; unbiased variances: c0: 2, 2; c1: 8, 0
    assert np.allclose(layer.running_mean.numpy(), 0.5 * np.array([3.0, 2.0]))
    assert np.allclose(layer.running_var.numpy(), 0.5 + 0.5 * np.array([2.0, 4.0]))
    assert int(layer.num_batches_tracked.numpy()) == 0  # as PyTorch: not counted


def test_each_instance_is_normalized_without_running_statistics():
    layer = nn.InstanceNorm2d(3)
    assert layer.running_mean is None and layer.weight is None
    x = np.random.default_rng(2).standard_normal((2, 3, 4, 4)) * 5 + 2
    out = layer(mt.tensor(x)).numpy()
    assert np.allclose(out.mean(axis=(2, 3)), 0, atol=1e-5)
    assert np.allclose(out.var(axis=(2, 3)), 1, atol=1e-3)
    layer.eval()  # no running statistics: still the instance's own
    assert np.allclose(layer(mt.tensor(x)).numpy(), out)


def test_gradcheck_in_float64():
    layer = nn.InstanceNorm1d(3, affine=True).double()
    x = mt.tensor(np.random.default_rng(0).standard_normal((2, 3, 5)), requires_grad=True)
    assert mt.gradcheck(layer, [x], mode="full")
    weight = mt.tensor(np.random.default_rng(1).standard_normal(3), requires_grad=True)
    bias = mt.tensor(np.random.default_rng(2).standard_normal(3), requires_grad=True)
    assert mt.gradcheck(
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b), [x, weight, bias], mode="full"
    )


def test_functional_matches_torch_with_running_statistics():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((2, 3, 5))
    mean, var = np.array([0.1, 0.2, -0.3]), np.array([1.0, 2.0, 0.5])
    ours_mean, ours_var = mt.tensor(mean.copy()), mt.tensor(var.copy())
    theirs_mean, theirs_var = torch.tensor(mean.copy()), torch.tensor(var.copy())
    out_ours = F.instance_norm(mt.tensor(x), ours_mean, ours_var, momentum=0.2)
    out_theirs = torch.nn.functional.instance_norm(
        torch.tensor(x), theirs_mean, theirs_var, momentum=0.2
    )
    assert np.allclose(out_ours.numpy(), out_theirs.numpy())
    assert np.allclose(ours_mean.numpy(), theirs_mean.numpy())
    assert np.allclose(ours_var.numpy(), theirs_var.numpy())
    out_ours = F.instance_norm(mt.tensor(x), ours_mean, ours_var, use_input_stats=False)
    out_theirs = torch.nn.functional.instance_norm(
        torch.tensor(x), theirs_mean, theirs_var, use_input_stats=False
    )
    assert np.allclose(out_ours.numpy(), out_theirs.numpy())


def test_errors():
    with pytest.raises(ShapeError, match=r"InstanceNorm2d: expected 3D or 4D input"):
        nn.InstanceNorm2d(3)(mt.ones(2, 3, 4, 4, 4))
    with pytest.raises(ShapeError, match=r"size at dim=1 to match num_features \(3\)"):
        nn.InstanceNorm1d(3, affine=True)(mt.ones(2, 4, 5))
    with pytest.warns(UserWarning, match="num_features"):
        nn.InstanceNorm1d(3)(mt.ones(2, 4, 5))
    with pytest.raises(ShapeError, match="more than 1 spatial element"):
        F.instance_norm(mt.ones(2, 3, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.InstanceNorm1d(3)(mt.ones(2, 3, 5))  # no warning when the counts match
