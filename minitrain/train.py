"""The training loop: `fit` and `evaluate`, the `History` they record, progress and plots."""

from __future__ import annotations

import importlib
import importlib.util
import io
import math
import numbers
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field

from . import backend
from .errors import ArgumentError, DeviceError, DTypeError, MinitrainError
from .grad_mode import no_grad
from .io import write_atomically
from .tensor import Tensor


class NonFiniteLossError(MinitrainError, FloatingPointError):
    """The loss became nan or inf; training stopped before that step updated any parameter.
    `.history` holds everything recorded up to then."""

    def __init__(self, message: str, history: History):
        super().__init__(message)
        self.history = history


class StopTraining(Exception):  # noqa: N818 (a signal, not an error)
    """Raise from a callback to end training after the current step or epoch."""


# Metrics


def accuracy(output: Tensor, target) -> float:
    """Fraction of rows whose largest output (class axis 1) is the target class."""
    xp = backend.array_module(output.data)
    labels = target.data if isinstance(target, Tensor) else xp.asarray(target)
    predicted = output.data.argmax(axis=1)
    return float((predicted == labels).mean()) if labels.size else math.nan


_METRICS: dict[str, Callable] = {"accuracy": accuracy}
_COLUMNS = ("epoch", "loss", "lr", "seconds", "samples_per_s")  # what no metric may be named


def _resolve_metrics(metrics, caller: str) -> dict[str, Callable]:
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
                if metric not in _METRICS:
                    raise ArgumentError(
                        f"{caller}: unknown metric {metric!r}; known: {sorted(_METRICS)}, or pass "
                        f"a function (output, target) -> float"
                    )
                resolved[metric] = _METRICS[metric]
            else:
                resolved[getattr(metric, "__name__", f"metric{len(resolved)}")] = metric
    for name, fn in resolved.items():
        if not callable(fn):
            raise DTypeError(f"{caller}: a metric must be a name or a function, got {fn!r}")
        if name in _COLUMNS or str(name).startswith("val_"):
            raise ArgumentError(
                f"{caller}: a metric may not be named {name!r}, a column the history already has"
            )
    return resolved


# History


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


# Callbacks


class Callback:
    """Hooks into `fit`; override what you need. Raise StopTraining to end training early."""

    def on_step_end(self, step: int, loss: float, history: History) -> None:
        pass

    def on_epoch_end(self, epoch: int, history: History) -> None:
        pass


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

    def on_epoch_end(self, epoch: int, history: History) -> None:
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


# The loop


def _split_batch(batch, caller: str):
    if not isinstance(batch, (tuple, list)) or len(batch) != 2:
        got = type(batch).__name__
        if isinstance(batch, (tuple, list)):
            got = f"a {got} of {len(batch)} items"
        raise ArgumentError(f"{caller}: each batch must be a pair (inputs, targets), got {got}")
    return batch


def _check_model(model, caller: str) -> None:
    if not callable(model) or not all(hasattr(model, m) for m in ("train", "eval", "modules")):
        raise DTypeError(f"{caller}: model must be a Module, got {type(model).__name__}")


def _check_loader(loader, argument: str, passes: int, caller: str) -> None:
    """Refuse, before any training, a loader that cannot give batches `passes` times."""
    if not isinstance(loader, Iterable):
        raise DTypeError(
            f"{caller}: {argument} must give (inputs, targets) batches (a DataLoader or a list), "
            f"got {type(loader).__name__}"
        )
    if passes > 1 and isinstance(loader, Iterator):
        raise ArgumentError(
            f"{caller}: {argument} is an iterator ({type(loader).__name__}): it gives its batches "
            f"once, but they are needed {passes} times, once per epoch; pass a DataLoader or a list"
        )
    if isinstance(loader, Sized) and len(loader) == 0:
        raise ArgumentError(f"{caller}: {argument} has no batches")


def _check_callable(value, argument: str, caller: str) -> None:
    if not callable(value):
        raise DTypeError(f"{caller}: {argument} must be callable, got {type(value).__name__}")


def _batch_device(model, device, caller: str) -> backend.Device | None:
    """The device `fit` and `evaluate` move each batch to: `device` when given (a model whose
    parameters and buffers are elsewhere is refused), else the one device the model's
    parameters and buffers are on; None (batches left where the loader puts them) for a model
    with none, or spread over several."""
    tensors = [*model.parameters(), *model.buffers()] if hasattr(model, "buffers") else []
    found = sorted({str(t.device) for t in tensors})
    if device is None:
        return backend.device(found[0]) if len(found) == 1 else None
    target = backend.device(device)
    if found and found != [str(target)]:
        raise DeviceError(
            f"{caller}: device is '{target}', but the model's parameters are on "
            f"{', '.join(found)}; move the model first, model.to('{target}'), before building "
            f"its optimizer"
        )
    backend.device_context(target)  # a DeviceError now, before training, where it is missing
    return target


