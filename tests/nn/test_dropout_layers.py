"""Dropout1d/2d/3d, AlphaDropout and FeatureAlphaDropout (and their F. entries): whole channels
zeroed and the rest scaled by 1 / (1 - p) in training, the identity in eval, gradients through the
same mask, PyTorch's printouts and errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

CHANNEL_CASES = [
    (nn.Dropout1d, (4, 6, 5)),
    (nn.Dropout1d, (6, 5)),
    (nn.Dropout2d, (4, 6, 3, 5)),
    (nn.Dropout3d, (4, 6, 2, 3, 2)),
    (nn.Dropout3d, (6, 2, 3, 2)),
]


def _positive(shape, seed=0):
    # values away from zero, so a zero in the output can only be the mask's
    return np.random.default_rng(seed).uniform(1.0, 2.0, shape)


@pytest.mark.parametrize(("layer", "shape"), CHANNEL_CASES)
def test_training_zeroes_whole_channels_and_scales_the_rest(layer, shape):
    mt.manual_seed(3)
    p = 0.4
    x = _positive(shape)
    out = layer(p)(mt.tensor(x)).numpy()
    # one row per (sample, channel): the spatial positions of that channel
    spatial = {nn.Dropout1d: 1, nn.Dropout2d: 2, nn.Dropout3d: 3}[layer]
    ratios = (out / x).reshape(-1, int(np.prod(shape[-spatial:])))
    for row in ratios:
        assert np.allclose(row, 0.0) or np.allclose(row, 1.0 / (1.0 - p))
    kept = np.mean([np.allclose(row, 1.0 / (1.0 - p)) for row in ratios])
    assert 0.0 < kept < 1.0  # some channels dropped, some kept, with this seed


def test_the_kept_fraction_is_about_one_minus_p():
    mt.manual_seed(0)
    out = F.dropout2d(mt.ones(200, 50, 2, 2), p=0.3).numpy()
    kept = (out[:, :, 0, 0] != 0).mean()
    assert abs(kept - 0.7) < 0.02
    assert np.allclose(out[out != 0], 1 / 0.7)


@pytest.mark.parametrize(("layer", "shape"), CHANNEL_CASES)
def test_eval_mode_and_p_zero_are_the_identity(layer, shape):
    x = mt.tensor(_positive(shape))
    assert layer(0.5).eval()(x) is x
    assert np.array_equal(layer(0.0)(x).numpy(), x.numpy())


def test_p_one_zeroes_everything():
    x = mt.tensor(_positive((2, 3, 4)))
    assert np.array_equal(F.dropout1d(x, 1.0).numpy(), np.zeros((2, 3, 4)))


@pytest.mark.parametrize(("function", "shape"), [
    (F.dropout1d, (3, 4, 5)), (F.dropout2d, (3, 4, 2, 2)), (F.dropout3d, (2, 4, 2, 2, 2)),
    (F.feature_alpha_dropout, (3, 4, 5)), (F.alpha_dropout, (3, 4)),
])  # fmt: skip
def test_the_gradient_is_the_mask_of_the_forward(function, shape):
    mt.manual_seed(5)
    x = mt.tensor(_positive(shape), requires_grad=True)
    out = function(x, 0.5, True)
    weights = np.random.default_rng(1).standard_normal(shape)
    (out * mt.tensor(weights)).sum().backward()
    # out = x * scale + shift with scale and shift constants: d out / dx is out's x-slope
    mt.manual_seed(5)
    shifted = function(mt.tensor(_positive(shape) + 1.0), 0.5, True).numpy()
    slope = shifted - out.detach().numpy()
    assert np.allclose(x.grad.numpy(), weights * slope)


def test_gradcheck_through_channel_dropout_in_float64():
    x = mt.tensor(_positive((2, 3, 4)), requires_grad=True)

    def seeded(x):
        mt.manual_seed(11)  # the same mask for every evaluation
        return F.dropout1d(x, 0.5, True)

    assert mt.gradcheck(seeded, [x], mode="full")


def test_alpha_dropout_keeps_a_standard_input_standard():
    mt.manual_seed(0)
    x = mt.tensor(np.random.default_rng(0).standard_normal(400_000))
    out = nn.AlphaDropout(0.2)(x).numpy()
    assert abs(out.mean()) < 0.01
    assert abs(out.std() - 1.0) < 0.01
    # dropped elements all take one value: SELU's saturation, scaled and shifted
    alpha = 1.7580993408473766
    scale = 1 / np.sqrt((alpha**2 * 0.2 + 1) * 0.8)
    dropped = np.isclose(out, scale * alpha * (0.2 - 1))
    assert abs(dropped.mean() - 0.2) < 0.01


def test_feature_alpha_dropout_drops_whole_channels():
    mt.manual_seed(2)
    x = _positive((5, 8, 6))
    out = nn.FeatureAlphaDropout(0.5)(mt.tensor(x)).numpy()
    alpha = 1.7580993408473766
    scale = 1 / np.sqrt((alpha**2 * 0.5 + 1) * 0.5)
    dropped = np.isclose(out, scale * alpha * (0.5 - 1)).all(axis=2)
    kept = np.isclose(out, scale * x + scale * alpha * 0.5).all(axis=2)
    assert (dropped | kept).all() and dropped.any() and kept.any()


def test_alpha_dropout_is_off_by_default_in_the_functional_form():
    x = mt.tensor(_positive((3, 4)))
    assert F.alpha_dropout(x) is x and F.feature_alpha_dropout(x) is x


def test_dropout2d_reads_a_3d_input_as_n_c_l_with_a_warning():
    mt.manual_seed(1)
    x = _positive((6, 8, 5))
    with pytest.warns(UserWarning, match="3D input"):
        out = F.dropout2d(mt.tensor(x), 0.5).numpy()
    ratios = out / x
    assert all(np.allclose(r, 0) or np.allclose(r, 2.0) for r in ratios.reshape(-1, 5))


def test_reprs_are_pytorchs():
    assert repr(nn.Dropout1d()) == "Dropout1d(p=0.5, inplace=False)"
    assert repr(nn.Dropout2d(0.2, inplace=True)) == "Dropout2d(p=0.2, inplace=True)"
    assert repr(nn.AlphaDropout(0.1)) == "AlphaDropout(p=0.1, inplace=False)"
    assert repr(nn.Dropout(0.3)) == "Dropout(p=0.3, inplace=False)"


def test_reprs_match_torch():
    torch = pytest.importorskip("torch")
    for name in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                 "FeatureAlphaDropout"):  # fmt: skip
        assert repr(getattr(nn, name)(0.25)) == repr(getattr(torch.nn, name)(0.25))


def test_statistics_match_torch():
    """Channel masks are minitrain's own numbers; what must agree is what a mask does."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    theirs = torch.nn.functional.dropout3d(torch.ones(2, 3, 2, 2, 2), 0.5).numpy()
    mt.manual_seed(0)
    ours = F.dropout3d(mt.ones(2, 3, 2, 2, 2), 0.5).numpy()
    assert set(np.unique(theirs)) <= {0.0, 2.0} and set(np.unique(ours)) <= {0.0, 2.0}
    for out in (theirs, ours):
        per_channel = out.reshape(6, -1)
        assert (per_channel == per_channel[:, :1]).all()


def test_bad_arguments_are_refused():
    with pytest.raises(ArgumentError, match="Dropout1d: p"):
        nn.Dropout1d(1.5)
    with pytest.raises(ArgumentError, match="dropout2d: p"):
        F.dropout2d(mt.ones(2, 2, 2, 2), -0.1)
    with pytest.raises(ShapeError, match="dropout1d: expected 2D or 3D input"):
        F.dropout1d(mt.ones(2, 3, 4, 5))
    with pytest.raises(DTypeError, match="floating"):
        F.dropout1d(mt.tensor(np.ones((2, 3), np.int64)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ShapeError, match="at least 2 dims"):
            F.dropout3d(mt.ones(4))
