"""SoftMarginLoss, MultiLabelSoftMarginLoss, HingeEmbeddingLoss, PoissonNLLLoss and
GaussianNLLLoss (and their F. forms) against PyTorch: values and input gradients for every
reduction, finite differences in float64, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 5))
SIGNS = np.where(RNG.random((4, 5)) < 0.5, -1.0, 1.0)
LABELS = (RNG.random((4, 5)) < 0.4).astype(np.float64)
COUNTS = RNG.poisson(2.0, (4, 5)).astype(np.float64)
RATES = RNG.uniform(0.1, 3.0, (4, 5))
VARIANCES = RNG.uniform(0.05, 2.0, (4, 5))

CASES = {
    "soft_margin": (lambda lib, **kw: lib.SoftMarginLoss(**kw), [X, SIGNS]),
    "multilabel": (lambda lib, **kw: lib.MultiLabelSoftMarginLoss(**kw), [X, LABELS]),
    "multilabel_weighted": (
        lambda lib, **kw: lib.MultiLabelSoftMarginLoss(
            weight=(mt if lib is nn else _torch()).tensor(np.linspace(0.5, 2.0, 5)), **kw
        ),
        [X, LABELS],
    ),
    "hinge": (lambda lib, **kw: lib.HingeEmbeddingLoss(margin=0.7, **kw), [X, SIGNS]),
    "poisson_log": (lambda lib, **kw: lib.PoissonNLLLoss(**kw), [X, COUNTS]),
    "poisson_full": (lambda lib, **kw: lib.PoissonNLLLoss(full=True, **kw), [X, COUNTS]),
    "poisson_rate": (lambda lib, **kw: lib.PoissonNLLLoss(log_input=False, **kw), [RATES, COUNTS]),
    "gaussian": (lambda lib, **kw: lib.GaussianNLLLoss(**kw), [X, X[::-1].copy(), VARIANCES]),
    "gaussian_full": (
        lambda lib, **kw: lib.GaussianNLLLoss(full=True, eps=0.1, **kw),
        [X, X[::-1].copy(), VARIANCES],
    ),
    "gaussian_per_sample": (
        lambda lib, **kw: lib.GaussianNLLLoss(**kw),
        [X, X[::-1].copy(), VARIANCES[:, 0].copy()],
    ),
}


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_values_and_gradients_match_torch(case, reduction):
    torch = _torch()
    build, arrays = CASES[case]
    ours, theirs = build(nn, reduction=reduction), build(torch.nn, reduction=reduction)
    # the first input and, for the Gaussian, the variance take gradients
    grads = [0, 2] if len(arrays) == 3 else [0]
    ours_in = [mt.tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    theirs_in = [torch.tensor(a, requires_grad=i in grads) for i, a in enumerate(arrays)]
    out, expected = ours(*ours_in), theirs(*theirs_in)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = np.random.default_rng(1).standard_normal(expected.shape)
    (out * mt.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    for i in grads:
        np.testing.assert_allclose(
            ours_in[i].grad.numpy(), theirs_in[i].grad.numpy(), rtol=1e-9, atol=1e-12
        )


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradcheck_in_float64(case):
    build, arrays = CASES[case]
    loss = build(nn)
    first = mt.tensor(arrays[0], requires_grad=True)
    rest = [mt.tensor(a) for a in arrays[1:]]
    assert mt.gradcheck(lambda x: loss(x, *rest), [first])


def test_values_by_hand():
    x, y = mt.tensor([0.0, 2.0]), mt.tensor([1.0, -1.0])
    assert np.allclose(F.soft_margin_loss(x, y, reduction="none").numpy(),
                       np.log1p(np.exp([0.0, 2.0])))  # fmt: skip
    assert np.allclose(F.hinge_embedding_loss(mt.tensor([0.3, 0.3]), y, margin=1.0,
                                              reduction="none").numpy(), [0.3, 0.7])  # fmt: skip
    assert np.allclose(F.gaussian_nll_loss(mt.tensor([1.0]), mt.tensor([3.0]), 2.0).numpy(),
                       0.5 * (np.log(2.0) + 4 / 2))  # fmt: skip
    # a variance below eps counts as eps
    small = F.gaussian_nll_loss(mt.tensor([0.0]), mt.tensor([1.0]), mt.tensor([1e-9]), eps=0.5)
    assert np.isclose(small.numpy(), 0.5 * (np.log(0.5) + 2.0))


def test_errors():
    with pytest.raises(ShapeError, match="soft_margin_loss: target must have input's shape"):
        F.soft_margin_loss(mt.ones(3), mt.ones(2))
    with pytest.raises(ShapeError, match="var is of incorrect size"):
        F.gaussian_nll_loss(mt.ones(3, 4), mt.ones(3, 4), mt.ones(2))
    with pytest.raises(ArgumentError, match="var has negative"):
        F.gaussian_nll_loss(mt.ones(3), mt.ones(3), mt.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(ArgumentError, match="reduction"):
        nn.PoissonNLLLoss(reduction="avg")
    with pytest.warns(UserWarning, match="size_average and reduce .* reduction='sum'"):
        summed = F.soft_margin_loss(mt.zeros(3), mt.ones(3), size_average=False)
    assert summed.item() == pytest.approx(3 * np.log(2.0))  # the sum, as PyTorch reads it


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multi_margin_loss_matches_torch(p, weighted, reduction):
    torch = _torch()
    scores = np.random.default_rng(3).standard_normal((6, 4)) * 0.8
    classes = np.array([0, 3, 1, 1, 2, 3], np.int64)
    weight = np.array([0.5, 1.0, 2.0, 1.5])
    ours = nn.MultiMarginLoss(p, 0.9, mt.tensor(weight) if weighted else None, reduction=reduction)
    theirs = torch.nn.MultiMarginLoss(
        p, 0.9, torch.tensor(weight) if weighted else None, reduction=reduction
    )
    x_ours, x_theirs = (
        mt.tensor(scores, requires_grad=True),
        torch.tensor(scores, requires_grad=True),
    )
    out, expected = ours(x_ours, mt.tensor(classes)), theirs(x_theirs, torch.tensor(classes))
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = np.random.default_rng(4).standard_normal(expected.shape)
    (out * mt.tensor(upstream)).sum().backward()
    (expected * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), atol=1e-12)


def test_multi_margin_loss_by_hand_gradcheck_and_errors():
    # scores (1, 2, 3), target 2: terms max(0, 1 - 3 + 1) = 0 and max(0, 1 - 3 + 2) = 0
    assert F.multi_margin_loss(mt.tensor([1.0, 2.0, 3.0]), mt.tensor(np.array(2))).numpy() == 0
    # target 0: (1 - 1 + 2) + (1 - 1 + 3) = 5, over 3 classes
    assert np.isclose(F.multi_margin_loss(mt.tensor([1.0, 2.0, 3.0]), mt.tensor(np.array(0)))
                      .numpy(), 5 / 3)  # fmt: skip
    x = mt.tensor(np.random.default_rng(5).standard_normal((3, 4)), requires_grad=True)
    target = mt.tensor(np.array([1, 0, 3]))
    assert mt.gradcheck(lambda s: F.multi_margin_loss(s, target, p=2), [x])
    with pytest.raises(ArgumentError, match="p must be 1 or 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ShapeError, match="expected input"):
        F.multi_margin_loss(mt.ones(3, 4), mt.tensor(np.array([0, 1])))
    with pytest.raises(IndexError, match="target values"):
        F.multi_margin_loss(mt.ones(2, 4), mt.tensor(np.array([0, 4])))


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("custom", [False, True])
def test_triplet_margin_with_distance_loss_matches_torch(swap, reduction, custom):
    torch = _torch()
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal((5, 3)) for _ in range(3)]

    def cosine_distance(library):
        functional = F if library is mt else torch.nn.functional
        return lambda a, b: 1.0 - functional.cosine_similarity(a, b)

    ours = nn.TripletMarginWithDistanceLoss(
        distance_function=cosine_distance(mt) if custom else None,
        margin=0.8, swap=swap, reduction=reduction,
    )  # fmt: skip
    theirs = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=cosine_distance(torch) if custom else None,
        margin=0.8, swap=swap, reduction=reduction,
    )  # fmt: skip
    ours_in = [mt.tensor(a, requires_grad=True) for a in arrays]
    theirs_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = ours(*ours_in), theirs(*theirs_in)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), atol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    for mine, their in zip(ours_in, theirs_in, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), their.grad.numpy(), atol=1e-12)
    if not custom and reduction == "mean":  # (minitrain's losses print a reduction not 'mean')
        assert repr(ours) == repr(theirs)


def test_triplet_margin_with_distance_loss_errors():
    with pytest.raises(ArgumentError, match="margin must be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=0.0)
    with pytest.raises(ShapeError, match="one number of dims"):
        F.triplet_margin_with_distance_loss(mt.ones(2, 3), mt.ones(2, 3), mt.ones(3))
