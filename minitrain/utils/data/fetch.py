"""How a DataLoader makes one batch from its indices, the same in the calling process and in a
worker process (torch.utils.data._utils.fetch): a map-style data set indexed sample by sample,
or a TensorDataset cut with one fancy-index per tensor, or an iterable one read on."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ... import backend
from ...tensor import Tensor
from .dataset import Dataset, Subset, TensorDataset

__all__ = ["MapFetcher", "StreamFetcher"]


class MapFetcher:
    """Batches of a map-style data set: `fetch(positions)` collates `dataset[p]` for each
    position (with `batched=False`, `positions` is one index and the sample is returned, through
    `collate_fn` when one was given). `direct=True` (the default collation) cuts a TensorDataset,
    or a Subset of one, with one fancy-index per tensor instead."""

    def __init__(
        self,
        dataset: Dataset,
        collate_fn: Callable[[Any], Any] | None,
        batched: bool,
        direct: bool,
    ) -> None:
        self.dataset = dataset
        self.collate_fn = collate_fn
        self.batched = batched
        self.tensor_rows = _tensor_rows(dataset) if direct and batched else None

    def fetch(self, positions: Any) -> Any:
        # The indices reach the data set as the sampler gave them (keys, tuples, ...), as in
        # PyTorch; only the TensorDataset cut makes an array of them, when they are integers.
        if not self.batched:
            sample = self.dataset[positions]
            return sample if self.collate_fn is None else self.collate_fn(sample)
        if self.tensor_rows is not None:
            integers = np.asarray(positions)
            if integers.ndim == 1 and integers.dtype.kind in "iu":
                tensors, rows = self.tensor_rows
                batch_rows = integers if rows is None else rows[integers]
                return tuple(Tensor(_take(tensor.array, batch_rows)) for tensor in tensors)
        return self.collate_fn([self.dataset[position] for position in positions])


class StreamFetcher:
    """Batches of an iterable data set, read on from one `iter(dataset)`: `fetch(count)` collates
    the next `count` samples (fewer at the end; with `batched=False`, the next sample, through
    `collate_fn` when one was given) and raises StopIteration once the stream is spent, or when
    only a partial batch is left and `drop_last` is set."""

    def __init__(
        self,
        dataset: Dataset,
        collate_fn: Callable[[Any], Any] | None,
        batched: bool,
        drop_last: bool,
    ) -> None:
        self.samples = iter(dataset)
        self.collate_fn = collate_fn
        self.batched = batched
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, count: int | None) -> Any:
        if self.ended:
            raise StopIteration
        if not self.batched:
            sample = next(self.samples)
            return sample if self.collate_fn is None else self.collate_fn(sample)
        batch = []
        for _ in range(count):
            try:
                batch.append(next(self.samples))
            except StopIteration:
                self.ended = True
                break
        if not batch or (self.drop_last and len(batch) < count):
            raise StopIteration
        return self.collate_fn(batch)


def _tensor_rows(dataset: Dataset) -> tuple[tuple[Tensor, ...], np.ndarray | None] | None:
    """The tensors of the TensorDataset under `dataset` and the rows its samples are (None: all,
    in order), when no subclass changes what indexing returns; None otherwise."""
    rows = None
    while _indexes_as(dataset, Subset):
        rows = dataset.indices if rows is None else dataset.indices[rows]
        dataset = dataset.dataset
    if _indexes_as(dataset, TensorDataset):
        return dataset.tensors, rows
    return None


def _indexes_as(dataset: Any, cls: type) -> bool:
    """Whether `dataset` is a `cls` whose indexing no subclass has changed."""
    return isinstance(dataset, cls) and type(dataset).__getitem__ is cls.__getitem__


def _take(array: Any, rows: Sequence[int] | np.ndarray) -> Any:
    xp = backend.array_module(array)
    return array[rows if xp is np else xp.asarray(rows)]
