"""The training loop: `fit` and `evaluate`, the `History` they record, progress and plots, and
fit's checkpoints to resume from."""

from __future__ import annotations

import importlib
import importlib.util
import io
import json
import math
import numbers
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field

import numpy as np

from . import backend, distributed
from .errors import ArgumentError, CheckpointError, DeviceError, DTypeError, MinitrainError
from .grad_mode import no_grad
from .io import load, save, write_atomically
from .tensor import Tensor

__all__ = [
    "NonFiniteLossError", "StopTraining", "accuracy", "History", "Callback", "EarlyStopping",
    "fit", "evaluate",
]  # fmt: skip


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


# Callbacks


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
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
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

    With `checkpoint` (a file name), fit saves there, atomically, at the end of every epoch:
    the model's, optimizer's and scheduler's state, the epoch and step, the history so far, the
    state of callbacks that have one (EarlyStopping), and every random generator training draws
    from: minitrain's (dropout, initialisation, shuffling without a seed) and each loader's own
    (`DataLoader(seed=)`). With `resume=True` and that file present, fit restores all of it and
    goes on from the next epoch, so a run killed and resumed records the losses of a run never
    stopped, bit for bit on the CPU; without the file it starts afresh. A checkpoint that does
    not fit (another model's shapes, another optimizer, a scheduler missing or extra, another
    number of processes) is a CheckpointError, raised before anything changes. CuPy's generator
    states cannot be read back, so on a GPU fit seeds them at each epoch's start from
    minitrain's CPU generator (with a checkpoint only). Python's `random` and numpy's global
    generator are not saved: minitrain never draws from them.

    Under mpiexec, once `distributed.init_process_group()` has run, every process calls fit
    alike (each with its shard: a DataLoader over a DistributedSampler, whose `set_epoch` fit
    calls at each epoch's start). The progress bar and printed lines come from rank 0 alone;
    each epoch's training and validation loss and metrics are means over every rank's samples
    (all-reduced), so the epoch rows, and callbacks reading them, agree on every rank, while
    each rank's step rows hold its own losses. Rank 0 alone writes the checkpoint (with every
    rank's generator states and step losses) while the others wait for it; resuming reads
    the same file on every rank, so it must be on a file system they all see.
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
    path = _checkpoint_path(checkpoint, resume)
    world = _World()
    saver = None
    if path is not None:
        pieces = (model, optimizer, scheduler, (train_loader, val_loader), callbacks)
        saver = _Checkpointer(path, *pieces, world, seeds_devices=_on_gpu(model, target))
    history, first_epoch, step, stopped = History(), 0, 0, False
    printing = progress and world.rank == 0
    if saver is not None and resume:
        if world.all_see(path):
            history, first_epoch, step, stopped = saver.resume()
            if printing:
                print(f"fit: resumed from {path!r} after epoch {first_epoch}", flush=True)
        elif printing:
            print(f"fit: no checkpoint at {path!r} yet; training from the start", flush=True)
    if stopped or first_epoch >= epochs:
        if printing:
            done = "stopped early" if stopped else f"has done {first_epoch} epochs"
            print(f"fit: the run in {path!r} {done}; nothing left to train", flush=True)
        return history
    try:
        steps_per_epoch = len(train_loader)
    except TypeError:
        steps_per_epoch = None
    bar = _Progress(printing, epochs, steps_per_epoch)
    start = time.perf_counter() - (history.steps[-1]["seconds"] if history.steps else 0.0)
    try:
        for epoch in range(first_epoch, epochs):
            model.train()
            _set_sampler_epoch(train_loader, epoch)
            if saver is not None:
                saver.seed_devices()
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
            seen, loss_sum, *totals = world.sum([seen, loss_sum, *metric_sums.values()])
            row = {"epoch": epoch, "loss": loss_sum / seen}
            row.update({name: total / seen for name, total in zip(metric_fns, totals, strict=True)})
            if val_loader is not None:
                counts = _evaluation_sums(model, val_loader, loss_fn, metric_fns, target, "fit")
                val_seen, val_loss, *totals = world.sum(counts)
                if val_seen == 0:
                    raise ArgumentError("fit: the validation loader gave no batches")
                row["val_loss"] = val_loss / val_seen
                row.update(
                    {f"val_{n}": t / val_seen for n, t in zip(metric_fns, totals, strict=True)}
                )
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
            stop = None
            try:
                for callback in callbacks:
                    callback.on_epoch_end(epoch, history)
            except StopTraining as reason:
                stop = reason
            if saver is not None:  # last: everything the epoch draws or changes is done
                saver.save(history, epoch + 1, step, stopped=stop is not None)
            if stop is not None:
                raise stop
    except StopTraining as reason:
        if printing:
            print(f"fit: stopped early: {reason}", flush=True)
    finally:
        bar.close()
    return history


def _set_sampler_epoch(loader, epoch: int) -> None:
    """Tell the loader's sampler (a DistributedSampler) which epoch starts, for its shuffle."""
    set_epoch = getattr(getattr(loader, "sampler", None), "set_epoch", None)
    if callable(set_epoch):
        set_epoch(epoch)


def evaluate(
    model,
    loader: Iterable,
    loss_fn: Callable | None = None,
    metrics=("accuracy",),
    device: str | backend.Device | None = None,
):
    """The mean loss (when loss_fn is given) and metrics of `model` over `loader`, in eval mode
    and without recording; the model's mode is restored afterwards. Returns a dict. Batches
    go to `device` as in `fit` (by default the device of the model's parameters). Under
    mpiexec each process evaluates its own loader alone (fit averages over the ranks)."""
    _check_model(model, "evaluate")
    _check_loader(loader, "loader", 1, "evaluate")
    if loss_fn is not None:
        _check_callable(loss_fn, "loss_fn", "evaluate")
    metric_fns = _resolve_metrics(metrics, "evaluate")
    target = _batch_device(model, device, "evaluate")
    seen, loss_sum, *totals = _evaluation_sums(
        model, loader, loss_fn, metric_fns, target, "evaluate"
    )
    if seen == 0:
        raise ArgumentError("evaluate: the loader gave no batches")
    results = {"loss": loss_sum / seen} if loss_fn is not None else {}
    results.update({name: total / seen for name, total in zip(metric_fns, totals, strict=True)})
    return results


def _evaluation_sums(model, loader, loss_fn, metric_fns, target, caller: str) -> list[float]:
    """[samples, loss sum, each metric's sum] of `model` over `loader` (sums of batch means
    weighted by batch sizes), in eval mode without recording; the modes are restored after."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    seen, loss_sum = 0, 0.0
    sums = dict.fromkeys(metric_fns, 0.0)
    try:
        with no_grad():
            for batch in loader:
                inputs, targets = _to_device(_split_batch(batch, caller), target)
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
    return [seen, loss_sum, *sums.values()]


# Processes


class _World:
    """The processes fit trains in: minitrain.distributed's group where one is initialized
    (mpiexec), else a world of one, in which each collective returns its input."""

    def __init__(self) -> None:
        joined = distributed.is_available() and distributed.is_initialized()
        self.rank = distributed.get_rank() if joined else 0
        self.size = distributed.get_world_size() if joined else 1
        self.active = self.size > 1

    def sum(self, values: list[float]) -> list[float]:
        """Each value summed over every rank, in float64, in one all-reduce."""
        if not self.active:
            return values
        buffer = Tensor(np.asarray(values, dtype=np.float64))
        distributed.all_reduce(buffer)
        return buffer.data.tolist()

    def gather(self, payload: bytes) -> list[bytes]:
        """Every rank's `payload`, in rank order, on every rank: the lengths, then the bytes
        padded to the longest."""
        if not self.active:
            return [payload]
        lengths = [Tensor(np.zeros(1, dtype=np.int64)) for _ in range(self.size)]
        distributed.all_gather(lengths, Tensor(np.array([len(payload)], dtype=np.int64)))
        sizes = [int(length.data[0]) for length in lengths]
        padded = np.zeros(max(sizes), dtype=np.uint8)
        padded[: len(payload)] = np.frombuffer(payload, dtype=np.uint8)
        pieces = [Tensor(np.zeros(max(sizes), dtype=np.uint8)) for _ in range(self.size)]
        distributed.all_gather(pieces, Tensor(padded))
        return [piece.data[:size].tobytes() for piece, size in zip(pieces, sizes, strict=True)]

    def all_see(self, path: str) -> bool:
        """Whether the file `path` exists, agreed by every rank: a CheckpointError where only
        some see it (no file system they all share)."""
        exists = os.path.exists(path)
        seen_by = int(self.sum([float(exists)])[0])
        if 0 < seen_by < self.size:
            raise CheckpointError(
                f"fit: the checkpoint {path!r} exists on {seen_by} of the {self.size} ranks; "
                f"resuming needs a file every rank reads (a shared file system)"
            )
        return exists


# Checkpoints

FIT_CHECKPOINT_LAYOUT = 1  # the version of what fit's checkpoint holds (io.save's is the file's)
_CHECKPOINT_KEYS = (
    "layout", "epoch", "step", "stopped", "world_size", "model", "optimizer", "scheduler",
    "history", "callbacks", "ranks",
)  # fmt: skip


def _checkpoint_path(checkpoint, resume) -> str | None:
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


def _on_gpu(model, target: backend.Device | None) -> bool:
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


class _Checkpointer:
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
            "model": {key: value.data.copy() for key, value in self.model.state_dict().items()},
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
