"""Data sets and loading: Dataset, TensorDataset, Subset, random_split, DataLoader,
DistributedSampler, load_digits."""

from __future__ import annotations

import importlib
import math
import numbers
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from . import backend, distributed
from .errors import ArgumentError, DTypeError, ShapeError
from .tensor import Tensor

__all__ = [
    "Dataset", "TensorDataset", "Subset", "random_split", "default_collate", "DataLoader",
    "DistributedSampler", "load_digits",
]  # fmt: skip


class Dataset:
    """Base class of map-style data sets: `dataset[i]` is sample i for 0 <= i < len(dataset)."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")


class TensorDataset(Dataset):
    """Samples cut from tensors along their first dimension: `dataset[i]` is
    `(tensors[0][i], tensors[1][i], ...)`. Arrays are wrapped as Tensors without a copy."""

    def __init__(self, *tensors: Tensor | np.ndarray) -> None:
        if not tensors:
            raise ArgumentError("TensorDataset: needs at least one tensor")
        self.tensors = tuple(t if isinstance(t, Tensor) else Tensor(t) for t in tensors)
        for position, tensor in enumerate(self.tensors):
            if tensor.ndim == 0:
                raise ShapeError(
                    f"TensorDataset: tensor {position} is 0-d; every tensor needs a first "
                    f"dimension to index samples along"
                )
        sizes = [tensor.shape[0] for tensor in self.tensors]
        if len(set(sizes)) > 1:
            raise ShapeError(
                f"TensorDataset: the tensors differ in their first dimension (sizes {sizes}); "
                f"each needs one row per sample"
            )

    def __getitem__(self, index: int) -> tuple[Tensor, ...]:
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order: `subset[i]` is
    `dataset[indices[i]]`. Negative indices count from the end, as in a list."""

    def __init__(self, dataset: Dataset, indices: Sequence[int] | np.ndarray) -> None:
        size = len(dataset)
        positions = np.asarray(indices)
        if positions.size == 0:
            positions = positions.astype(np.int64)
        if positions.ndim != 1 or positions.dtype.kind not in "iu":
            raise DTypeError(
                f"Subset: indices must be a 1-D sequence of ints, got dtype {positions.dtype} "
                f"and shape {positions.shape}"
            )
        outside = positions[(positions < -size) | (positions >= size)]
        if outside.size:
            raise IndexError(
                f"Subset: index {int(outside[0])} is out of range for a data set of {size} samples"
            )
        self.dataset = dataset
        self.indices = np.where(positions < 0, positions + size, positions).astype(np.int64)

    def __getitem__(self, index: int) -> Any:
        return self.dataset[int(self.indices[index])]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(
    dataset: Dataset, lengths: Sequence[int | float], seed: int | None = None
) -> list[Subset]:
    """Split `dataset` into disjoint random Subsets of the given lengths, as PyTorch does.

    `lengths` are sample counts summing to `len(dataset)`, or fractions summing to 1: each split
    then gets `floor(fraction * len(dataset))` samples and the remainder is dealt out one at a
    time from the first split on. The permutation comes from a generator seeded with `seed`, or
    from minitrain's global generator (`minitrain.manual_seed`) when `seed` is None.
    """
    sizes = _split_sizes(lengths, len(dataset))
    generator = _generator(seed, "random_split") or backend.generator()
    order = generator.permutation(sum(sizes))
    ends = np.cumsum(sizes)
    return [Subset(dataset, order[end - size : end]) for size, end in zip(sizes, ends, strict=True)]


