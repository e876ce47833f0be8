"""nn.utils.rnn (PackedSequence, pack_padded_sequence, pad_packed_sequence, pad_sequence,
unpad_sequence, pack_sequence, unpack_sequence, invert_permutation) and RNN, LSTM and GRU on
packed input: round trips, PyTorch's values, gradients against PyTorch's and finite
differences in float64, each sequence's last state against the layer run on that sequence
alone, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DeviceError, PackingError, ShapeError
from minitrain.nn.utils import rnn

FEATURES, HIDDEN = 3, 4
LENGTHS = [2, 5, 1, 5, 3]  # unsorted, with a tie
LAYERS = ["RNN", "LSTM", "GRU"]
CONFIGS = {
    "one_layer": {},
    "bidirectional": {"bidirectional": True},
    "two_layers_bidirectional": {"num_layers": 2, "bidirectional": True},
}


def _padded(rng, lengths, batch_first=False, trailing=(FEATURES,)):
    """A random padded batch (T, B, *) or (B, T, *) for lengths."""
    steps, batch = max(lengths), len(lengths)
    shape = (batch, steps) if batch_first else (steps, batch)
    return rng.standard_normal(shape + trailing)


def test_the_documented_example_packs_and_pads_back():
    """PyTorch's docstring example: batch_first, unsorted, of integers."""
    seq = mt.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    packed = rnn.pack_padded_sequence(seq, [2, 1, 3], batch_first=True, enforce_sorted=False)
    assert packed.data.tolist() == [4, 1, 3, 5, 2, 6]
    assert packed.batch_sizes.tolist() == [3, 2, 1]
    assert packed.sorted_indices.tolist() == [2, 0, 1]
    assert packed.unsorted_indices.tolist() == [1, 2, 0]
    assert packed.batch_sizes.dtype == np.int64 and packed.batch_sizes.device.type == "cpu"
    padded, lengths = rnn.pad_packed_sequence(packed, batch_first=True)
    assert padded.tolist() == seq.tolist()
    assert lengths.tolist() == [2, 1, 3] and lengths.dtype == np.int64
    data, batch_sizes, sorted_indices, unsorted_indices = packed  # a named tuple
    assert data is packed.data and batch_sizes is packed.batch_sizes
    assert repr(packed).startswith("PackedSequence(data=tensor(")


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pad_packed_sequence_undoes_pack_padded_sequence(batch_first, enforce_sorted):
    rng = np.random.default_rng(0)
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    x = _padded(rng, lengths, batch_first)
    packed = rnn.pack_padded_sequence(mt.tensor(x), lengths, batch_first, enforce_sorted)
    assert packed.data.shape == (sum(lengths), FEATURES)
    padded, back = rnn.pad_packed_sequence(packed, batch_first, padding_value=-7.0, total_length=6)
    expected = np.full((len(lengths), 6, FEATURES), -7.0)
    for b, n in enumerate(lengths):
        expected[b, :n] = x[b, :n] if batch_first else x[:n, b]
    np.testing.assert_array_equal(
        padded.array, expected if batch_first else expected.swapaxes(0, 1)
    )
    assert back.tolist() == lengths


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_packing_and_padding_match_torch(torch, batch_first, enforce_sorted):
    rng = np.random.default_rng(1)
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    x = _padded(rng, lengths, batch_first, trailing=(2, 3))
    ours = rnn.pack_padded_sequence(mt.tensor(x), lengths, batch_first, enforce_sorted)
    theirs = torch.nn.utils.rnn.pack_padded_sequence(
        torch.tensor(x), torch.tensor(lengths), batch_first, enforce_sorted
    )
    for mine, their in zip(ours, theirs, strict=True):
        if their is None:
            assert mine is None
        else:
            np.testing.assert_array_equal(mine.array, their.numpy())
    for total_length in (None, 7):
        padded, lengths_back = rnn.pad_packed_sequence(ours, batch_first, 0.5, total_length)
        want, want_lengths = torch.nn.utils.rnn.pad_packed_sequence(
            theirs, batch_first, 0.5, total_length
        )
        np.testing.assert_array_equal(padded.array, want.numpy())
        np.testing.assert_array_equal(lengths_back.array, want_lengths.numpy())


@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_matches_torch(torch, batch_first, padding_side):
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((n, 2)) for n in (3, 0, 4, 1)]
    ours = rnn.pad_sequence([mt.tensor(a) for a in arrays], batch_first, 9.0, padding_side)
    theirs = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(a) for a in arrays], batch_first, 9.0, padding_side
    )
    np.testing.assert_array_equal(ours.array, theirs.numpy())
    # the first sequence's dtype wins; a Tensor is its sequences along dim 0
    mixed = [mt.tensor(np.ones(2, np.float32)), mt.tensor(np.arange(3))]
    want = torch.nn.utils.rnn.pad_sequence([torch.ones(2), torch.arange(3)], padding_value=1.5)
    got = rnn.pad_sequence(mixed, padding_value=1.5)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.array, want.numpy())
    stacked = rng.standard_normal((3, 2, 2))
    want = torch.nn.utils.rnn.pad_sequence(torch.tensor(stacked))
    np.testing.assert_array_equal(rnn.pad_sequence(mt.tensor(stacked)).array, want.numpy())


