"""Two processes under `mpiexec -n 2` (mpi_worker.py runs every scenario in one launch) against
one process: DistributedDataParallel on the global batch split over 2 ranks equals one process
on the whole batch after 10 steps (SGD and Adam, with and without no_sync accumulation),
SyncBatchNorm equals BatchNorm on the whole batch, and ranks that disagree raise instead of
hanging. Skipped, with the reason, where mpi4py or mpiexec is missing."""

from __future__ import annotations

import json
import os
import pathlib
import re
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


def launch(out: pathlib.Path, *arguments: str, options: tuple = ()):
    """Run mpi_worker.py on 2 ranks with `arguments` after the folder; the finished process."""
    environment = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    command = [MPIEXEC, *options, "-n", "2", sys.executable, str(HERE / "mpi_worker.py")]
    try:
        return subprocess.run(
            [*command, str(out), *arguments],
            env=environment,
            capture_output=True,
            text=True,
            timeout=LAUNCH_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(
            f"mpiexec -n 2 mpi_worker.py {' '.join(arguments)} hung for {LAUNCH_TIMEOUT_S} s:"
            f"\n{expired.stdout}\n{expired.stderr}"
        )


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> pathlib.Path:
    """The folder where the two ranks of one mpi_worker.py launch left what they saw."""
    out = tmp_path_factory.mktemp("mpi")
    done = launch(out)
    assert done.returncode == 0, f"the MPI worker failed:\n{done.stdout}\n{done.stderr}"
    return out


@pytest.fixture(scope="module")
def crashed(tmp_path_factory) -> pathlib.Path:
    """(The folder, mpiexec's run) of a launch in which rank 1 killed itself mid-step, under
    -disable-auto-cleanup: rank 0 lives on and reports, unless MPICH's hydra kills it anyway
    (it did in most launches on a 2-core machine, and rank 0 then writes nothing)."""
    out = tmp_path_factory.mktemp("crash")
    done = launch(out, "crash", options=("-disable-auto-cleanup",))
    assert done.returncode != 0  # mpiexec reports the killed rank
    return out, done


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
        ("ddp_different_options", ["different bucket_cap_mb", "rank 0: 1", "rank 1: 2"]),
    ],
)
def test_ranks_that_disagree_raise_on_every_rank(run, case, words):
    for rank in (0, 1):
        message = seen(run, rank)[case]
        assert message.startswith("DistributedError"), message
        for word in words:
            assert word in message, (rank, message)


@pytest.mark.parametrize(
    "case, at_fault, error, words",
    [
        ("ddp_bad_argument_on_rank_1", 1, "ArgumentError", "bucket_cap_mb must be positive"),
        ("ddp_bad_dtype_on_rank_0", 0, "DTypeError", "'weight' has dtype float16"),
        # any error, not only minitrain's: a bug in the user's module
        ("ddp_other_error_on_rank_1", 1, "RuntimeError", "a bug in the user's module"),
    ],
)
def test_a_refusal_on_one_rank_raises_on_every_rank_naming_it(run, case, at_fault, error, words):
    # the rank at fault raises its own error; the other, instead of waiting for it, names it
    own = seen(run, at_fault)[case]
    assert own.startswith(f"{error}: ") and words in own, own
    other = seen(run, 1 - at_fault)[case]
    assert other.startswith(f"DistributedError: DistributedDataParallel: rank(s) {at_fault} "), (
        other
    )
    assert f"rank {at_fault}: {error}: " in other and words in other, other


def global_batch_gradients(step: int) -> dict:
    """One process's gradients of step `step`'s loss on the whole batch: what DDP's average of
    the two halves' gradients must equal."""
    inputs, targets = scenarios.data((6,))
    module = scenarios.mlp(seed=0)
    scenarios.loss_on(module, inputs[step], targets[step]).backward()
    return scenarios.gradients(module)


def assert_gradients(found, expected: dict) -> None:
    assert sorted(found.files) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(found[name], value, rtol=1e-12, atol=1e-14, err_msg=name)


def test_a_second_backward_after_one_that_raised_on_every_rank_averages(run):
    for rank in (0, 1):
        assert seen(run, rank)["every_rank_failed"].startswith("ValueError: backward failed")
        assert_gradients(
            np.load(run / f"second_backward_rank{rank}.npz"), global_batch_gradients(0)
        )


def test_a_backward_that_raised_on_one_rank_raises_on_the_others_and_leaves_grads_alike(run):
    assert seen(run, 0)["rank_0_failed"].startswith("ValueError: backward failed")
    message = seen(run, 1)["rank_0_failed"]
    assert message.startswith(
        "DistributedError: DistributedDataParallel: the backward raised on rank(s) 0 "
    ), message
    # retried without a forward, the backward raises on both instead of running on rank 1 alone
    for rank in (0, 1):
        message = seen(run, rank)["retry_without_forward"]
        assert message.startswith("DistributedError: DistributedDataParallel: backward: "), message
        assert "Run the next forward on every rank" in message, message
    # rank 1's .grad put back as it was, as on rank 0: the first step's average
    for rank in (0, 1):
        assert_gradients(np.load(run / f"after_failure_rank{rank}.npz"), global_batch_gradients(0))
    # and the next step averages again on both: .grad accumulates the second step's average
    expected = global_batch_gradients(0)
    for name, value in global_batch_gradients(1).items():
        expected[name] = expected[name] + value
    for rank in (0, 1):
        assert_gradients(np.load(run / f"after_recovery_rank{rank}.npz"), expected)


