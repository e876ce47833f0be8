"""Batching, as torch.utils.data.dataloader: default_collate, DataLoader, and get_worker_info
(from worker.py) for the code that imports it from here."""

from __future__ import annotations

import hashlib
import itertools
import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, MinitrainError, ShapeError
from ...tensor import Tensor
from .dataset import Dataset, IterableDataset
from .fetch import MapFetcher, StreamFetcher
from .generators import numpy_generator
from .multiprocess_iterator import MultiProcessIterator
from .multiprocess_iterator import multiprocessing_context as worker_context
from .worker import WorkerSpec, get_worker_info

__all__ = ["default_collate", "DataLoader", "get_worker_info"]


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
    the samples one by one, unbatched (collate_fn, when given, is applied to each). As in
    PyTorch, the data set is indexed with what the sampler gives, unchanged (string keys,
    tuples, ...); with `shuffle` or neither, with Python ints.

    An IterableDataset is read in the order it gives its samples, `batch_size` at a time; it
    takes no sampler, batch_sampler or shuffle, as in PyTorch.

    A TensorDataset, or a Subset of one, is batched with one fancy-index per tensor, on the
    device its tensors are on (a TensorDataset of GPU tensors gives GPU batches). `fit` and
    `evaluate` move batches of host arrays to the model's device.

    With `num_workers=0` batches are made in the calling process. With `num_workers > 0`, as in
    PyTorch, that many worker processes (started from `multiprocessing_context`: the platform's
    default for None, or 'fork', 'spawn', 'forkserver', or a context object; spawn and
    forkserver pickle the data set and collate_fn to each worker) each get the data set, the
    collate_fn and their worker id; the sampler stays in the calling process, which sends index
    batches round-robin, `prefetch_factor` (default 2) outstanding per worker, and yields the
    batches in sampler order whatever order the workers finish in: a seeded shuffle gives the
    batches num_workers=0 gives. Each iterator that starts workers takes a base seed: a digest
    of the state of `generator` (else the global generator) before the epoch's order is drawn,
    and of how many iterators the loader started before, so every epoch's seeds are new and the
    same from the same seeding. PyTorch draws it from the generator instead; a digest leaves the
    loader's random stream, and so every epoch's shuffled order, the same whatever num_workers
    is. Worker i seeds Python's `random` and minitrain's global generator with base seed + i
    (numpy's legacy global one from both), then calls `worker_init_fn(i)`; `get_worker_info()`
    tells the worker's id, num_workers, seed and data set. An IterableDataset is iterated whole
    by every worker (duplicates, unless its `__iter__` splits the samples by
    `get_worker_info()`), batches taken from the workers in turn and each worker's last batch
    partial (or dropped with drop_last). A worker's exception is raised in the calling process
    with its class, naming the worker and holding its traceback; a worker that dies raises a
    `WorkerError` (a RuntimeError), and so does waiting longer than `timeout` seconds (0: no
    limit) for a batch. As in PyTorch, an exception raised making one batch (with or without
    workers) leaves the iterator going: the next `next()` gives the next batch. Workers are
    stopped when the epoch ends, the iterator is dropped, a worker dies, a wait times out, Ctrl-C
    is pressed, or Python exits; `persistent_workers=True` keeps them from epoch to epoch, until
    the loader is dropped. Batches are pickled through queues (no shared memory), so Tensors
    cross as their arrays.

    `pin_memory` and `pin_memory_device` are taken and change nothing: batches are copied to a
    GPU synchronously, from ordinary host memory (page-locked memory pays only for asynchronous
    copies, which minitrain does not make), as PyTorch's pin_memory does nothing without CUDA.
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
        if num_workers < 0:
            raise ArgumentError(
                f"DataLoader: num_workers must be non-negative (0 loads in the calling process), "
                f"got {num_workers}"
            )
        prefetch_factor = _check_worker_options(
            num_workers, prefetch_factor, persistent_workers, multiprocessing_context
        )
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise DTypeError(f"DataLoader: worker_init_fn must be callable, got {worker_init_fn!r}")
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
        if sampler is not None and not hasattr(sampler, "__iter__"):
            raise DTypeError(
                f"DataLoader: sampler must be an iterable of indices, got {type(sampler).__name__}"
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
        self.num_workers = int(num_workers)
        self.seed = seed
        self.collate_fn = collate_fn
        self.pin_memory = bool(pin_memory)
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = (
            None if num_workers == 0 else worker_context(multiprocessing_context)
        )
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = bool(persistent_workers)
        self.pin_memory_device = pin_memory_device
        self._generator = numpy_generator(seed if generator is None else generator, "DataLoader")
        self._iterator = None  # the persistent workers' iterator
        self._worker_epochs = 0  # how many iterators have started workers: part of their seeds

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
            except NotImplementedError as error:  # a stream of unknown length: a TypeError
                if isinstance(error, MinitrainError):  # a DTypeError raised inside __len__
                    raise
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
        # The workers' base seed is read from the generator's state before the order is drawn,
        # without drawing from it: the loader's random stream, and so every epoch's order, is
        # the same whatever num_workers is (PyTorch draws it, with or without workers).
        reuse = self.persistent_workers and self._iterator is not None
        reuse = reuse and not self._iterator.shut_down
        base_seed = None if reuse or self.num_workers == 0 else self._base_seed()
        tasks = self._tasks()
        if self.num_workers == 0:
            return _SingleProcessIterator(self._spec().fetcher(), tasks, self._length_or_none)
        if reuse:
            self._iterator.reset(tasks)
            return self._iterator
        iterator = MultiProcessIterator(
            self._spec(),
            tasks,
            self._length_or_none(),
            base_seed,
            self.multiprocessing_context,
            self.prefetch_factor,
            self.timeout,
            self.persistent_workers,
        )
        if self.persistent_workers:
            self._iterator = iterator
        return iterator

    def _tasks(self) -> Iterator[Any]:
        """What each batch is made from, in order: index batches (single indices without
        batching); for an IterableDataset, the number of samples each batch takes."""
        if isinstance(self.dataset, IterableDataset):
            return itertools.repeat(self.batch_size)
        if self.batch_sampler is not None:
            return iter(self.batch_sampler)
        if self.sampler is not None:  # read as batches are made: a sampler may be very long
            indices = iter(self.sampler)
            if self.batch_size is None:
                return indices
            return _batched(indices, self.batch_size, self.drop_last)
        if self.shuffle:
            generator = self._generator if self._generator is not None else backend.generator()
            order = generator.permutation(len(self.dataset))
        else:
            order = np.arange(len(self.dataset))
        if self.batch_size is None:
            return iter(order.tolist())
        if self.drop_last:
            order = order[: len(order) - len(order) % self.batch_size]
        return _slices(order, self.batch_size)

    def _spec(self) -> WorkerSpec:
        batched = self.batch_size is not None or self.batch_sampler is not None
        collate = self.collate_fn
        if collate is None and batched:
            collate = default_collate
        return WorkerSpec(
            dataset=self.dataset,
            iterable=isinstance(self.dataset, IterableDataset),
            collate_fn=collate,
            batched=batched,
            direct=self.collate_fn is None or self.collate_fn is default_collate,
            drop_last=self.drop_last,
            worker_init_fn=self.worker_init_fn,
            num_workers=self.num_workers,
        )

    def _base_seed(self) -> int:
        """The workers' base seed, once per iterator that starts workers: a non-negative int64
        as PyTorch's, here a digest of the loader's generator's state (the global one without a
        seed) and of how many iterators started workers before. The count makes each epoch's
        seeds new where nothing draws from the generator (no shuffle, a sampler with its own
        generator, an IterableDataset); both make them reproducible from the same seeding."""
        generator = self._generator if self._generator is not None else backend.generator()
        state = repr((generator.bit_generator.state, self._worker_epochs)).encode()
        self._worker_epochs += 1
        return int.from_bytes(hashlib.sha256(state).digest()[:8], "little") >> 1

    def _length_or_none(self) -> int | None:
        try:
            return len(self)
        except TypeError:
            return None


def _check_worker_options(
    num_workers: int, prefetch_factor: Any, persistent_workers: bool, context: Any
) -> int | None:
    """PyTorch's rules for the options that only worker processes use; the prefetch factor
    to load with (2 by default with workers)."""
    if num_workers == 0:
        for name, value in (
            ("prefetch_factor", prefetch_factor),
            ("multiprocessing_context", context),
        ):
            if value is not None:
                raise ArgumentError(
                    f"DataLoader: {name} is only used by worker processes; pass num_workers > 0, "
                    f"or leave {name} None (got {value!r} with num_workers=0)"
                )
        if persistent_workers:
            raise ArgumentError("DataLoader: persistent_workers=True needs num_workers > 0")
        return None
    if prefetch_factor is None:
        return 2
    if isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, numbers.Integral):
        raise DTypeError(f"DataLoader: prefetch_factor must be an int, got {prefetch_factor!r}")
    if prefetch_factor < 1:
        raise ArgumentError(
            f"DataLoader: prefetch_factor must be at least 1 (batches loaded ahead per worker), "
            f"got {prefetch_factor}"
        )
    return int(prefetch_factor)


def _batched(indices: Iterator[Any], size: int, drop_last: bool) -> Iterator[list[Any]]:
    """The index batches of a sampler's stream, `size` at a time (the last one shorter, or
    dropped with `drop_last`): lists of the sampler's indices, unchanged, as PyTorch's."""
    while batch := list(itertools.islice(indices, size)):
        if len(batch) < size and drop_last:
            return
        yield batch


def _slices(order: np.ndarray, size: int) -> Iterator[list[int]]:
    """An order's index batches, `size` at a time, as lists of Python ints (PyTorch's samplers
    give ints), each made as it is needed."""
    for start in range(0, len(order), size):
        yield order[start : start + size].tolist()


class _SingleProcessIterator(Iterator):
    """One epoch made in the calling process, one task after another. Unlike a generator it
    survives an exception raised making one batch: the next `next()` makes the next batch, as
    PyTorch's iterator does."""

    def __init__(
        self,
        fetcher: MapFetcher | StreamFetcher,
        tasks: Iterator[Any],
        length: Callable[[], int | None],
    ) -> None:
        self.fetcher = fetcher
        self.tasks = tasks
        self.length = length  # asked only by len(iterator): a user's __len__ may be costly
        self.ended = False

    def __iter__(self) -> _SingleProcessIterator:
        return self

    def __len__(self) -> int:
        length = self.length()
        if length is None:
            raise DTypeError(
                "DataLoader: this iterator has no length (its loader's IterableDataset or "
                "sampler has no __len__)"
            )
        return length

    def __next__(self) -> Any:
        if self.ended:
            raise StopIteration
        try:
            task = next(self.tasks)
            return self.fetcher.fetch(task)
        except StopIteration:  # the last task done, or an iterable data set spent
            self.ended = True
            raise
