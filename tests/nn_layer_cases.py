"""The case table's machinery for tests/device/test_device_nn.py (Const, Case and the input
draws its entries share), and the cases of the layers beyond the common ones: the encoder-decoder
Transformer, padding, channel and alpha dropout, instance and local response norm, adaptive max
and power-average pooling, EmbeddingBag, and the rarer activations and losses. The common
layers' cases are in the test file's own table, which takes these in."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

import minitrain as mt
from minitrain import nn


@dataclasses.dataclass(frozen=True)
class Const:
    """A float input that takes no gradient (a loss's target, a mask of floats)."""

    value: np.ndarray


@dataclasses.dataclass(frozen=True)
class Case:
    """A layer and its inputs. `make` builds the layer (seeded, then cast to float64); `args`
    draws the positional inputs from a generator: float arrays become tensors that require
    grad, integer and bool arrays and Consts tensors that do not; `kwargs` draws keyword inputs
    (arrays become tensors on the device, anything else is passed as it is); `modes` are the
    modes the layer runs in."""

    make: Callable[[], nn.Module]
    args: Callable[[np.random.Generator], tuple]
    kwargs: Callable[[np.random.Generator], dict] = lambda rng: {}
    modes: tuple[str, ...] = ("train", "eval")


def normal(*shape):
    return lambda rng: (rng.standard_normal(shape),)


def log_probs(rng, shape):
    logits = rng.standard_normal(shape)
    return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))


def classes(rng, shape, count, ignore=None):
    target = rng.integers(0, count, shape)
    if ignore is not None:
        target.reshape(-1)[0] = ignore
    return target


def pooled(rng, pool, shape):
    """(output, indices) of a max pool of random values: a max unpool's inputs."""
    y, indices = pool(mt.tensor(rng.standard_normal(shape)))
    return y.array, indices.array


def causal(size):
    return np.triu(np.full((size, size), -np.inf), 1)


def encoder_layer(**options):
    return nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0, **options)


def decoder_layer(**options):
    return nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, **options)


