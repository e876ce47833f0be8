"""Checks of the exercises in 05_tiny_transformer.ipynb: the causal mask, heads, attention's
backward from the saved log-sum-exp, the memory of attention built from primitives."""

from __future__ import annotations

import numpy as np

import minitrain as mt
from exercises import exercise
from minitrain import ops
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)


def _as_array(value, what: str) -> np.ndarray:
    if isinstance(value, mt.Tensor):
        return value.numpy()
    assert isinstance(value, np.ndarray), f"{what} returned {type(value).__name__}, not an array"
    return value


def _softmax_rows(scores: np.ndarray) -> np.ndarray:
    shifted = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@exercise
def check_causal_additive_mask(causal_additive_mask):
    for length in (1, 2, 5):
        mask = _as_array(causal_additive_mask(length), f"causal_additive_mask({length})")
        assert mask.shape == (length, length), (
            f"causal_additive_mask({length}) has shape {mask.shape}, expected ({length}, {length})"
            " (one row per query, one column per key)"
        )
        assert mask.dtype.kind == "f", (
            f"causal_additive_mask({length}) has dtype {mask.dtype}: an additive mask is added to"
            " the scores, so it holds floats (0.0 and -inf), not booleans"
        )
        for i in range(length):
            for j in range(length):
                if j <= i:
                    assert mask[i, j] == 0, (
                        f"causal_additive_mask({length})[{i}, {j}] is {mask[i, j]}: query {i} may "
                        f"read key {j} (j <= i), so its score must stay as it is (add 0)"
                    )
                else:
                    assert mask[i, j] == -np.inf, (
                        f"causal_additive_mask({length})[{i}, {j}] is {mask[i, j]}: key {j} is in "
                        f"query {i}'s future: it must be -inf, so that its weight is exp(-inf) = 0 "
                        "whatever the score"
                    )
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 6, 4)) for _ in range(3))
    mask = _as_array(causal_additive_mask(6), "causal_additive_mask(6)")
    ours = _softmax_rows(q @ k.swapaxes(-1, -2) / 2.0 + mask) @ v
    fused = F.scaled_dot_product_attention(*(mt.tensor(a) for a in (q, k, v)), is_causal=True)
    assert np.allclose(ours, fused.numpy(), atol=1e-12), (
        "softmax(Q K^T / sqrt(d) + mask) V with your mask differs from scaled_dot_product_attention"
        "(..., is_causal=True)"
    )


