"""The metrics fit and evaluate compute per batch and average over samples: `accuracy`, and
any function (output, target) -> float."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from .. import backend
from ..errors import ArgumentError, DTypeError
from ..tensor import Tensor

__all__ = ["accuracy"]


def accuracy(output: Tensor, target) -> float:
    """Fraction of rows whose largest output (class axis 1) is the target class."""
    xp = backend.array_module(output.array)
    labels = target.array if isinstance(target, Tensor) else xp.asarray(target)
    predicted = output.array.argmax(axis=1)
    return float((predicted == labels).mean()) if labels.size else math.nan


METRICS: dict[str, Callable] = {"accuracy": accuracy}
COLUMNS = ("epoch", "loss", "lr", "seconds", "samples_per_s")  # what no metric may be named


def resolve_metrics(metrics, caller: str) -> dict[str, Callable]:
    if metrics is None:
        return {}
    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(metrics, Mapping):
        resolved = dict(metrics)
    else:
        resolved = {}
        for metric in metrics:
            if isinstance(metric, str):
                if metric not in METRICS:
                    raise ArgumentError(
                        f"{caller}: unknown metric {metric!r}; known: {sorted(METRICS)}, or pass "
                        f"a function (output, target) -> float"
                    )
                resolved[metric] = METRICS[metric]
            else:
                resolved[getattr(metric, "__name__", f"metric{len(resolved)}")] = metric
    for name, fn in resolved.items():
        if not callable(fn):
            raise DTypeError(f"{caller}: a metric must be a name or a function, got {fn!r}")
        if name in COLUMNS or str(name).startswith("val_"):
            raise ArgumentError(
                f"{caller}: a metric may not be named {name!r}, a column the history already has"
            )
    return resolved