def _to_device(value, target: backend.Device | None):
    """A batch, or part of one, on `target`: Tensors and arrays moved (no copy where they are
    there already), through tuples, lists and dicts; anything else as it is."""
    if target is None:
        return value
    if isinstance(value, Tensor):
        return value.to(target)
    if backend.is_array(value):
        return backend.to_device(value, target)
    if isinstance(value, (tuple, list)):
        moved = [_to_device(item, target) for item in value]
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
            return type(value)(*moved)
        return type(value)(moved)
    if isinstance(value, dict):
        return {key: _to_device(item, target) for key, item in value.items()}
    return value


def _batch_size(inputs) -> int:
    return int(inputs.shape[0]) if hasattr(inputs, "shape") and inputs.shape else 1


def _learning_rate(optimizer) -> float:
    return float(optimizer.param_groups[0]["lr"])


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (IPython's kernel shell is ZMQInteractiveShell)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if hasattr(ipython, "get_ipython") else None
    return type(shell).__name__ == "ZMQInteractiveShell"


class _Progress:
    """A tqdm bar on a terminal or in a notebook (loss and throughput on it), plain lines
    otherwise."""

    def __init__(self, enabled: bool, epochs: int, steps_per_epoch: int | None):
        self.enabled, self.epochs, self.steps_per_epoch = enabled, epochs, steps_per_epoch
        self.bar = None
        notebook = enabled and _in_notebook()
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
        parts = [f"{k}={_fmt(v)}" for k, v in row.items() if k not in ("epoch",)]
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


def _fmt(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def fit(
    model,
    train_loader: Iterable,
    loss_fn: Callable,
    optimizer,
    epochs: int = 1,
    val_loader: Iterable | None = None,
    scheduler=None,
    metrics=("accuracy",),
    progress: bool = True,
    callbacks: Iterable[Callback] = (),
    scheduler_interval: str = "epoch",
    device: str | backend.Device | None = None,
) -> History:
    """Train `model` for `epochs` passes over `train_loader` (batches of (inputs, targets)):
    per step forward, `loss_fn(output, targets)`, backward, `optimizer.step()`; per epoch the
    mean training loss and metrics, then the validation loss and metrics from `val_loader`, and
    `scheduler.step()` (or per step with scheduler_interval='step'). Returns the History.

    Each batch is moved to `device` (its Tensors and arrays, through tuples, lists and dicts;
    no copy where they are there already): by default the device of the model's parameters, so
    a model moved with `model.to('cuda')` trains on batches from a loader of host arrays.

    A nan or inf loss stops training at once, before its backward and step touch any
    parameter, with a NonFiniteLossError naming the epoch and step (its `.history` keeps what
    was recorded). A callback may raise StopTraining to end early; fit then returns normally.
    Every argument is checked before training starts (a loader that is an iterator, which gives
    its batches only once, is refused when it is needed for more than one epoch).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, numbers.Integral):
        raise DTypeError(f"fit: epochs must be a positive int, got {epochs!r}")
    if epochs < 1:
        raise ArgumentError(f"fit: epochs must be a positive int, got {epochs!r}")
    epochs = int(epochs)
    if scheduler_interval not in ("epoch", "step"):
        raise ArgumentError(
            f"fit: scheduler_interval must be 'epoch' or 'step', got {scheduler_interval!r}"
        )
    _check_model(model, "fit")
    _check_loader(train_loader, "train_loader", epochs, "fit")
    if val_loader is not None:
        _check_loader(val_loader, "val_loader", epochs, "fit")
    _check_callable(loss_fn, "loss_fn", "fit")
    if not all(callable(getattr(optimizer, m, None)) for m in ("zero_grad", "step")) or not (
        getattr(optimizer, "param_groups", None)
    ):
        raise DTypeError(
            f"fit: optimizer must be an Optimizer (zero_grad(), step() and param_groups), got "
            f"{type(optimizer).__name__}"
        )
    if scheduler is not None and not callable(getattr(scheduler, "step", None)):
        raise DTypeError(
            f"fit: scheduler must have a step() method, got {type(scheduler).__name__}"
        )
    metric_fns = _resolve_metrics(metrics, "fit")
    target = _batch_device(model, device, "fit")
    callbacks = list(callbacks)
    for position, callback in enumerate(callbacks):
        if not all(callable(getattr(callback, m, None)) for m in ("on_step_end", "on_epoch_end")):
            raise DTypeError(
                f"fit: callbacks[{position}] must be a Callback (on_step_end and on_epoch_end), "
                f"got {type(callback).__name__}"
            )
    history = History()
    try:
        steps_per_epoch = len(train_loader)
    except TypeError:
        steps_per_epoch = None
    bar = _Progress(progress, epochs, steps_per_epoch)
    start, step = time.perf_counter(), 0
    try:
        for epoch in range(epochs):
            model.train()
            bar.start_epoch(epoch)
            epoch_start, seen, loss_sum = time.perf_counter(), 0, 0.0
            metric_sums = dict.fromkeys(metric_fns, 0.0)
            for batch_index, batch in enumerate(train_loader):
                inputs, targets = _to_device(_split_batch(batch, "fit"), target)
                output = model(inputs)
                loss = loss_fn(output, targets)
                value = float(loss.item())
                if not math.isfinite(value):
                    raise NonFiniteLossError(
                        f"fit: the loss is {value} at epoch {epoch + 1}, step {step} (batch "
                        f"{batch_index} of the epoch); training stopped "
                        f"before this step changed any parameter. Lower the learning rate, clip "
                        f"gradients, or look at this batch's inputs.",
                        history,
                    )
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                lr = _learning_rate(optimizer)  # the one this step used, before a scheduler step
                if scheduler is not None and scheduler_interval == "step":
                    scheduler.step()
                size = _batch_size(inputs)
                seen += size
                loss_sum += value * size
                with no_grad():
                    for name, fn in metric_fns.items():
                        metric_sums[name] += fn(output, targets) * size
                history.steps.append(
                    {
                        "step": step,
                        "epoch": epoch,
                        "loss": value,
                        "lr": lr,
                        "seconds": time.perf_counter() - start,
                    }
                )
                bar.step(value, seen / max(time.perf_counter() - epoch_start, 1e-9))
                for callback in callbacks:
                    callback.on_step_end(step, value, history)
                step += 1
            if seen == 0:
                raise ArgumentError("fit: the training loader gave no batches")
            row = {"epoch": epoch, "loss": loss_sum / seen}
            row.update({name: total / seen for name, total in metric_sums.items()})
            if val_loader is not None:
                results = evaluate(model, val_loader, loss_fn, metric_fns, device=target)
                row.update({f"val_{name}": v for name, v in results.items()})
            seconds = time.perf_counter() - epoch_start
            row.update(
                {
                    "lr": lr,  # the one the epoch's last step used
                    "seconds": seconds,
                    "samples_per_s": seen / seconds,
                }
            )
            history.epochs.append(row)
            bar.end_epoch(row)
            if scheduler is not None and scheduler_interval == "epoch":
                scheduler.step()
            for callback in callbacks:
                callback.on_epoch_end(epoch, history)
    except StopTraining as reason:
        if progress:
            print(f"fit: stopped early: {reason}", flush=True)
    finally:
        bar.close()
    return history


def evaluate(
    model,
    loader: Iterable,
    loss_fn: Callable | None = None,
    metrics=("accuracy",),
    device: str | backend.Device | None = None,
):
    """The mean loss (when loss_fn is given) and metrics of `model` over `loader`, in eval mode
    and without recording; the model's mode is restored afterwards. Returns a dict. Batches
    go to `device` as in `fit` (by default the device of the model's parameters)."""
    _check_model(model, "evaluate")
    _check_loader(loader, "loader", 1, "evaluate")
    if loss_fn is not None:
        _check_callable(loss_fn, "loss_fn", "evaluate")
    metric_fns = _resolve_metrics(metrics, "evaluate")
    target = _batch_device(model, device, "evaluate")
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    seen, loss_sum = 0, 0.0
    sums = dict.fromkeys(metric_fns, 0.0)
    try:
        with no_grad():
            for batch in loader:
                inputs, targets = _to_device(_split_batch(batch, "evaluate"), target)
                output = model(inputs)
                size = _batch_size(inputs)
                seen += size
                if loss_fn is not None:
                    loss_sum += float(loss_fn(output, targets).item()) * size
                for name, fn in metric_fns.items():
                    sums[name] += fn(output, targets) * size
    finally:
        for module, mode in modes:
            object.__setattr__(module, "training", mode)
    if seen == 0:
        raise ArgumentError("evaluate: the loader gave no batches")
    results = {"loss": loss_sum / seen} if loss_fn is not None else {}
    results.update({name: total / seen for name, total in sums.items()})
    return results