def test_backward_with_inputs_averages_the_parameters_among_them(run):
    expected = global_batch_gradients(0)
    for rank in (0, 1):
        assert_gradients(np.load(run / f"inputs_all_rank{rank}.npz"), expected)
        # one input: its gradient averaged; the others' .grad stays None, as in a plain backward
        found = np.load(run / f"inputs_one_rank{rank}.npz")
        np.testing.assert_allclose(found["last"], expected["4.weight"], rtol=1e-12)
        left = sorted(seen(run, rank)["inputs_one_none_left"])
        assert left == sorted(set(expected) - {"4.weight"})
        # two inputs, over each rank's own .grad (rank + 1): theirs averaged (1.5) plus the
        # average gradient; the others keep this rank's own, exactly
        found = np.load(run / f"inputs_two_rank{rank}.npz")
        for name, value in expected.items():
            if name in ("4.weight", "0.bias"):
                np.testing.assert_allclose(found[name], 1.5 + value, rtol=1e-12, err_msg=name)
            else:
                np.testing.assert_array_equal(found[name], rank + 1.0, err_msg=name)


def test_a_backward_that_raised_before_its_first_gradient_is_ended_by_the_next_forward(run):
    # rank 0's raised in a hook on the loss, before DDP saw a gradient: its next forward runs
    # the collectives it owed, rank 1 learns that it failed, and the next step averages right
    assert seen(run, 0)["early_fail"].startswith("ZeroDivisionError")
    message = seen(run, 1)["early_fail"]
    assert message.startswith(
        "DistributedError: DistributedDataParallel: the backward raised on rank(s) 0 "
    ), message
    for rank in (0, 1):
        assert seen(run, rank)["early_fail_next_step"] == ""
        assert_gradients(np.load(run / f"early_fail_rank{rank}.npz"), global_batch_gradients(1))


def test_a_forward_without_backward_on_every_rank_raises_nowhere(run):
    for rank in (0, 1):
        assert seen(run, rank)["skipped_everywhere"] == ""
        assert_gradients(np.load(run / f"skipped_rank{rank}.npz"), global_batch_gradients(3))


def test_ranks_out_of_step_raise_naming_their_counts_of_forwards(run):
    # rank 0's extra backward pairs with rank 1's next step: the status says so, on both
    for rank in (0, 1):
        message = seen(run, rank)["out_of_step"]
        assert message.startswith(
            "DistributedError: DistributedDataParallel: the ranks' collectives are out of step"
        ), message
        assert "rank 0: 5, rank 1: 6" in message, message
        # and the next forward on every rank is in step again
        assert seen(run, rank)["in_step_again"] == ""
        assert_gradients(np.load(run / f"in_step_again_rank{rank}.npz"), global_batch_gradients(6))


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


def test_a_rank_killed_mid_step_is_named_by_the_other_within_the_timeout(crashed):
    """Either rank 0 outlived rank 1 and raised, naming it, well within the timeout, or hydra
    ended rank 0 too, naming the killed rank: never a hang (the launch's own limit). Which
    happens is MPICH's race; the check of a dead rank itself is test_collectives.py's."""
    out, done = crashed
    if not (out / "rank0.json").exists():
        said = done.stdout + done.stderr  # hydra's words for a rank killed by signal 9
        assert re.search(r"BAD TERMINATION|Killed \(signal 9\)", said), said
        return
    found = seen(out, 0)
    message = found["crash"]
    assert message.startswith("DistributedError: all_reduce_buffer: rank 1 (pid "), message
    assert "no longer runs: it exited or was killed while rank 0 waited" in message
    assert found["crash_s"] < 2.0  # the group's timeout is 10 s: found dead, not timed out


def test_mpiexec_ends_the_whole_job_when_a_rank_is_killed(tmp_path):
    # MPICH's default: the other ranks are killed at once, so nothing hangs
    done = launch(tmp_path, "crash")
    assert done.returncode != 0
    assert "BAD TERMINATION" in done.stdout + done.stderr


def test_resuming_from_the_last_checkpoint_reproduces_the_uninterrupted_run(crashed, tmp_path):
    shutil.copy(crashed[0] / "checkpoint.mt", tmp_path)  # a fresh launch, from the crash's
    done = launch(tmp_path, "resume")
    assert done.returncode == 0, f"the resumed run failed:\n{done.stdout}\n{done.stderr}"
    assert 1 <= seen(tmp_path, 0)["resumed_from_step"] <= 5  # the crash came in step 5
    uninterrupted = np.load(tmp_path / "uninterrupted_rank0.npz")
    for rank in (0, 1):
        resumed = np.load(tmp_path / f"resumed_rank{rank}.npz")
        for name in uninterrupted.files:
            np.testing.assert_array_equal(resumed[name], uninterrupted[name], err_msg=name)
