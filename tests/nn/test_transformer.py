"""MultiheadAttention and the transformer layers against PyTorch: state dicts loaded strictly from
torch's modules, values and gradients in float64, finite differences, and the errors."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from reference import torch

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

TF = torch.nn.functional

E, HEADS, L, S, N = 8, 2, 4, 5, 3


def _loaded(ours, theirs, seed: int = 0):
    """`theirs` with every parameter drawn anew (so zero-initialised biases count too), and
    `ours` given its state_dict, loaded strictly."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in theirs.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()}, strict=True)
    return ours, theirs


def _inputs(*shapes, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in shapes]


def _masks(kind: str, batch: int | None, target_len: int, source_len: int, heads: int = HEADS):
    """(attn_mask, key_padding_mask) as numpy arrays, none masking a whole row."""
    rng = np.random.default_rng(7)
    lead = () if batch is None else (batch,)
    attn = padding = None
    if "attn_bool" in kind:
        attn = rng.random((target_len, source_len)) < 0.4
        attn[:, 0] = False
    if "attn_float3d" in kind:
        attn = rng.standard_normal(((batch or 1) * heads, target_len, source_len))
        attn[..., 1] = -np.inf
    if "padding_bool" in kind:
        padding = np.zeros(lead + (source_len,), bool)
        padding[..., -2:] = True
    if "padding_float" in kind:
        padding = rng.standard_normal(lead + (source_len,))
    return attn, padding


def _torch_mask(mask):
    return None if mask is None else torch.tensor(mask)


def _check_gradients(ours_module, theirs_module, ours_inputs, theirs_inputs, rtol=1e-9):
    for name, parameter in theirs_module.named_parameters():
        ours = dict(ours_module.named_parameters())[name]
        np.testing.assert_allclose(
            ours.grad.array, parameter.grad.numpy(), rtol=rtol, atol=1e-12, err_msg=name
        )
    for ours, theirs in zip(ours_inputs, theirs_inputs, strict=True):
        np.testing.assert_allclose(ours.grad.array, theirs.grad.numpy(), rtol=rtol, atol=1e-12)


def _leaves(arrays, library):
    if library is torch:
        return [torch.tensor(a, requires_grad=True) for a in arrays]
    return [mt.tensor(a, requires_grad=True) for a in arrays]


# MultiheadAttention
CONFIGS = {
    "plain": {},
    "no_bias": {"bias": False},
    "bias_kv_zero_attn": {"add_bias_kv": True, "add_zero_attn": True},
    "kdim_vdim": {"kdim": 3, "vdim": 6},
}
# which of query, key and value are one tensor (kdim and vdim need a key and a value of their own)
SHARING = ["self", "key_is_value", "distinct"]
LAYOUTS = [(c, s) for c in CONFIGS for s in SHARING if c != "kdim_vdim" or s == "distinct"]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("config, sharing", LAYOUTS)
@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize(
    "masks", ["none", "attn_bool", "attn_float3d", "padding_bool", "padding_float",
              "attn_bool+padding_bool", "attn_float3d+padding_float"],
)  # fmt: skip
def test_multihead_attention_matches_torch(
    batch_first, config, sharing, need_weights, average, masks
):
    options = CONFIGS[config]
    ours, theirs = _loaded(
        nn.MultiheadAttention(E, HEADS, batch_first=batch_first, dtype=np.float64, **options),
        torch.nn.MultiheadAttention(
            E, HEADS, batch_first=batch_first, dtype=torch.float64, **options
        ),
    )
    kdim, vdim = options.get("kdim", E), options.get("vdim", E)
    source_len = L if sharing == "self" else S
    seq = (lambda t, f: (N, t, f)) if batch_first else (lambda t, f: (t, N, f))
    arrays = _inputs(seq(L, E), seq(source_len, kdim), seq(source_len, vdim))
    positions = {"self": (0, 0, 0), "key_is_value": (0, 1, 1), "distinct": (0, 1, 2)}[sharing]
    attn, padding = _masks(masks, N, L, source_len)
    results = []
    for module, library in ((ours, mt), (theirs, torch)):
        leaves = _leaves(arrays[: positions[-1] + 1], library)
        q, k, v = (leaves[i] for i in positions)
        convert = _torch_mask if library is torch else (lambda m: m)
        out, weights = module(
            q, k, v, convert(padding), need_weights, convert(attn), average_attn_weights=average
        )
        results.append((leaves, out, weights))
    (our_leaves, out, weights), (their_leaves, expected, expected_weights) = results
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = _inputs(out.shape, seed=2)[0]
    loss, their_loss = (out * upstream).sum(), (expected * torch.tensor(upstream)).sum()
    if need_weights:
        np.testing.assert_allclose(
            weights.array, expected_weights.detach().numpy(), rtol=1e-10, atol=1e-12
        )
        weight_upstream = _inputs(weights.shape, seed=3)[0]
        loss = loss + (weights * weight_upstream).sum()
        their_loss = their_loss + (expected_weights * torch.tensor(weight_upstream)).sum()
    else:
        assert weights is None and expected_weights is None
    loss.backward()
    their_loss.backward()
    _check_gradients(ours, theirs, our_leaves, their_leaves)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("masks", ["none", "attn_bool", "attn_float3d+padding_float"])
