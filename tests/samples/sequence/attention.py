"""Samples of ops/sequence/attention.py: scaled_dot_product_attention, masks, GQA."""

from __future__ import annotations

import numpy as np
from op_samples import Draw, Sample, draws, normal
from reference import torch

import minitrain as mt
from minitrain import ops


def _attention(name: str, q, k, v, *extra, **kw) -> Sample:
    """query, key and value of the given shapes (then any extra draws, the mask), passed on
    with the keywords to both functions."""
    return Sample(
        name,
        draws(normal(*q), normal(*k), normal(*v), *extra),
        lambda *args: ops.scaled_dot_product_attention(*args, **kw),
        lambda *args: torch.nn.functional.scaled_dot_product_attention(*args, **kw),
        second_order_ref=lambda *args: _torch_math_attention(*args, **kw),
    )


def _torch_math_attention(*args, **kw):
    """PyTorch's attention by its math backend, whose graph (unlike its fused CPU kernel's)
    has a double backward."""
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(*args, **kw)


def _bool_mask(*shape: int, dead_row: bool = False) -> Draw:
    """A boolean mask with about a third of its entries False; `dead_row`: its row 1 all False
    (a query that sees no key: 0 out, 0 gradients)."""

    def draw(rng):
        mask = rng.random(shape) > 0.35
        mask[..., 0, :] = True
        if dead_row:
            mask[..., 1, :] = False
        return mask

    return Draw(draw)


def _dropout(shapes, p: float) -> Sample:
    """Dropout with a fixed seed, so that every call (gradcheck calls many) draws the same mask;
    the PyTorch twin applies the mask minitrain draws for that seed: kept where u >= p, u from
    numpy's generator over the attention weights' shape."""
    q, k, v = shapes

    def call(query, key, value):
        mt.manual_seed(7)
        return ops.scaled_dot_product_attention(query, key, value, dropout_p=p)

    def ref(query, key, value):
        weights_shape = (*query.shape[:-1], key.shape[-2])
        keep = torch.from_numpy(np.random.default_rng(7).random(weights_shape) >= p)
        scores = query @ key.transpose(-1, -2) / query.shape[-1] ** 0.5
        return (torch.softmax(scores, -1) * keep / (1 - p)) @ value

    return Sample(f"dropout{p}", draws(normal(*q), normal(*k), normal(*v)), call, ref)


SAMPLES: dict[str, list[Sample]] = {
    "scaled_dot_product_attention": [
        _attention("3d", (2, 3, 4), (2, 5, 4), (2, 5, 3)),
        _attention("2d_scale", (3, 2), (4, 2), (4, 3), scale=0.7),
        _attention("4d_causal", (1, 2, 4, 3), (1, 2, 4, 3), (1, 2, 4, 2), is_causal=True),
        _attention("causal_more_queries", (1, 5, 2), (1, 3, 2), (1, 3, 2), is_causal=True),
        _attention("causal_more_keys", (1, 3, 2), (1, 5, 2), (1, 5, 2), is_causal=True),
        _attention(
            "bool_mask", (1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2), _bool_mask(3, 4, dead_row=True)
        ),
        _attention("bool_mask_per_head", (2, 3, 2), (2, 4, 2), (2, 4, 2), _bool_mask(2, 3, 4)),
        _attention("float_mask", (1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2), normal(1, 3, 4)),
        _attention("float_mask_per_key", (2, 3, 2), (2, 4, 2), (2, 4, 3), normal(2, 1, 4)),
        _attention("gqa", (1, 4, 2, 2), (1, 2, 3, 2), (1, 2, 3, 2), enable_gqa=True),
        _attention("gqa_causal", (4, 3, 2), (2, 3, 2), (2, 3, 2), is_causal=True, enable_gqa=True),
        _attention("batch_broadcast", (2, 1, 3, 2), (1, 2, 4, 2), (2, 4, 2)),
        _dropout(((1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2)), 0.4),
    ],
}
