"""fit's checkpoints: everything training depends on saved to one file each epoch (model,
optimizer, scheduler, history, callbacks, every random generator, on every rank) and restored
exactly, or refused before anything changes."""

from __future__ import annotations

import json
import os

import numpy as np

from .. import backend
from ..errors import ArgumentError, CheckpointError, DTypeError, MinitrainError
from ..io import load, save
from .history import History

__all__ = ["Checkpointer", "checkpoint_path", "trains_on_gpu"]

FIT_CHECKPOINT_LAYOUT = 1  # the version of what fit's checkpoint holds (io.save's is the file's)
_CHECKPOINT_KEYS = (
    "layout", "epoch", "step", "stopped", "world_size", "model", "optimizer", "scheduler",
    "history", "callbacks", "ranks",
)  # fmt: skip


def checkpoint_path(checkpoint, resume) -> str | None:
    """fit's checkpoint argument as a file name (None without one), checked with `resume`."""
    if not isinstance(resume, bool):
        raise DTypeError(f"fit: resume must be True or False, got {resume!r}")
    if checkpoint is None:
        if resume:
            raise ArgumentError("fit: resume=True needs checkpoint=, the file to resume from")
        return None
    if not isinstance(checkpoint, (str, os.PathLike)):
        raise DTypeError(
            f"fit: checkpoint must be a file name (str or os.PathLike), got "
            f"{type(checkpoint).__name__}"
        )
    path = os.fsdecode(checkpoint)
    if not path or path.endswith(("/", os.sep)) or os.path.isdir(path):
        raise ArgumentError(
            f"fit: checkpoint {path!r} names a directory; give a file, e.g. 'runs/fit.npz'"
        )
    return path


def trains_on_gpu(model, target: backend.Device | None) -> bool:
    tensors = [*model.parameters(), *model.buffers()] if hasattr(model, "buffers") else []
    devices = {t.device.type for t in tensors} | ({target.type} if target is not None else set())
    return "cuda" in devices


def _own_generator(loader) -> np.random.Generator | None:
    """The loader's own generator (a DataLoader with a seed), None where it draws from
    minitrain's."""
    generator = getattr(loader, "generator", None)
    return generator if isinstance(generator, np.random.Generator) else None


def _stateful(callbacks: list) -> list:
    return [c for c in callbacks if callable(getattr(c, "state_dict", None))]


