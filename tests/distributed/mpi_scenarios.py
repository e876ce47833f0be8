"""What the MPI tests run, shared by the worker under mpiexec (mpi_worker.py) and by the tests'
one-process references: the models, the data, and a training loop that runs either as one
process on the global batch or as one rank of DistributedDataParallel on its share."""

from __future__ import annotations

import contextlib
import os
import signal
import time

import numpy as np

import minitrain as mt
from minitrain import distributed, nn

STEPS = 10
GLOBAL_BATCH = 8
OPTIMIZERS = {
    "sgd": lambda params: mt.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda params: mt.optim.Adam(params, lr=0.01),
}
# (optimizer, gradient accumulation steps per optimizer step)
DDP_CASES = [("sgd", 1), ("adam", 1), ("sgd", 2), ("adam", 2)]


def mlp(seed: int) -> nn.Module:
    """A float64 MLP whose weights depend on `seed` (ranks built differently: the broadcast at
    construction must make them rank 0's)."""
    mt.manual_seed(seed)
    return nn.Sequential(
        nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3)
    ).double()


class BrokenModule(nn.Module):
    """A module with a bug: listing its parameters raises a RuntimeError, none of minitrain's."""

    def named_parameters(self, *args, **kwargs):
        raise RuntimeError("a bug in the user's module")


def conv_bn(seed: int) -> nn.Module:
    """A float64 conv net with batch norm (BatchNorm2d and BatchNorm1d)."""
    mt.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(4 * 5 * 5, 6),
        nn.BatchNorm1d(6),
        nn.Tanh(),
        nn.Linear(6, 3),
    ).double()


def data(shape: tuple, steps: int = STEPS) -> tuple[np.ndarray, np.ndarray]:
    """Inputs (steps, GLOBAL_BATCH, *shape) and regression targets (steps, GLOBAL_BATCH, 3)."""
    rng = np.random.default_rng(123)
    inputs = rng.standard_normal((steps, GLOBAL_BATCH, *shape))
    targets = rng.standard_normal((steps, GLOBAL_BATCH, 3))
    return inputs, targets


def train(model, module, optimizer_name: str, inputs, targets, accumulate: int = 1):
    """Train `model` (the module itself, or a DistributedDataParallel around `module`) one
    optimizer step per row of `inputs`: the row is this process's share of the global batch,
    split in `accumulate` micro-batches whose gradients add up (no_sync on all but the last),
    each loss the micro-batch's mean squared error divided by `accumulate`. Returns the
    parameters after the last step, by name."""
    optimizer = OPTIMIZERS[optimizer_name](module.parameters())
    for x, y in zip(inputs, targets, strict=True):
        optimizer.zero_grad()
        parts = list(zip(np.array_split(x, accumulate), np.array_split(y, accumulate), strict=True))
        for index, (x_part, y_part) in enumerate(parts):
            last = index == len(parts) - 1
            if hasattr(model, "no_sync") and not last:
                sync = model.no_sync()
            else:
                sync = contextlib.nullcontext()
            with sync:
                loss = ((model(mt.tensor(x_part)) - mt.tensor(y_part)) ** 2).mean() / accumulate
            loss.backward()
        optimizer.step()
    return {name: p.numpy().copy() for name, p in module.named_parameters()}


def share(array: np.ndarray) -> np.ndarray:
    """This rank's share of the global batch (axis 1 of (steps, batch, ...))."""
    rank, world = distributed.get_rank(), distributed.get_world_size()
    size = array.shape[1] // world
    return array[:, rank * size : (rank + 1) * size]


def fail_in_backward(model, layer: int):
    """Make the next backward through `model`'s `layer` raise a ValueError there, once: after
    the later layers' gradients were bucketed (and their all-reduce started), before the
    earlier ones. Returns the list of the tensor hooks' handles, to take them off."""
    handles = []

    def fail(grad):
        raise ValueError("backward failed on purpose")

    def watch(module, args, out):
        handles.append(out.register_hook(fail))

    forward_handle = model.module[layer].register_forward_hook(watch)
    handles.append(forward_handle)
    return handles


def loss_on(model, x: np.ndarray, y: np.ndarray):
    return ((model(mt.tensor(x)) - mt.tensor(y)) ** 2).mean()


def gradients(module) -> dict:
    return {
        name: None if p.grad is None else p.grad.numpy().copy()
        for name, p in module.named_parameters()
    }


def kill_in_backward(tensor) -> None:
    """This process kills itself (SIGKILL) when the backward reaches `tensor`."""
    tensor.register_hook(lambda grad: os.kill(os.getpid(), signal.SIGKILL))


def checkpointed_training(
    out: str, resume: bool, kill_at: int | None = None, clock: dict | None = None
) -> dict:
    """Train the MLP as DistributedDataParallel (SGD with momentum), rank 0 saving the model's
    and the optimizer's state to out/checkpoint.mt after every step; `resume`: start from that
    checkpoint; `kill_at`: rank 1 kills itself (SIGKILL) in the middle of that step's backward.
    `clock["backward"]`: when the last backward began. Returns the parameters after the last
    step."""
    rank = distributed.get_rank()
    inputs, targets = data((6,))
    module = mlp(seed=0)
    optimizer = OPTIMIZERS["sgd"](module.parameters())
    path = os.path.join(out, "checkpoint.mt")
    start = 0
    if resume:
        state = mt.load(path)
        module.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["step"]
    model = nn.parallel.DistributedDataParallel(module, bucket_cap_mb=0.001)
    x_share, y_share = share(inputs), share(targets)
    for step in range(start, STEPS):
        optimizer.zero_grad()
        if step == kill_at and rank == 1:  # after the last layer's bucket started
            module[2].register_forward_hook(lambda m, a, out: kill_in_backward(out))
        loss = loss_on(model, x_share[step], y_share[step])
        if clock is not None:
            clock["backward"] = time.monotonic()
        loss.backward()
        optimizer.step()
        if rank == 0:
            state = {"model": module.state_dict(), "optimizer": optimizer.state_dict()}
            mt.save({**state, "step": step + 1}, path)
    return {name: p.numpy().copy() for name, p in module.named_parameters()}
