"""Variable-length sequences for the recurrent layers, as torch.nn.utils.rnn: PackedSequence,
pack_padded_sequence and pad_packed_sequence, pad_sequence and unpad_sequence, pack_sequence and
unpack_sequence, invert_permutation.

A PackedSequence holds the sequences' elements time step by time step: `data` (sum of the
lengths, *) has, for each step t, the batch_sizes[t] sequences still running at t, longest
first. Packing and padding are each one getitem of existing ops (a gather of rows), so a
gradient flows back through both to the padded input or the sequences."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ... import creation, ops
from ...errors import (
    ArgumentError,
    DeviceError,
    DimensionError,
    DTypeError,
    PackingError,
    ShapeError,
)
from ...ops.core.op import as_tensor
from ...tensor import Tensor

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
    "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence",
]  # fmt: skip


class _PackedFields(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedFields):
    """Sequences of different lengths packed step by step, PyTorch's named tuple (data,
    batch_sizes, sorted_indices, unsorted_indices), made by pack_padded_sequence or
    pack_sequence and taken by RNN, LSTM and GRU.

    data (sum of lengths, *) is on any device; batch_sizes, the number of sequences still
    running at each step, an int64 tensor on the CPU; sorted_indices (the batch's order
    longest first) and unsorted_indices (its inverse) int64 tensors on data's device, or
    None where the batch came sorted. `PackedSequence(data, batch_sizes, sorted_indices)`
    computes unsorted_indices; `PackedSequence((data, batch_sizes))` takes the pair."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise DTypeError(
                    "PackedSequence: without batch_sizes, data must be the pair (data, "
                    f"batch_sizes), got {type(data).__name__}"
                )
            data, batch_sizes = data
        if not isinstance(batch_sizes, Tensor):
            batch_sizes = Tensor(np.asarray(batch_sizes, np.int64))
        if batch_sizes.device.type != "cpu":
            raise DeviceError(
                f"PackedSequence: batch_sizes must be on the CPU, got {batch_sizes.device}; "
                "make packed sequences with pack_padded_sequence or pack_sequence"
            )
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """data moved and/or cast as Tensor.to does (the indices follow data's device,
        batch_sizes stays on the CPU); self where data does not change, as in PyTorch."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        moved = [None if i is None else i.to(data.device) for i in self[2:]]
        return type(self)(data, self.batch_sizes, *moved)

    def cpu(self) -> PackedSequence:
        """The packed sequence with data on the CPU (self where it is there already)."""
        return self.to("cpu")

    def cuda(self, device=None) -> PackedSequence:
        """The packed sequence with data on a GPU, as Tensor.cuda."""
        data = self.data.cuda(device)
        return self if data is self.data else self.to(data.device)

    def float(self) -> PackedSequence:
        """data as float32."""
        return self.to(np.float32)

    def double(self) -> PackedSequence:
        """data as float64."""
        return self.to(np.float64)

    def half(self) -> PackedSequence:
        """data as float16."""
        return self.to(np.float16)

    def long(self) -> PackedSequence:
        """data as int64."""
        return self.to(np.int64)

    def int(self) -> PackedSequence:
        """data as int32."""
        return self.to(np.int32)

    @property
    def is_cuda(self) -> bool:
        """Whether data is on a GPU."""
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D permutation tensor (out[permutation[i]] = i), on its device; None
    for None."""
    if permutation is None:
        return None
    order = np.asarray(_host(permutation))
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size, dtype=order.dtype)
    return Tensor(inverse).to(permutation.device)


def _host(value):
    """A tensor's values as a numpy array on the host (a GPU's copied), anything else as
    numpy reads it."""
    if isinstance(value, Tensor):
        return value.cpu().array
    return np.asarray(value)


