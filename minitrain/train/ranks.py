"""The processes fit trains in, as fit needs them: sums and gathers over the ranks, and a
check that every rank sees a file."""

from __future__ import annotations

import os

import numpy as np

from .. import distributed
from ..errors import CheckpointError
from ..tensor import Tensor

__all__ = ["Ranks"]


class Ranks:
    """The processes fit trains in: minitrain.distributed's group where one is initialized
    (mpiexec), else a world of one, in which each collective returns its input."""

    def __init__(self) -> None:
        joined = distributed.is_available() and distributed.is_initialized()
        self.rank = distributed.get_rank() if joined else 0
        self.size = distributed.get_world_size() if joined else 1
        self.active = self.size > 1

    def sum(self, values: list[float]) -> list[float]:
        """Each value summed over every rank, in float64, in one all-reduce."""
        if not self.active:
            return values
        buffer = Tensor(np.asarray(values, dtype=np.float64))
        distributed.all_reduce(buffer)
        return buffer.array.tolist()

    def gather(self, payload: bytes) -> list[bytes]:
        """Every rank's `payload`, in rank order, on every rank: the lengths, then the bytes
        padded to the longest."""
        if not self.active:
            return [payload]
        lengths = [Tensor(np.zeros(1, dtype=np.int64)) for _ in range(self.size)]
        distributed.all_gather(lengths, Tensor(np.array([len(payload)], dtype=np.int64)))
        sizes = [int(length.array[0]) for length in lengths]
        padded = np.zeros(max(sizes), dtype=np.uint8)
        padded[: len(payload)] = np.frombuffer(payload, dtype=np.uint8)
        pieces = [Tensor(np.zeros(max(sizes), dtype=np.uint8)) for _ in range(self.size)]
        distributed.all_gather(pieces, Tensor(padded))
        return [piece.array[:size].tobytes() for piece, size in zip(pieces, sizes, strict=True)]

    def all_see(self, path: str) -> bool:
        """Whether the file `path` exists, agreed by every rank: a CheckpointError where only
        some see it (no file system they all share)."""
        exists = os.path.exists(path)
        seen_by = int(self.sum([float(exists)])[0])
        if 0 < seen_by < self.size:
            raise CheckpointError(
                f"fit: the checkpoint {path!r} exists on {seen_by} of the {self.size} ranks; "
                f"resuming needs a file every rank reads (a shared file system)"
            )
        return exists
