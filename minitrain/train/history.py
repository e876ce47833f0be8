"""`History`: what fit records, per step and per epoch, and its curves drawn."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass, field

from ..io import write_atomically

__all__ = ["History"]


@dataclass
class History:
    """What training recorded: one row per optimizer step (`steps`: step, epoch, loss, the lr
    that step used, seconds since the start) and one per epoch (`epochs`: epoch, loss, the
    metrics, and with a validation loader val_loss and val_<metric>, the lr of its last step,
    seconds, samples_per_s)."""

    steps: list[dict] = field(default_factory=list)
    epochs: list[dict] = field(default_factory=list)

    def __getitem__(self, key: str) -> list:
        """The per-epoch values of one column: `history['val_accuracy']`."""
        if not self.epochs or key not in self.epochs[-1]:
            known = sorted(self.epochs[-1]) if self.epochs else []
            raise KeyError(f"History has no per-epoch column {key!r}; it has {known}")
        return [row.get(key) for row in self.epochs]

    def to_dict(self) -> dict:
        """The recorded rows as plain data, copied: `{'steps': [...], 'epochs': [...]}`."""
        return {"steps": [dict(r) for r in self.steps], "epochs": [dict(r) for r in self.epochs]}

    def plot(self, path: str | os.PathLike | None = None):
        """The loss curves (per step, and per epoch with validation) and the metric curves.

        With `path`, written there atomically as an image (PNG, or any format matplotlib knows by
        the suffix) and the path is returned; without, the matplotlib Figure is returned (a
        notebook shows it). Needs matplotlib; leaves pyplot and its backend alone.
        """
        try:
            from matplotlib.figure import Figure
        except ImportError as exc:
            raise ImportError(
                "History.plot needs matplotlib: pip install 'minitrain[examples]'"
            ) from exc
        metric_names = [
            k
            for k in (self.epochs[-1] if self.epochs else {})
            if k not in ("epoch", "loss", "val_loss", "lr", "seconds", "samples_per_s")
            and not k.startswith("val_")
        ]
        columns = 2 if metric_names else 1
        figure = Figure(figsize=(6 * columns, 4))
        axes = figure.subplots(1, columns, squeeze=False)
        ax = axes[0][0]
        if self.steps:
            per_epoch = max(1, len(self.steps) // max(1, len(self.epochs)))
            x = [(r["step"] + 1) / per_epoch for r in self.steps]
            ax.plot(x, [r["loss"] for r in self.steps], alpha=0.3, label="train (per step)")
        epochs = [r["epoch"] + 1 for r in self.epochs]
        ax.plot(epochs, self["loss"] if self.epochs else [], "o-", label="train")
        if self.epochs and "val_loss" in self.epochs[-1]:
            ax.plot(epochs, self["val_loss"], "o-", label="validation")
        ax.set(xlabel="epoch", ylabel="loss", title="loss")
        ax.legend()
        if metric_names:
            ax = axes[0][1]
            for name in metric_names:
                ax.plot(epochs, self[name], "o-", label=f"train {name}")
                if f"val_{name}" in self.epochs[-1]:
                    ax.plot(epochs, self[f"val_{name}"], "o-", label=f"validation {name}")
            ax.set(xlabel="epoch", title=", ".join(metric_names))
            ax.legend()
        figure.tight_layout()
        if path is None:
            return figure
        path = os.fspath(path)
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        image = io.BytesIO()
        figure.savefig(image, dpi=110, format=os.path.splitext(path)[1].lstrip(".") or "png")
        write_atomically(path, lambda file: file.write(image.getvalue()), caller="History.plot")
        return path