def test_multihead_attention_takes_unbatched_input_as_torch(need_weights, masks):
    ours, theirs = _loaded(
        nn.MultiheadAttention(E, HEADS, dtype=np.float64, batch_first=True),
        torch.nn.MultiheadAttention(E, HEADS, dtype=torch.float64, batch_first=True),
    )
    query, key = _inputs((L, E), (S, E))
    attn, padding = _masks(masks, None, L, S)
    out, weights = ours(
        mt.tensor(query), mt.tensor(key), mt.tensor(key), padding, need_weights, attn
    )
    expected, expected_weights = theirs(
        torch.tensor(query), torch.tensor(key), torch.tensor(key), _torch_mask(padding),
        need_weights, _torch_mask(attn),
    )  # fmt: skip
    assert out.shape == (L, E)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10)
    if need_weights:
        assert weights.shape == (L, S)
        np.testing.assert_allclose(weights.array, expected_weights.detach().numpy(), rtol=1e-10)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize("mask_dtype", ["bool", "float"])
def test_multihead_attention_is_causal_with_its_mask_matches_torch(
    need_weights, padding, mask_dtype
):
    """is_causal with the causal mask: torch's SDPA kernel path (no padding, no weights) and its
    mask path alike."""
    ours, theirs = _loaded(
        nn.MultiheadAttention(E, HEADS, dtype=np.float64),
        torch.nn.MultiheadAttention(E, HEADS, dtype=torch.float64),
    )
    (x,) = _inputs((L, N, E))
    upper = np.triu(np.ones((L, L), bool), 1)
    mask = upper if mask_dtype == "bool" else np.where(upper, -np.inf, 0.0)
    key_padding = np.zeros((N, L), mask.dtype)
    if padding:
        key_padding[1, -1] = True if mask_dtype == "bool" else -1.5
    key_padding = key_padding if padding else None
    ours_x, theirs_x = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, _ = ours(ours_x, ours_x, ours_x, key_padding, need_weights, mask, is_causal=True)
    expected, _ = theirs(
        theirs_x, theirs_x, theirs_x, _torch_mask(key_padding), need_weights, torch.tensor(mask),
        is_causal=True,
    )  # fmt: skip
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    out.sum().backward()
    expected.sum().backward()
    _check_gradients(ours, theirs, [ours_x], [theirs_x])


