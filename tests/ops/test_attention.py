"""scaled_dot_product_attention against PyTorch's in float64 (masks, causal, scale, grouped-query
attention, batch shapes, fully masked rows, dropout), its kernel attention_grad, the memory it
saves, its blocks, the numba kernels against the generic ones, and its errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, ops
from minitrain.errors import ArgumentError, DimensionError, DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's spelling)
from minitrain.ops.sequence import attention, attention_blocks, attention_numba


@pytest.fixture(params=[False, True], ids=["generic", "numba"])
def numba(request):
    """Run the test with the generic kernels, then with the numba ones."""
    previous = backend.set_numba(request.param)
    yield request.param
    backend.set_numba(previous)


def _draw(rng, shapes, mask=None):
    return [rng.standard_normal(s) for s in shapes], mask


def _ours(arrays, mask, **kw):
    """(out, [gradients of query, key, value (and a float mask)]) of minitrain's attention for
    an upstream gradient drawn after the output."""
    leaves = [mt.tensor(a, requires_grad=True) for a in arrays]
    mask_leaf = None
    if mask is not None:
        mask_leaf = mt.tensor(mask, requires_grad=mask.dtype != np.bool_)
    out = F.scaled_dot_product_attention(*leaves, attn_mask=mask_leaf, **kw)
    upstream = np.random.default_rng(99).standard_normal(out.shape).astype(out.dtype)
    out.backward(upstream)
    grads = [t.grad.array for t in leaves]
    if mask_leaf is not None and mask_leaf.requires_grad:
        grads.append(mask_leaf.grad.array)
    return out.array, grads


def _theirs(torch, arrays, mask, **kw):
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    mask_leaf = None
    if mask is not None:
        mask_leaf = torch.tensor(mask, requires_grad=mask.dtype != np.bool_)
    out = torch.nn.functional.scaled_dot_product_attention(*leaves, attn_mask=mask_leaf, **kw)
    upstream = np.random.default_rng(99).standard_normal(tuple(out.shape))
    out.backward(torch.tensor(upstream, dtype=out.dtype))
    grads = [t.grad.numpy() for t in leaves]
    if mask_leaf is not None and mask_leaf.requires_grad:
        grads.append(mask_leaf.grad.numpy())
    return out.detach().numpy(), grads


def _assert_matches_torch(torch, arrays, mask=None, tol=1e-11, **kw):
    out, grads = _ours(arrays, mask, **kw)
    want, want_grads = _theirs(torch, arrays, mask, **kw)
    assert out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=tol, atol=tol)
    assert len(grads) == len(want_grads)
    for i, (g, w) in enumerate(zip(grads, want_grads, strict=True)):
        assert g.shape == w.shape, f"gradient {i}"
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"gradient {i}")


SHAPES = {
    "2d": ((5, 4), (7, 4), (7, 3)),
    "3d_l_above_s": ((3, 9, 4), (3, 6, 4), (3, 6, 5)),
    "4d": ((2, 3, 6, 4), (2, 3, 6, 4), (2, 3, 6, 4)),
    "5d": ((2, 2, 2, 4, 3), (2, 2, 2, 6, 3), (2, 2, 2, 6, 2)),
    "broadcast_batch": ((2, 1, 4, 3), (1, 3, 5, 3), (3, 5, 2)),
    "empty_queries": ((2, 0, 3), (2, 4, 3), (2, 4, 2)),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
def test_matches_torch_for_batch_shapes(torch, numba, shapes, causal):
    arrays, _ = _draw(np.random.default_rng(0), shapes)
    _assert_matches_torch(torch, arrays, is_causal=causal)


@pytest.mark.parametrize("length, keys", [(3, 7), (7, 3), (5, 5), (1, 4)])
def test_causal_is_upper_left_aligned_as_torch(torch, numba, length, keys):
    arrays, _ = _draw(np.random.default_rng(1), ((2, length, 4), (2, keys, 4), (2, keys, 3)))
    _assert_matches_torch(torch, arrays, is_causal=True)
    # query i sees keys 0..i: the first query's output is value row 0
    out = F.scaled_dot_product_attention(*arrays, is_causal=True)
    np.testing.assert_allclose(out.array[:, 0], arrays[2][:, 0], rtol=1e-14)


@pytest.mark.parametrize("scale", [0.3, 2.0, 0.0])
def test_scale(torch, numba, scale):
    arrays, _ = _draw(np.random.default_rng(2), ((2, 3, 4), (2, 5, 4), (2, 5, 2)))
    _assert_matches_torch(torch, arrays, scale=scale)


MASK_SHAPES = {
    "one_for_all": (6, 7),
    "per_head": (3, 6, 7),
    "per_batch_and_head": (2, 3, 6, 7),
    "key_padding": (2, 1, 1, 7),
    "per_query": (6, 1),
    "batch_only": (2, 1, 6, 7),
}


@pytest.mark.parametrize("mask_shape", MASK_SHAPES.values(), ids=MASK_SHAPES.keys())
def test_boolean_masks(torch, numba, mask_shape):
    rng = np.random.default_rng(3)
    arrays, _ = _draw(rng, ((2, 3, 6, 4), (2, 3, 7, 4), (2, 3, 7, 5)))
    mask = rng.random(mask_shape) > 0.3
    mask[..., 0, :] = True
    _assert_matches_torch(torch, arrays, mask)


@pytest.mark.parametrize("mask_shape", MASK_SHAPES.values(), ids=MASK_SHAPES.keys())
def test_additive_masks_and_their_gradient(torch, numba, mask_shape):
    rng = np.random.default_rng(4)
    arrays, _ = _draw(rng, ((2, 3, 6, 4), (2, 3, 7, 4), (2, 3, 7, 5)))
    _assert_matches_torch(torch, arrays, rng.standard_normal(mask_shape))


def test_float32_mask_with_float64_inputs(torch, numba):
    rng = np.random.default_rng(5)
    arrays, _ = _draw(rng, ((2, 4, 3), (2, 5, 3), (2, 5, 3)))
    _assert_matches_torch(torch, arrays, rng.standard_normal((4, 5)).astype(np.float32), tol=1e-6)


def test_fully_masked_rows_give_zeros_as_torch(torch, numba):
    rng = np.random.default_rng(6)
    arrays, _ = _draw(rng, ((2, 2, 4, 3), (2, 2, 5, 3), (2, 2, 5, 2)))
    mask = rng.random((2, 1, 4, 5)) > 0.4
    mask[..., 0, :] = True
    mask[0, :, 2] = False  # query 2 of batch 0 sees nothing
    out, grads = _ours(arrays, mask)
    assert not out[0, :, 2].any() and np.isfinite(out).all()
    assert not grads[0][0, :, 2].any()
    _assert_matches_torch(torch, arrays, mask)
    additive = np.where(mask, 0.0, -np.inf)  # -inf everywhere in a row: the same
    _assert_matches_torch(torch, arrays, additive)


GQA = {
    "groups_of_2": ((2, 4, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)),
    "one_key_head": ((2, 3, 3, 4), (2, 1, 5, 4), (2, 1, 5, 3)),
    "3d": ((6, 3, 2), (2, 4, 2), (2, 4, 2)),
    "key_and_value_heads_differ": ((2, 6, 3, 2), (2, 2, 4, 2), (2, 3, 4, 2)),
    "same_heads": ((1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2)),
}


@pytest.mark.parametrize("shapes", GQA.values(), ids=GQA.keys())
def test_grouped_query_attention(torch, numba, shapes):
    rng = np.random.default_rng(7)
    arrays, _ = _draw(rng, shapes)
    _assert_matches_torch(torch, arrays, enable_gqa=True)
    _assert_matches_torch(torch, arrays, enable_gqa=True, is_causal=True)
    mask = rng.standard_normal((shapes[0][-3], 1, shapes[1][-2]))
    _assert_matches_torch(torch, arrays, mask, enable_gqa=True)


def test_grouped_query_attention_reads_each_key_head_once(numba):
    # (1, 4, L, E) queries on 2 key heads: query heads 0, 1 read key head 0 (repeat_interleave)
    rng = np.random.default_rng(8)
    q, k, v = (rng.standard_normal(s) for s in ((1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 3)))
    out = F.scaled_dot_product_attention(q, k, v, enable_gqa=True).array
    repeated = [np.repeat(a, 2, axis=1) for a in (k, v)]
    np.testing.assert_allclose(out, F.scaled_dot_product_attention(q, *repeated).array, 1e-14)


def test_float32_in_float32_out_and_float16_computed_in_float32(torch, numba):
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s) for s in ((2, 2, 5, 4), (2, 2, 6, 4), (2, 2, 6, 4))]
    want = F.scaled_dot_product_attention(*arrays, is_causal=True).array
    for dtype, tol in ((np.float32, 2e-6), (np.float16, 4e-3)):
        leaves = [mt.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        out = F.scaled_dot_product_attention(*leaves, is_causal=True)
        assert out.dtype == dtype
        np.testing.assert_allclose(out.array, want, rtol=tol, atol=tol)
        out.sum().backward()
        assert all(t.grad.dtype == dtype for t in leaves)


def test_empty_keys_and_empty_features_as_torch(torch, numba):
    rng = np.random.default_rng(10)
    arrays, _ = _draw(rng, ((2, 3, 4), (2, 0, 4), (2, 0, 2)))
    out = F.scaled_dot_product_attention(*arrays)
    assert out.shape == (2, 3, 2) and not out.array.any()  # no key: 0, as PyTorch
    arrays, _ = _draw(rng, ((2, 3, 0), (2, 5, 0), (2, 5, 2)))
    _assert_matches_torch(torch, arrays)  # E = 0: every score 0, a plain mean of the values


def test_dropout_is_seeded_and_scales_the_kept_weights(numba):
    rng = np.random.default_rng(11)
    q, k, v = (rng.standard_normal(s) for s in ((2, 2, 5, 3), (2, 2, 6, 3), (2, 2, 6, 4)))
    p = 0.3
    mt.manual_seed(3)
    first = F.scaled_dot_product_attention(q, k, v, dropout_p=p).array
    mt.manual_seed(3)
    second = F.scaled_dot_product_attention(q, k, v, dropout_p=p).array
    np.testing.assert_array_equal(first, second)
    keep = np.random.default_rng(3).random((2, 2, 5, 6)) >= p
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(3)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(first, (weights * keep / (1 - p)) @ v, rtol=1e-12)
    assert not F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).array.any()


def test_dropout_gradients_use_the_forwards_mask(torch, numba):
    rng = np.random.default_rng(12)
    arrays = [rng.standard_normal(s) for s in ((1, 2, 4, 3), (1, 2, 5, 3), (1, 2, 5, 2))]
    p = 0.5
    mt.manual_seed(5)
    out, grads = _ours(arrays, None, dropout_p=p)
    keep = torch.from_numpy(np.random.default_rng(5).random((1, 2, 4, 5)) >= p)
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    scores = leaves[0] @ leaves[1].transpose(-1, -2) / 3**0.5
    want = (torch.softmax(scores, -1) * keep / (1 - p)) @ leaves[2]
    want.backward(torch.tensor(np.random.default_rng(99).standard_normal(out.shape)))
    np.testing.assert_allclose(out, want.detach().numpy(), rtol=1e-12)
    for g, leaf in zip(grads, leaves, strict=True):
        np.testing.assert_allclose(g, leaf.grad.numpy(), rtol=1e-11, atol=1e-12)


def _block_case(name: str, rng):
    """(query, key, value), the mask and the keywords of one case of the block tests."""
    shapes = ((2, 3, 6, 4), (2, 3, 7, 4), (2, 3, 7, 5))
    mask, kw = None, {}
    if name == "causal":
        kw = {"is_causal": True}
    elif name == "float_mask":
        mask = rng.standard_normal((1, 6, 7))
    elif name == "bool_mask":  # batch 1, query 4 sees no key
        mask = rng.random((2, 1, 6, 7)) > 0.3
        mask[..., 0, :] = True
        mask[1, :, 4] = False
    elif name == "key_padding":
        mask = np.ones((2, 1, 1, 7), bool)
        mask[0, ..., 5:] = False
    elif name == "dropout":
        kw = {"dropout_p": 0.3}
    elif name == "gqa_causal":
        shapes = ((2, 4, 6, 4), (2, 2, 7, 4), (2, 2, 7, 5))
        kw = {"enable_gqa": True, "is_causal": True}
    arrays = [rng.standard_normal(s) for s in shapes]
    return arrays, mask, kw


BLOCK_CASES = ["full", "causal", "float_mask", "bool_mask", "key_padding", "dropout", "gqa_causal"]


@pytest.mark.parametrize("rows", [1, 2, 4])
@pytest.mark.parametrize("case", BLOCK_CASES)
def test_blocks_give_what_one_block_gives(monkeypatch, numba, rows, case):
    arrays, mask, kw = _block_case(case, np.random.default_rng(13))
    mt.manual_seed(1)
    want, want_grads = _ours(arrays, mask, **kw)
    # blocks of `rows` query rows (generic: of as many scores), of 3 keys (online softmax across
    # them), one head per chunk, chunks on threads: every boundary, the causal limit moving
    monkeypatch.setattr(attention_blocks, "_BLOCK_ELEMENTS", rows * 2 * 3 * 7)
    monkeypatch.setattr(attention_numba, "_ROW_BLOCK", rows)
    monkeypatch.setattr(attention_numba, "_KEY_BLOCK", 3)
    monkeypatch.setattr(attention_numba, "_CHUNK_BYTES", 1)
    monkeypatch.setattr(attention_numba, "_THREADED_SCORES", 0)
    mt.manual_seed(1)
    out, grads = _ours(arrays, mask, **kw)
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-14)
    for g, w in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 2e-5)])
@pytest.mark.parametrize("case", BLOCK_CASES)
def test_numba_agrees_with_generic(case, dtype, tol):
    arrays, mask, kw = _block_case(case, np.random.default_rng(18))
    arrays = [a.astype(dtype) for a in arrays]
    if mask is not None and mask.dtype != np.bool_:
        mask = mask.astype(dtype)
    results = []
    for numba in (False, True):
        with backend.use_numba(numba):
            mt.manual_seed(2)
            results.append(_ours(arrays, mask, **kw))
    (out, grads), (numba_out, numba_grads) = results
    assert numba_out.dtype == dtype
    np.testing.assert_allclose(numba_out, out, rtol=tol, atol=tol)
    for g, w in zip(numba_grads, grads, strict=True):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def test_numba_path_runs_where_it_applies(monkeypatch):
    runs = []
    original = attention.numba_forward

    def spy(*args):
        runs.append(args[1].dtype)
        return original(*args)

    monkeypatch.setattr(attention, "numba_forward", spy)
    rng = np.random.default_rng(19)
    arrays = [rng.standard_normal(s) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3))]
    with backend.use_numba(True):
        for dtype in (np.float64, np.float32, np.float16):
            F.scaled_dot_product_attention(*(a.astype(dtype) for a in arrays))
        F.scaled_dot_product_attention(arrays[0], arrays[1][:, :0], arrays[2][:, :0])  # no key
    with backend.use_numba(False):
        F.scaled_dot_product_attention(*arrays)
    # float16 computes in float32, there too; empty keys and numba off: the generic kernel
    assert runs == [np.float64, np.float32, np.float32]


def test_attention_grad_is_the_ops_backward(torch):
    rng = np.random.default_rng(14)
    q, k, v = (rng.standard_normal(s) for s in ((2, 4, 5, 3), (2, 2, 6, 3), (2, 2, 6, 2)))
    mask = rng.standard_normal((4, 5, 6))
    mask[1, 2] = -np.inf  # a fully masked row: lse +inf
    d_out = rng.standard_normal((2, 4, 5, 2))
    scale = 0.8
    leaves = [torch.tensor(a, requires_grad=True) for a in (q, k, v, mask)]
    out = torch.nn.functional.scaled_dot_product_attention(
        *leaves[:3], attn_mask=leaves[3], scale=scale, enable_gqa=True
    )
    out.backward(torch.tensor(d_out))
    scores = (q @ np.swapaxes(np.repeat(k, 2, axis=1), -1, -2)) * scale + mask
    with np.errstate(invalid="ignore"):
        top = scores.max(-1, keepdims=True)
        lse = np.log(np.exp(scores - top).sum(-1)) + top[..., 0]
    lse[np.isnan(lse)] = np.inf
    grads = ops.attention_grad(
        d_out, q, k, v, out.detach().numpy(), lse, attn_mask=mask, scale=scale
    )
    for g, leaf in zip(grads, leaves, strict=True):
        np.testing.assert_allclose(g, leaf.grad.numpy(), rtol=1e-11, atol=1e-12)
    # a boolean mask has no gradient
    assert ops.attention_grad(d_out, q, k, v, out.detach().numpy(), lse, mask > 0)[3] is None


def test_saves_linear_memory_and_no_weights():
    rng = np.random.default_rng(15)
    batch, heads, length, width = 1, 2, 64, 8
    shape = (batch, heads, length, width)
    q, k, v = (mt.tensor(rng.standard_normal(shape), requires_grad=True) for _ in "qkv")
    with mt.Tape() as tape:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    (node,) = tape.nodes
    saved = node.saved_arrays()
    assert {name for name, array in saved.items() if array is not None} == {
        "query",
        "key",
        "value",
        "out",
        "lse",
    }
    assert saved["lse"].shape == (batch, heads, length)
    assert tape.saved_bytes() == 8 * (4 * batch * heads * length * width + batch * heads * length)
    assert out.grad_fn.name == "AttentionGrad"


def test_second_derivatives_through_a_fully_masked_row(torch):
    rng = np.random.default_rng(16)
    q, k, v = (rng.standard_normal(s) for s in ((1, 3, 2), (1, 4, 2), (1, 4, 2)))
    mask = np.ones((3, 4), bool)
    mask[1] = False
    leaves = [mt.tensor(a, requires_grad=True) for a in (q, k, v)]
    assert mt.gradgradcheck(lambda *t: F.scaled_dot_product_attention(*t, attn_mask=mask), leaves)


@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bool_mask"])
def test_second_derivatives_on_a_device_as_on_the_cpu(cuda_device, causal):
    """create_graph builds the weights in tensor ops (tensor_backward): their masks, the causal
    one too, live on the inputs' device."""
    rng = np.random.default_rng(20)
    arrays = [rng.standard_normal(s) for s in ((1, 4, 3, 2), (1, 2, 5, 2), (1, 2, 5, 2))]
    mask = None
    if not causal:
        mask = rng.random((3, 5)) > 0.3
        mask[1] = False  # a query that sees no key
    results = []
    for device in ("cpu", "cuda"):
        leaves = [mt.tensor(a, requires_grad=True, device=device) for a in arrays]
        attn_mask = None if mask is None else mt.tensor(mask, device=device)
        out = F.scaled_dot_product_attention(
            *leaves, attn_mask=attn_mask, is_causal=causal, enable_gqa=True
        )
        (grad,) = mt.grad((out**2).sum(), [leaves[0]], create_graph=True)
        results.append([g.cpu().array for g in mt.grad((grad**2).sum(), leaves)])
    on_cpu, on_device = results
    for g_device, g_cpu in zip(on_device, on_cpu, strict=True):
        np.testing.assert_allclose(g_device, g_cpu, rtol=1e-12, atol=1e-14)


