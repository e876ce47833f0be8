"""A DataLoader's iterator with worker processes, the main process's side (PyTorch's
_MultiProcessingDataLoaderIter): it starts the workers, sends them index batches round-robin,
yields their batches in sampler order (a worker's exception for one batch raised in its turn),
notices dead workers and timeouts, and shuts the workers down when the epoch ends, the iterator
is dropped, a worker dies, a wait times out, Ctrl-C is pressed, or Python exits."""

from __future__ import annotations

import atexit
import itertools
import multiprocessing
import os
import pickle
import queue
import time
import weakref
from collections.abc import Iterator
from typing import Any

from ...errors import ArgumentError, DTypeError, WorkerError
from .worker import (
    STATUS_CHECK_INTERVAL,
    ResumeIteration,
    StreamEnded,
    WorkerFailure,
    WorkerSpec,
    worker_loop,
)

__all__ = ["MultiProcessIterator", "multiprocessing_context", "SHUTDOWN_GRACE_SECONDS"]

# Every iterator whose workers may be running: shut down at exit, before multiprocessing's own
# exit handler terminates whatever daemonic processes are left
_live_iterators: weakref.WeakSet = weakref.WeakSet()

SHUTDOWN_GRACE_SECONDS = 5.0  # how long a worker told to stop gets before it is terminated


def multiprocessing_context(context: Any, caller: str = "DataLoader") -> Any:
    """The multiprocessing context a loader's workers start from: the platform's default for
    None (as PyTorch: fork on Linux before Python 3.14), a start method's name ('fork', 'spawn',
    'forkserver'), or a context object as `multiprocessing.get_context` returns."""
    if context is None:
        return multiprocessing.get_context()
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ArgumentError(
                f"{caller}: multiprocessing_context {context!r} is not a start method of this "
                f"platform; choose one of {methods}"
            )
        return multiprocessing.get_context(context)
    if not all(hasattr(context, name) for name in ("Process", "Queue", "Event")):
        raise DTypeError(
            f"{caller}: multiprocessing_context must be a start method's name or a "
            f"multiprocessing context, got {type(context).__name__}"
        )
    return context