@pytest.mark.parametrize("need_weights", [True, False])
def test_is_causal_without_a_mask_is_the_causal_mask(need_weights):
    """PyTorch refuses is_causal without attn_mask; minitrain takes it as the causal mask."""
    ours, theirs = _loaded(
        nn.MultiheadAttention(E, HEADS, dtype=np.float64, add_bias_kv=True),
        torch.nn.MultiheadAttention(E, HEADS, dtype=torch.float64, add_bias_kv=True),
    )
    (x,) = _inputs((L, N, E))
    out, _ = ours(
        mt.tensor(x), mt.tensor(x), mt.tensor(x), need_weights=need_weights, is_causal=True
    )
    causal = torch.triu(torch.ones(L, L + 1, dtype=torch.bool), 1)  # bias_kv's key included
    with torch.no_grad():
        t = torch.tensor(x)
        q, k, v = TF.linear(t, theirs.in_proj_weight, theirs.in_proj_bias).chunk(3, -1)
        k = torch.cat([k, theirs.bias_k.expand(1, N, E)])
        v = torch.cat([v, theirs.bias_v.expand(1, N, E)])
        heads = [x.reshape(x.shape[0], N, HEADS, E // HEADS).permute(1, 2, 0, 3) for x in (q, k, v)]
        attended = TF.scaled_dot_product_attention(*heads, attn_mask=~causal)
        expected = theirs.out_proj(attended.permute(2, 0, 1, 3).reshape(L, N, E))
    np.testing.assert_allclose(out.array, expected.numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        theirs(t, t, t, need_weights=need_weights, is_causal=True)


def test_multihead_attention_parameters_are_torchs():
    for options in ({}, {"bias": False}, {"add_bias_kv": True}, {"kdim": 3, "vdim": 5}):
        ours = nn.MultiheadAttention(E, HEADS, **options)
        theirs = torch.nn.MultiheadAttention(E, HEADS, **options)
        assert [(k, tuple(v.shape)) for k, v in ours.state_dict().items()] == [
            (k, tuple(v.shape)) for k, v in theirs.state_dict().items()
        ]
        assert {p.dtype for p in ours.parameters()} == {np.dtype(np.float32)}
    layer = nn.MultiheadAttention(E, HEADS, dtype=np.float64, device="cpu")
    assert {p.dtype for p in layer.parameters()} == {np.dtype(np.float64)}
    assert isinstance(layer.out_proj, nn.Linear)
    assert (layer.embed_dim, layer.num_heads, layer.head_dim, layer.kdim, layer.vdim) == (
        E, HEADS, E // HEADS, E, E,
    )  # fmt: skip
    # PyTorch's initialisation: the biases start at 0, the projection Xavier-uniform
    np.testing.assert_array_equal(layer.in_proj_bias.array, 0)
    np.testing.assert_array_equal(layer.out_proj.bias.array, 0)
    assert np.abs(layer.in_proj_weight.array).max() <= np.sqrt(6 / (E + 3 * E))


# The transformer layers
# the activation argument each way the layers take it, as (minitrain's, torch's); made when a
# test asks, so that the table loads without PyTorch
ACTIVATIONS = {
    "relu": lambda: ("relu", "relu"),
    "gelu": lambda: ("gelu", "gelu"),
    "callable": lambda: (F.silu, TF.silu),
    "module": lambda: (nn.GELU("tanh"), torch.nn.GELU("tanh")),
}


def _layer_pair(kind: str, activation="relu", **options):
    ours_activation, their_activation = ACTIVATIONS[activation]()
    ours_class, their_class = getattr(nn, kind), getattr(torch.nn, kind)
    return _loaded(
        ours_class(E, HEADS, 16, 0.0, ours_activation, dtype=np.float64, **options),
        their_class(E, HEADS, 16, 0.0, their_activation, dtype=torch.float64, **options),
    )


def _run_both(ours, theirs, arrays, call, train: bool):
    """call(module, tensors, library) on both with float64 leaves; compares the values, then
    every input's and parameter's gradient for one random upstream gradient."""
    ours.train(train)
    theirs.train(train)
    our_leaves, their_leaves = _leaves(arrays, mt), _leaves(arrays, torch)
    out, expected = call(ours, our_leaves, mt), call(theirs, their_leaves, torch)
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-10, atol=1e-11)
    upstream = _inputs(out.shape, seed=5)[0]
    out.backward(upstream)
    expected.backward(torch.tensor(upstream))
    _check_gradients(ours, theirs, our_leaves, their_leaves)


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("masks", ["none", "causal", "attn_bool+padding_bool", "padding_float"])
def test_encoder_layer_matches_torch(train, batch_first, norm_first, activation, masks):
    ours, theirs = _layer_pair(
        "TransformerEncoderLayer", activation, batch_first=batch_first, norm_first=norm_first
    )
    (src,) = _inputs((N, L, E) if batch_first else (L, N, E))
    attn, padding = _masks(masks, N, L, L)
    causal = masks == "causal"
    if causal:
        attn = np.where(np.triu(np.ones((L, L), bool), 1), -np.inf, 0.0)

    def call(module, tensors, library):
        convert = _torch_mask if library is torch else (lambda m: m)
        return module(tensors[0], convert(attn), convert(padding), is_causal=causal)

    _run_both(ours, theirs, [src], call, train)


@pytest.mark.parametrize("bias", [True, False])
def test_encoder_layer_without_bias_and_unbatched_matches_torch(bias):
    ours, theirs = _layer_pair("TransformerEncoderLayer", "gelu", bias=bias, layer_norm_eps=1e-3)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    (src,) = _inputs((L, E))
    _run_both(ours, theirs, [src], lambda module, t, library: module(t[0]), True)


@pytest.mark.parametrize("kind", ["TransformerEncoderLayer", "TransformerDecoderLayer"])
def test_layers_hold_torchs_modules_in_torchs_order(kind):
    ours = getattr(nn, kind)(E, HEADS, 16, activation=nn.GELU())
    theirs = getattr(torch.nn, kind)(E, HEADS, 16, activation=torch.nn.GELU())
    assert [name for name, _ in ours.named_modules()] == [
        name for name, _ in theirs.named_modules()
    ]


@pytest.mark.parametrize("train", [True, False])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "callable", "module"])
@pytest.mark.parametrize("masks", ["none", "causal", "all"])
def test_decoder_layer_matches_torch(train, batch_first, norm_first, activation, masks):
    ours, theirs = _layer_pair(
        "TransformerDecoderLayer", activation, batch_first=batch_first, norm_first=norm_first
    )
    seq = (lambda t: (N, t, E)) if batch_first else (lambda t: (t, N, E))
    arrays = _inputs(seq(L), seq(S))
    tgt_mask = tgt_padding = memory_mask = memory_padding = None
    if masks != "none":
        tgt_mask = np.where(np.triu(np.ones((L, L), bool), 1), -np.inf, 0.0)
    if masks == "all":
        _, tgt_padding = _masks("padding_float", N, L, L)
        memory_mask, memory_padding = _masks("attn_bool+padding_bool", N, L, S)

    def call(module, tensors, library):
        convert = _torch_mask if library is torch else (lambda m: m)
        return module(
            *tensors, convert(tgt_mask), convert(memory_mask), convert(tgt_padding),
            convert(memory_padding), tgt_is_causal=masks == "causal",
        )  # fmt: skip

    _run_both(ours, theirs, arrays, call, train)


