"""Two processes under `mpiexec -n 2` (mpi_worker.py runs every scenario in one launch) against
one process: DistributedDataParallel on the global batch split over 2 ranks equals one process
on the whole batch after 10 steps (SGD and Adam, with and without no_sync accumulation),
SyncBatchNorm equals BatchNorm on the whole batch, and ranks that disagree raise instead of
hanging. Skipped, with the reason, where mpi4py or mpiexec is missing."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import mpi_scenarios as scenarios
import numpy as np
import pytest

import minitrain as mt

pytest.importorskip("mpi4py", reason="MPI tests need mpi4py: pip install 'minitrain[distributed]'")

HERE = pathlib.Path(__file__).resolve().parent
MPIEXEC = shutil.which("mpiexec", path=str(pathlib.Path(sys.executable).parent)) or shutil.which(
    "mpiexec"
)
LAUNCH_TIMEOUT_S = 120  # the worker needs a few seconds; a hang fails the tests instead

pytestmark = pytest.mark.skipif(
    MPIEXEC is None, reason="MPI tests need mpiexec: pip install 'minitrain[distributed]'"
)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> pathlib.Path:
    """The folder where the two ranks of one mpi_worker.py launch left what they saw."""
    out = tmp_path_factory.mktemp("mpi")
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    command = [MPIEXEC, "-n", "2", sys.executable, str(HERE / "mpi_worker.py"), str(out)]
    try:
        done = subprocess.run(
            command,
            env=environment,
            capture_output=True,
            text=True,
            timeout=LAUNCH_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(
            f"mpiexec -n 2 mpi_worker.py hung for {LAUNCH_TIMEOUT_S} s:\n{expired.stdout}\n"
            f"{expired.stderr}"
        )
    assert done.returncode == 0, f"the MPI worker failed:\n{done.stdout}\n{done.stderr}"
    return out


def seen(run: pathlib.Path, rank: int) -> dict:
    return json.loads((run / f"rank{rank}.json").read_text())


@pytest.mark.parametrize("optimizer, accumulate", scenarios.DDP_CASES)
def test_ddp_on_two_ranks_equals_one_process_on_the_global_batch(run, optimizer, accumulate):
    inputs, targets = scenarios.data((6,))
    module = scenarios.mlp(seed=0)  # rank 0's model: DDP broadcast it to rank 1
    expected = scenarios.train(module, module, optimizer, inputs, targets)
    start = dict(scenarios.mlp(seed=0).named_parameters())
    for rank in (0, 1):
        found = np.load(run / f"ddp_{optimizer}_{accumulate}_rank{rank}.npz")
        assert sorted(found.files) == sorted(expected)
        for name, value in expected.items():
            np.testing.assert_allclose(found[name], value, rtol=1e-12, atol=1e-12, err_msg=name)
            # and training moved them: the comparison is not of two untouched models
            assert np.abs(value - start[name].numpy()).max() > 1e-3


def test_sync_batchnorm_on_two_ranks_equals_batchnorm_on_the_whole_batch(run):
    inputs, targets = scenarios.data((2, 5, 5), steps=3)
    found = np.load(run / "syncbn_rank0.npz")
    module = scenarios.conv_bn(seed=0)
    x = mt.tensor(inputs[0], requires_grad=True)
    out = module(x)
    ((out - mt.tensor(targets[0])) ** 2).mean().backward()
    np.testing.assert_allclose(found["out"], out.numpy(), rtol=1e-12, atol=1e-12)
    # each rank's loss is the mean over its half of the batch: twice the whole batch's share
    np.testing.assert_allclose(found["x_grad"] / 2, x.grad.numpy(), rtol=1e-10, atol=1e-13)
    for name, param in module.named_parameters():
        np.testing.assert_allclose(
            found[f"grad.{name}"], param.grad.numpy(), rtol=1e-10, atol=1e-13, err_msg=name
        )
    module = scenarios.conv_bn(seed=0)
    expected = scenarios.train(module, module, "sgd", inputs, targets)
    expected.update({name: b.numpy() for name, b in module.named_buffers()})
    for name, value in expected.items():
        np.testing.assert_allclose(found[name], value, rtol=1e-10, atol=1e-12, err_msg=name)
    assert int(found["1.num_batches_tracked"]) == 3


@pytest.mark.parametrize(
    "case, words",
    [
        ("all_reduce_shapes", ["all_reduce", "(3, 4)", "(3, 5)", "rank 1"]),
        ("broadcast_src", ["broadcast(src=0)", "broadcast(src=1)"]),
        ("all_gather_dtype", ["all_gather", "float32", "float64"]),
        ("collective_kinds", ["rank 0 called barrier", "rank 1 called all_reduce"]),
        ("ddp_shapes", ["DistributedDataParallel", "parameter '0.weight'", "(6, 4)", "(5, 4)"]),
        ("ddp_count", ["DistributedDataParallel", "rank 1 has 4", "rank 0 has 2", "'1.weight'"]),
        ("ddp_requires_grad", ["parameter '1.weight'", "requires_grad=False on rank 1"]),
    ],
)
def test_ranks_that_disagree_raise_on_every_rank(run, case, words):
    for rank in (0, 1):
        message = seen(run, rank)[case]
        assert message.startswith("DistributedError"), message
        for word in words:
            assert word in message, (rank, message)


def test_the_group_still_works_after_the_ranks_disagreed(run):
    for rank in (0, 1):
        assert seen(run, rank)["world_size"] == 2
        assert seen(run, rank)["usable_after"] == [2.0, 2.0]


def test_an_evaluation_after_a_synced_step_starts_from_rank_0s_buffers(run):
    # as PyTorch's: the forward after one that set up a synced backward broadcasts the buffers
    np.testing.assert_array_equal(
        seen(run, 1)["running_mean_at_eval"], seen(run, 0)["running_mean_at_eval"]
    )


def test_a_parameter_used_only_under_no_sync_is_averaged_with_find_unused_parameters(run):
    # as PyTorch's: a parameter used in the no_sync backwards counts as used, so every rank
    # takes the average of the ranks' accumulated gradients, not its own
    np.testing.assert_array_equal(
        seen(run, 1)["no_sync_only_grad"], seen(run, 0)["no_sync_only_grad"]
    )


def test_a_rank_left_alone_in_a_collective_times_out(run):
    found = seen(run, 0)
    assert found["timeout"].startswith("DistributedError: all_reduce: rank 0 waited 1 s")
    assert 1.0 <= found["timeout_s"] < 5.0
