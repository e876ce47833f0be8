"""scaled_dot_product_attention's numba path on the layouts and sizes it meets in models: q, k
and v as views of a transformer's (B, T, 3, H, D) projection read in place, the output laid out
as the query, chunks of heads across batch elements, head dims 16 to 128 and odd lengths in
float32 against PyTorch, and finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's spelling)
from minitrain.ops.sequence import attention_numba


def _projection_views(rng, batch, length, heads, width, dtype=np.float64):
    """(q, k, v, d_out): q, k, v (B, H, T, D) views of one (B, T, 3, H, D) array, as a
    transformer's fused projection gives them, and an upstream gradient that is the transposed
    view of a (B, T, H, D) array, as `out.transpose(1, 2).reshape(B, T, H * D)` sends back."""
    projection = rng.standard_normal((batch, length, 3, heads, width)).astype(dtype)
    q, k, v = projection.transpose(2, 0, 3, 1, 4)
    d_out = rng.standard_normal((batch, length, heads, width)).astype(dtype).transpose(0, 2, 1, 3)
    return q, k, v, d_out


def _run(arrays, d_out, **kw):
    """(out array, [dq, dk, dv]) of minitrain's attention."""
    leaves = [mt.tensor(a, requires_grad=True) for a in arrays]
    out = F.scaled_dot_product_attention(*leaves, **kw)
    out.backward(d_out)
    return out.array, [t.grad.array for t in leaves]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_projection_views_give_what_contiguous_inputs_give(causal):
    rng = np.random.default_rng(30)
    q, k, v, d_out = _projection_views(rng, 3, 9, 4, 5)
    assert not q.flags.c_contiguous and not d_out.flags.c_contiguous
    copies = [np.ascontiguousarray(a) for a in (q, k, v)]
    results = []
    for numba, arrays, upstream in (
        (False, copies, np.ascontiguousarray(d_out)),
        (True, copies, np.ascontiguousarray(d_out)),
        (True, [q, k, v], d_out),
    ):
        with backend.use_numba(numba):
            results.append(_run(arrays, upstream, is_causal=causal))
    (want, want_grads), *others = results
    for out, grads in others:
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-13)
        for g, w in zip(grads, want_grads, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


def test_output_is_laid_out_as_the_query():
    rng = np.random.default_rng(31)
    q, k, v, _ = _projection_views(rng, 2, 6, 3, 4, np.float32)
    with backend.use_numba(True):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True).array
        contiguous = F.scaled_dot_product_attention(*(np.ascontiguousarray(a) for a in (q, k, v)))
    # (B, H, T, D) over (B, T, H, D) memory: the transpose back to (B, T, H * D) is free
    assert out.transpose(0, 2, 1, 3).flags.c_contiguous
    assert contiguous.array.flags.c_contiguous


def test_finite_differences_through_projection_views():
    rng = np.random.default_rng(32)
    batch, length, heads, width = 2, 5, 2, 3
    projection = mt.tensor(rng.standard_normal((batch, length, 3 * heads * width)))
    projection.requires_grad_()

    def block(x):
        parts = ops.reshape(x, (batch, length, 3, heads, width))
        q, k, v = (ops.transpose(parts[:, :, i], 1, 2) for i in range(3))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return ops.reshape(ops.transpose(out, 1, 2), (batch, length, heads * width))

    with backend.use_numba(True):
        assert mt.gradcheck(block, [projection])


def test_chunks_cover_every_head_once_within_or_across_whole_batch_elements():
    for heads_k in (1, 2, 3, 5):
        heads = 4 * heads_k
        for chunk in (1, 2, 3, 4, 7, 100):
            for lo, hi in ((0, heads), (1, heads - 1), (heads_k, heads)):
                chunks = attention_numba._chunks(lo, hi, chunk, heads_k)
                assert [n for n0, n1 in chunks for n in range(n0, n1)] == list(range(lo, hi))
                for n0, n1 in chunks:
                    assert 0 < n1 - n0 <= max(chunk, 1)
                    within = n0 // heads_k == (n1 - 1) // heads_k
                    assert within or (n0 % heads_k == 0 and n1 % heads_k == 0)


@pytest.mark.parametrize("heads_per_chunk", [1, 2, 3, 5])
@pytest.mark.parametrize("case", ["causal", "bool_mask", "dropout_gqa"])
def test_chunk_sizes_agree_with_the_generic_kernels(monkeypatch, heads_per_chunk, case):
    rng = np.random.default_rng(33)
    q, k, v, d_out = _projection_views(rng, 3, 7, 4, 3)
    kw = {"is_causal": True}
    if case == "bool_mask":
        kw = {"attn_mask": rng.random((3, 4, 7, 7)) > 0.4}
    elif case == "dropout_gqa":
        k, v = k[:, ::2], v[:, ::2]  # 2 key heads, each serving 2 query heads
        kw = {"dropout_p": 0.3, "enable_gqa": True}
    results = []
    for numba in (False, True):
        if numba:  # blocks of 3 rows and 4 keys, chunks of that many heads, on threads
            monkeypatch.setattr(attention_numba, "_ROW_BLOCK", 3)
            monkeypatch.setattr(attention_numba, "_KEY_BLOCK", 4)
            groups = 2 if case == "dropout_gqa" else 1
            monkeypatch.setattr(
                attention_numba, "_CHUNK_BYTES", heads_per_chunk * groups * 3 * 4 * 8
            )
            monkeypatch.setattr(attention_numba, "_THREADED_SCORES", 0)
        with backend.use_numba(numba):
            mt.manual_seed(4)
            results.append(_run([q, k, v], d_out, **kw))
    (want, want_grads), (out, grads) = results
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-13)
    for g, w in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("width", [16, 24, 64, 128])
@pytest.mark.parametrize("length", [1, 37, 129])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_float32_head_dims_and_odd_lengths_against_torch(torch, width, length, causal):
    rng = np.random.default_rng(34)
    q, k, v, d_out = _projection_views(rng, 2, length, 2, width, np.float32)
    with backend.use_numba(True):
        out, grads = _run([q, k, v], d_out, is_causal=causal)
    leaves = [torch.from_numpy(np.ascontiguousarray(a)).requires_grad_() for a in (q, k, v)]
    want = torch.nn.functional.scaled_dot_product_attention(*leaves, is_causal=causal)
    want.backward(torch.from_numpy(np.ascontiguousarray(d_out)))
    np.testing.assert_allclose(out, want.detach().numpy(), rtol=1e-4, atol=2e-5)
    for g, leaf in zip(grads, leaves, strict=True):
        np.testing.assert_allclose(g, leaf.grad.numpy(), rtol=1e-4, atol=1e-4)
