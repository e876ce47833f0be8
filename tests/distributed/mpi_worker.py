"""Run under `mpiexec -n 2` by test_distributed_mpi.py: every scenario of the MPI tests in one
launch (each launch costs seconds), each rank writing what it saw under the folder given as
argv[1] (rank{r}.json, *.npz); the tests compare it with one process. Scenarios that leave the
process group broken (a timeout) run last. `argv[2]` 'crash' runs instead a checkpointed
training in which rank 1 kills itself mid-step, and 'resume' resumes it from its checkpoint
(each a launch of its own)."""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mpi_scenarios as scenarios  # noqa: E402

import minitrain as mt  # noqa: E402
from minitrain import distributed, nn  # noqa: E402
from minitrain.nn.parallel import DistributedDataParallel  # noqa: E402

OUT = sys.argv[1]
MODE = sys.argv[2] if len(sys.argv) > 2 else "all"


def error_of(call, expected=mt.errors.MinitrainError) -> str:
    """The message of the `expected` error `call()` raises ('' if none)."""
    try:
        call()
    except expected as error:
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
        # a refusal on one rank: the other must not wait for it
        "ddp_bad_argument_on_rank_1": error_of(
            lambda: DistributedDataParallel(scenarios.mlp(0), bucket_cap_mb=25 if rank == 0 else 0)
        ),
        "ddp_bad_dtype_on_rank_0": error_of(
            lambda: DistributedDataParallel(
                nn.Linear(3, 2).half() if rank == 0 else nn.Linear(3, 2)
            )
        ),
        "ddp_other_error_on_rank_1": error_of(
            lambda: DistributedDataParallel(
                scenarios.mlp(0) if rank == 0 else scenarios.BrokenModule()
            ),
            Exception,
        ),
        "ddp_different_options": error_of(
            lambda: DistributedDataParallel(scenarios.mlp(0), bucket_cap_mb=1 + rank)
        ),
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


def failed_backward_cases(rank: int) -> dict:
    """Backwards that raise after their first buckets' all-reduce started: on every rank, then
    a second backward without a forward; on rank 0 only, then a second backward without a
    forward (it raises on both), then a step on both."""
    inputs, targets = scenarios.data((6,))
    x, y = scenarios.share(inputs), scenarios.share(targets)
    module = scenarios.mlp(seed=0)
    model = DistributedDataParallel(module, bucket_cap_mb=0.001)
    handles = scenarios.fail_in_backward(model, layer=2)
    loss = scenarios.loss_on(model, x[0], y[0])
    seen = {"every_rank_failed": error_of(lambda: loss.backward(retain_graph=True), ValueError)}
    for handle in handles:
        handle.remove()
    loss.backward()  # the same graph, without a forward
    np.savez(os.path.join(OUT, f"second_backward_rank{rank}.npz"), **scenarios.gradients(module))

    module = scenarios.mlp(seed=0)
    model = DistributedDataParallel(module, bucket_cap_mb=0.001)
    scenarios.loss_on(model, x[0], y[0]).backward()  # .grad: the first step's average
    handles = scenarios.fail_in_backward(model, layer=2) if rank == 0 else []
    loss = scenarios.loss_on(model, x[1], y[1])
    seen["rank_0_failed"] = error_of(
        lambda: loss.backward(retain_graph=True), (ValueError, mt.errors.DistributedError)
    )
    for handle in handles:
        handle.remove()
    # the same code on both ranks: retried without a forward, it would run alone on rank 1
    seen["retry_without_forward"] = error_of(loss.backward)
    np.savez(os.path.join(OUT, f"after_failure_rank{rank}.npz"), **scenarios.gradients(module))
    scenarios.loss_on(model, x[1], y[1]).backward()  # the next step, on every rank
    np.savez(os.path.join(OUT, f"after_recovery_rank{rank}.npz"), **scenarios.gradients(module))

    module = scenarios.mlp(seed=0)
    model = DistributedDataParallel(module, bucket_cap_mb=0.001)
    scenarios.loss_on(model, x[0], y[0]).backward(inputs=list(module.parameters()))
    np.savez(os.path.join(OUT, f"inputs_all_rank{rank}.npz"), **scenarios.gradients(module))
    module.zero_grad()
    last = module[4].weight
    mt.autograd.backward(scenarios.loss_on(model, x[0], y[0]), inputs=[last])
    seen["inputs_one_none_left"] = [n for n, p in module.named_parameters() if p.grad is None]
    np.savez(os.path.join(OUT, f"inputs_one_rank{rank}.npz"), last=last.grad.numpy())
    for param in module.parameters():  # each rank's own .grad: outside the inputs, it stays
        param.grad = mt.full_like(param, rank + 1.0)
    inputs = [last, module[0].bias]
    mt.autograd.backward(scenarios.loss_on(model, x[0], y[0]), inputs=inputs)
    np.savez(os.path.join(OUT, f"inputs_two_rank{rank}.npz"), **scenarios.gradients(module))
    return seen