def test_inplace_change_of_a_saved_input_is_refused():
    rng = np.random.default_rng(17)
    q = mt.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    k, v = (mt.tensor(rng.standard_normal((2, 5, 4))) for _ in "kv")
    out = F.scaled_dot_product_attention(q * 1.0, k, v)
    k.add_(1.0)
    with pytest.raises(Exception, match="AttentionGrad"):
        out.sum().backward()


ERRORS = {
    "rank_1": (((4,), (4,), (4,)), {}, ShapeError, r"at least 2 dims.*query \(4,\)"),
    "e_mismatch": (
        ((2, 3, 4), (2, 5, 3), (2, 5, 6)),
        {},
        ShapeError,
        r"last dim E.*key \(2, 5, 3\)",
    ),
    "s_mismatch": (((2, 3, 4), (2, 5, 4), (2, 4, 6)), {}, ShapeError, r"keys S.*value \(2, 4, 6\)"),
    "heads_without_gqa": (
        ((2, 4, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4)),
        {},
        ShapeError,
        r"do not broadcast.*enable_gqa=True",
    ),
    "heads_not_dividing": (
        ((2, 4, 3, 4), (2, 3, 5, 4), (2, 3, 5, 4)),
        {"enable_gqa": True},
        ShapeError,
        r"must divide the query's.*key \(2, 3, 5, 4\)",
    ),
    "gqa_without_heads": (
        ((3, 4), (5, 4), (5, 4)),
        {"enable_gqa": True},
        DimensionError,
        r"heads dim \(-3\)",
    ),
    "batch_mismatch": (((2, 3, 4), (3, 5, 4), (3, 5, 4)), {}, ShapeError, r"do not broadcast"),
    "mask_shape": (
        ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
        {"attn_mask": np.ones((3, 4), bool)},
        ShapeError,
        r"attn_mask \(3, 4\) must broadcast to .*\(2, 3, 5\)",
    ),
    "mask_stretches": (
        ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
        {"attn_mask": np.ones((4, 2, 3, 5), bool)},
        ShapeError,
        r"attn_mask \(4, 2, 3, 5\)",
    ),
    "mask_int": (
        ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
        {"attn_mask": np.ones((3, 5), np.int64)},
        DTypeError,
        r"attn_mask must be boolean.*int64",
    ),
    "mask_float16": (
        ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
        {"attn_mask": np.ones((3, 5), np.float16)},
        DTypeError,
        r"float16",
    ),
    "mask_and_causal": (
        ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
        {"attn_mask": np.ones((3, 5), bool), "is_causal": True},
        ArgumentError,
        r"attn_mask or is_causal",
    ),
    "dropout_p": (
        ((2, 3, 4), (2, 5, 4), (2, 5, 6)),
        {"dropout_p": 1.5},
        ArgumentError,
        r"dropout_p must be a probability in \[0, 1\], got 1.5",
    ),
    "scale_type": (((2, 3, 4), (2, 5, 4), (2, 5, 6)), {"scale": "x"}, DTypeError, r"scale"),
}