class MultiProcessIterator(Iterator):
    """One epoch of a DataLoader read by `num_workers` worker processes.

    Index batches come from `index_batches` (the sampler's, drawn in the main process; for an
    IterableDataset, one placeholder per batch wanted), `prefetch_factor` outstanding per worker,
    dealt round-robin; batches are yielded in the order of their index batches, whatever order
    the workers finish in. For an IterableDataset each worker reads its own copy, and a worker
    whose copy is spent is left out of the round from then on. `reset(index_batches)` starts a
    new epoch on the same workers (persistent_workers)."""

    def __init__(
        self,
        spec: WorkerSpec,
        index_batches: Iterator[Any],
        length: int | None,
        base_seed: int,
        context: Any,
        prefetch_factor: int,
        timeout: float,
        persistent: bool,
    ) -> None:
        self.spec = spec
        self.length = length
        self.prefetch_factor = prefetch_factor
        self.timeout = timeout
        self.persistent = persistent
        self.owner_pid = os.getpid()
        self.shut_down = False
        self.done_event = context.Event()
        self.result_queue = context.Queue()
        self.index_queues = []
        self.workers = []
        try:
            for worker_id in range(spec.num_workers):
                index_queue = context.Queue()
                index_queue.cancel_join_thread()  # a dead worker must not block our exit
                worker = context.Process(
                    target=worker_loop,
                    args=(
                        spec,
                        worker_id,
                        base_seed,
                        index_queue,
                        self.result_queue,
                        self.done_event,
                    ),
                    daemon=True,
                )
                worker.start()
                self.index_queues.append(index_queue)
                self.workers.append(worker)
        except BaseException:
            self.shutdown()
            raise
        _live_iterators.add(self)
        self.reset(index_batches, first=True)

    def reset(self, index_batches: Iterator[Any], first: bool = False) -> None:
        """Start an epoch: forget the last one's tasks, and (for persistent workers) have every
        worker start again, waiting for each to say so."""
        self.index_batches = iter(index_batches)
        self.sent = 0  # task ids handed out
        self.received = 0  # the next task id to yield
        self.outstanding = 0
        self.tasks = {}  # task id -> (worker id,) or (worker id, answer) once it arrived early
        self.active = [True] * len(self.workers)
        self.worker_turns = itertools.cycle(range(len(self.workers)))
        if not first:
            try:
                for index_queue in self.index_queues:
                    index_queue.put(ResumeIteration())
                waiting = len(self.workers)
                while waiting:  # the last epoch's answers still on their way are dropped
                    task_id, _ = self.next_answer()
                    if isinstance(task_id, ResumeIteration):
                        waiting -= 1
            except BaseException:
                self.shutdown()
                raise
        for _ in range(self.prefetch_factor * len(self.workers)):
            self.send_next_task()

    def __iter__(self) -> MultiProcessIterator:
        return self

    def __len__(self) -> int:
        if self.length is None:
            raise DTypeError(
                "DataLoader: this iterator has no length (its loader's IterableDataset or "
                "sampler has no __len__)"
            )
        return self.length

    def __next__(self) -> Any:
        # No worker outlives an epoch's end (persistent workers excepted), a dead worker, a
        # timeout or Ctrl-C. An exception raised making one batch leaves the workers going, as
        # PyTorch: the caller may catch it and read on.
        try:
            answer = self.next_batch()
        except StopIteration:
            if not self.persistent:
                self.shutdown()
            raise
        except BaseException:
            self.shutdown()
            raise
        if isinstance(answer, WorkerFailure):
            answer.reraise()
        return answer

    def next_batch(self) -> Any:
        if self.shut_down:
            raise StopIteration
        while True:
            while self.received < self.sent:
                task = self.tasks.get(self.received)  # None: answered by the end of a stream
                if task is not None:
                    if len(task) == 2 or self.active[task[0]]:
                        break
                    del self.tasks[self.received]
                    self.outstanding -= 1  # sent to a worker after its stream ended: no answer
                self.received += 1
            else:
                raise StopIteration
            if len(self.tasks[self.received]) == 2:
                return self.deliver(self.tasks.pop(self.received)[1])
            task_id, answer = self.next_answer()
            self.outstanding -= 1
            if isinstance(answer, StreamEnded):
                del self.tasks[task_id]
                self.active[answer.worker_id] = False
                self.send_next_task()
                continue
            if task_id != self.received:
                self.tasks[task_id] += (answer,)
                continue
            del self.tasks[task_id]
            return self.deliver(answer)

    def deliver(self, answer: Any) -> Any:
        """The answer to the task due next (a batch, or a WorkerFailure), the next task sent."""
        self.received += 1
        self.send_next_task()
        return answer

    def send_next_task(self) -> None:
        """Hand the next index batch to the next active worker in turn, if any is left."""
        if self.outstanding >= self.prefetch_factor * len(self.workers):
            return
        for _ in range(len(self.workers)):
            worker_id = next(self.worker_turns)
            if self.active[worker_id]:
                break
        else:
            return
        try:
            indices = next(self.index_batches)
        except StopIteration:
            return
        self.index_queues[worker_id].put((self.sent, indices))
        self.tasks[self.sent] = (worker_id,)
        self.outstanding += 1
        self.sent += 1

    def next_answer(self) -> tuple[Any, Any]:
        """The next (task id, answer) from any worker, checking while it waits that every worker
        that still has work is alive, and giving up after `timeout` seconds when one is set."""
        deadline = time.monotonic() + self.timeout if self.timeout > 0 else None
        while True:
            wait = STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0.0))
            try:
                task_id, payload = self.result_queue.get(timeout=wait)
            except queue.Empty:
                self.check_workers_alive()
                if deadline is not None and time.monotonic() >= deadline:
                    raise WorkerError(
                        f"DataLoader timed out after {self.timeout} seconds waiting for a batch "
                        f"from its workers"
                    ) from None
                continue
            return task_id, (None if payload is None else pickle.loads(payload))

    def check_workers_alive(self) -> None:
        dead = [
            f"worker {worker_id} (pid {worker.pid}, exit code {worker.exitcode})"
            for worker_id, worker in enumerate(self.workers)
            if self.active[worker_id] and not worker.is_alive()
        ]
        if dead:
            raise WorkerError(
                f"DataLoader worker process exited unexpectedly: {', '.join(dead)}; a negative "
                f"exit code is the signal that ended it (-9: killed, often for lack of memory)"
            )

    def shutdown(self) -> None:
        """Stop every worker: tell each to stop, give it a moment, then terminate it; reap them
        all. Only the process that started the workers does this; it is safe to call twice."""
        if self.shut_down or os.getpid() != self.owner_pid:
            return
        self.shut_down = True
        _live_iterators.discard(self)
        self.done_event.set()
        for index_queue in self.index_queues:
            try:
                index_queue.put(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + SHUTDOWN_GRACE_SECONDS
        for worker in self.workers:
            worker.join(timeout=max(deadline - time.monotonic(), 0.0))
        for worker in self.workers:
            if worker.is_alive():
                worker.terminate()
                worker.join()
        for worker_queue in (*self.index_queues, self.result_queue):
            worker_queue.cancel_join_thread()
            worker_queue.close()

    def __del__(self) -> None:
        if getattr(self, "workers", None) is not None:
            self.shutdown()


@atexit.register
def _shut_down_live_iterators() -> None:
    for iterator in list(_live_iterators):
        iterator.shutdown()