@pytest.mark.parametrize("is_causal", [None, True, False])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_stack_matches_torch(is_causal, batch_first):
    ours_layer, theirs_layer = _layer_pair("TransformerEncoderLayer", batch_first=batch_first)
    ours = nn.TransformerEncoder(ours_layer, 2, nn.LayerNorm(E, dtype=np.float64))
    theirs = torch.nn.TransformerEncoder(
        theirs_layer, 2, torch.nn.LayerNorm(E, dtype=torch.float64), enable_nested_tensor=False
    )
    ours, theirs = _loaded(ours, theirs, seed=3)  # each layer its own values
    assert list(ours.state_dict()) == list(theirs.state_dict())
    (src,) = _inputs((N, L, E) if batch_first else (L, N, E))
    mask = np.triu(np.ones((L, L), bool), 1)  # the causal mask, boolean
    _, padding = _masks("padding_bool", N, L, L)

    def call(module, tensors, library):
        convert = _torch_mask if library is torch else (lambda m: m)
        return module(tensors[0], convert(mask), convert(padding), is_causal)

    _run_both(ours, theirs, [src], call, True)


@pytest.mark.parametrize("tgt_is_causal", [None, True])
def test_decoder_stack_matches_torch(tgt_is_causal):
    ours_layer, theirs_layer = _layer_pair("TransformerDecoderLayer", "gelu", norm_first=True)
    ours = nn.TransformerDecoder(ours_layer, 2, nn.LayerNorm(E, dtype=np.float64))
    theirs = torch.nn.TransformerDecoder(
        theirs_layer, 2, torch.nn.LayerNorm(E, dtype=torch.float64)
    )
    ours, theirs = _loaded(ours, theirs, seed=4)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    arrays = _inputs((L, N, E), (S, N, E))
    tgt_mask = np.where(np.triu(np.ones((L, L), bool), 1), -np.inf, 0.0)
    _, memory_padding = _masks("padding_bool", N, L, S)

    def call(module, tensors, library):
        convert = _torch_mask if library is torch else (lambda m: m)
        return module(
            *tensors, convert(tgt_mask), memory_key_padding_mask=convert(memory_padding),
            tgt_is_causal=tgt_is_causal,
        )  # fmt: skip

    _run_both(ours, theirs, arrays, call, False)


