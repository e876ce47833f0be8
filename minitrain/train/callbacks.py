"""Callbacks: hooks into fit after each step and each epoch, `EarlyStopping`, and the
`StopTraining` signal a callback raises to end training."""

from __future__ import annotations

from ..errors import ArgumentError
from .history import History

__all__ = ["StopTraining", "Callback", "EarlyStopping"]


class StopTraining(Exception):  # noqa: N818 (a signal, not an error)
    """Raise from a callback to end training after the current step or epoch."""


class Callback:
    """Hooks into `fit`; override what you need. Raise StopTraining to end training early."""

    def on_step_end(self, step: int, loss: float, history: History) -> None:
        """Called after each optimizer step (and a per-step scheduler's step): `step` counts
        steps from 0 over all epochs, `loss` is this step's loss as a float (this rank's, under
        mpiexec), and `history` holds this step's row already. Does nothing unless overridden."""

    def on_epoch_end(self, epoch: int, history: History) -> None:
        """Called after each epoch (`epoch` counts from 0), once `history` holds its row with the
        validation results and a per-epoch scheduler has stepped. Does nothing unless
        overridden."""


class EarlyStopping(Callback):
    """Stop when `monitor` (a per-epoch column, default 'val_loss') has not improved by more
    than min_delta for `patience` epochs; mode 'min' or 'max'."""

    def __init__(
        self, monitor: str = "val_loss", patience: int = 3, min_delta: float = 0.0, mode="min"
    ):
        if mode not in ("min", "max"):
            raise ArgumentError(f"EarlyStopping: mode must be 'min' or 'max', got {mode!r}")
        self.monitor, self.patience, self.min_delta, self.mode = monitor, patience, min_delta, mode
        self.best, self.waited = None, 0

    def state_dict(self) -> dict:
        """The best value so far and the epochs waited since (fit's checkpoints keep them)."""
        return {"best": self.best, "waited": self.waited}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what `state_dict` returned."""
        self.best, self.waited = state_dict["best"], state_dict["waited"]

    def on_epoch_end(self, epoch: int, history: History) -> None:
        """Read the epoch's `monitor` value and raise StopTraining once it has not improved for
        `patience` epochs in a row. Raises KeyError where history has no such column (`val_loss`
        without a validation loader)."""
        value = history[self.monitor][-1]
        sign = 1.0 if self.mode == "min" else -1.0
        if self.best is None or sign * (self.best - value) > self.min_delta:
            self.best, self.waited = value, 0
            return
        self.waited += 1
        if self.waited >= self.patience:
            raise StopTraining(
                f"{self.monitor} has not improved on {self.best:.4g} for {self.patience} epochs"
            )
