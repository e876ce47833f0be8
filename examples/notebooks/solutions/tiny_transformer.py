"""Solutions of the exercises in 05_tiny_transformer.ipynb."""

from __future__ import annotations

import numpy as np


def causal_additive_mask(length):
    """(length, length) floats: 0 where key j <= query i, -inf above the diagonal."""
    future = np.triu(np.ones((length, length), dtype=bool), 1)
    return np.where(future, -np.inf, 0.0)


def split_heads(x, heads):
    """(B, T, C) -> (B, heads, T, C // heads): head h holds channels h*D to (h+1)*D."""
    batch, length, width = x.shape
    return x.reshape(batch, length, heads, width // heads).transpose(1, 2)


def attention_backward_from_lse(d_out, q, k, v, out, lse, causal):
    """(dQ, dK, dV) of O = softmax(Q K^T / sqrt(d) [+ causal mask]) V, from the saved row
    log-sum-exp instead of the weights."""
    scale = 1 / np.sqrt(q.shape[-1])
    scores = q @ k.swapaxes(-1, -2) * scale
    if causal:
        length, keys = scores.shape[-2:]
        scores = np.where(np.triu(np.ones((length, keys), dtype=bool), 1), -np.inf, scores)
    weights = np.exp(scores - lse[..., None])  # P recomputed: exp(-inf) = 0 where masked
    d_v = weights.swapaxes(-1, -2) @ d_out
    d_weights = d_out @ v.swapaxes(-1, -2)
    d_scores = weights * (d_weights - (d_out * out).sum(axis=-1, keepdims=True))
    return d_scores @ k * scale, d_scores.swapaxes(-1, -2) @ q * scale, d_v


def naive_saved_bytes(batch, heads, length, width):
    """Q, K, V (float32, B H T D each), the (T, T) boolean mask and the weights P (float32,
    B H T T): the matmuls save Q and K (K^T is a view of K), P and V; softmax saves P too."""
    floats = 4
    return (
        3 * batch * heads * length * width * floats
        + length * length
        + (batch * heads * length * length * floats)
    )