def test_encoder_in_inference_matches_torchs_fast_paths_where_they_compute():
    """Under no_grad in eval mode PyTorch takes its fused paths; with a padding mask its nested
    tensors write zeros at the padded positions, which minitrain computes as any other."""
    ours_layer, theirs_layer = _layer_pair("TransformerEncoderLayer", batch_first=True)
    ours = nn.TransformerEncoder(ours_layer, 2, enable_nested_tensor=True).eval()
    theirs = torch.nn.TransformerEncoder(theirs_layer, 2, enable_nested_tensor=True).eval()
    ours, theirs = _loaded(ours, theirs, seed=5)
    (src,) = _inputs((N, L, E))
    _, padding = _masks("padding_bool", N, L, L)
    with mt.no_grad():
        out = ours(mt.tensor(src), src_key_padding_mask=padding)
        unpadded = ours(mt.tensor(src))
    with torch.no_grad():
        expected = theirs(torch.tensor(src), src_key_padding_mask=torch.tensor(padding))
        expected_unpadded = theirs(torch.tensor(src))
    kept = ~padding
    np.testing.assert_allclose(out.array[kept], expected.numpy()[kept], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(expected.numpy()[padding], 0.0)
    np.testing.assert_allclose(unpadded.array, expected_unpadded.numpy(), rtol=1e-10, atol=1e-12)


def test_stack_layers_are_independent_copies():
    layer = nn.TransformerEncoderLayer(E, HEADS, 16)
    stack = nn.TransformerEncoder(layer, 3)
    assert len(stack.layers) == 3 and stack.num_layers == 3
    first, second = stack.layers[0].linear1.weight, stack.layers[1].linear1.weight
    np.testing.assert_array_equal(first.array, layer.linear1.weight.array)
    assert first is not second and first.array is not second.array
    first.array[...] = 0
    assert np.abs(second.array).max() > 0 and np.abs(layer.linear1.weight.array).max() > 0


def test_layers_run_on_a_device_as_on_the_cpu(cuda_device):
    """The masks the layers build (boolean as additive, is_causal read from tgt_mask, key
    padding) live on the inputs' device."""
    layer = nn.TransformerDecoderLayer(E, HEADS, 16, 0.0, dtype=np.float64, norm_first=True)
    tgt, memory = _inputs((L, N, E), (S, N, E))
    causal = np.triu(np.ones((L, L), bool), 1)
    _, memory_padding = _masks("padding_bool", N, L, S)
    results = []
    for device in ("cpu", "cuda"):
        stack = nn.TransformerDecoder(layer, 2).to(device)
        leaves = [mt.tensor(a, requires_grad=True, device=device) for a in (tgt, memory)]
        out = stack(
            *leaves,
            tgt_mask=mt.tensor(causal, device=device),
            memory_key_padding_mask=mt.tensor(memory_padding, device=device),
        )
        out.backward(mt.tensor(np.ones(out.shape), device=device))
        results.append([out.cpu().array] + [t.grad.cpu().array for t in leaves])
    for on_device, on_cpu in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(on_device, on_cpu, rtol=1e-12, atol=1e-13)


def test_float32_layers_keep_float32_and_match_torch():
    ours, theirs = _layer_pair("TransformerDecoderLayer", batch_first=True)
    ours, theirs = ours.float(), theirs.float()
    tgt, memory = (a.astype(np.float32) for a in _inputs((N, L, E), (N, S, E)))
    causal = np.triu(np.ones((L, L), bool), 1)
    out = ours(mt.tensor(tgt), mt.tensor(memory), causal, tgt_is_causal=True)
    expected = theirs(
        torch.tensor(tgt), torch.tensor(memory), torch.tensor(causal), tgt_is_causal=True
    )
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_attention_dropout_applies_in_training_only():
    attention = nn.MultiheadAttention(E, HEADS, dropout=0.5, dtype=np.float64)
    (x,) = _inputs((L, N, E))
    query = mt.tensor(x)
    mt.manual_seed(0)
    _, weights = attention(query, query, query, average_attn_weights=False)
    dropped = weights.array == 0
    assert dropped.any() and (weights.array[~dropped] > 0).all()  # the survivors scaled by 2
    first, _ = attention(query, query, query, need_weights=False)
    second, _ = attention(query, query, query, need_weights=False)
    assert np.abs(first.array - second.array).max() > 1e-3
    attention.eval()
    _, weights = attention(query, query, query, average_attn_weights=False)
    np.testing.assert_allclose(weights.array.sum(-1), 1.0, rtol=1e-12)
    first, _ = attention(query, query, query, need_weights=False)
    second, _ = attention(query, query, query, need_weights=False)
    np.testing.assert_array_equal(first.array, second.array)


def test_second_derivatives_through_an_encoder_layer_match_torch():
    """create_graph through the attention op and the layer (torch's math kernel: its fused CPU
    kernel has no double backward)."""
    attention = torch.nn.attention
    ours, theirs = _layer_pair("TransformerEncoderLayer", norm_first=True)
    (x,) = _inputs((L, N, E))
    causal = np.triu(np.ones((L, L), bool), 1)
    ours_x = mt.tensor(x, requires_grad=True)
    (grad,) = mt.grad(
        (ours(ours_x, causal, is_causal=True) ** 2).sum(), [ours_x], create_graph=True
    )
    (second,) = mt.grad((grad**2).sum(), [ours_x])
    theirs_x = torch.tensor(x, requires_grad=True)
    with attention.sdpa_kernel(attention.SDPBackend.MATH):
        out = theirs(theirs_x, torch.tensor(causal), is_causal=True)
        (grad,) = torch.autograd.grad((out**2).sum(), [theirs_x], create_graph=True)
        (expected,) = torch.autograd.grad((grad**2).sum(), [theirs_x])
    np.testing.assert_allclose(second.array, expected.numpy(), rtol=1e-9, atol=1e-10)


# Gradients against finite differences
def test_encoder_layer_gradients_match_finite_differences():
    layer = nn.TransformerEncoderLayer(4, 2, 6, 0.0, "gelu", dtype=np.float64, norm_first=True)
    _loaded(layer, torch.nn.TransformerEncoderLayer(4, 2, 6, 0.0, "gelu", dtype=torch.float64,
                                                    norm_first=True))  # fmt: skip
    src, mask = _inputs((3, 2, 4), (3, 3))
    assert mt.gradcheck(
        lambda x, m: layer(x, m),
        [mt.tensor(src, requires_grad=True), mt.tensor(mask, requires_grad=True)],
    )
    # the parameters, along random directions: d/de loss(params + e * direction)
    rng = np.random.default_rng(0)
    upstream = rng.standard_normal((3, 2, 4))
    x = mt.tensor(src)

    def loss() -> float:
        with mt.no_grad():
            return float((layer(x) * upstream).sum().array)

    layer.zero_grad()
    (layer(x) * upstream).sum().backward()
    for _ in range(3):
        directions = [rng.standard_normal(p.shape) for p in layer.parameters()]
        analytic = sum(
            (p.grad.array * d).sum() for p, d in zip(layer.parameters(), directions, strict=True)
        )
        values = []
        for sign in (1, -1):
            for p, d in zip(layer.parameters(), directions, strict=True):
                p.array += sign * 1e-6 * d
            values.append(loss())
            for p, d in zip(layer.parameters(), directions, strict=True):
                p.array -= sign * 1e-6 * d
        np.testing.assert_allclose(analytic, (values[0] - values[1]) / 2e-6, rtol=1e-6)


def test_decoder_layer_and_attention_weights_pass_gradcheck():
    layer = nn.TransformerDecoderLayer(4, 2, 6, 0.0, dtype=np.float64)
    _loaded(layer, torch.nn.TransformerDecoderLayer(4, 2, 6, 0.0, dtype=torch.float64))
    tgt, memory = _inputs((3, 2, 4), (2, 2, 4))
    causal = np.triu(np.ones((3, 3), bool), 1)
    assert mt.gradcheck(
        lambda t, m: layer(t, m, causal, tgt_is_causal=True),
        [mt.tensor(tgt, requires_grad=True), mt.tensor(memory, requires_grad=True)],
    )
    attention = layer.multihead_attn
    assert mt.gradcheck(
        lambda q, k: attention(q, k, k, average_attn_weights=False),
        [mt.tensor(tgt, requires_grad=True), mt.tensor(memory, requires_grad=True)],
    )


# Signatures and errors
@pytest.mark.parametrize(
    "name",
    ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
     "TransformerDecoderLayer", "TransformerDecoder"],
)  # fmt: skip
def test_forward_takes_torchs_arguments(name):
    def described(cls):
        parameters = inspect.signature(cls.forward).parameters.values()
        return [(p.name, p.kind, p.default) for p in parameters]

    assert described(getattr(nn, name)) == described(getattr(torch.nn, name))


