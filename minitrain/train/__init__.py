"""The training loop: `fit` and `evaluate`, the `History` they record, callbacks, progress and
plots, and fit's checkpoints to resume from, one file each in this package."""

from .callbacks import Callback, EarlyStopping, StopTraining
from .history import History
from .loop import NonFiniteLossError, evaluate, fit
from .metrics import accuracy

__all__ = [
    "NonFiniteLossError", "StopTraining", "accuracy", "History", "Callback", "EarlyStopping",
    "fit", "evaluate",
]  # fmt: skip