@pytest.mark.parametrize("shapes, kw, error, message", ERRORS.values(), ids=ERRORS.keys())
def test_bad_input_is_refused_naming_the_op_and_the_shapes(shapes, kw, error, message):
    arrays = [np.zeros(s) for s in shapes]
    with pytest.raises(error, match=message) as caught:
        F.scaled_dot_product_attention(*arrays, **kw)
    assert str(caught.value).startswith("scaled_dot_product_attention: ")


def test_dtypes_are_refused():
    with pytest.raises(DTypeError, match="one dtype, got float32, float64 and float64"):
        F.scaled_dot_product_attention(
            np.zeros((3, 2), np.float32), np.zeros((4, 2)), np.zeros((4, 2))
        )
    with pytest.raises(DTypeError, match="query must be floating point, got int64"):
        F.scaled_dot_product_attention(*(np.zeros((3, 2), np.int64) for _ in range(3)))


def test_attention_grad_refuses_bad_shapes():
    q, k, v = np.zeros((2, 3, 4)), np.zeros((2, 5, 4)), np.zeros((2, 5, 6))
    out, lse = np.zeros((2, 3, 6)), np.zeros((2, 3))
    with pytest.raises(ShapeError, match=r"attention_grad: lse \(2, 5\) must have shape \(2, 3\)"):
        ops.attention_grad(out, q, k, v, out, np.zeros((2, 5)))
    with pytest.raises(ShapeError, match=r"attention_grad: d_out \(2, 3, 4\)"):
        ops.attention_grad(np.zeros((2, 3, 4)), q, k, v, out, lse)
    with pytest.raises(ShapeError, match=r"attention_grad: key and value must have the same heads"):
        ops.attention_grad(out[None], q[None], k[None], v[None, :1], out[None], lse[None])
    with pytest.raises(ShapeError, match=r"attention_grad: the batch dims must be equal"):
        out2 = np.zeros((2, 2, 3, 6))
        ops.attention_grad(
            out2, q[None], np.zeros((2, 2, 5, 4)), v[None], out2, np.zeros((2, 2, 3))
        )
    with pytest.raises(ShapeError, match=r"dropout_mask must be boolean"):
        ops.attention_grad(out, q, k, v, out, lse, dropout_mask=np.ones((2, 3, 5)), dropout_p=0.5)


@pytest.mark.parametrize("causal", [False, True])
def test_a_row_of_all_nan_scores_is_nan_not_a_masked_row(causal, torch):
    """The numba kernel's row max passes over nan, so a row whose every score was nan looked
    like a row whose every key is masked, and gave 0 (found by the extreme-value properties);
    its softmax is nan, as PyTorch's, while a fully masked row still gives 0."""
    rng = np.random.default_rng(5)
    q, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 3))
    k = rng.standard_normal((2, 5, 4))
    k[0] = np.nan  # every score of batch 0 is nan
    ours = F.scaled_dot_product_attention(
        mt.tensor(q), mt.tensor(k), mt.tensor(v), is_causal=causal
    )
    theirs = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=causal
    )
    assert np.isnan(ours.numpy()[0]).all() and np.isnan(theirs.numpy()[0]).all()
    np.testing.assert_allclose(ours.numpy()[1], theirs.numpy()[1], rtol=1e-10)
    masked = np.zeros((3, 5), bool)
    out = F.scaled_dot_product_attention(
        mt.tensor(q), mt.tensor(k), mt.tensor(v), attn_mask=mt.tensor(masked)
    )
    np.testing.assert_array_equal(out.numpy()[1], np.zeros((3, 3)))