def test_pad_sequence_pads_on_the_side_asked():
    sequences = [mt.tensor([1.0, 2.0]), mt.tensor([3.0]), mt.tensor([4.0, 5.0, 6.0])]
    right = rnn.pad_sequence(sequences, batch_first=True)
    assert right.tolist() == [[1, 2, 0], [3, 0, 0], [4, 5, 6]]
    left = rnn.pad_sequence(sequences, padding_value=-1.0, padding_side="left")
    assert left.tolist() == [[-1, -1, 4], [1, -1, 5], [2, 3, 6]]


def test_pack_sequence_and_unpack_sequence_round_trip(torch):
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal((n, FEATURES)) for n in LENGTHS]
    packed = rnn.pack_sequence([mt.tensor(a) for a in arrays], enforce_sorted=False)
    theirs = torch.nn.utils.rnn.pack_sequence(
        [torch.tensor(a) for a in arrays], enforce_sorted=False
    )
    np.testing.assert_array_equal(packed.data.array, theirs.data.numpy())
    for back, original in zip(rnn.unpack_sequence(packed), arrays, strict=True):
        np.testing.assert_array_equal(back.array, original)
    padded = rnn.pad_sequence([mt.tensor(a) for a in arrays])
    for back, original in zip(rnn.unpad_sequence(padded, LENGTHS), arrays, strict=True):
        np.testing.assert_array_equal(back.array, original)
    assert padded.shape == (5, 5, FEATURES)  # left as it was, where PyTorch transposes it


def test_invert_permutation_and_the_casts_of_a_packed_sequence():
    assert rnn.invert_permutation(mt.tensor([2, 0, 3, 1])).tolist() == [1, 3, 0, 2]
    assert rnn.invert_permutation(None) is None
    packed = rnn.pack_sequence([mt.ones(3, 2), mt.ones(1, 2), mt.ones(2, 2)], False)
    assert packed.float() is packed  # nothing to change: itself, as in PyTorch
    doubled = packed.double()
    assert doubled.data.dtype == np.float64 and doubled.batch_sizes is packed.batch_sizes
    assert doubled.sorted_indices.tolist() == [0, 2, 1]
    assert not packed.is_cuda and packed.to("cpu") is packed
    built = rnn.PackedSequence(packed.data, packed.batch_sizes, packed.sorted_indices)
    assert built.unsorted_indices.tolist() == [0, 2, 1]
    assert rnn.PackedSequence((packed.data, packed.batch_sizes)).sorted_indices is None


def _check_gradients(fn, inputs):
    assert mt.gradcheck(fn, inputs, mode="full")


def test_gradients_flow_through_packing_and_padding_in_float64():
    rng = np.random.default_rng(4)
    x = mt.tensor(_padded(rng, LENGTHS, batch_first=True), requires_grad=True)

    def round_trip(x):
        packed = rnn.pack_padded_sequence(x, LENGTHS, batch_first=True, enforce_sorted=False)
        return rnn.pad_packed_sequence(packed, padding_value=2.0, total_length=6)[0]

    _check_gradients(round_trip, [x])
    parts = [mt.tensor(rng.standard_normal((n, 2)), requires_grad=True) for n in (2, 4, 1)]
    _check_gradients(lambda *s: rnn.pad_sequence(s, padding_side="left"), parts)
    _check_gradients(lambda *s: mt.cat(rnn.unpack_sequence(rnn.pack_sequence(s, False))), parts)
    padded = rnn.pack_padded_sequence(x, LENGTHS, True, False).data
    padded.sum().backward()  # the padding past each length gets no gradient
    mask = np.arange(5)[None, :] < np.array(LENGTHS)[:, None]
    np.testing.assert_array_equal(x.grad.array, np.broadcast_to(mask[..., None], x.shape))


