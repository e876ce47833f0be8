"""nn.Transformer, the encoder-decoder, against PyTorch: state dicts with torch's keys loaded
strictly, outputs and every gradient from the same weights in float64 (masks, padding masks,
batch_first, norm_first), generate_square_subsequent_mask, finite differences, errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ShapeError

E, HEADS, FF, S, T, N = 8, 2, 12, 5, 4, 3


def _options(**extra):
    return dict(d_model=E, nhead=HEADS, num_encoder_layers=2, num_decoder_layers=1,
                dim_feedforward=FF, dropout=0.0, **extra)  # fmt: skip


def _loaded(torch, **extra):
    theirs = torch.nn.Transformer(**_options(**extra), dtype=torch.float64)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in theirs.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.4)
    ours = nn.Transformer(**_options(**extra), dtype=np.float64)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()}, strict=True)
    return ours, theirs


def _masks(kind: str):
    rng = np.random.default_rng(3)
    masks = {}
    if "causal" in kind:
        masks["tgt_mask"] = np.triu(np.full((T, T), -np.inf), 1)
    if "bool" in kind:
        memory = rng.random((T, S)) < 0.3
        memory[:, 0] = False
        masks["memory_mask"] = memory
        masks["src_mask"] = np.triu(np.ones((S, S), bool), 1)
    if "padding" in kind:
        padding = np.zeros((N, S), bool)
        padding[0, -2:] = True
        masks["src_key_padding_mask"] = padding
        masks["memory_key_padding_mask"] = padding
        tgt_padding = np.zeros((N, T), bool)
        tgt_padding[1, -1] = True
        masks["tgt_key_padding_mask"] = tgt_padding
    return masks


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "causal", "causal+bool+padding"])
def test_outputs_and_gradients_match_torch(batch_first, norm_first, masks):
    torch = pytest.importorskip("torch")
    ours, theirs = _loaded(torch, batch_first=batch_first, norm_first=norm_first)
    rng = np.random.default_rng(1)
    layout = (lambda length: (N, length, E)) if batch_first else (lambda length: (length, N, E))
    src, tgt = rng.standard_normal(layout(S)), rng.standard_normal(layout(T))
    mask_arrays = _masks(masks)
    src_ours, tgt_ours = mt.tensor(src, requires_grad=True), mt.tensor(tgt, requires_grad=True)
    src_theirs = torch.tensor(src, requires_grad=True)
    tgt_theirs = torch.tensor(tgt, requires_grad=True)
    out_ours = ours(src_ours, tgt_ours, **{k: mt.tensor(v) for k, v in mask_arrays.items()})
    out_theirs = theirs(
        src_theirs, tgt_theirs, **{k: torch.tensor(v) for k, v in mask_arrays.items()}
    )
    np.testing.assert_allclose(out_ours.numpy(), out_theirs.detach().numpy(), atol=1e-10)
    upstream = rng.standard_normal(out_theirs.shape)
    (out_ours * mt.tensor(upstream)).sum().backward()
    (out_theirs * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(src_ours.grad.numpy(), src_theirs.grad.numpy(), atol=1e-9)
    np.testing.assert_allclose(tgt_ours.grad.numpy(), tgt_theirs.grad.numpy(), atol=1e-9)
    ours_parameters = dict(ours.named_parameters())
    for name, parameter in theirs.named_parameters():
        np.testing.assert_allclose(
            ours_parameters[name].grad.numpy(), parameter.grad.numpy(), atol=1e-9, err_msg=name
        )


def test_unbatched_input_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = _loaded(torch)
    rng = np.random.default_rng(2)
    src, tgt = rng.standard_normal((S, E)), rng.standard_normal((T, E))
    np.testing.assert_allclose(
        ours(mt.tensor(src), mt.tensor(tgt)).numpy(),
        theirs(torch.tensor(src), torch.tensor(tgt)).detach().numpy(),
        atol=1e-10,
    )


def test_state_dict_keys_and_repr_are_torchs():
    torch = pytest.importorskip("torch")
    ours = nn.Transformer(**_options(bias=False))
    theirs = torch.nn.Transformer(**_options(bias=False))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for name, tensor in theirs.state_dict().items():
        assert ours.state_dict()[name].shape == tuple(tensor.shape), name
    # torch's attention prints its out_proj's internal class; minitrain's is a Linear
    assert repr(ours) == repr(theirs).replace("NonDynamicallyQuantizableLinear", "Linear")


def test_generate_square_subsequent_mask():
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    expected = np.array([[0, -np.inf, -np.inf], [0, 0, -np.inf], [0, 0, 0]])
    assert np.array_equal(mask.numpy(), expected)
    assert mask.dtype == np.float32
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=mt.float64).dtype == np.float64
    torch = pytest.importorskip("torch")
    assert np.array_equal(
        mask.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(3).numpy()
    )


def test_matrices_are_drawn_by_xavier_uniform_and_vectors_left_as_built():
    model = nn.Transformer(**_options())
    weight = model.encoder.layers[0].linear1.weight.numpy()
    bound = np.sqrt(6.0 / (E + FF))
    assert np.abs(weight).max() <= bound and np.abs(weight).max() > 0.5 * bound
    assert np.array_equal(model.decoder.norm.weight.numpy(), np.ones(E))
    # each layer of a stack has its own parameters
    first, second = model.encoder.layers[0], model.encoder.layers[1]
    assert first.linear1.weight is not second.linear1.weight


def test_gradcheck_in_float64():
    model = nn.Transformer(
        d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=6,
        dropout=0.0, dtype=np.float64,
    )  # fmt: skip
    rng = np.random.default_rng(0)
    src = mt.tensor(rng.standard_normal((3, 1, 4)), requires_grad=True)
    tgt = mt.tensor(rng.standard_normal((2, 1, 4)), requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(2, dtype=mt.float64)
    assert mt.gradcheck(lambda s, t: model(s, t, tgt_mask=mask), [src, tgt])


def test_custom_encoder_and_decoder_are_used():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, HEADS, FF, 0.0), 1)
    model = nn.Transformer(**_options(), custom_encoder=encoder)
    assert model.encoder is encoder
    assert model.d_model == E and model.nhead == HEADS and model.batch_first is False
    assert model(mt.randn(S, N, E), mt.randn(T, N, E)).shape == (T, N, E)


def test_errors():
    model = nn.Transformer(**_options())
    with pytest.raises(ShapeError, match="batch number of src and tgt"):
        model(mt.randn(S, N, E), mt.randn(T, N + 1, E))
    with pytest.raises(ShapeError, match="feature number of src and tgt"):
        model(mt.randn(S, N, E), mt.randn(T, N, E + 1))
    with pytest.raises(ShapeError, match="tgt_mask"):
        model(mt.randn(S, N, E), mt.randn(T, N, E), tgt_mask=mt.zeros(T + 1, T + 1))