@exercise
def check_split_heads(split_heads):
    batch, length, width = 2, 5, 12
    x = mt.randn(batch, length, width, dtype="float64", requires_grad=True)
    data = x.numpy()
    for heads in (1, 3, 12):
        size = width // heads
        y = split_heads(x, heads)
        assert isinstance(y, mt.Tensor), (
            f"split_heads returned {type(y).__name__}: use tensor ops (reshape, transpose), so "
            "that the gradient flows back to x"
        )
        expected_shape = (batch, heads, length, size)
        assert tuple(y.shape) == expected_shape, (
            f"split_heads(x of shape {tuple(x.shape)}, heads={heads}) has shape {tuple(y.shape)},"
            f" expected (batch, heads, time, width // heads) = {expected_shape}"
        )
        got = y.numpy()
        for b, h, t in [(0, 0, 0), (1, heads - 1, 3), (0, heads // 2, length - 1)]:
            want = data[b, t, h * size : (h + 1) * size]
            assert np.array_equal(got[b, h, t], want), (
                f"heads={heads}: y[{b}, {h}, {t}] should be x[{b}, {t}, {h * size}:"
                f"{(h + 1) * size}] (head h owns channels h*D to (h+1)*D of each position); it is"
                f" {got[b, h, t]}, not {want}"
            )
    weights = mt.randn(batch, 3, length, width // 3, dtype="float64")
    (gx,) = mt.grad((split_heads(x, 3) * weights).sum(), [x])
    expected = weights.numpy().transpose(0, 2, 1, 3).reshape(batch, length, width)
    assert np.array_equal(gx.numpy(), expected), (
        "the gradient of split_heads does not route back to the channels each head read"
    )


def _attention_forward(q, k, v, causal):
    """O and the row log-sum-exp of the scaled (and masked) scores, in numpy."""
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        length, keys = scores.shape[-2:]
        scores = np.where(np.triu(np.ones((length, keys), bool), 1), -np.inf, scores)
    top = scores.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(scores - top).sum(axis=-1)) + top[..., 0]
    return np.exp(scores - lse[..., None]) @ v, lse


@exercise
def check_attention_backward_from_lse(attention_backward_from_lse):
    rng = np.random.default_rng(1)
    cases = [((2, 3, 6, 4), (2, 3, 6, 4), 5, True), ((1, 2, 4, 3), (1, 2, 7, 3), 2, False)]
    for q_shape, k_shape, value_width, causal in cases:
        q, k = rng.standard_normal(q_shape), rng.standard_normal(k_shape)
        v = rng.standard_normal((*k_shape[:-1], value_width))
        out, lse = _attention_forward(q, k, v, causal)
        d_out = rng.standard_normal(out.shape)
        got = attention_backward_from_lse(d_out, q, k, v, out, lse, causal)
        assert isinstance(got, tuple) and len(got) == 3, (
            "return a tuple of three arrays, (dQ, dK, dV)"
        )
        expected = ops.attention_grad(d_out, q, k, v, out, lse, is_causal=causal)[:3]
        where = f"Q {q_shape}, K {k_shape}, V width {value_width}, causal={causal}"
        for name, mine, want in zip(("dQ", "dK", "dV"), got, expected, strict=True):
            mine = _as_array(mine, f"{name} of attention_backward_from_lse")
            assert mine.shape == want.shape, (
                f"{where}: {name} has shape {mine.shape}, expected {want.shape} (the shape of "
                f"{name[1:]})"
            )
            error = np.abs(mine - want).max()
            hint = {
                "dV": "dV = P^T dO, with P = exp(S - lse) recomputed (masked scores are -inf)",
                "dK": "dK = scale dS^T Q",
                "dQ": "dQ = scale dS K, with dS = P * (dO V^T - rowsum(dO * O))",
            }[name]
            assert error < 1e-10, f"{where}: {name} is off by {error:.3g}; {hint}"


def attention_from_primitives(q, k, v):
    """The notebook's causal attention from matmul, mul, masked_fill, softmax and matmul."""
    length, width = q.shape[-2], q.shape[-1]
    future = np.triu(np.ones((length, length), dtype=bool), 1)
    scores = (q @ k.transpose(-2, -1)) * (1 / np.sqrt(width))
    return ops.softmax(ops.masked_fill(scores, future, float("-inf")), -1) @ v


@exercise
def check_naive_saved_bytes(naive_saved_bytes):
    for batch, heads, length, width in [(1, 1, 8, 4), (2, 3, 16, 8), (1, 2, 33, 5), (3, 1, 7, 16)]:
        q, k, v = (mt.randn(batch, heads, length, width, requires_grad=True) for _ in range(3))
        with mt.Tape() as tape:
            attention_from_primitives(q, k, v)
        measured = tape.saved_bytes()
        predicted = naive_saved_bytes(batch, heads, length, width)
        assert isinstance(predicted, (int, np.integer)), (
            f"naive_saved_bytes returned {type(predicted).__name__}: return a whole number of bytes"
        )
        assert predicted == measured, (
            f"B={batch}, H={heads}, T={length}, D={width} (float32): the tape holds {measured} "
            f"bytes, your formula gives {predicted}. List what each node saves (tape.nodes, "
            "node.saved_arrays()): an array two nodes share is counted once, a view of an "
            "input is its input"
        )