def owed_backward_cases(rank: int) -> dict:
    """Backwards that end before their first gradient is bucketed (a hook on the loss raises)
    or never run: the ranks must still run the same collectives, and never average what they
    should not."""
    inputs, targets = scenarios.data((6,))
    x, y = scenarios.share(inputs), scenarios.share(targets)
    module = scenarios.mlp(seed=0)
    model = DistributedDataParallel(module, bucket_cap_mb=0.001)
    loss = scenarios.loss_on(model, x[0], y[0])
    if rank == 0:
        loss.register_hook(lambda grad: 1 / 0)
    seen = {"early_fail": error_of(loss.backward, (ZeroDivisionError, mt.errors.DistributedError))}
    module.zero_grad()
    seen["early_fail_next_step"] = error_of(
        lambda: scenarios.loss_on(model, x[1], y[1]).backward(), Exception
    )
    np.savez(os.path.join(OUT, f"early_fail_rank{rank}.npz"), **scenarios.gradients(module))

    # a forward whose output no rank differentiates (an evaluation with grad on), then a step
    module.zero_grad()
    scenarios.loss_on(model, x[2], y[2])
    seen["skipped_everywhere"] = error_of(
        lambda: scenarios.loss_on(model, x[3], y[3]).backward(), Exception
    )
    np.savez(os.path.join(OUT, f"skipped_rank{rank}.npz"), **scenarios.gradients(module))

    # rank 0 runs the same graph's backward twice, rank 1 a second forward: out of step
    module.zero_grad()
    loss = scenarios.loss_on(model, x[4], y[4])
    loss.backward(retain_graph=True)
    seen["out_of_step"] = error_of(
        loss.backward if rank == 0 else lambda: scenarios.loss_on(model, x[5], y[5]).backward(),
        Exception,
    )
    module.zero_grad()  # then the next step on every rank is in step again
    seen["in_step_again"] = error_of(
        lambda: scenarios.loss_on(model, x[6], y[6]).backward(), Exception
    )
    np.savez(os.path.join(OUT, f"in_step_again_rank{rank}.npz"), **scenarios.gradients(module))
    return seen


def crash_case(rank: int) -> dict:
    """Rank 1 kills itself in the middle of step 5's backward; rank 0 must raise, naming it.
    Run under mpiexec -disable-auto-cleanup, whose SIGUSR1 to the survivors is ignored."""
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    distributed.destroy_process_group()
    distributed.init_process_group(timeout=datetime.timedelta(seconds=10))
    clock = {}
    message = error_of(lambda: scenarios.checkpointed_training(OUT, False, 5, clock))
    return {"crash": message, "crash_s": time.monotonic() - clock["backward"]}


def resume_case(rank: int) -> dict:
    """From the crashed run's checkpoint to the end, then the same training uninterrupted."""
    step = mt.load(os.path.join(OUT, "checkpoint.mt"))["step"]
    resumed = scenarios.checkpointed_training(OUT, resume=True)
    uninterrupted = os.path.join(OUT, "uninterrupted")
    os.makedirs(uninterrupted, exist_ok=True)
    whole = scenarios.checkpointed_training(uninterrupted, resume=False)
    np.savez(os.path.join(OUT, f"resumed_rank{rank}.npz"), **resumed)
    np.savez(os.path.join(OUT, f"uninterrupted_rank{rank}.npz"), **whole)
    return {"resumed_from_step": step}


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
    if MODE == "crash":
        seen.update(crash_case(rank))
    elif MODE == "resume":
        seen.update(resume_case(rank))
    else:
        ddp_cases(rank)
        sync_batchnorm_case(rank)
        seen.update(bad_input_cases(rank))
        seen.update(buffers_and_unused_cases(rank))
        seen.update(failed_backward_cases(rank))
        seen.update(owed_backward_cases(rank))
        seen.update(timeout_case(rank))
    with open(os.path.join(OUT, f"rank{rank}.json"), "w") as file:
        json.dump(seen, file)


if __name__ == "__main__":
    main()