def test_the_errors_are_pytorchs():
    x = mt.zeros(4, 3, 2)
    with pytest.raises(
        RuntimeError, match=r"^pack_padded_sequence: `lengths` array must be sorted"
    ):
        rnn.pack_padded_sequence(x, [3, 4, 2])
    with pytest.raises(PackingError, match=r"greater than 0, got \[4, 3, 0\]"):
        rnn.pack_padded_sequence(x, [4, 0, 3], enforce_sorted=False)
    with pytest.raises(PackingError, match=r"len\(lengths\) .* but got 2 \(batch_size=3"):
        rnn.pack_padded_sequence(x, [4, 3])
    with pytest.raises(PackingError, match=r"'lengths' must be a 1-D .* shape \(1, 3\)"):
        rnn.pack_padded_sequence(x, [[4, 3, 2]])
    with pytest.raises(ShapeError, match=r"length 5 does not fit in input \(4, 3, 2\)"):
        rnn.pack_padded_sequence(x, [5, 3, 2])
    with pytest.raises(IndexError, match=r"a time and a batch dim, got shape \(4,\)"):
        rnn.pack_padded_sequence(mt.zeros(4), [4])
    packed = rnn.pack_padded_sequence(x, [4, 3, 2])
    with pytest.raises(ValueError, match=r"total_length=3 and max sequence length being 4"):
        rnn.pad_packed_sequence(packed, total_length=3)
    with pytest.raises(ArgumentError, match=r"padding_side to be one of left or right"):
        rnn.pad_sequence([x], padding_side="up")
    with pytest.raises(RuntimeError, match=r"^pad_sequence: received an empty list"):
        rnn.pad_sequence([])
    with pytest.raises(ShapeError, match=r"sequence 1 has shape \(3, 4\)"):
        rnn.pad_sequence([mt.ones(2, 3), mt.ones(3, 4)])


def test_lengths_and_batch_sizes_must_be_on_the_cpu(cuda_device):
    x = mt.zeros(4, 3, 2, device=cuda_device)
    with pytest.raises(DeviceError, match=r"'lengths' must be a 1-D CPU int64 tensor"):
        rnn.pack_padded_sequence(x, mt.tensor([4, 3, 2], device=cuda_device))
    packed = rnn.pack_padded_sequence(x, mt.tensor([2, 4, 3]), enforce_sorted=False)
    assert packed.data.device == cuda_device and packed.batch_sizes.device.type == "cpu"
    assert packed.sorted_indices.device == cuda_device
    with pytest.raises(DeviceError, match=r"^PackedSequence: batch_sizes must be on the CPU"):
        rnn.PackedSequence(packed.data, packed.batch_sizes.to(cuda_device))
    back = packed.cpu()
    assert back.data.device.type == "cpu" and back.unsorted_indices.device.type == "cpu"
    padded, lengths = rnn.pad_packed_sequence(packed)
    assert padded.device == cuda_device and lengths.device.type == "cpu"
    pieces = rnn.unpad_sequence(padded, mt.tensor([2, 4, 3], device=cuda_device))
    assert [piece.shape for piece in pieces] == [(2, 2), (4, 2), (3, 2)]


def _pair(torch, name: str, **options):
    """(minitrain's layer, PyTorch's) in float64, minitrain's loaded strictly from PyTorch's."""
    theirs = getattr(torch.nn, name)(FEATURES, HIDDEN, dtype=torch.float64, **options)
    ours = getattr(nn, name)(FEATURES, HIDDEN, dtype=np.float64, **options)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    return ours, theirs


def _last_states(name, final):
    """h_n, or an LSTM's h_n and c_n, as a list."""
    return list(final) if name == "LSTM" else [final]