def _split_sizes(lengths: Sequence[int | float], total: int) -> list[int]:
    """Sample counts from random_split's lengths, with PyTorch's rule for telling fractions."""
    lengths = list(lengths)
    if any(isinstance(x, bool) or not isinstance(x, numbers.Real) for x in lengths):
        raise DTypeError(f"random_split: lengths must be numbers, got {lengths!r}")
    if math.isclose(sum(lengths), 1) and sum(lengths) <= total:
        for position, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ArgumentError(
                    f"random_split: the fraction at index {position} is {fraction}, not in [0, 1]"
                )
        sizes = [math.floor(total * fraction) for fraction in lengths]
        for position in range(total - sum(sizes)):
            sizes[position % len(sizes)] += 1
        for position, size in enumerate(sizes):
            if size == 0:
                warnings.warn(
                    f"random_split: the split at index {position} has no samples",
                    UserWarning,
                    stacklevel=3,
                )
        return sizes
    if any(not isinstance(x, numbers.Integral) or x < 0 for x in lengths) or sum(lengths) != total:
        raise ArgumentError(
            f"random_split: lengths must be non-negative ints summing to the data set's length "
            f"({total}), or fractions summing to 1; got {lengths} (sum {sum(lengths)})"
        )
    return [int(x) for x in lengths]


