"""`minitrain.multiprocessing`, where PyTorch's torch.multiprocessing is: Python's
multiprocessing, every name re-exported, and `spawn`. Tensors a parent moved into shared memory
(`Tensor.share_memory_`, `Module.share_memory`) are shared with the processes it forks ('fork',
Linux's default start method); processes started by 'spawn' or 'forkserver' receive copies."""

from __future__ import annotations

import multiprocessing as _multiprocessing
from multiprocessing import *  # noqa: F403 (PyTorch's torch.multiprocessing re-exports them)

from .errors import MinitrainError

__all__ = [*_multiprocessing.__all__, "spawn", "ProcessExitedException"]


class ProcessExitedException(MinitrainError, RuntimeError):  # noqa: N818 (PyTorch's name)
    """A process `spawn` started exited with a non-zero code (PyTorch's name)."""


def spawn(fn, args: tuple = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
          start_method: str = "spawn"):  # fmt: skip
    """Run `fn(i, *args)` in `nprocs` new processes, i = 0..nprocs-1, as PyTorch's spawn: with
    `join`, wait for all and raise ProcessExitedException naming the first that failed (its
    exit code; its traceback went to its stderr); without, return the started processes (a
    list, where PyTorch returns a ProcessContext)."""
    context = _multiprocessing.get_context(start_method)
    processes = [
        context.Process(target=fn, args=(rank, *args), daemon=daemon) for rank in range(nprocs)
    ]
    for process in processes:
        process.start()
    if not join:
        return processes
    for process in processes:
        process.join()
    for rank, process in enumerate(processes):
        if process.exitcode != 0:
            raise ProcessExitedException(
                f"spawn: process {rank} of {nprocs} exited with code {process.exitcode}"
            )
    return None