@pytest.mark.parametrize("given_state", [False, True])
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("name", LAYERS)
def test_layers_on_packed_input_match_torch(torch, name, config, given_state):
    """Output, h_n (and c_n), and the gradients of the input, the initial state and every
    weight, from an unsorted batch packed with enforce_sorted=False."""
    options = CONFIGS[config]
    rng = np.random.default_rng(5)
    ours, theirs = _pair(torch, name, **options)
    x = _padded(rng, LENGTHS)
    count = options.get("num_layers", 1) * (2 if options.get("bidirectional") else 1)
    states = [
        rng.standard_normal((count, len(LENGTHS), HIDDEN)) for _ in range(1 + (name == "LSTM"))
    ]
    our_inputs = [mt.tensor(a, requires_grad=True) for a in (x, *states)]
    their_inputs = [torch.tensor(a, requires_grad=True) for a in (x, *states)]
    results = []
    for lib, utils, layer, inputs in (
        (mt, rnn, ours, our_inputs),
        (torch, torch.nn.utils.rnn, theirs, their_inputs),
    ):
        packed = utils.pack_padded_sequence(inputs[0], LENGTHS, enforce_sorted=False)
        hx = None
        if given_state:
            hx = tuple(inputs[1:]) if name == "LSTM" else inputs[1]
        output, final = layer(packed, hx)
        assert type(output).__name__ == "PackedSequence"
        padded = utils.pad_packed_sequence(output)[0]
        outs = [padded, *_last_states(name, final)]
        upstream = np.random.default_rng(9)  # the same random upstream gradients for both
        loss = sum((o * lib.tensor(upstream.standard_normal(o.shape))).sum() for o in outs)
        loss.backward()
        grads = [t.grad for t in inputs[: 1 + len(states) * given_state]]
        grads += [p.grad for p in layer.parameters()]
        results.append([output.batch_sizes, *outs, *grads])
    for mine, their in zip(*results, strict=True):
        np.testing.assert_allclose(mine.array, their.detach().numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("enforce_sorted", [False, True])
@pytest.mark.parametrize("name", LAYERS)
def test_each_sequence_ends_at_its_own_length(name, enforce_sorted):
    """Packed, each sequence's output and last state are those of the layer run on that
    sequence alone (two layers, bidirectional: the reverse direction starts at the sequence's
    own last element), with its own initial state; batch_first changes nothing."""
    rng = np.random.default_rng(6)
    layer = getattr(nn, name)(FEATURES, HIDDEN, num_layers=2, bidirectional=True, dtype=np.float64)
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    sequences = [mt.tensor(rng.standard_normal((n, FEATURES))) for n in lengths]
    states = [mt.tensor(rng.standard_normal((4, len(lengths), HIDDEN))) for _ in range(2)]
    hx = tuple(states) if name == "LSTM" else states[0]
    packed = rnn.pack_sequence(sequences, enforce_sorted=enforce_sorted)
    output, final = layer(packed, hx)
    layer.batch_first = True
    same_output, same_final = layer(packed, hx)
    np.testing.assert_array_equal(same_output.data.array, output.data.array)
    for ours, again in zip(_last_states(name, final), _last_states(name, same_final), strict=True):
        np.testing.assert_array_equal(again.array, ours.array)
    outputs = rnn.unpack_sequence(output)
    for b, sequence in enumerate(sequences):
        own_hx = tuple(s[:, b] for s in states) if name == "LSTM" else states[0][:, b]
        alone, alone_final = layer(sequence, own_hx)  # unbatched
        np.testing.assert_allclose(outputs[b].array, alone.array, rtol=1e-12, atol=1e-12)
        for packed_state, own_state in zip(
            _last_states(name, final), _last_states(name, alone_final), strict=True
        ):
            np.testing.assert_allclose(packed_state[:, b].array, own_state.array, atol=1e-12)


@pytest.mark.parametrize("name", ["LSTM", "GRU"])
def test_packed_layer_passes_gradcheck_in_float64(name):
    rng = np.random.default_rng(7)
    layer = getattr(nn, name)(2, 2, bidirectional=True, batch_first=True, dtype=np.float64)
    lengths = [1, 3, 2]
    x = mt.tensor(_padded(rng, lengths, batch_first=True, trailing=(2,)), requires_grad=True)
    h = mt.tensor(rng.standard_normal((2, 3, 2)), requires_grad=True)

    def run(x, h):
        packed = rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        output, final = layer(packed, (h, h * 0.5) if name == "LSTM" else h)
        final = final[1] if name == "LSTM" else final
        return mt.cat([output.data.reshape(-1), final.reshape(-1)])

    _check_gradients(run, [x, h])


def test_packed_input_errors_name_the_layer():
    layer = nn.GRU(FEATURES, HIDDEN)
    packed = rnn.pack_sequence([mt.ones(3, FEATURES), mt.ones(2, FEATURES)])
    with pytest.raises(ShapeError, match=r"^GRU: hx \(1, 3, 4\) must have shape \(1, 2, 4\)"):
        layer(packed, mt.zeros(1, 3, HIDDEN))
    wide = rnn.pack_sequence([mt.ones(3, 5), mt.ones(2, 5)])
    with pytest.raises(ShapeError, match=r"^GRU: a packed input's data must be .* \(5, 5\)"):
        layer(wide)


@pytest.mark.parametrize("name", LAYERS)
def test_packed_layers_run_on_a_device_as_on_the_cpu(cuda_device, name):
    rng = np.random.default_rng(8)
    layer = getattr(nn, name)(FEATURES, HIDDEN, num_layers=2, bidirectional=True, dtype=np.float64)
    x = _padded(rng, LENGTHS)
    results = []
    for device in ("cpu", cuda_device):
        layer.to(device)
        inputs = mt.tensor(x, requires_grad=True, device=device)
        packed = rnn.pack_padded_sequence(inputs, LENGTHS, enforce_sorted=False)
        output, final = layer(packed)
        h_n = final[0] if name == "LSTM" else final
        padded = rnn.pad_packed_sequence(output)[0]
        ((padded * padded).sum() + h_n.sum()).backward()
        assert padded.device == mt.device(device) and h_n.device == mt.device(device)
        grads = [inputs.grad, *(p.grad for p in layer.parameters())]
        results.append([t.cpu().array for t in (padded, h_n, *grads)])
        layer.zero_grad()
    for ours, reference in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, reference, rtol=1e-10, atol=1e-12)