def test_activation_takes_a_name_or_a_callable():
    assert nn.TransformerEncoderLayer(E, HEADS).activation is F.relu
    assert nn.TransformerDecoderLayer(E, HEADS, activation="gelu").activation is F.gelu
    module = nn.TransformerEncoderLayer(E, HEADS, activation=nn.SiLU())
    assert "activation" in dict(module.named_children())
    with pytest.raises(ArgumentError, match="TransformerEncoderLayer: activation must be 'relu', "
                                            "'gelu' or a callable, got 'tanh'"):  # fmt: skip
        nn.TransformerEncoderLayer(E, HEADS, activation="tanh")
    with pytest.raises(DTypeError, match="TransformerDecoderLayer: activation .* got int"):
        nn.TransformerDecoderLayer(E, HEADS, activation=3)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: nn.MultiheadAttention(10, 3), ArgumentError,
         r"MultiheadAttention: embed_dim \(10\) must be divisible by num_heads \(3\)"),
        (lambda: nn.MultiheadAttention(8, 0), ArgumentError, "num_heads must be positive"),
        (lambda: nn.MultiheadAttention(8, 2.0), DTypeError, "num_heads must be an int"),
        (lambda: nn.MultiheadAttention(8, 2, dropout=1.5), ArgumentError,
         r"MultiheadAttention: dropout must be a probability in \[0, 1\], got 1.5"),
        (lambda: nn.MultiheadAttention(8, 2, kdim=0), ArgumentError, "kdim must be positive"),
        (lambda: nn.MultiheadAttention(8, 2, vdim=3.0), DTypeError, "vdim must be an int, got 3.0"),
        (lambda: nn.MultiheadAttention(8, 2, dtype=np.int32), DTypeError,
         "MultiheadAttention: dtype must be a floating"),
        (lambda: nn.TransformerEncoderLayer(10, 4), ArgumentError,
         r"TransformerEncoderLayer: d_model \(10\) must be divisible by nhead \(4\)"),
        (lambda: nn.TransformerDecoderLayer(8, 3), ArgumentError,
         r"TransformerDecoderLayer: d_model \(8\) must be divisible by nhead \(3\)"),
        (lambda: nn.TransformerEncoderLayer(8, 2, dtype=np.int64), DTypeError,
         "TransformerEncoderLayer: dtype must be a floating"),
        (lambda: nn.TransformerEncoderLayer(8, 2, dropout=1.5), ArgumentError,
         r"TransformerEncoderLayer: dropout must be a probability in \[0, 1\], got 1.5"),
        (lambda: nn.TransformerDecoderLayer(8, 2, dropout=-0.1), ArgumentError,
         "TransformerDecoderLayer: dropout must be a probability"),
        (lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=2.5), DTypeError,
         "TransformerEncoderLayer: dim_feedforward must be an int, got 2.5"),
        (lambda: nn.TransformerDecoderLayer(8, 2, dim_feedforward=0), ArgumentError,
         "TransformerDecoderLayer: dim_feedforward must be positive, got 0"),
        (lambda: nn.TransformerEncoderLayer(8, 2, layer_norm_eps="1e-5"), DTypeError,
         "TransformerEncoderLayer: layer_norm_eps must be a number, got str"),
        (lambda: nn.TransformerDecoderLayer(8, 2, layer_norm_eps=-1.0), ArgumentError,
         "TransformerDecoderLayer: layer_norm_eps must be finite and >= 0, got -1.0"),
        (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 0), ArgumentError,
         "TransformerEncoder: num_layers must be positive, got 0"),
        (lambda: nn.TransformerDecoder(nn.Linear(2, 2), 2.5), DTypeError,
         "TransformerDecoder: num_layers must be an int"),
    ],
)  # fmt: skip
def test_constructor_errors_name_the_layer(make, error, message):
    with pytest.raises(error, match=message):
        make()


