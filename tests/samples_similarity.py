"""Sample table entries for the similarity family (ops/similarity.py, ops/pair_loss.py), merged
into op_samples.SAMPLES. Every function of this family is composed of registered ops, so SAMPLES
is empty: COMPOSED holds the samples of cosine_similarity, pairwise_distance, normalize, softmin
and the losses of pairs (kl_div, margin_ranking_loss, cosine_embedding_loss,
triplet_margin_loss), which tests/nn/test_resampling_and_similarity.py runs through the
registry's checks (float64 gradcheck, PyTorch's values and gradients, float32 in and out, second
derivatives)."""

from __future__ import annotations

import warnings

import numpy as np
from op_samples import Draw, Sample, draws, normal, positive
from reference import torch

import minitrain as mt
from minitrain import ops
from minitrain.nn import functional

SAMPLES: dict[str, list[Sample]] = {}


def _both(name, specs, ours, theirs_name, grad=None, **kw) -> Sample:
    """functional.<ours> and torch.nn.functional.<theirs_name> with the same arguments."""
    return Sample(
        name,
        draws(*specs),
        lambda *a: getattr(functional, ours)(*a, **kw),
        lambda *a: getattr(torch.nn.functional, theirs_name)(*a, **kw),
        grad=grad,
    )


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
    "cosine_similarity": [
        _both("rows", (normal(4, 5), normal(4, 5)), "cosine_similarity", "cosine_similarity"),
        _both(
            "dim0_broadcast",
            (normal(3, 1, 4), normal(3, 2, 1)),
            "cosine_similarity",
            "cosine_similarity",
            dim=0,
        ),
        Sample(
            "top_level_last_dim",
            draws(normal(2, 3, 4), normal(2, 3, 4)),
            lambda a, b: mt.cosine_similarity(a, b, -1),
            lambda a, b: torch.cosine_similarity(a, b, -1),
        ),
    ],
    "pairwise_distance": [
        _both("p2", (normal(4, 5), normal(4, 5)), "pairwise_distance", "pairwise_distance"),
        _both(
            "p1_keepdim",
            (normal(3, 4), normal(3, 4)),
            "pairwise_distance",
            "pairwise_distance",
            p=1.0,
            keepdim=True,
        ),
        _both(
            "p3_broadcast",
            (normal(3, 4), normal(4)),
            "pairwise_distance",
            "pairwise_distance",
            p=3.0,
        ),  # fmt: skip
        _both(
            "p_inf",
            (normal(3, 4), normal(3, 4)),
            "pairwise_distance",
            "pairwise_distance",
            p=float("inf"),
        ),  # fmt: skip
        _both(
            "p_negative",
            (normal(3, 4), normal(3, 4)),
            "pairwise_distance",
            "pairwise_distance",
            p=-1.5,
        ),  # fmt: skip
        Sample(
            "top_level_1d",
            draws(normal(5), normal(5)),
            lambda a, b: mt.pairwise_distance(a, b),
            lambda a, b: torch.pairwise_distance(a, b),
        ),
    ],
    "normalize": [
        Sample(
            "ops_p2_dim1",
            draws(normal(3, 4)),
            lambda x: ops.normalize(x),
            lambda x: torch.nn.functional.normalize(x),
        ),
        _both("p2_dim1", (normal(3, 4),), "normalize", "normalize"),
        _both("p1_dim0", (normal(3, 4, 2),), "normalize", "normalize", p=1.0, dim=0),
        _both("p3_last", (normal(2, 5),), "normalize", "normalize", p=3.0, dim=-1),
        Sample(
            "zero_row_eps",  # a zero row: its norm is raised to eps, the gradient 1 / eps
            draws(Draw(lambda rng: np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]))),
            lambda x: functional.normalize(x, eps=0.5),
            lambda x: torch.nn.functional.normalize(x, eps=0.5),
            not_twice_differentiable="the zero row's norm (PyTorch's second derivative: nan)",
        ),
    ],
    "softmin": [
        _both("dim1", (normal(3, 4),), "softmin", "softmin", dim=1),
        _both("dim0_3d", (normal(3, 2, 4),), "softmin", "softmin", dim=0),
    ],
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
        _both(
            "mean",
            (normal(6), normal(6), _signs(6)),
            "margin_ranking_loss",
            "margin_ranking_loss",
            grad=(0, 1),
        ),
        _both(
            "margin_sum_target_grad",
            (normal(3, 4), normal(3, 4), normal(3, 4)),
            "margin_ranking_loss",
            "margin_ranking_loss",
            margin=0.3,
            reduction="sum",
        ),
        _both(
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
        _both(
            "mean",
            (normal(6, 4), normal(6, 4), _signs(6, zero=True)),
            "cosine_embedding_loss",
            "cosine_embedding_loss",
            grad=(0, 1),
        ),
        _both(
            "margin_none",
            (normal(5, 3), normal(5, 3), _signs(5)),
            "cosine_embedding_loss",
            "cosine_embedding_loss",
            grad=(0, 1),
            margin=-0.2,
            reduction="none",
        ),
        _both(
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
        _both(
            "mean",
            (normal(5, 4), normal(5, 4), normal(5, 4)),
            "triplet_margin_loss",
            "triplet_margin_loss",
            margin=2.0,
        ),
        _both(
            "swap_p1_none",
            (normal(4, 3), normal(4, 3), normal(4, 3)),
            "triplet_margin_loss",
            "triplet_margin_loss",
            margin=3.0,
            p=1.0,
            swap=True,
            reduction="none",
        ),
        _both(
            "1d_sum",
            (normal(6), normal(6), normal(6)),
            "triplet_margin_loss",
            "triplet_margin_loss",
            margin=4.0,
            reduction="sum",
        ),
    ],
}
