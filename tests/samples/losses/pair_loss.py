"""Samples of ops/losses/pair_loss.py: the losses of pairs, composed of registered ops."""

from __future__ import annotations

import warnings

import numpy as np
from op_samples import Draw, Sample, draws, functional_sample, normal, positive
from reference import torch

from minitrain.nn import functional


def _log_probabilities(*shape) -> Draw:
    """Log-softmax of normal draws along dim 1: kl_div's input."""

    def draw(rng):
        values = rng.standard_normal(shape)
        return values - np.log(np.exp(values).sum(axis=1, keepdims=True))

    return Draw(draw)


def _probabilities_with_zero(*shape) -> Draw:
    """Probabilities along dim 1, one of them exactly 0 (kl_div's 0 log 0 = 0)."""

    def draw(rng):
        values = rng.uniform(0.1, 1.0, shape)
        values.flat[1] = 0.0
        return values / values.sum(axis=1, keepdims=True)

    return Draw(draw)


def _signs(*shape, zero: bool = False) -> Draw:
    """Targets of 1 and -1 (and a 0 at the front with `zero`: no loss there), float64."""

    def draw(rng):
        values = rng.choice([-1.0, 1.0], shape)
        if zero:
            values.flat[0] = 0.0
        return values

    return Draw(draw)


def _kl_div(name, specs, grad=(0, 1), **kw) -> Sample:
    def quiet(fn):
        def call(*args):
            with warnings.catch_warnings():  # 'mean''s warning, tested on its own
                warnings.simplefilter("ignore")
                return fn(*args, **kw)

        return call

    return Sample(
        name,
        draws(*specs),
        quiet(functional.kl_div),
        quiet(lambda *a, **k: torch.nn.functional.kl_div(*a, **k)),
        grad=grad,
    )


COMPOSED: dict[str, list[Sample]] = {
    "kl_div": [
        # a target of exactly 0 has no derivative (PyTorch's: nan): input's gradient only
        _kl_div("mean", (_log_probabilities(3, 4), _probabilities_with_zero(3, 4)), grad=(0,)),
        _kl_div(
            "batchmean",
            (_log_probabilities(3, 4), _probabilities_with_zero(3, 4)),
            grad=(0,),
            reduction="batchmean",
        ),
        _kl_div(
            "sum_log_target",
            (_log_probabilities(2, 5), _log_probabilities(2, 5)),
            reduction="sum",
            log_target=True,
        ),
        _kl_div(
            "none_broadcast",
            (_log_probabilities(2, 3, 2), positive(3, 1)),
            reduction="none",
        ),
        _kl_div("batchmean_0d", (normal(), positive()), reduction="batchmean"),
    ],
    "margin_ranking_loss": [
        functional_sample(
            "mean",
            (normal(6), normal(6), _signs(6)),
            "margin_ranking_loss",
            "margin_ranking_loss",
            grad=(0, 1),
        ),
        functional_sample(
            "margin_sum_target_grad",
            (normal(3, 4), normal(3, 4), normal(3, 4)),
            "margin_ranking_loss",
            "margin_ranking_loss",
            margin=0.3,
            reduction="sum",
        ),
        functional_sample(
            "none_broadcast",
            (normal(4, 1), normal(4, 3), _signs(1, 3)),
            "margin_ranking_loss",
            "margin_ranking_loss",
            grad=(0, 1),
            margin=0.5,
            reduction="none",
        ),
    ],
    "cosine_embedding_loss": [
        functional_sample(
            "mean",
            (normal(6, 4), normal(6, 4), _signs(6, zero=True)),
            "cosine_embedding_loss",
            "cosine_embedding_loss",
            grad=(0, 1),
        ),
        functional_sample(
            "margin_none",
            (normal(5, 3), normal(5, 3), _signs(5)),
            "cosine_embedding_loss",
            "cosine_embedding_loss",
            grad=(0, 1),
            margin=-0.2,
            reduction="none",
        ),
        functional_sample(
            "1d_0d_target_sum",
            (normal(4), normal(4), Draw(lambda rng: np.array(-1.0))),
            "cosine_embedding_loss",
            "cosine_embedding_loss",
            grad=(0, 1),
            margin=-0.5,
            reduction="sum",
        ),
    ],
    "triplet_margin_loss": [
        functional_sample(
            "mean",
            (normal(5, 4), normal(5, 4), normal(5, 4)),
            "triplet_margin_loss",
            "triplet_margin_loss",
            margin=2.0,
        ),
        functional_sample(
            "swap_p1_none",
            (normal(4, 3), normal(4, 3), normal(4, 3)),
            "triplet_margin_loss",
            "triplet_margin_loss",
            margin=3.0,
            p=1.0,
            swap=True,
            reduction="none",
        ),
        functional_sample(
            "1d_sum",
            (normal(6), normal(6), normal(6)),
            "triplet_margin_loss",
            "triplet_margin_loss",
            margin=4.0,
            reduction="sum",
        ),
    ],
}