def _lengths(caller: str, lengths, cpu_only: bool = True) -> np.ndarray:
    """The lengths as a 1-D int64 numpy array: a list, or a 1-D tensor (cast to int64, as
    PyTorch's lengths.to(int64)), on the CPU where cpu_only."""
    if isinstance(lengths, Tensor):
        if cpu_only and lengths.device.type != "cpu":
            raise DeviceError(
                f"{caller}: 'lengths' must be a 1-D CPU int64 tensor, got one on "
                f"{lengths.device}; pass lengths.cpu() or a list"
            )
        array = _host(lengths)
    else:
        array = np.asarray(lengths)
    if array.ndim != 1 or not (array.dtype.kind in "iuf" or array.size == 0):
        raise PackingError(
            f"{caller}: 'lengths' must be a 1-D list or tensor of integers, got shape "
            f"{array.shape} of {array.dtype}"
        )
    return array.astype(np.int64)


def pack_padded_sequence(
    input,  # noqa: A002
    lengths,
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Pack a padded batch, input (T, B, *) or (B, T, *) with batch_first, whose sequence b has
    lengths[b] steps. With enforce_sorted the lengths must not increase (PackingError, a
    RuntimeError, as in PyTorch); without, the batch is sorted longest first (ties keep their
    order) and sorted_indices records how. The gradient flows back to input's unpadded steps.

    A length longer than input's T is refused (ShapeError), where PyTorch reads past it."""
    caller = "pack_padded_sequence"
    x = as_tensor(input)
    if x.ndim < 2:
        raise DimensionError(
            f"{caller}: input must have a time and a batch dim, got shape {x.shape}"
        )
    lengths = _lengths(caller, lengths)
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    if lengths.size != batch:
        raise PackingError(
            f"{caller}: expected len(lengths) to be equal to batch_size, but got "
            f"{lengths.size} (batch_size={batch}, input {x.shape})"
        )
    if enforce_sorted:
        order, sorted_indices = np.arange(batch), None
        if np.any(lengths[1:] > lengths[:-1]):
            raise PackingError(
                f"{caller}: `lengths` array must be sorted in decreasing order when "
                f"`enforce_sorted` is True, got {lengths.tolist()}; pass enforce_sorted=False "
                "to sort the batch here"
            )
    else:
        order = np.argsort(-lengths, kind="stable")
        sorted_indices = Tensor(order).to(x.device)
    lengths = lengths[order]
    if lengths.size == 0 or lengths[-1] <= 0:
        raise PackingError(
            f"{caller}: the length of every sequence must be greater than 0, got {lengths.tolist()}"
        )
    if lengths[0] > steps:
        raise ShapeError(
            f"{caller}: a sequence of length {lengths[0]} does not fit in input {x.shape} of "
            f"{steps} time steps"
        )
    batch_sizes = (lengths[None, :] > np.arange(lengths[0])[:, None]).sum(axis=1)
    times, positions = _packed_positions(batch_sizes)
    rows = order[positions]
    data = x[rows, times] if batch_first else x[times, rows]
    return PackedSequence(data, Tensor(batch_sizes), sorted_indices)


def _packed_positions(batch_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of packed data, its time step and its place in the sorted batch."""
    times = np.repeat(np.arange(batch_sizes.size), batch_sizes)
    starts = np.concatenate([[0], np.cumsum(batch_sizes)[:-1]])
    return times, np.arange(times.size) - np.repeat(starts, batch_sizes)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Unpack a PackedSequence into (padded, lengths): padded (T, B, *), or (B, T, *) with
    batch_first, with padding_value past each sequence's end, T the longest length or
    total_length (ArgumentError, a ValueError as PyTorch's, where shorter); lengths an int64
    tensor on the CPU. The batch comes back in the order it was packed from. The gradient
    flows back to sequence.data."""
    caller = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise DTypeError(f"{caller}: expected a PackedSequence, got {type(sequence).__name__}")
    batch_sizes = _host(sequence.batch_sizes).astype(np.int64)
    steps = batch_sizes.size
    if total_length is not None:
        if total_length < steps:
            raise ArgumentError(
                f"{caller}: expected total_length to be at least the length of the longest "
                f"sequence in input, but got total_length={total_length} and max sequence "
                f"length being {steps}"
            )
        steps = int(total_length)
    data = as_tensor(sequence.data)
    batch = int(batch_sizes[0])
    lengths = (batch_sizes[None, :] > np.arange(batch)[:, None]).sum(axis=1)
    # every padded place reads a row of data, or the padding row appended after them
    index = np.full((steps, batch), data.shape[0], np.int64)
    times, positions = _packed_positions(batch_sizes)
    index[times, positions] = np.arange(times.size)
    if sequence.unsorted_indices is not None:
        unsorted = _host(sequence.unsorted_indices)
        index, lengths = index[:, unsorted], lengths[unsorted]
    padded = ops.concat([data, _padding_row(data, padding_value)])
    padded = padded[index.T if batch_first else index]
    return padded, Tensor(lengths)


def _padding_row(like: Tensor, padding_value: float) -> Tensor:
    """One row (1, *) of padding_value, of like's dtype and device, its trailing dims."""
    shape = (1, *like.shape[1:])
    return creation.full(shape, padding_value, dtype=like.dtype, device=like.device)


def pad_sequence(
    sequences,
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Stack tensors of shape (L_i, *) into one (T, B, *), or (B, T, *) with batch_first, T
    the longest L_i, each padded with padding_value on its right (or its left). Every sequence
    is cast to the first one's dtype, as in PyTorch; a Tensor is read as the sequences along
    its first dim. The gradient flows back to every sequence."""
    caller = "pad_sequence"
    if padding_side not in ("left", "right"):
        raise ArgumentError(
            f"{caller}: expected padding_side to be one of left or right, but got {padding_side!r}"
        )
    if not isinstance(sequences, (Tensor, Iterable)):
        raise DTypeError(
            f"{caller}: expected an iterable of sequences, got {type(sequences).__name__}"
        )
    sequences = [as_tensor(s) for s in sequences]
    if not sequences:
        raise PackingError(f"{caller}: received an empty list of sequences")
    first = sequences[0]
    for k, seq in enumerate(sequences):
        if seq.ndim == 0 or seq.shape[1:] != first.shape[1:]:
            raise ShapeError(
                f"{caller}: every sequence must have shape (length, *{first.shape[1:]}) like "
                f"the first, but sequence {k} has shape {seq.shape}"
            )
    lengths = np.array([len(seq) for seq in sequences], np.int64)
    steps, total = int(lengths.max()), int(lengths.sum())
    # every padded place reads a row of the sequences joined end to end, or the padding row
    index = np.full((len(sequences), steps), total, np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for k, (start, length) in enumerate(zip(starts, lengths, strict=True)):
        shift = steps - length if padding_side == "left" else 0
        index[k, shift : shift + length] = np.arange(start, start + length)
    rows = [seq if seq.dtype == first.dtype else seq.to(first.dtype) for seq in sequences]
    padded = ops.concat([*rows, _padding_row(first, padding_value)])
    return padded[index if batch_first else index.T]


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False) -> list[Tensor]:
    """The sequences of a padded batch (T, B, *), or (B, T, *) with batch_first: sequence b is
    its first lengths[b] steps. Where PyTorch transposes padded_sequences in place, this
    leaves it as it is."""
    padded = as_tensor(padded_sequences)
    lengths = _lengths("unpad_sequence", lengths, cpu_only=False)
    if padded.ndim < 2 or padded.shape[0 if batch_first else 1] != lengths.size:
        raise ShapeError(
            f"unpad_sequence: padded_sequences {padded.shape} must have a batch dim of the "
            f"{lengths.size} lengths ({'B, T' if batch_first else 'T, B'}, *)"
        )
    if batch_first:
        return [padded[b, : int(n)] for b, n in enumerate(lengths)]
    return [padded[: int(n), b] for b, n in enumerate(lengths)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of tensors (L_i, *): pad_sequence then pack_padded_sequence. With
    enforce_sorted they must come longest first (PackingError otherwise)."""
    lengths = [len(as_tensor(seq)) for seq in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of tensors a PackedSequence was packed from, in their original order:
    pad_packed_sequence then unpad_sequence."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