attention = nn.MultiheadAttention(E, HEADS, kdim=3, vdim=5)
x, keys, values = mt.randn(L, N, E), mt.randn(S, N, 3), mt.randn(S, N, 5)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: attention(mt.randn(L, N, 1, E), keys, values), ShapeError,
         r"MultiheadAttention: query must be \(T, E\) unbatched or \(T, N, E\) batched, got "
         r"shape \(4, 3, 1, 8\)"),
        (lambda: attention(mt.randn(L, N, 6), keys, values), ShapeError,
         r"query has 6 features \(its last dim, shape \(4, 3, 6\)\), the layer was built for "
         r"embed_dim=8"),
        (lambda: attention(x, mt.randn(S, N, 4), values), ShapeError,
         "key has 4 features .* kdim=3"),
        (lambda: attention(x, keys, mt.randn(S, N, 3)), ShapeError,
         "value has 3 features .* vdim=5"),
        (lambda: attention(x, keys[0], values[0]), ShapeError,
         "key and value must have query's rank"),
        (lambda: attention(x, keys, values[:-1]), ShapeError,
         r"key and value must share their sequence and batch dims.* key \(5, 3, 3\), value "
         r"\(4, 3, 5\)"),
        (lambda: attention(x, keys[:, :2], values[:, :2]), ShapeError,
         "the batch size with query"),
        (lambda: attention(x, keys, values, attn_mask=np.zeros((L, L), bool)), ShapeError,
         r"attn_mask must be \(L, S\) = \(4, 5\) or \(N \* num_heads, L, S\) = \(6, 4, 5\), got "
         r"shape \(4, 4\)"),
        (lambda: attention(x, keys, values, attn_mask=np.zeros((L, S), np.int64)), DTypeError,
         "MultiheadAttention: attn_mask must be boolean .* or floating .*, got int64"),
        (lambda: attention(x, keys, values, key_padding_mask=np.zeros((S, N), bool)), ShapeError,
         r"key_padding_mask must be \(N, S\) = \(3, 5\), got shape \(5, 3\)"),
        (lambda: attention(x, keys, values, key_padding_mask=np.zeros((N, S), np.int32)),
         DTypeError, "key_padding_mask must be boolean"),
        (lambda: attention(x[:, 0], keys[:, 0], values[:, 0], np.zeros((N, S), bool)), ShapeError,
         r"key_padding_mask must be \(S,\) = \(5,\), got shape \(3, 5\)"),
        (lambda: attention(x[:, 0], keys[:, 0], values[:, 0], attn_mask=np.zeros((4, L, S))),
         ShapeError, r"\(num_heads, L, S\) = \(2, 4, 5\), got shape \(4, 4, 5\)"),
    ],
)  # fmt: skip
def test_attention_errors_name_the_layer_and_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()