EXTRA_CASES: dict[str, Case] = {
    # the encoder-decoder, the wrapper, bilinear and unflatten; normalization; pooling
    "Transformer": Case(
        lambda: nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=2,
                               dim_feedforward=12, dropout=0.0, batch_first=True),
        lambda rng: (rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 4, 8))),
        kwargs=lambda rng: {"tgt_mask": causal(4), "tgt_is_causal": True,
                            "memory_key_padding_mask": np.array([[False] * 5,
                                                                 [False] * 4 + [True]])},
    ),
    "Transformer-norm_first": Case(
        lambda: nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=1,
                               dim_feedforward=12, dropout=0.0, norm_first=True),
        lambda rng: (rng.standard_normal((5, 2, 8)), rng.standard_normal((3, 2, 8))),
        kwargs=lambda rng: {"src_mask": causal(5)},
    ),
    "DataParallel": Case(lambda: nn.DataParallel(nn.Sequential(nn.Linear(4, 5), nn.BatchNorm1d(5))),
                         normal(6, 4)),
    "Bilinear": Case(lambda: nn.Bilinear(4, 3, 5),
                     lambda rng: (rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 3, 3)))),
    "Bilinear-no_bias": Case(lambda: nn.Bilinear(2, 3, 4, bias=False),
                             lambda rng: (rng.standard_normal((5, 2)),
                                          rng.standard_normal((5, 3)))),
    "Unflatten": Case(lambda: nn.Unflatten(1, (3, -1)), normal(2, 12, 5)),
    "InstanceNorm1d": Case(lambda: nn.InstanceNorm1d(3), normal(4, 3, 6)),
    "InstanceNorm1d-unbatched": Case(lambda: nn.InstanceNorm1d(3, affine=True), normal(3, 6)),
    "InstanceNorm2d": Case(
        lambda: nn.InstanceNorm2d(3, affine=True, track_running_stats=True), normal(2, 3, 4, 5)
    ),
    "InstanceNorm3d": Case(lambda: nn.InstanceNorm3d(2, momentum=0.3, track_running_stats=True),
                           normal(2, 2, 3, 4, 2)),
    "LocalResponseNorm": Case(lambda: nn.LocalResponseNorm(3, alpha=0.1, beta=0.6, k=1.5),
                              normal(2, 5, 4, 3)),
    "LocalResponseNorm-1d": Case(lambda: nn.LocalResponseNorm(2), normal(2, 4, 6)),
    "AdaptiveMaxPool1d": Case(lambda: nn.AdaptiveMaxPool1d(3), normal(2, 3, 7)),
    "AdaptiveMaxPool2d": Case(lambda: nn.AdaptiveMaxPool2d((3, None), return_indices=True),
                              normal(2, 3, 7, 5)),
    "AdaptiveMaxPool3d": Case(lambda: nn.AdaptiveMaxPool3d(2, return_indices=True),
                              normal(1, 2, 5, 3, 4)),
    "LPPool1d": Case(lambda: nn.LPPool1d(2, 3, stride=2), normal(2, 3, 9)),
    "LPPool1d-inf": Case(lambda: nn.LPPool1d(float("inf"), 2), normal(2, 3, 8)),
    "LPPool2d": Case(lambda: nn.LPPool2d(3, (2, 3), ceil_mode=True),
                     lambda rng: (rng.uniform(0.5, 2.0, (2, 3, 5, 7)),)),
    "LPPool3d": Case(lambda: nn.LPPool3d(2, 2), normal(1, 2, 4, 4, 3)),
    "EmbeddingBag": Case(lambda: nn.EmbeddingBag(7, 4),
                         lambda rng: (rng.integers(0, 7, (3, 5)),)),
    "EmbeddingBag-offsets": Case(
        lambda: nn.EmbeddingBag(7, 4, mode="sum", padding_idx=2),
        lambda rng: (np.array([2, 0, 2, 6, 1, 2, 3, 2]), np.array([0, 3, 3, 5]),
                     rng.standard_normal(8)),
    ),
    "EmbeddingBag-max": Case(
        lambda: nn.EmbeddingBag(7, 4, mode="max", include_last_offset=True),
        lambda rng: (np.array([4, 0, 4, 1, 6, 5]), np.array([0, 2, 2, 6])),
    ),
    "ChannelShuffle": Case(lambda: nn.ChannelShuffle(3), normal(2, 6, 3, 2)),
    # padding
    "ConstantPad1d": Case(lambda: nn.ConstantPad1d((2, 1), 3.5), normal(2, 3, 5)),
    "ConstantPad2d": Case(lambda: nn.ConstantPad2d((1, 0, 2, -1), -1.0), normal(2, 3, 4, 5)),
    "ConstantPad3d": Case(lambda: nn.ConstantPad3d(1, 0.5), normal(1, 2, 3, 2, 3)),
    "ZeroPad1d": Case(lambda: nn.ZeroPad1d((1, 2)), normal(3, 5)),
    "ZeroPad2d": Case(lambda: nn.ZeroPad2d(1), normal(2, 3, 4, 5)),
    "ZeroPad3d": Case(lambda: nn.ZeroPad3d((1, 0, 0, 1, 2, 0)), normal(1, 2, 3, 2, 3)),
    "ReflectionPad1d": Case(lambda: nn.ReflectionPad1d((2, 3)), normal(2, 3, 5)),
    "ReflectionPad2d": Case(lambda: nn.ReflectionPad2d((1, 2, 0, 1)), normal(2, 3, 4, 5)),
    "ReflectionPad3d": Case(lambda: nn.ReflectionPad3d(1), normal(1, 2, 3, 2, 3)),
    "ReplicationPad1d": Case(lambda: nn.ReplicationPad1d((3, 1)), normal(2, 3, 5)),
    "ReplicationPad2d": Case(lambda: nn.ReplicationPad2d((1, 2, 3, 0)), normal(3, 4, 5)),
    "ReplicationPad3d": Case(lambda: nn.ReplicationPad3d((1, 0, 2, 1, 0, 1)),
                             normal(1, 2, 3, 2, 3)),
    "CircularPad1d": Case(lambda: nn.CircularPad1d((2, 1)), normal(2, 3, 5)),
    "CircularPad2d": Case(lambda: nn.CircularPad2d((1, 2, 0, 1)), normal(2, 3, 4, 5)),
    "CircularPad3d": Case(lambda: nn.CircularPad3d(1), normal(1, 2, 3, 2, 3)),
    # dropout of channels and alpha dropout: eval mode, and p=0 in training (draws: below)
    "Dropout1d": Case(lambda: nn.Dropout1d(0.3), normal(2, 3, 5), modes=("eval",)),
    "Dropout1d-p0": Case(lambda: nn.Dropout1d(0.0), normal(3, 5), modes=("train",)),
    "Dropout2d": Case(lambda: nn.Dropout2d(0.3), normal(2, 3, 4, 5), modes=("eval",)),
    "Dropout2d-p0": Case(lambda: nn.Dropout2d(0.0), normal(2, 3, 4, 5), modes=("train",)),
    "Dropout3d": Case(lambda: nn.Dropout3d(0.3), normal(2, 3, 2, 2, 2), modes=("eval",)),
    "Dropout3d-p0": Case(lambda: nn.Dropout3d(0.0), normal(3, 2, 2, 2), modes=("train",)),
    "AlphaDropout": Case(lambda: nn.AlphaDropout(0.3), normal(4, 5), modes=("eval",)),
    "AlphaDropout-p0": Case(lambda: nn.AlphaDropout(0.0), normal(4, 5), modes=("train",)),
    "FeatureAlphaDropout": Case(lambda: nn.FeatureAlphaDropout(0.3), normal(2, 3, 4),
                                modes=("eval",)),
    "FeatureAlphaDropout-p0": Case(lambda: nn.FeatureAlphaDropout(0.0), normal(2, 3, 4),
                                   modes=("train",)),
    # activations beyond the common ones (RReLU draws its slopes in training: below)
    "Softmax2d": Case(lambda: nn.Softmax2d(), normal(2, 3, 4, 5)),
    "Softmax2d-unbatched": Case(lambda: nn.Softmax2d(), normal(3, 4, 5)),
    "Threshold": Case(lambda: nn.Threshold(0.1, 20.0), normal(3, 5)),
    "Hardshrink": Case(lambda: nn.Hardshrink(0.6), normal(3, 5)),
    "Softshrink": Case(lambda: nn.Softshrink(0.3), normal(3, 5)),
    "RReLU": Case(lambda: nn.RReLU(0.1, 0.4), normal(3, 5), modes=("eval",)),
    # the losses beyond the common ones
    "SoftMarginLoss": Case(
        lambda: nn.SoftMarginLoss(),
        lambda rng: (rng.standard_normal((4, 3)), Const(np.sign(rng.standard_normal((4, 3))))),
    ),
    "MultiLabelSoftMarginLoss": Case(
        lambda: nn.MultiLabelSoftMarginLoss(weight=mt.tensor([1.0, 0.5, 2.0]), reduction="none"),
        lambda rng: (rng.standard_normal((4, 3)),
                     Const(rng.integers(0, 2, (4, 3)).astype(np.float64))),
    ),
    "HingeEmbeddingLoss": Case(
        lambda: nn.HingeEmbeddingLoss(margin=0.8),
        lambda rng: (rng.standard_normal((4, 3)), Const(np.sign(rng.standard_normal((4, 3))))),
    ),
    "PoissonNLLLoss": Case(
        lambda: nn.PoissonNLLLoss(),
        lambda rng: (rng.standard_normal((4, 3)), Const(rng.poisson(2.0, (4, 3)) * 1.0)),
    ),
    "PoissonNLLLoss-full": Case(
        lambda: nn.PoissonNLLLoss(log_input=False, full=True, reduction="sum"),
        lambda rng: (rng.uniform(0.5, 3.0, (4, 3)), Const(rng.poisson(2.0, (4, 3)) * 1.0)),
    ),
    "GaussianNLLLoss": Case(
        lambda: nn.GaussianNLLLoss(full=True),
        lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal((4, 3)),
                     rng.uniform(0.5, 2.0, (4, 3))),
    ),
    "GaussianNLLLoss-per_sample_var": Case(
        lambda: nn.GaussianNLLLoss(reduction="none"),
        lambda rng: (rng.standard_normal((4, 3)), Const(rng.standard_normal((4, 3))),
                     rng.uniform(0.5, 2.0, (4, 1))),
    ),
    "MultiMarginLoss": Case(
        lambda: nn.MultiMarginLoss(),
        lambda rng: (rng.standard_normal((6, 4)), classes(rng, 6, 4)),
    ),
    "MultiMarginLoss-weighted": Case(
        lambda: nn.MultiMarginLoss(p=2, margin=0.7, weight=mt.tensor([0.5, 2.0, 1.0]),
                                   reduction="none"),
        lambda rng: (rng.standard_normal((5, 3)), classes(rng, 5, 3)),
    ),
    "TripletMarginWithDistanceLoss": Case(
        lambda: nn.TripletMarginWithDistanceLoss(margin=1.5, swap=True),
        lambda rng: tuple(rng.standard_normal((4, 5)) for _ in range(3)),
    ),
    "TripletMarginWithDistanceLoss-cosine": Case(
        lambda: nn.TripletMarginWithDistanceLoss(
            distance_function=lambda a, b: 1.0 - nn.functional.cosine_similarity(a, b),
            reduction="none",
        ),
        lambda rng: tuple(rng.standard_normal((4, 5)) for _ in range(3)),
    ),
}  # fmt: skip
