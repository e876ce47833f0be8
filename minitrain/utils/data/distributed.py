"""DistributedSampler, as torch.utils.data.distributed: each rank's share of a data set."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator

import numpy as np

from ... import backend, distributed
from ...errors import ArgumentError, DTypeError
from .dataset import Dataset
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
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
