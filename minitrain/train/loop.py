"""The training loop: `fit` and `evaluate`, with the checks of their arguments and the
batches' way to the model's device."""

from __future__ import annotations

import math
import numbers
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sized

from .. import backend
from ..autograd.grad_mode import no_grad
from ..errors import ArgumentError, DeviceError, DTypeError, MinitrainError
from ..tensor import Tensor
from .callbacks import Callback, StopTraining
from .checkpoint import Checkpointer, checkpoint_path, trains_on_gpu
from .history import History
from .metrics import resolve_metrics
from .progress import Progress
from .ranks import Ranks

__all__ = ["NonFiniteLossError", "fit", "evaluate"]


class NonFiniteLossError(MinitrainError, FloatingPointError):
    """The loss became nan or inf; training stopped before that step updated any parameter.
    `.history` holds everything recorded up to then."""

    def __init__(self, message: str, history: History):
        super().__init__(message)
        self.history = history


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
    metric_fns = resolve_metrics(metrics, "fit")
    target = _batch_device(model, device, "fit")
    callbacks = list(callbacks)
    for position, callback in enumerate(callbacks):
        if not all(callable(getattr(callback, m, None)) for m in ("on_step_end", "on_epoch_end")):
            raise DTypeError(
                f"fit: callbacks[{position}] must be a Callback (on_step_end and on_epoch_end), "
                f"got {type(callback).__name__}"
            )
    path = checkpoint_path(checkpoint, resume)
    world = Ranks()
    saver = None
    if path is not None:
        pieces = (model, optimizer, scheduler, (train_loader, val_loader), callbacks)
        saver = Checkpointer(path, *pieces, world, seeds_devices=trains_on_gpu(model, target))
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
    bar = Progress(printing, epochs, steps_per_epoch)
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
    metric_fns = resolve_metrics(metrics, "evaluate")
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
