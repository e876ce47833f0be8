"""fit's progress: a tqdm bar on a terminal or in a notebook, plain lines otherwise."""

from __future__ import annotations

import importlib
import importlib.util
import sys

__all__ = ["Progress"]


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (IPython's kernel shell is ZMQInteractiveShell)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if hasattr(ipython, "get_ipython") else None
    return type(shell).__name__ == "ZMQInteractiveShell"


class Progress:
    """A tqdm bar on a terminal or in a notebook (loss and throughput on it), plain lines
    otherwise."""

    def __init__(self, enabled: bool, epochs: int, steps_per_epoch: int | None):
        self.enabled, self.epochs, self.steps_per_epoch = enabled, epochs, steps_per_epoch
        self.bar = None
        notebook = enabled and in_notebook()
        self.interactive = enabled and (sys.stderr.isatty() or notebook)
        if self.interactive:
            try:
                import tqdm
            except ImportError:
                self.interactive = False
            else:
                # tqdm's notebook widget needs ipywidgets; without it the text bar works there
                widgets = notebook and importlib.util.find_spec("ipywidgets") is not None
                self.tqdm = importlib.import_module("tqdm.notebook").tqdm if widgets else tqdm.tqdm

    def start_epoch(self, epoch: int) -> None:
        if self.interactive:
            self.bar = self.tqdm(
                total=self.steps_per_epoch,
                desc=f"epoch {epoch + 1}/{self.epochs}",
                unit="step",
                leave=True,
                dynamic_ncols=True,
            )

    def step(self, loss: float, samples_per_s: float) -> None:
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.4f}", samples_s=f"{samples_per_s:,.0f}")
            self.bar.update(1)

    def end_epoch(self, row: dict) -> None:
        parts = [f"{k}={fmt(v)}" for k, v in row.items() if k not in ("epoch",)]
        line = f"epoch {row['epoch'] + 1}/{self.epochs}: " + " ".join(parts)
        if self.bar is not None:
            self.bar.set_postfix_str(" ".join(parts[:4]))
            self.bar.close()
            self.bar = None
        elif self.enabled:
            print(line, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def fmt(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
