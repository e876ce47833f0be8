"""Run under `mpiexec -n 2` by test_distributed_mpi.py: every scenario of the MPI tests in one
launch (each launch costs seconds), each rank writing what it saw under the folder given as
argv[1] (rank{r}.json, *.npz); the tests compare it with one process. Scenarios that leave the
process group broken (a timeout) run last."""

from __future__ import annotations

import datetime
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mpi_scenarios as scenarios  # noqa: E402

import minitrain as mt  # noqa: E402
from minitrain import distributed, nn  # noqa: E402
from minitrain.nn.parallel import DistributedDataParallel  # noqa: E402

OUT = sys.argv[1]


def error_of(call) -> str:
    """The message of the minitrain error `call()` raises ('' if none)."""
    try:
        call()
    except mt.errors.MinitrainError as error:
        return f"{type(error).__name__}: {error}"
    return ""


def ddp_cases(rank: int) -> None:
    inputs, targets = scenarios.data((6,))
    for optimizer, accumulate in scenarios.DDP_CASES:
        module = scenarios.mlp(seed=rank)  # rank 1 differs until DDP broadcasts rank 0's
        model = DistributedDataParallel(module, bucket_cap_mb=0.001)  # several buckets
        params = scenarios.train(
            model,
            module,
            optimizer,
            scenarios.share(inputs),
            scenarios.share(targets),
            accumulate,
        )
        np.savez(os.path.join(OUT, f"ddp_{optimizer}_{accumulate}_rank{rank}.npz"), **params)


def sync_batchnorm_case(rank: int) -> None:
    inputs, targets = scenarios.data((2, 5, 5), steps=3)
    module = nn.SyncBatchNorm.convert_sync_batchnorm(scenarios.conv_bn(seed=rank))
    model = DistributedDataParallel(module)
    # the first step's outputs and input gradients, gathered in rank order
    x = mt.tensor(scenarios.share(inputs)[0], requires_grad=True)
    out = model(x)
    ((out - mt.tensor(scenarios.share(targets)[0])) ** 2).mean().backward()
    gathered = {}
    for name, tensor in (("out", out.detach()), ("x_grad", x.grad)):
        parts = [mt.zeros_like(tensor) for _ in range(distributed.get_world_size())]
        distributed.all_gather(parts, tensor)
        gathered[name] = np.concatenate([p.numpy() for p in parts])
    gathered.update({f"grad.{n}": p.grad.numpy() for n, p in module.named_parameters()})
    model.zero_grad()
    # then the training steps, from the same start
    module = nn.SyncBatchNorm.convert_sync_batchnorm(scenarios.conv_bn(seed=rank))
    model = DistributedDataParallel(module)
    params = scenarios.train(
        model, module, "sgd", scenarios.share(inputs), scenarios.share(targets)
    )
    buffers = {n: b.numpy().copy() for n, b in module.named_buffers()}
    np.savez(os.path.join(OUT, f"syncbn_rank{rank}.npz"), **gathered, **params, **buffers)


def bad_input_cases(rank: int) -> dict:
    """Ranks that disagree: every rank must raise (not hang), and the group stays usable."""
    seen = {
        "all_reduce_shapes": error_of(lambda: distributed.all_reduce(mt.zeros(3, 4 + rank))),
        "broadcast_src": error_of(lambda: distributed.broadcast(mt.zeros(2), src=rank)),
        "all_gather_dtype": error_of(
            lambda: distributed.all_gather(
                [mt.zeros(2, dtype=mt.float32 if rank == 0 else mt.float64) for _ in range(2)],
                mt.zeros(2, dtype=mt.float32 if rank == 0 else mt.float64),
            )
        ),
        "collective_kinds": error_of(
            lambda: distributed.barrier() if rank == 0 else distributed.all_reduce(mt.zeros(2))
        ),
        "ddp_shapes": error_of(
            lambda: DistributedDataParallel(
                nn.Sequential(nn.Linear(4, 5 + rank), nn.Tanh(), nn.Linear(5 + rank, 2))
            )
        ),
        "ddp_count": error_of(
            lambda: DistributedDataParallel(
                nn.Sequential(*[nn.Linear(3, 3) for _ in range(1 + rank)])
            )
        ),
        # rank 1 froze a bias: its buckets would hold other parameters than rank 0's
        "ddp_requires_grad": error_of(
            lambda: DistributedDataParallel(
                nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 2)).requires_grad_(True)
                if rank == 0
                else nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 2).requires_grad_(False))
            )
        ),
    }
    total = mt.ones(2)
    distributed.all_reduce(total)
    seen["usable_after"] = total.numpy().tolist()
    return seen


def buffers_and_unused_cases(rank: int) -> dict:
    """What each rank holds where its own data made it differ from the other: BatchNorm's
    running statistics at an evaluation right after a training step, and the gradient of a
    parameter used only under no_sync (find_unused_parameters=True)."""
    mt.manual_seed(0)
    module = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4)).double()
    model = DistributedDataParallel(module)
    data = np.random.default_rng(rank).standard_normal((6, 3)) * (1 + rank)
    model(mt.tensor(data)).sum().backward()  # each rank's running statistics its own
    model.eval()
    with mt.no_grad():
        model(mt.tensor(data))  # as PyTorch's: rank 0's buffers first (the last forward synced)
    seen = {"running_mean_at_eval": module[1].running_mean.numpy().tolist()}

    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.always, self.sometimes = nn.Linear(3, 1), nn.Linear(3, 1)

        def forward(self, x, both):
            out = self.always(x)
            return out + self.sometimes(x) if both else out

    mt.manual_seed(0)
    heads = TwoHeads().double()
    model = DistributedDataParallel(heads, find_unused_parameters=True)
    with model.no_sync():
        model(mt.tensor(data), both=True).sum().backward()
    model(mt.tensor(data), both=False).sum().backward()
    seen["no_sync_only_grad"] = heads.sometimes.weight.grad.numpy().tolist()
    return seen


def timeout_case(rank: int) -> dict:
    """Rank 1 never joins rank 0's all_reduce: rank 0 raises after the group's timeout."""
    distributed.destroy_process_group()
    distributed.init_process_group(timeout=datetime.timedelta(seconds=1))
    if rank == 1:
        time.sleep(1.5)
        return {}
    start = time.monotonic()
    message = error_of(lambda: distributed.all_reduce(mt.ones(3)))
    return {"timeout": message, "timeout_s": time.monotonic() - start}


def main() -> None:
    distributed.init_process_group(backend="mpi", timeout=datetime.timedelta(seconds=30))
    rank = distributed.get_rank()
    seen = {"world_size": distributed.get_world_size()}
    ddp_cases(rank)
    sync_batchnorm_case(rank)
    seen.update(bad_input_cases(rank))
    seen.update(buffers_and_unused_cases(rank))
    seen.update(timeout_case(rank))
    with open(os.path.join(OUT, f"rank{rank}.json"), "w") as file:
        json.dump(seen, file)


if __name__ == "__main__":
    main()