def _generator(seed: Any, caller: str) -> np.random.Generator | None:
    """A numpy generator seeded with `seed`; None when seed is None."""
    return None if seed is None else backend.seeded_generator(seed, caller)


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
        arrays = [x.data if isinstance(x, Tensor) else x for x in items]
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
    """Iterate over a data set in batches.

    Each iteration is one epoch: it yields `len(loader)` batches of `batch_size` samples (the last
    one smaller, or dropped with `drop_last=True`), each made by `collate_fn` (default:
    `default_collate`, which gives a tuple of Tensors for tuple samples). With `shuffle=True`
    every epoch visits the samples in a new order, drawn from a numpy generator seeded once with
    `seed`, or from minitrain's global generator (`minitrain.manual_seed`) when `seed` is None.
    A `sampler` (keyword; an iterable of indices with a length, such as a DistributedSampler)
    gives the order instead, as PyTorch's; it excludes shuffle=True.

    A TensorDataset, or a Subset of one, is batched with one fancy-index per tensor, on the
    device its tensors are on (a TensorDataset of GPU tensors gives GPU batches). `fit` and
    `evaluate` move batches of host arrays to the model's device.
    `num_workers=0` and `pin_memory` are taken for PyTorch code's sake and change nothing:
    batches are made in the calling process, and copied to a GPU synchronously, from ordinary
    host memory (page-locked memory pays only for asynchronous copies, which minitrain does not
    make), as PyTorch's pin_memory does nothing without CUDA.
    """

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        seed: int | None = None,
        collate_fn: Callable[[list[Any]], Any] | None = None,
        *,
        sampler: Iterable[int] | None = None,
        num_workers: int = 0,
        pin_memory: bool = False,
    ) -> None:
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
        if num_workers != 0:
            # PyTorch code often passes these; minitrain loads in the calling process
            raise ArgumentError(
                f"DataLoader: num_workers must be 0 (minitrain loads batches in the calling "
                f"process), got {num_workers!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral):
            raise DTypeError(f"DataLoader: batch_size must be an int, got {batch_size!r}")
        if batch_size < 1:
            raise ArgumentError(f"DataLoader: batch_size must be at least 1, got {batch_size}")
        if collate_fn is not None and not callable(collate_fn):
            raise DTypeError(f"DataLoader: collate_fn must be callable, got {collate_fn!r}")
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.sampler = sampler
        self.drop_last = bool(drop_last)
        self.seed = seed
        self.collate_fn = collate_fn
        self.pin_memory = bool(pin_memory)
        self._generator = _generator(seed, "DataLoader")

    @property
    def generator(self) -> np.random.Generator | None:
        """The generator shuffled orders are drawn from, seeded with `seed` (`fit` saves and
        restores its state to resume exactly); None where it is minitrain's global one."""
        return self._generator

    def __len__(self) -> int:
        count = len(self.dataset) if self.sampler is None else len(self.sampler)
        if self.drop_last:
            return count // self.batch_size
        return -(-count // self.batch_size)

    def __iter__(self) -> Iterator[Any]:
        # The order is drawn here, not at the first next(): each iter() is one epoch, in call order.
        count = len(self.dataset)
        if self.sampler is not None:
            order = np.fromiter(self.sampler, dtype=np.int64)
            count = len(order)
        elif self.shuffle:
            generator = self._generator if self._generator is not None else backend.generator()
            order = generator.permutation(count)
        else:
            order = np.arange(count)
        if self.drop_last:
            order = order[: count - count % self.batch_size]
        return self._batches(order)

    def _batches(self, order: np.ndarray) -> Iterator[Any]:
        direct = None
        if self.collate_fn is None or self.collate_fn is default_collate:
            direct = _tensor_rows(self.dataset)
        collate = self.collate_fn or default_collate
        for start in range(0, len(order), self.batch_size):
            positions = order[start : start + self.batch_size]
            if direct is not None:
                tensors, rows = direct
                batch_rows = positions if rows is None else rows[positions]
                yield tuple(Tensor(_take(tensor.data, batch_rows)) for tensor in tensors)
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


class DistributedSampler:
    """The indices of one rank's share of `dataset`, as PyTorch's DistributedSampler: each epoch
    a permutation (shuffle=True, drawn from a generator seeded with seed + epoch, the same on
    every rank; call set_epoch(epoch) before each epoch) or 0..n-1, padded by repeating its head
    to a multiple of num_replicas (or, with drop_last, cut to one), of which rank r takes the
    positions r, r + num_replicas, r + 2 * num_replicas, ... Every rank gets len(self) indices.
    num_replicas and rank default to minitrain.distributed's world size and rank. The order
    comes from numpy's generator, so a shuffled order differs from PyTorch's; the padding and
    the partition are PyTorch's."""

    def __init__(
        self,
        dataset: Dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        caller = "DistributedSampler"
        if num_replicas is None:
            num_replicas = distributed.get_world_size()
        if rank is None:
            rank = distributed.get_rank()
        for name, value in (("num_replicas", num_replicas), ("rank", rank)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise DTypeError(f"{caller}: {name} must be an int, got {value!r}")
        if num_replicas < 1:
            raise ArgumentError(f"{caller}: num_replicas must be at least 1, got {num_replicas}")
        if not 0 <= rank < num_replicas:
            raise ArgumentError(
                f"{caller}: rank {rank} is out of range: it must be in [0, {num_replicas - 1}]"
            )
        size = len(dataset)
        self.dataset = dataset
        self.num_replicas, self.rank = int(num_replicas), int(rank)
        self.shuffle, self.drop_last = bool(shuffle), bool(drop_last)
        self.seed = backend.check_seed(seed, caller)
        self.epoch = 0
        if self.drop_last and size % self.num_replicas:
            self.num_samples = math.ceil((size - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(size / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        size = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(size)
        else:
            order = np.arange(size)
        if self.drop_last:
            order = order[: self.total_size]
        elif self.total_size > size:  # repeat the head (the whole order, as often as needed)
            order = np.resize(order, self.total_size)
        return iter(order[self.rank : self.total_size : self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order the next iteration gives (shuffle=True: seed + epoch)."""
        if isinstance(epoch, bool) or not isinstance(epoch, numbers.Integral) or epoch < 0:
            raise ArgumentError(
                f"DistributedSampler.set_epoch: epoch must be an int >= 0, got {epoch!r}"
            )
        self.epoch = int(epoch)


def load_digits(normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1797 handwritten digits (shipped with it: no download), as numpy arrays.

    Returns `(images, labels)`: images `(1797, 1, 8, 8)` float32, scaled to [0, 1] when
    `normalize`, else the raw gray levels 0..16; labels `(1797,)` int64 in 0..9. Train on them
    with `DataLoader(TensorDataset(images, labels), batch_size=64, shuffle=True)`.
    """
    try:
        datasets = importlib.import_module("sklearn.datasets")
    except ImportError as exc:
        raise ImportError(
            "load_digits needs scikit-learn, which is not installed: "
            "pip install 'minitrain[examples]' (or pip install scikit-learn)"
        ) from exc
    digits = datasets.load_digits()
    images = digits.images.astype(np.float32).reshape(-1, 1, 8, 8)
    if normalize:
        images /= np.float32(16.0)
    return images, digits.target.astype(np.int64)
