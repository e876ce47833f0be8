"""What runs inside a DataLoader's worker process, as torch.utils.data._utils.worker: the loop
turning index batches into batches, the worker's seeding, `get_worker_info`, and the wrapper
that carries a worker's exception, with its traceback text, to the main process."""

from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import backend
from .dataset import Dataset
from .fetch import MapFetcher, StreamFetcher

__all__ = [
    "WorkerInfo", "get_worker_info", "WorkerFailure", "WorkerSpec", "StreamEnded",
    "ResumeIteration", "worker_loop", "STATUS_CHECK_INTERVAL",
]  # fmt: skip

# How often (seconds) a worker waiting for work checks that its parent is alive, and the main
# process waiting for a batch checks that its workers are
STATUS_CHECK_INTERVAL = 0.2

_worker_info: WorkerInfo | None = None


class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: `id` (0 to num_workers - 1),
    `num_workers`, `seed` (the seed this worker's generators got: the loader's base seed plus
    `id`) and `dataset` (this process's copy of the data set). Its attributes cannot be
    reassigned (RuntimeError), as in PyTorch."""

    __initialized = False

    def __init__(self, **attributes: Any) -> None:
        for name, value in attributes.items():
            setattr(self, name, value)
        self.__keys = tuple(attributes)
        self.__initialized = True

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(name, value)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)}" for name in self.__keys)
        return f"{type(self).__name__}({fields})"


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its WorkerInfo (id, num_workers, seed, dataset); None in
    the main process. An IterableDataset reads it in `__iter__` to give each worker its own share
    of the samples (without that, every worker yields the whole data set)."""
    return _worker_info


class WorkerFailure:
    """An exception raised in a worker, sent to the main process: its class and a message naming
    the worker and holding the worker's traceback text. `reraise()` raises it again there."""

    def __init__(self, worker_id: int, exc_info: Any = None) -> None:
        kind, error, trace = sys.exc_info() if exc_info is None else exc_info
        self.exc_type = kind
        self.message = (
            f"Caught {kind.__name__} in DataLoader worker process {worker_id}.\nOriginal "
            + "".join(traceback.format_exception(kind, error, trace))
        )

    def reraise(self) -> None:
        """Raise an exception of the worker's class with the message; a RuntimeError holding it
        where that class cannot be built from one message."""
        message = self.message
        if self.exc_type is KeyError:  # KeyError quotes its message: keep the lines readable
            message = _KeyErrorMessage(message)
        try:
            error = self.exc_type(message)
        except Exception:
            raise RuntimeError(message) from None
        try:
            raise error
        finally:  # no cycle through this frame: the caller's iterator goes once the error does
            del error


class _KeyErrorMessage(str):
    def __repr__(self) -> str:
        return str(self)


@dataclass(frozen=True)
class StreamEnded:
    """A worker's answer once its copy of an IterableDataset is spent."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """Sent to a persistent worker at a new epoch: start again (an iterable data set anew)."""


@dataclass(frozen=True)
class WorkerSpec:
    """How one loader makes its batches: what each of its workers is given (pickled to it
    under spawn or forkserver), and what the loader's own process fetches with when it has
    no workers."""

    dataset: Dataset
    iterable: bool
    collate_fn: Callable[[Any], Any] | None
    batched: bool
    direct: bool
    drop_last: bool
    worker_init_fn: Callable[[int], None] | None
    num_workers: int

    def fetcher(self) -> MapFetcher | StreamFetcher:
        if self.iterable:
            return StreamFetcher(self.dataset, self.collate_fn, self.batched, self.drop_last)
        return MapFetcher(self.dataset, self.collate_fn, self.batched, self.direct)


def seed_worker(base_seed: int, worker_id: int) -> int:
    """Seed this process's generators for worker `worker_id`, as PyTorch's workers do: Python's
    `random` and minitrain's default generator with base_seed + worker_id, numpy's legacy global
    one with a SeedSequence of the worker id and base seed (PyTorch's numbers for it). Returns
    the seed."""
    seed = base_seed + worker_id
    random.seed(seed)
    if backend.cupy is None:
        backend.manual_seed(seed)  # and CuPy's generators once this worker imports it
    else:  # forked from a process using CUDA, which a forked child cannot use
        backend.seed_cpu(seed)
    entropy = [worker_id, base_seed & 0xFFFFFFFF, base_seed >> 32]
    np.random.seed(np.random.SeedSequence(entropy).generate_state(4))
    return seed


def worker_loop(
    spec: WorkerSpec,
    worker_id: int,
    base_seed: int,
    index_queue: Any,
    result_queue: Any,
    done_event: Any,
) -> None:
    """A worker process's body: answer each `(task_id, indices)` from `index_queue` with
    `(task_id, pickled batch)` (or a pickled WorkerFailure, or StreamEnded) on `result_queue`,
    until None arrives, or the parent process is gone (this one is then another's child)."""
    global _worker_info
    # the process that started this one (the main one, or a forkserver that exits with it)
    parent_pid = os.getppid()
    try:
        seed = seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(
            id=worker_id, num_workers=spec.num_workers, seed=seed, dataset=spec.dataset
        )
        failure = None
        fetcher = None
        try:
            if spec.worker_init_fn is not None:
                spec.worker_init_fn(worker_id)
            fetcher = spec.fetcher()
        except Exception:
            failure = WorkerFailure(worker_id)  # the answer to the first task, as PyTorch
        stream_ended = False
        while os.getppid() == parent_pid:
            try:
                message = index_queue.get(timeout=STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if message is None:
                break
            if isinstance(message, ResumeIteration):
                stream_ended, failure, fetcher = False, None, None
                try:
                    fetcher = spec.fetcher()
                except Exception:
                    failure = WorkerFailure(worker_id)
                result_queue.put((message, None))
                continue
            if done_event.is_set() or stream_ended:
                continue  # the main process is shutting down, or wants nothing more from here
            task_id, indices = message
            if failure is not None:  # worker_init_fn's error, answering every task without
                answer = failure  # a fetcher to make it
                failure = None if fetcher is not None else failure
            else:
                answer = _fetch(fetcher, indices, spec.iterable, worker_id)
                stream_ended = isinstance(answer, StreamEnded)
            result_queue.put((task_id, _pickled(answer, worker_id)))
            del answer
    except KeyboardInterrupt:  # Ctrl-C reaches every process of the group: the main one handles it
        pass
    if done_event.is_set():  # nobody reads what is left: exit without flushing it
        result_queue.cancel_join_thread()
        result_queue.close()


def _fetch(fetcher: MapFetcher | StreamFetcher, indices: Any, iterable: bool, worker_id: int):
    try:
        return fetcher.fetch(indices)
    except StopIteration:
        if iterable:
            return StreamEnded(worker_id)
        return WorkerFailure(worker_id)
    except Exception:
        return WorkerFailure(worker_id)


def _pickled(answer: Any, worker_id: int) -> bytes:
    """The answer pickled here, so that a batch that cannot be pickled becomes an error the main
    process raises rather than an answer lost in the queue's feeder thread."""
    try:
        return pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        return pickle.dumps(WorkerFailure(worker_id), protocol=pickle.HIGHEST_PROTOCOL)
