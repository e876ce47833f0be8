"""Bilinear (and F.bilinear), LocalResponseNorm (and F.local_response_norm), ChannelShuffle (and
F.channel_shuffle) and Softmax2d against PyTorch: values, input and parameter gradients from the
same weights, finite differences in float64, printouts, state_dict keys and errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)


def _compare(torch, ours, theirs, arrays, atol=1e-10):
    """ours(*arrays) and theirs(*arrays) agree, and so do the inputs' and parameters'
    gradients of a random weighting of the output."""
    ours_in = [mt.tensor(a, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    out_ours, out_theirs = ours(*ours_in), theirs(*theirs_in)
    np.testing.assert_allclose(out_ours.numpy(), out_theirs.detach().numpy(), atol=atol)
    upstream = np.random.default_rng(5).standard_normal(out_theirs.shape)
    (out_ours * mt.tensor(upstream)).sum().backward()
    (out_theirs * torch.tensor(upstream)).sum().backward()
    for mine, their in zip(ours_in, theirs_in, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), atol=atol)
    if isinstance(theirs, torch.nn.Module):
        named = dict(ours.named_parameters())
        for name, parameter in theirs.named_parameters():
            np.testing.assert_allclose(named[name].grad.numpy(), parameter.grad.numpy(), atol=atol)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("lead", [(4,), (2, 3), ()])
def test_bilinear_matches_torch(bias, lead):
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Bilinear(3, 5, 2, bias=bias, dtype=torch.float64)
    ours = nn.Bilinear(3, 5, 2, bias=bias, dtype=np.float64)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()}, strict=True)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = np.random.default_rng(0)
    _compare(
        torch, ours, theirs, [rng.standard_normal(lead + (3,)), rng.standard_normal(lead + (5,))]
    )
    assert repr(ours) == repr(theirs)


def test_bilinear_initialisation_bound_and_gradcheck():
    layer = nn.Bilinear(4, 2, 3, dtype=np.float64)
    assert np.abs(layer.weight.numpy()).max() <= 0.5 and np.abs(layer.bias.numpy()).max() <= 0.5
    assert layer.weight.shape == (3, 4, 2)
    rng = np.random.default_rng(1)
    x1 = mt.tensor(rng.standard_normal((2, 4)), requires_grad=True)
    x2 = mt.tensor(rng.standard_normal((2, 2)), requires_grad=True)
    assert mt.gradcheck(layer, [x1, x2], mode="full")
    assert mt.gradcheck(
        lambda a, b, w: F.bilinear(a, b, w), [x1, x2, layer.weight.detach().requires_grad_()]
    )


def test_bilinear_errors():
    with pytest.raises(ArgumentError, match="Bilinear: in1_features"):
        nn.Bilinear(0, 2, 3)
    layer = nn.Bilinear(4, 2, 3)
    with pytest.raises(ShapeError, match=r"bilinear: .* input1 \(5, 3\)"):
        layer(mt.ones(5, 3), mt.ones(5, 2))
    with pytest.raises(ShapeError, match="same leading dims"):
        layer(mt.ones(5, 4), mt.ones(4, 2))


@pytest.mark.parametrize("shape", [(2, 6, 5), (2, 7, 3, 4), (1, 5, 2, 2, 3)])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_local_response_norm_matches_torch(shape, size):
    torch = pytest.importorskip("torch")
    ours = nn.LocalResponseNorm(size, alpha=0.3, beta=0.6, k=1.5)
    theirs = torch.nn.LocalResponseNorm(size, alpha=0.3, beta=0.6, k=1.5)
    _compare(torch, ours, theirs, [np.random.default_rng(2).standard_normal(shape) * 2])
    assert repr(ours) == repr(theirs)


def test_local_response_norm_by_hand_and_gradcheck():
    x = np.array([1.0, 2.0, 3.0]).reshape(1, 3, 1)
    out = F.local_response_norm(mt.tensor(x), 3, alpha=3.0, beta=1.0, k=1.0).numpy().ravel()
    # windows of squares (zero-padded): [0, 1, 4], [1, 4, 9], [4, 9, 0]; alpha / size = 1
    assert np.allclose(out, [1 / 6, 2 / 15, 3 / 14])
    x = mt.tensor(np.random.default_rng(3).standard_normal((2, 4, 3)), requires_grad=True)
    assert mt.gradcheck(nn.LocalResponseNorm(3, alpha=0.5), [x], mode="full")
    with pytest.raises(ShapeError, match="local_response_norm: expected 3D or higher"):
        F.local_response_norm(mt.ones(2, 3), 2)


@pytest.mark.parametrize("shape, groups", [((2, 6, 3), 2), ((2, 6, 2, 2), 3), ((1, 4, 2, 1, 2), 4)])
def test_channel_shuffle_matches_torch(shape, groups):
    torch = pytest.importorskip("torch")
    ours, theirs = nn.ChannelShuffle(groups), torch.nn.ChannelShuffle(groups)
    _compare(torch, ours, theirs, [np.random.default_rng(4).standard_normal(shape)])
    assert repr(ours) == repr(theirs)


def test_channel_shuffle_by_hand_and_errors():
    x = mt.tensor(np.arange(6.0).reshape(1, 6, 1))
    assert F.channel_shuffle(x, 2).numpy().ravel().tolist() == [0, 3, 1, 4, 2, 5]
    assert F.channel_shuffle(x, 3).numpy().ravel().tolist() == [0, 2, 4, 1, 3, 5]
    with pytest.raises(ShapeError, match="divisible by groups, got 6 channels"):
        F.channel_shuffle(x, 4)
    with pytest.raises(ArgumentError, match="groups must be a positive int"):
        F.channel_shuffle(x, 0)
    with pytest.raises(ShapeError, match="at least 3 dims"):
        F.channel_shuffle(mt.ones(2, 4), 2)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 4, 5)])
def test_softmax2d_matches_torch(shape):
    torch = pytest.importorskip("torch")
    _compare(torch, nn.Softmax2d(), torch.nn.Softmax2d(),
             [np.random.default_rng(6).standard_normal(shape)])  # fmt: skip


def test_softmax2d_sums_over_channels_and_refuses_other_ranks():
    out = nn.Softmax2d()(mt.randn(2, 3, 4, 5)).numpy()
    assert np.allclose(out.sum(axis=1), 1.0, atol=1e-6)
    x = mt.tensor(np.random.default_rng(7).standard_normal((3, 2, 2)), requires_grad=True)
    assert mt.gradcheck(nn.Softmax2d(), [x], mode="full")
    with pytest.raises(ShapeError, match="Softmax2d: expected input of 3 or 4 dims"):
        nn.Softmax2d()(mt.ones(2, 3))


SHRINKS = [
    ("Threshold", (0.1, 20.0), "threshold"),
    ("Threshold", (-0.5, -3.0), "threshold"),
    ("Hardshrink", (), "hardshrink"),
    ("Hardshrink", (0.2,), "hardshrink"),
    ("Softshrink", (), "softshrink"),
    ("Softshrink", (0.7,), "softshrink"),
]


@pytest.mark.parametrize(("layer", "arguments", "function"), SHRINKS)
def test_threshold_and_shrinks_match_torch(layer, arguments, function):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(8).standard_normal((3, 7))
    x[0, :3] = [np.nan, arguments[0] if arguments else 0.5, -(arguments[0] if arguments else 0.5)]
    ours, theirs = getattr(nn, layer)(*arguments), getattr(torch.nn, layer)(*arguments)
    _compare(torch, ours, theirs, [x])
    assert repr(ours) == repr(theirs)
    functional = getattr(F, function)(mt.tensor(x), *arguments).numpy()
    expected = getattr(torch.nn.functional, function)(torch.tensor(x), *arguments).numpy()
    np.testing.assert_array_equal(functional, expected)


def test_shrinks_by_hand_gradcheck_and_errors():
    x = mt.tensor([-1.0, -0.25, 0.0, 0.25, 1.0])
    assert F.hardshrink(x, 0.5).numpy().tolist() == [-1.0, 0.0, 0.0, 0.0, 1.0]
    assert F.softshrink(x, 0.5).numpy().tolist() == [-0.5, 0.0, 0.0, 0.0, 0.5]
    assert F.threshold(x, 0.0, 9.0).numpy().tolist() == [9.0, 9.0, 9.0, 0.25, 1.0]
    assert repr(nn.Threshold(0.1, 2.0, True)) == "Threshold(threshold=0.1, value=2.0, inplace=True)"
    values = mt.tensor(np.array([-1.3, -0.4, 0.45, 0.9, 2.0]), requires_grad=True)
    for layer in (nn.Threshold(0.2, 5.0), nn.Hardshrink(0.3), nn.Softshrink(0.3)):
        assert mt.gradcheck(layer, [values], mode="full")
    with pytest.raises(ArgumentError, match="softshrink: lambd must be >= 0"):
        F.softshrink(x, -1.0)


LP_CASES = [
    (1, (2, 3, 8), 2.0, 3, None, False),
    (1, (3, 7), 1.5, 2, 1, True),
    (2, (2, 2, 6, 5), 2, (2, 3), None, False),
    (2, (2, 2, 5, 5), 3.0, 2, (1, 2), True),
    (3, (1, 2, 4, 4, 4), 2, 2, None, False),
    (2, (1, 2, 4, 4), float("inf"), 2, None, False),
]


@pytest.mark.parametrize(("dims", "shape", "norm", "kernel", "stride", "ceil"), LP_CASES)
def test_lp_pool_matches_torch(dims, shape, norm, kernel, stride, ceil):
    torch = pytest.importorskip("torch")
    # positive inputs: a fractional power of a negative window sum is nan in both
    x = np.random.default_rng(9).uniform(0.1, 2.0, shape)
    ours = getattr(nn, f"LPPool{dims}d")(norm, kernel, stride, ceil)
    theirs = getattr(torch.nn, f"LPPool{dims}d")(norm, kernel, stride, ceil)
    _compare(torch, ours, theirs, [x])
    assert repr(ours) == repr(theirs)


def test_lp_pool_by_hand_and_gradcheck():
    x = mt.tensor(np.array([[[3.0, 4.0, 1.0, 1.0]]]))
    assert np.allclose(F.lp_pool1d(x, 2, 2).numpy().ravel(), [5.0, np.sqrt(2.0)])
    assert np.allclose(F.lp_pool1d(x, 1, 4).numpy().ravel(), [9.0])  # p = 1: sum pooling
    x = mt.tensor(np.random.default_rng(10).uniform(0.2, 1.5, (1, 2, 4, 4)), requires_grad=True)
    assert mt.gradcheck(nn.LPPool2d(2, 2), [x], mode="full")
    with pytest.raises(ArgumentError, match="norm_type must be a non-zero number"):
        F.lp_pool2d(x, 0, 2)


def test_gumbel_softmax_samples_follow_the_softmax():
    mt.manual_seed(0)
    logits = np.log(np.array([0.1, 0.2, 0.7]))
    batch = mt.tensor(np.tile(logits, (20_000, 1)))
    hard = F.gumbel_softmax(batch, tau=0.5, hard=True).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(axis=1) == 1).all()
    assert np.allclose(hard.mean(axis=0), [0.1, 0.2, 0.7], atol=0.015)
    soft = F.gumbel_softmax(batch, tau=2.0).numpy()
    assert np.allclose(soft.sum(axis=1), 1.0) and (soft > 0).all()


def test_gumbel_softmax_hard_has_the_soft_gradient():
    logits = mt.tensor(np.random.default_rng(11).standard_normal((4, 5)), requires_grad=True)
    upstream = mt.tensor(np.random.default_rng(12).standard_normal((4, 5)))
    mt.manual_seed(3)
    (F.gumbel_softmax(logits, hard=True, dim=0) * upstream).sum().backward()
    hard_grad = logits.grad.numpy().copy()
    logits.grad = None
    mt.manual_seed(3)
    (F.gumbel_softmax(logits, hard=False, dim=0) * upstream).sum().backward()
    assert np.allclose(hard_grad, logits.grad.numpy())
    with pytest.raises(ArgumentError, match="tau must be positive"):
        F.gumbel_softmax(logits, tau=0.0)


def test_rrelu_in_eval_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(13).standard_normal((3, 6))
    x[0, 0] = 0.0
    ours, theirs = nn.RReLU(0.1, 0.3).eval(), torch.nn.RReLU(0.1, 0.3).eval()
    _compare(torch, ours, theirs, [x])
    assert repr(ours) == repr(theirs)
    assert repr(nn.RReLU(inplace=True)) == repr(torch.nn.RReLU(inplace=True))


def test_rrelu_in_training_draws_a_slope_per_element():
    mt.manual_seed(4)
    x = mt.tensor(-np.ones((200, 50)), requires_grad=True)
    out = nn.RReLU(0.1, 0.3)(x)
    slopes = -out.detach().numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3 and len(np.unique(slopes)) > 1000
    assert abs(slopes.mean() - 0.2) < 0.005
    out.sum().backward()
    assert np.allclose(x.grad.numpy(), slopes)  # each element's gradient is its own slope
    positive = mt.tensor(np.ones(5))
    assert np.array_equal(nn.RReLU()(positive).numpy(), np.ones(5))
    with pytest.raises(ArgumentError, match="lower <= upper"):
        F.rrelu(positive, 0.5, 0.1)


def test_pdist_matches_torch_and_gradchecks():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(14).standard_normal((5, 3))
    for p in (1.0, 2.0, 3.0):
        _compare(torch, lambda t, p=p: F.pdist(t, p),
                 lambda t, p=p: torch.nn.functional.pdist(t, p), [x])  # fmt: skip
    assert mt.gradcheck(F.pdist, [mt.tensor(x, requires_grad=True)], mode="full")
    with pytest.raises(ShapeError, match="pdist: expected a 2-D input"):
        F.pdist(mt.ones(2, 3, 4))


def test_pdist_by_hand():
    x = mt.tensor(np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
    assert np.allclose(F.pdist(x).numpy(), [5.0, 1.0, np.sqrt(9.0 + 9.0)])
