"""Data sets, as torch.utils.data.dataset: Dataset, IterableDataset, TensorDataset,
ConcatDataset, Subset and random_split."""

from __future__ import annotations

import bisect
import math
import numbers
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from .generators import numpy_generator

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split",
]  # fmt: skip


class Dataset:
    """Base class of map-style data sets: `dataset[i]` is sample i for 0 <= i < len(dataset).
    `a + b` is their ConcatDataset."""

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must implement __len__")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """Base class of iterable-style data sets: `iter(dataset)` gives the samples (a stream, read
    once per epoch). A DataLoader batches them `batch_size` at a time, in the order they come;
    such a data set takes no sampler and no shuffle."""

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset) -> Dataset:
        raise DTypeError("IterableDataset: cannot be concatenated as a ConcatDataset")


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


class ConcatDataset(Dataset):
    """The samples of several map-style data sets one after the other: `concat[i]` is sample
    `i - cumulative_sizes[k - 1]` of data set k, the first whose `cumulative_sizes[k]` exceeds
    i. Negative indices count from the end."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ArgumentError("ConcatDataset: datasets should not be an empty iterable")
        for dataset in self.datasets:
            if isinstance(dataset, IterableDataset):
                raise DTypeError("ConcatDataset: does not support IterableDataset")
        self.cumulative_sizes = np.cumsum([len(d) for d in self.datasets]).tolist()

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int) -> Any:
        size = len(self)
        if index < 0:
            if -index > size:
                raise ArgumentError(
                    f"ConcatDataset: index {index} is out of range for {size} samples"
                )
            index += size
        if index >= size:
            raise IndexError(f"ConcatDataset: index {index} is out of range for {size} samples")
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


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
    dataset: Dataset, lengths: Sequence[int | float], generator: Any = None, seed: Any = None
) -> list[Subset]:
    """Split `dataset` into disjoint random Subsets of the given lengths, as PyTorch does.

    `lengths` are sample counts summing to `len(dataset)`, or fractions summing to 1: each split
    then gets `floor(fraction * len(dataset))` samples and the remainder is dealt out one at a
    time from the first split on. The permutation comes from `generator` (an int seed, a numpy
    Generator or an object with `numpy_generator()`), from a generator seeded with `seed` (the
    older spelling), or from minitrain's global generator (`minitrain.manual_seed`) when both
    are None. The split differs from PyTorch's for the same seed (numpy draws it).
    """
    if generator is not None and seed is not None:
        raise ArgumentError("random_split: pass generator or seed, not both")
    sizes = _split_sizes(lengths, len(dataset))
    source = numpy_generator(seed if generator is None else generator, "random_split")
    order = (source or backend.generator()).permutation(sum(sizes))
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
