"""Batching, as torch.utils.data.dataloader: default_collate and DataLoader."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from .dataset import Dataset, IterableDataset, Subset, TensorDataset
from .generators import numpy_generator

__all__ = ["default_collate", "DataLoader"]


def default_collate(samples: Sequence[Any]) -> Any:
    """Batch a list of samples: tuples and lists field by field (a tuple of batches; a namedtuple
    of batches for namedtuples), dicts key by key, and Tensors, arrays and numbers stacked along a
    new first axis into a Tensor. Arrays keep their dtype; Python ints become int64, Python floats
    float32, bools bool. Strings stay a list. A batch is new data, outside any autograd graph."""
    first = samples[0]
    if isinstance(first, (tuple, list)):
        widths = {len(sample) if isinstance(sample, (tuple, list)) else None for sample in samples}
        if len(widths) > 1:
            raise ArgumentError(
                f"default_collate: the samples of a batch differ in their fields: "
                f"{sorted(widths, key=str)} fields"
            )
        fields = [default_collate([sample[i] for sample in samples]) for i in range(len(first))]
        if isinstance(first, tuple) and hasattr(first, "_fields"):  # a namedtuple, as PyTorch
            return type(first)(*fields)
        return tuple(fields)
    if isinstance(first, dict):
        if any(not isinstance(s, dict) or s.keys() != first.keys() for s in samples):
            raise ArgumentError("default_collate: the samples of a batch differ in their keys")
        return {key: default_collate([sample[key] for sample in samples]) for key in first}
    if isinstance(first, str):
        return list(samples)
    return Tensor(_stack(samples))


def _stack(items: Sequence[Any]) -> Any:
    """One array from equally shaped Tensors, arrays or numbers."""
    if all(isinstance(x, (Tensor, np.generic)) or backend.is_array(x) for x in items):
        arrays = [x.array if isinstance(x, Tensor) else x for x in items]
        shapes = sorted({tuple(array.shape) for array in arrays})
        if len(shapes) > 1:
            raise ShapeError(f"default_collate: cannot stack samples of shapes {shapes}")
        return backend.array_module(*arrays).stack(arrays)
    if all(type(x) is bool for x in items):
        return np.array(items, dtype=np.bool_)
    if all(type(x) is int for x in items):
        return np.array(items, dtype=np.int64)
    if all(type(x) in (int, float) for x in items):
        return np.array(items, dtype=np.float32)
    kinds = sorted({type(x).__name__ for x in items})
    raise DTypeError(
        f"default_collate: cannot batch samples of type {', '.join(kinds)}; batch them with a "
        f"collate_fn"
    )


class DataLoader:
    """Iterate over a data set in batches, with PyTorch's arguments.

    Each iteration is one epoch: it yields `len(loader)` batches of `batch_size` samples (the last
    one smaller, or dropped with `drop_last=True`), each made by `collate_fn` (default:
    `default_collate`, which gives a tuple of Tensors for tuple samples). The order comes from
    `sampler` (any iterable of indices with a length: a SequentialSampler, RandomSampler,
    DistributedSampler, ...) or, without one, from `shuffle`: with `shuffle=True` every epoch
    visits the samples in a new permutation, drawn from `generator` (an int seed, a numpy
    Generator, or an object with `numpy_generator()`), from a numpy generator seeded once with
    `seed` (the older spelling), or from minitrain's global generator (`minitrain.manual_seed`)
    when both are None. A `batch_sampler` (an iterable of lists of indices) gives whole batches
    instead, and excludes batch_size, shuffle, sampler and drop_last. `batch_size=None` yields
    the samples one by one, unbatched (collate_fn, when given, is applied to each).

    An IterableDataset is read in the order it gives its samples, `batch_size` at a time; it
    takes no sampler, batch_sampler or shuffle, as in PyTorch.

    A TensorDataset, or a Subset of one, is batched with one fancy-index per tensor, on the
    device its tensors are on (a TensorDataset of GPU tensors gives GPU batches). `fit` and
    `evaluate` move batches of host arrays to the model's device.
    `num_workers` must be 0: batches are made in the calling process (worker processes are not
    implemented yet); `pin_memory`, `timeout`, `worker_init_fn`, `multiprocessing_context`,
    `prefetch_factor`, `persistent_workers` and `pin_memory_device` are taken for PyTorch code's
    sake and change nothing without workers. Batches are copied to a GPU synchronously, from
    ordinary host memory (page-locked memory pays only for asynchronous copies, which minitrain
    does not make), as PyTorch's pin_memory does nothing without CUDA.
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Iterable[int] | None = None,
        batch_sampler: Iterable[Sequence[int]] | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        seed: int | None = None,
    ) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, numbers.Integral):
            raise DTypeError(f"DataLoader: num_workers must be an int, got {num_workers!r}")
        if num_workers != 0:
            # PyTorch code often passes these; minitrain loads in the calling process
            raise ArgumentError(
                f"DataLoader: num_workers must be 0 (minitrain loads batches in the calling "
                f"process; worker processes are not implemented yet), got {num_workers!r}"
            )
        if timeout < 0:
            raise ArgumentError(f"DataLoader: timeout must be non-negative, got {timeout!r}")
        if collate_fn is not None and not callable(collate_fn):
            raise DTypeError(f"DataLoader: collate_fn must be callable, got {collate_fn!r}")
        if generator is not None and seed is not None:
            raise ArgumentError("DataLoader: pass generator or seed, not both")
        iterable = isinstance(dataset, IterableDataset)
        if iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ArgumentError(
                "DataLoader: an IterableDataset gives its own order; it takes no shuffle, "
                "sampler or batch_sampler"
            )
        if sampler is not None and shuffle:
            raise ArgumentError(
                "DataLoader: sampler and shuffle=True are mutually exclusive (the sampler "
                "chooses the order; a DistributedSampler shuffles itself)"
            )
        if sampler is not None and not (
            hasattr(sampler, "__iter__") and hasattr(sampler, "__len__")
        ):
            raise DTypeError(
                f"DataLoader: sampler must be an iterable of indices with a length, got "
                f"{type(sampler).__name__}"
            )
        if batch_sampler is not None and not hasattr(batch_sampler, "__iter__"):
            raise DTypeError(
                f"DataLoader: batch_sampler must be an iterable of lists of indices, got "
                f"{type(batch_sampler).__name__}"
            )
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ArgumentError(
                    "DataLoader: batch_sampler gives whole batches: it is mutually exclusive "
                    "with batch_size, shuffle, sampler and drop_last"
                )
            batch_size = None
        elif batch_size is None:
            if drop_last:
                raise ArgumentError(
                    "DataLoader: batch_size=None (no batching) is mutually exclusive with drop_last"
                )
        elif isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
            raise DTypeError(f"DataLoader: batch_size must be an int or None, got {batch_size!r}")
        elif batch_size < 1:
            raise ArgumentError(f"DataLoader: batch_size must be at least 1, got {batch_size}")
        self.dataset = dataset
        self.batch_size = None if batch_size is None else int(batch_size)
        self.shuffle = bool(shuffle)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.drop_last = bool(drop_last)
        self.num_workers = 0
        self.seed = seed
        self.collate_fn = collate_fn
        self.pin_memory = bool(pin_memory)
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = bool(persistent_workers)
        self.pin_memory_device = pin_memory_device
        self._generator = numpy_generator(seed if generator is None else generator, "DataLoader")

    @property
    def generator(self) -> np.random.Generator | None:
        """The numpy generator shuffled orders are drawn from (from `generator` or `seed`;
        `fit` saves and restores its state to resume exactly); None where it is minitrain's
        global one."""
        return self._generator

    def __len__(self) -> int:
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        if self.sampler is not None:
            count = len(self.sampler)
        elif isinstance(self.dataset, IterableDataset):
            try:
                count = len(self.dataset)
            except NotImplementedError:  # a stream of unknown length, as PyTorch: a TypeError
                raise DTypeError(
                    f"DataLoader: the IterableDataset {type(self.dataset).__name__} has no "
                    f"__len__, so the loader has no length"
                ) from None
        else:
            count = len(self.dataset)
        if self.batch_size is None:
            return count
        if self.drop_last:
            return count // self.batch_size
        return -(-count // self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        # The order is drawn here, not at the first next(): each iter() is one epoch, in call order.
        if isinstance(self.dataset, IterableDataset):
            return self._streamed(iter(self.dataset))
        if self.batch_sampler is not None:
            return self._batches(list(self.batch_sampler))
        if self.sampler is not None:  # the data set's own length is not needed
            order = np.fromiter(self.sampler, dtype=np.int64)
        elif self.shuffle:
            generator = self._generator if self._generator is not None else backend.generator()
            order = generator.permutation(len(self.dataset))
        else:
            order = np.arange(len(self.dataset))
        count = len(order)
        if self.batch_size is None:
            return self._unbatched(order)
        if self.drop_last:
            order = order[: count - count % self.batch_size]
        size = self.batch_size
        return self._batches([order[start : start + size] for start in range(0, len(order), size)])

    def _unbatched(self, order: np.ndarray) -> Iterator[Any]:
        for position in order.tolist():
            sample = self.dataset[position]
            yield sample if self.collate_fn is None else self.collate_fn(sample)

    def _streamed(self, samples: Iterator[Any]) -> Iterator[Any]:
        if self.batch_size is None:
            for sample in samples:
                yield sample if self.collate_fn is None else self.collate_fn(sample)
            return
        collate = self.collate_fn or default_collate
        batch = []
        for sample in samples:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield collate(batch)
                batch = []
        if batch and not self.drop_last:
            yield collate(batch)

    def _batches(self, batches: list[Any]) -> Iterator[Any]:
        direct = None
        if self.collate_fn is None or self.collate_fn is default_collate:
            direct = _tensor_rows(self.dataset)
        collate = self.collate_fn or default_collate
        for positions in batches:
            if direct is not None:
                tensors, rows = direct
                positions = np.asarray(positions, dtype=np.int64)
                batch_rows = positions if rows is None else rows[positions]
                yield tuple(Tensor(_take(tensor.array, batch_rows)) for tensor in tensors)
            else:
                yield collate([self.dataset[int(position)] for position in positions])


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


def _take(array: Any, rows: np.ndarray) -> Any:
    xp = backend.array_module(array)
    return array[rows if xp is np else xp.asarray(rows)]