encoder_layer = nn.TransformerEncoderLayer(E, HEADS, 16, batch_first=True)
decoder_layer = nn.TransformerDecoderLayer(E, HEADS, 16)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: encoder_layer(mt.randn(N, L, E, 1)), ShapeError,
         r"TransformerEncoderLayer: src must be \(T, E\) unbatched or \(N, T, E\) batched"),
        (lambda: encoder_layer(mt.randn(N, L, 6)), ShapeError,
         "TransformerEncoderLayer: src has 6 features .* d_model=8"),
        (lambda: encoder_layer(mt.randn(N, L, E), np.zeros((L, L + 1), bool)), ShapeError,
         r"TransformerEncoderLayer: src_mask must be \(L, S\) = \(4, 4\)"),
        (lambda: encoder_layer(mt.randn(N, L, E), src_key_padding_mask=np.ones((N, L), "i8")),
         DTypeError, "TransformerEncoderLayer: src_key_padding_mask must be boolean"),
        (lambda: nn.TransformerEncoder(encoder_layer, 2)(mt.randn(N, L, E), np.zeros((L, 2))),
         ShapeError, "TransformerEncoderLayer: src_mask must be"),
        (lambda: decoder_layer(mt.randn(L, N, E), mt.randn(S, N + 1, E)), ShapeError,
         r"TransformerDecoderLayer: tgt and memory must both be batched, with one batch size.* "
         r"\(4, 3, 8\) and memory \(5, 4, 8\)"),
        (lambda: decoder_layer(mt.randn(L, N, E), mt.randn(S, E)), ShapeError,
         "tgt and memory must both be batched"),
        (lambda: decoder_layer(mt.randn(L, N, E), mt.randn(S, N, 2)), ShapeError,
         "TransformerDecoderLayer: memory has 2 features"),
        (lambda: decoder_layer(mt.randn(L, N, E), mt.randn(S, N, E), memory_mask=np.ones((L, L))),
         ShapeError, r"memory_mask must be \(L, S\) = \(4, 5\)"),
        (lambda: decoder_layer(mt.randn(L, N, E), mt.randn(S, N, E),
                               memory_key_padding_mask=np.ones((N, L), bool)),
         ShapeError, r"memory_key_padding_mask must be \(N, S\) = \(3, 5\), got shape \(3, 4\)"),
        (lambda: decoder_layer(mt.randn(L, N, E), mt.randn(S, N, E), np.ones((L, L), np.int8)),
         DTypeError, "TransformerDecoderLayer: tgt_mask must be boolean"),
    ],
)  # fmt: skip
def test_transformer_errors_name_the_layer_and_shapes(call, error, message):
    with pytest.raises(error, match=message):
        call()
