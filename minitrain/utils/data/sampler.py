"""Samplers, as torch.utils.data.sampler: the order a DataLoader visits a map-style data set in
(Sampler, SequentialSampler, RandomSampler, SubsetRandomSampler, WeightedRandomSampler) and its
grouping into batches (BatchSampler).

The random ones draw from `generator`: None (minitrain's global generator, seeded by
`minitrain.manual_seed`), an int seed (a generator seeded once with it, whose stream goes on
from epoch to epoch), a numpy Generator, or an object with a `numpy_generator()` method. Their
orders are numpy's, so they differ from PyTorch's for the same seed; what is drawn (a
permutation, draws with or without replacement) is PyTorch's."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any

import numpy as np

from ... import backend
from ...errors import ArgumentError, DTypeError
from ...tensor import Tensor
from .generators import numpy_generator

__all__ = [
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "BatchSampler",
]  # fmt: skip


def _positive_int(value: Any, name: str, caller: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DTypeError(f"{caller}: {name} must be an int, got {value!r}")
    if value < 1:
        raise ArgumentError(f"{caller}: {name} must be a positive int, got {value}")
    return int(value)


class Sampler:
    """Base class of samplers: `iter(sampler)` gives the indices (or, for a batch sampler,
    lists of indices) of one epoch; `len(sampler)`, where defined, how many."""

    def __init__(self, data_source: Sized | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler):
    """The indices 0, 1, ..., len(data_source) - 1, in order."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices of `data_source`: without replacement, a new permutation each epoch
    (`num_samples` larger than the data set: whole permutations one after another, then the
    head of one more); with `replacement=True`, `num_samples` independent uniform draws.
    `num_samples` defaults to len(data_source)."""

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Any = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise DTypeError(f"RandomSampler: replacement must be a bool, got {replacement!r}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if num_samples is not None:
            _positive_int(num_samples, "num_samples", "RandomSampler")
        self._rng = numpy_generator(generator, "RandomSampler")

    @property
    def num_samples(self) -> int:
        """How many indices an epoch gives (len(data_source) unless given)."""
        if self._num_samples is None:
            return len(self.data_source)
        return int(self._num_samples)

    def __iter__(self) -> Iterator[int]:
        # The first block is drawn now, when the epoch starts; later ones as they are read, so
        # that num_samples may be far larger than memory (minGPT's sampler asks for 1e10).
        size, count = len(self.data_source), self.num_samples
        rng = self._rng or backend.generator()
        if self.replacement:

            def draw(n: int) -> np.ndarray:
                return rng.integers(0, size, size=n)

            blocks = (min(count - start, _DRAW_BLOCK) for start in range(0, count, _DRAW_BLOCK))
        else:  # whole permutations one after another, then the head of one more

            def draw(n: int) -> np.ndarray:
                return rng.permutation(size)[:n]

            blocks = itertools.chain(
                itertools.repeat(size, count // size), [count % size] if count % size else []
            )
        first = next(blocks, 0)
        return itertools.chain(draw(first).tolist(), _drawn_later(draw, blocks))

    def __len__(self) -> int:
        return self.num_samples


_DRAW_BLOCK = 1 << 16  # indices drawn at a time with replacement


def _drawn_later(draw: Callable[[int], np.ndarray], blocks: Iterable[int]) -> Iterator[int]:
    for block in blocks:
        yield from draw(block).tolist()


class SubsetRandomSampler(Sampler):
    """The given indices, in a new random order each epoch."""

    def __init__(self, indices: Sequence[int], generator: Any = None) -> None:
        self.indices = indices
        self.generator = generator
        self._rng = numpy_generator(generator, "SubsetRandomSampler")

    def __iter__(self) -> Iterator[int]:
        rng = self._rng or backend.generator()
        for position in rng.permutation(len(self.indices)).tolist():
            yield self.indices[position]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices in 0..len(weights)-1, index i drawn with probability proportional
    to weights[i] (which need not sum to 1), with replacement by default; without it, each
    index at most once (num_samples <= the number of nonzero weights)."""

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: Any = None,
    ) -> None:
        caller = "WeightedRandomSampler"
        self.num_samples = _positive_int(num_samples, "num_samples", caller)
        if not isinstance(replacement, bool):
            raise DTypeError(f"{caller}: replacement must be a bool, got {replacement!r}")
        data = weights.array if isinstance(weights, Tensor) else weights
        if backend.is_array(data) and backend.array_module(data) is not np:
            data = backend.to_device(data, backend.device("cpu"))
        weights_array = np.asarray(data, dtype=np.float64)
        if weights_array.ndim != 1:
            raise ArgumentError(
                f"{caller}: weights must be a 1-D sequence, got shape {weights_array.shape}"
            )
        if not np.all(np.isfinite(weights_array)) or np.any(weights_array < 0):
            raise ArgumentError(f"{caller}: weights must be finite and non-negative")
        if weights_array.sum() <= 0:
            raise ArgumentError(f"{caller}: weights must not all be zero")
        if not replacement and self.num_samples > np.count_nonzero(weights_array):
            raise ArgumentError(
                f"{caller}: cannot draw {self.num_samples} indices without replacement from "
                f"{np.count_nonzero(weights_array)} nonzero weights"
            )
        self.weights = weights_array
        self.replacement = replacement
        self.generator = generator
        self._rng = numpy_generator(generator, caller)

    def __iter__(self) -> Iterator[int]:
        rng = self._rng or backend.generator()
        chosen = rng.choice(
            len(self.weights),
            size=self.num_samples,
            replace=self.replacement,
            p=self.weights / self.weights.sum(),
        )
        return iter(chosen.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of `batch_size` indices taken from `sampler` in its order; the last one shorter,
    or left out with `drop_last=True`."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        self.batch_size = _positive_int(batch_size, "batch_size", "BatchSampler")
        if not isinstance(drop_last, bool):
            raise DTypeError(f"BatchSampler: drop_last must be a bool, got {drop_last!r}")
        self.sampler = sampler
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return -(-len(self.sampler) // self.batch_size)