class Checkpointer:
    """Saves everything fit's training depends on to one file each epoch, and restores it."""

    def __init__(
        self, path, model, optimizer, scheduler, loaders, callbacks, world, seeds_devices: bool
    ) -> None:
        self.path, self.model, self.optimizer, self.scheduler = path, model, optimizer, scheduler
        self.loaders, self.callbacks, self.world = loaders, _stateful(callbacks), world
        self.seeds_devices = seeds_devices  # the model trains on a GPU
        directory = os.path.dirname(os.path.abspath(path))
        if world.rank == 0 and not os.path.isdir(directory):
            os.makedirs(directory, exist_ok=True)

    def seed_devices(self) -> None:
        """Seed every GPU's generator from minitrain's CPU one (whose state is saved), where
        the model trains on a GPU: CuPy's generator states cannot be read back."""
        if self.seeds_devices:
            backend.seed_cuda(int(backend.generator().integers(2**63)))

    def random_state(self) -> dict:
        return {
            "minitrain": backend.generator().bit_generator.state,
            "loaders": [
                None if generator is None else generator.bit_generator.state
                for generator in map(_own_generator, self.loaders)
            ],
        }

    def save(self, history: History, epoch: int, step: int, stopped: bool) -> None:
        """Write the state after `epoch` epochs: rank 0 writes, with every rank's generator
        states and step losses gathered, while the others wait; a rank 0 that cannot write
        makes every rank raise."""
        ranks = [{"random": self.random_state(), "step_losses": None}]
        if self.world.size > 1:
            mine = {"random": ranks[0]["random"], "step_losses": [r["loss"] for r in history.steps]}
            payloads = self.world.gather(json.dumps(mine).encode())
            ranks += [json.loads(payload) for payload in payloads[1:]]
        error = None
        if self.world.rank == 0:
            state = {
                "layout": FIT_CHECKPOINT_LAYOUT,
                "epoch": epoch,
                "step": step,
                "stopped": stopped,
                "world_size": self.world.size,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
                "history": history.to_dict(),
                "callbacks": [[type(c).__name__, c.state_dict()] for c in self.callbacks],
                "ranks": ranks,
            }
            try:
                save(state, self.path)
            except (MinitrainError, OSError) as exc:
                error = exc
        failed = self.world.sum([float(error is not None)])[0]  # the barrier: rank 0 wrote
        if error is not None:
            raise error
        if failed:
            raise CheckpointError(
                f"fit: rank 0 could not write the checkpoint {self.path!r}; its error says why"
            )

    def resume(self) -> tuple[History, int, int, bool]:
        """Restore the saved state: (history, epochs done, step, stopped). On any rank's
        error nothing changes and every rank raises."""
        error = None
        try:
            result = self._restore()
        except (CheckpointError, OSError) as exc:
            error = exc
        failed = int(self.world.sum([float(error is not None)])[0])
        if error is not None:
            raise error
        if failed:
            raise CheckpointError(
                f"fit: resuming from {self.path!r} failed on {failed} other rank(s); their "
                f"error says why"
            )
        return result

    def _restore(self) -> tuple[History, int, int, bool]:
        try:
            state = load(self.path)
        except CheckpointError as exc:
            raise CheckpointError(f"fit: cannot resume from {self.path!r}: {exc}") from exc
        self._check(state)
        mine = state["ranks"][self.world.rank]
        snapshot = {
            "model": {key: value.array.copy() for key, value in self.model.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "callbacks": [[type(c).__name__, c.state_dict()] for c in self.callbacks],
        }
        random = self.random_state()
        try:
            self._apply(state, mine["random"])
        except (MinitrainError, KeyError, ValueError, TypeError) as exc:
            self._apply(snapshot, random)
            raise CheckpointError(
                f"fit: the checkpoint {self.path!r} does not fit this training: {exc}"
            ) from exc
        saved = state["history"]
        history = History([dict(r) for r in saved["steps"]], [dict(r) for r in saved["epochs"]])
        if mine["step_losses"] is not None:  # another rank's own losses
            for row, loss in zip(history.steps, mine["step_losses"], strict=True):
                row["loss"] = loss
        return history, state["epoch"], state["step"], state["stopped"]

    def _check(self, state) -> None:
        """Refuse, before anything changes, a checkpoint fit did not write or that does not
        fit this run's pieces."""
        name = self.path
        if not isinstance(state, dict) or any(key not in state for key in _CHECKPOINT_KEYS):
            keys = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
            raise CheckpointError(
                f"fit: {name!r} is a checkpoint, but not one fit wrote (it holds {keys}); fit "
                f"resumes only from its own checkpoint= files"
            )
        if state["layout"] != FIT_CHECKPOINT_LAYOUT:
            raise CheckpointError(
                f"fit: {name!r} has fit's checkpoint layout {state['layout']!r}; this minitrain "
                f"reads layout {FIT_CHECKPOINT_LAYOUT}"
            )
        if state["world_size"] != self.world.size or len(state["ranks"]) != self.world.size:
            raise CheckpointError(
                f"fit: {name!r} was written by a run on {state['world_size']} processes, this "
                f"one has {self.world.size}; an exact resume needs the same number"
            )
        if (state["scheduler"] is None) != (self.scheduler is None):
            has = "has no scheduler's state" if state["scheduler"] is None else "has a scheduler's"
            given = "scheduler=None" if self.scheduler is None else "a scheduler"
            raise CheckpointError(f"fit: {name!r} {has}, but fit got {given}")
        saved = [entry[0] for entry in state["callbacks"]]
        own = [type(c).__name__ for c in self.callbacks]
        if saved != own:
            raise CheckpointError(
                f"fit: {name!r} holds the state of the callbacks {saved}, this run's callbacks "
                f"with a state are {own}"
            )

    def _apply(self, state: dict, random: dict) -> None:
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        for callback, (_, callback_state) in zip(self.callbacks, state["callbacks"], strict=True):
            callback.load_state_dict(callback_state)
        saved_loaders = random["loaders"]
        generators = [_own_generator(loader) for loader in self.loaders]
        for which, generator, saved in zip(
            ("train", "val"), generators, saved_loaders, strict=True
        ):
            if (generator is None) != (saved is None):
                has = "its own generator" if saved is not None else "minitrain's generator"
                raise CheckpointError(
                    f"the {which} loader shuffled with {has} when the checkpoint was written "
                    f"(DataLoader(seed=) gives it one), and not in this run"
                )
        backend.generator().bit_generator.state = random["minitrain"]
        for generator, saved in zip(generators, saved_loaders, strict=True):
            if generator is not None:
                generator.bit_generator.state = saved
