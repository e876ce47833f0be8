"""Data-parallel scaling over MPI: a training step of an MLP (784-1024-1024-10, SGD, global
batch 512) with DistributedDataParallel, its time per global batch on 1 rank and on 2 ranks
(`mpiexec -n 1` and `mpiexec -n 2`, each rank with cores / ranks BLAS threads and its share of
the batch), and the share of the all-reduce time hidden behind backward: 1 - (step - step
without communication) / (step with the same all-reduce made after backward, not overlapped -
step without communication). Without mpi4py or mpiexec it returns no rows and says why.
Alone: `python -m benchmarks.distributed`."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

import numpy as np

from benchmarks.common import Result

GLOBAL_BATCH = 512
STEPS, ROUNDS = 8, 5
ROOT = pathlib.Path(__file__).resolve().parents[1]


def _mpiexec() -> str | None:
    here = shutil.which("mpiexec", path=str(pathlib.Path(sys.executable).parent))
    return here or shutil.which("mpiexec")


def run() -> list[Result]:
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        print(
            "distributed: skipped, mpi4py is not installed (pip install 'minitrain[distributed]')"
        )
        return []
    mpiexec = _mpiexec()
    if mpiexec is None:
        print("distributed: skipped, no mpiexec found (pip install mpich)")
        return []
    cores = os.cpu_count() or 1
    timings = {}
    for ranks in (1, 2):
        threads = str(max(1, cores // ranks))
        environment = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
        command = [mpiexec, "-n", str(ranks), sys.executable, "-m", "benchmarks.distributed"]
        done = subprocess.run(
            [*command, "--worker"],
            cwd=ROOT,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            print(f"distributed: skipped, mpiexec -n {ranks} failed:\n{done.stderr[-2000:]}")
            return []
        timings[ranks] = json.loads(done.stdout.strip().splitlines()[-1])
    one, two = timings[1], timings[2]
    exposed = two["step"] - two["no_sync"]
    unhidden = two["after_backward"] - two["no_sync"]
    hidden = 1 - exposed / unhidden if unhidden > 0 else float("nan")
    note = (
        f"2 ranks: x{one['step'] / two['step']:.2f} the speed of 1; all-reduce "
        f"{unhidden * 1e3:.1f} ms made after backward, {max(exposed, 0) * 1e3:.1f} ms left "
        f"overlapped: {min(max(hidden, 0), 1):.0%} hidden behind backward ({cores} cores)"
    )
    return [
        Result("distributed: MLP step, 1 rank", one["step"], None, per="global batch"),
        Result("distributed: MLP step, 2 ranks", two["step"], None, per="global batch", note=note),
    ]


def worker() -> None:
    """One rank's timings (rank 0 prints them as JSON): the DDP step, the same step under
    no_sync (no communication), and no_sync then one all-reduce of every gradient."""
    import minitrain as mt
    from minitrain import distributed, nn

    distributed.init_process_group()
    rank, world = distributed.get_rank(), distributed.get_world_size()
    mt.manual_seed(0)
    module = nn.Sequential(
        nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )
    model = nn.parallel.DistributedDataParallel(module)
    optimizer = mt.optim.SGD(module.parameters(), lr=0.01)
    rng = np.random.default_rng(rank)
    share = GLOBAL_BATCH // world
    x = mt.tensor(rng.standard_normal((share, 784), dtype=np.float32))
    y = mt.tensor(rng.integers(0, 10, share))
    loss_fn = nn.CrossEntropyLoss()
    params = list(module.parameters())

    def step():
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    def no_sync():
        optimizer.zero_grad()
        with model.no_sync():
            loss_fn(model(x), y).backward()
        optimizer.step()

    def after_backward():
        optimizer.zero_grad()
        with model.no_sync():
            loss_fn(model(x), y).backward()
        flat = np.concatenate([p.grad.array.reshape(-1) for p in params])
        distributed.all_reduce_buffer(flat).wait()
        flat /= world
        start = 0
        for p in params:
            p.grad.array[...] = flat[start : start + p.array.size].reshape(p.shape)
            start += p.array.size
        optimizer.step()

    best = {}
    for name, fn in (("step", step), ("no_sync", no_sync), ("after_backward", after_backward)):
        fn()  # warm-up
        for _ in range(ROUNDS):
            distributed.barrier()
            start = time.perf_counter()
            for _ in range(STEPS):
                fn()
            elapsed = (time.perf_counter() - start) / STEPS
            best[name] = min(best.get(name, float("inf")), elapsed)
    slowest = [None] * world  # a global batch takes as long as its slowest rank
    distributed.all_gather_object(slowest, best)
    if rank == 0:
        print(json.dumps({k: max(b[k] for b in slowest) for k in best}))
    distributed.destroy_process_group()


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        from benchmarks.common import print_table

        print_table(run())
