"""fit's checkpoints: a run killed (SIGKILL) in the middle of an epoch, or in the middle of writing
its checkpoint, resumes to the very losses of a run never stopped; a checkpoint that does not fit
is refused before anything changes.

Run as a script, this file is the child process the kill tests start and kill."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import minitrain as mt
from minitrain import backend, distributed, nn, optim
from minitrain.errors import ArgumentError, CheckpointError, DTypeError
from minitrain.train import Callback, EarlyStopping, fit
from minitrain.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset

EPOCHS = 4
BATCHES = 6  # per epoch
HERE = os.path.abspath(__file__)


def _setup(dtype: str, seeded: bool, hidden: int = 16, scheduler: bool = True):
    """A model with BatchNorm (buffers) and dropout (random draws), Adam, StepLR, and a shuffled
    loader drawing its order from its own generator (seeded) or from minitrain's."""
    mt.manual_seed(0)
    rng = np.random.default_rng(1)
    inputs = rng.standard_normal((16 * BATCHES, 6)).astype(dtype)
    labels = rng.integers(0, 3, 16 * BATCHES)
    model = nn.Sequential(
        nn.Linear(6, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(0.3),
        nn.Linear(hidden, 3),
    ).to(dtype=getattr(mt, dtype))  # fmt: skip
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    schedule = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.7) if scheduler else None
    train = DataLoader(
        TensorDataset(inputs, labels), batch_size=16, shuffle=True, seed=3 if seeded else None
    )
    val = DataLoader(TensorDataset(inputs[:32], labels[:32]), batch_size=16)
    return model, optimizer, schedule, train, val


def _fit(dtype, seeded, epochs=EPOCHS, callbacks=(), **options):
    model, optimizer, scheduler, train, val = _setup(dtype, seeded)
    callbacks = [EarlyStopping(patience=10), *callbacks]
    history = fit(
        model, train, nn.CrossEntropyLoss(), optimizer, epochs, val, scheduler,
        progress=False, callbacks=callbacks, **options,
    )  # fmt: skip
    return history, model


def _rows(history) -> list[dict]:
    """Every step and epoch row without its clock columns: what must match exactly."""
    rows = history["steps"] + history["epochs"] if isinstance(history, dict) else None
    if rows is None:
        rows = history.steps + history.epochs
    return [{k: v for k, v in r.items() if k not in ("seconds", "samples_per_s")} for r in rows]


# The child process


class _PauseMidEpoch(Callback):
    """Write this process's id into `marker` after the third step of the third epoch, then wait
    to be killed."""

    def __init__(self, marker: str):
        self.marker = marker

    def on_step_end(self, step, loss, history):
        if step == 2 * BATCHES + 2:
            with open(f"{self.marker}.tmp", "w") as file:
                file.write(str(os.getpid()))
            os.replace(f"{self.marker}.tmp", self.marker)
            time.sleep(600)


def _pause_second_write(marker: str) -> None:
    """Make fit's second checkpoint write stop halfway through its temporary file, touch
    `marker` and wait to be killed."""
    from minitrain.io import serialization

    original, writes = serialization.write_atomically, []

    def half_then_wait(path, write, caller="save"):
        writes.append(path)
        if len(writes) < 2:
            return original(path, write, caller)

        def write_half(file):
            import io as bytes_io

            buffer = bytes_io.BytesIO()
            write(buffer)
            file.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
            file.flush()
            os.fsync(file.fileno())
            open(marker, "w").close()
            time.sleep(600)

        return original(path, write_half, caller)

    serialization.write_atomically = half_then_wait


def _child(dtype: str, seeded: str, checkpoint: str, out: str, pause: str, marker: str) -> None:
    callbacks = []
    if pause == "step":
        callbacks.append(_PauseMidEpoch(marker))
    elif pause == "write":
        _pause_second_write(marker)
    history, _ = _fit(dtype, seeded == "1", callbacks=callbacks, checkpoint=checkpoint, resume=True)
    with open(out, "w") as file:
        json.dump(history.to_dict(), file)


def _data_parallel_child(checkpoint: str, out: str, pause: str, marker: str) -> None:
    """One of 2 ranks under mpiexec: DistributedDataParallel over a DistributedSampler's
    shards, each rank with its own dropout draws and a validation set of its own size."""
    distributed.init_process_group(timeout=datetime.timedelta(seconds=120))
    rank, world = distributed.get_rank(), distributed.get_world_size()
    model, _, _, train, val = _setup("float64", seeded=False, scheduler=False)
    model = nn.parallel.DistributedDataParallel(model)
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    mt.manual_seed(100 + rank)
    shards = DistributedSampler(train.dataset, num_replicas=world, rank=rank, seed=5)
    train = DataLoader(train.dataset, batch_size=16 // world, sampler=shards)
    # as many batches on each rank (DistributedDataParallel broadcasts buffers at every forward),
    # of different sizes: 8 and 7 samples, to weigh
    val = DataLoader(Subset(val.dataset, range(rank, 8)), batch_size=4)
    callbacks = [EarlyStopping(patience=10)]
    if pause == "step":
        callbacks.append(_PauseMidEpoch(f"{marker}.{rank}"))
    history = fit(
        model, train, nn.CrossEntropyLoss(), optimizer, EPOCHS, val, progress=rank == 1,
        callbacks=callbacks, checkpoint=checkpoint, resume=True,
    )  # fmt: skip
    with open(f"{out}.{rank}", "w") as file:
        json.dump(history.to_dict(), file)
    distributed.destroy_process_group()


def _start(tmp_path, name, dtype, seeded, checkpoint, pause="none"):
    marker, out = tmp_path / f"{name}.marker", tmp_path / f"{name}.json"
    arguments = [dtype, "1" if seeded else "0", str(checkpoint), str(out), pause, str(marker)]
    process = subprocess.Popen(
        [sys.executable, HERE, *arguments], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    return process, marker, out


def _finish(process, out) -> dict:
    output, _ = process.communicate(timeout=180)
    assert process.returncode == 0, output.decode()
    with open(out) as file:
        return json.load(file)


def _kill_at(process, marker) -> None:
    deadline = time.monotonic() + 180
    while not marker.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"the child never paused: {process.communicate()[0].decode()}")
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL


@pytest.mark.parametrize("dtype, seeded", [("float64", True), ("float32", False)])
def test_a_run_killed_mid_epoch_resumes_to_the_losses_of_one_never_stopped(tmp_path, dtype, seeded):
    whole, whole_out = _start(tmp_path, "whole", dtype, seeded, tmp_path / "whole.npz")[::2]
    killed, marker, _ = _start(tmp_path, "killed", dtype, seeded, tmp_path / "run.npz", "step")
    _kill_at(killed, marker)
    saved = mt.load(tmp_path / "run.npz")
    assert (saved["epoch"], saved["step"]) == (2, 2 * BATCHES)  # the kill came in epoch 3
    resumed, _, resumed_out = _start(tmp_path, "resumed", dtype, seeded, tmp_path / "run.npz")
    uninterrupted, after_kill = _finish(whole, whole_out), _finish(resumed, resumed_out)
    assert len(after_kill["steps"]) == EPOCHS * BATCHES
    assert _rows(after_kill) == _rows(uninterrupted)  # bit for bit: floats compared with ==


def test_a_kill_while_the_checkpoint_is_written_leaves_the_previous_one(tmp_path):
    whole, whole_out = _start(tmp_path, "whole", "float64", True, tmp_path / "whole.npz")[::2]
    killed, marker, _ = _start(tmp_path, "killed", "float64", True, tmp_path / "run.npz", "write")
    _kill_at(killed, marker)
    # the half-written second checkpoint, never renamed (the "whole" run, still going, may be
    # writing a temporary file of its own: only run.npz's count)
    leftovers = [
        name
        for name in os.listdir(tmp_path)
        if name.startswith(".run.npz.") and name.endswith(".tmp")
    ]
    assert len(leftovers) == 1
    assert mt.load(tmp_path / "run.npz")["epoch"] == 1  # the first one, whole
    resumed, _, resumed_out = _start(tmp_path, "resumed", "float64", True, tmp_path / "run.npz")
    assert _rows(_finish(resumed, resumed_out)) == _rows(_finish(whole, whole_out))


# In one process


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("seeded", [True, False])
def test_resuming_gives_the_history_and_parameters_of_an_uninterrupted_run(tmp_path, dtype, seeded):
    whole, whole_model = _fit(dtype, seeded)
    path = tmp_path / "deeper" / "run.npz"  # fit makes the directory
    first, _ = _fit(dtype, seeded, epochs=2, checkpoint=path, resume=True)
    assert len(first.epochs) == 2
    resumed, model = _fit(dtype, seeded, checkpoint=path, resume=True)
    assert _rows(resumed) == _rows(whole)
    assert resumed.steps[BATCHES * 2]["seconds"] >= first.steps[-1]["seconds"]  # time goes on
    for (name, mine), (_, theirs) in zip(
        model.state_dict().items(), whole_model.state_dict().items(), strict=True
    ):
        np.testing.assert_array_equal(mine.array, theirs.array, err_msg=name)


def test_resume_without_a_file_starts_afresh_and_writes_one(tmp_path, capsys):
    path = tmp_path / "run.npz"
    whole, _ = _fit("float64", True, epochs=2)
    model, optimizer, scheduler, train, val = _setup("float64", True)
    history = fit(
        model, train, nn.CrossEntropyLoss(), optimizer, 2, val, scheduler,
        callbacks=[EarlyStopping(patience=10)], checkpoint=path, resume=True,
    )  # fmt: skip
    assert "no checkpoint at" in capsys.readouterr().out
    assert _rows(history) == _rows(whole)
    saved = mt.load(path)
    assert (saved["epoch"], saved["step"], saved["stopped"]) == (2, 2 * BATCHES, False)
    assert _rows(saved["history"]) == _rows(whole)
    assert saved["scheduler"]["last_epoch"] == 2
    assert saved["callbacks"][0][0] == "EarlyStopping"


def test_a_finished_run_resumes_to_its_history_without_training(tmp_path):
    path = tmp_path / "run.npz"
    done, trained = _fit("float64", True, epochs=2, checkpoint=path)
    again, model = _fit("float64", True, epochs=2, checkpoint=path, resume=True)
    assert _rows(again) == _rows(done)
    np.testing.assert_array_equal(model[0].weight.array, trained[0].weight.array)  # loaded


def test_a_run_stopped_early_stays_stopped(tmp_path):
    path = tmp_path / "run.npz"
    stop = EarlyStopping(monitor="loss", patience=0, min_delta=10.0)  # stops after epoch 2
    model, optimizer, _, train, _ = _setup("float64", True)
    history = fit(
        model, train, nn.CrossEntropyLoss(), optimizer, EPOCHS, callbacks=[stop],
        progress=False, checkpoint=path,
    )  # fmt: skip
    assert len(history.epochs) == 2 and mt.load(path)["stopped"] is True
    model, optimizer, _, train, _ = _setup("float64", True)
    stop = EarlyStopping(monitor="loss", patience=0, min_delta=10.0)
    again = fit(
        model, train, nn.CrossEntropyLoss(), optimizer, EPOCHS, callbacks=[stop],
        progress=False, checkpoint=path, resume=True,
    )  # fmt: skip
    assert _rows(again) == _rows(history)
    assert stop.state_dict() == {"best": history["loss"][0], "waited": 1}


def _state_of(model, optimizer):
    return (
        {k: v.array.copy() for k, v in model.state_dict().items()},
        optimizer.state_dict(),
        backend.generator().bit_generator.state,
    )


def _assert_unchanged(before, model, optimizer):
    params, optimizer_state, generator = before
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value.array, params[key], err_msg=key)
    assert repr(optimizer.state_dict()) == repr(optimizer_state)
    assert backend.generator().bit_generator.state == generator


def test_a_checkpoint_of_another_model_is_refused_before_anything_changes(tmp_path):
    path = tmp_path / "run.npz"
    _fit("float64", True, epochs=1, checkpoint=path)
    model, optimizer, scheduler, train, val = _setup("float64", True, hidden=8)
    before = _state_of(model, optimizer)
    message = (
        r"fit: the checkpoint '.*run\.npz' does not fit this training: load_state_dict for "
        r"Sequential: '0\.weight': shape \(16, 6\) in the state dict, \(8, 6\) in the module"
    )
    with pytest.raises(CheckpointError, match=message):
        fit(
            model, train, nn.CrossEntropyLoss(), optimizer, 2, val, scheduler, progress=False,
            callbacks=[EarlyStopping(patience=10)], checkpoint=path, resume=True,
        )  # fmt: skip
    _assert_unchanged(before, model, optimizer)


def test_a_checkpoint_of_another_optimizer_leaves_the_model_as_it_was(tmp_path):
    path = tmp_path / "run.npz"
    _fit("float64", True, epochs=1, checkpoint=path)
    model, _, _, train, val = _setup("float64", True)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.7)
    before = _state_of(model, optimizer)
    # the model's state loads first; the optimizer's then fails, and the model is put back
    with pytest.raises(CheckpointError, match=r"SGD\.load_state_dict: .*lacks the option"):
        fit(
            model, train, nn.CrossEntropyLoss(), optimizer, 2, val, scheduler,
            progress=False, callbacks=[EarlyStopping(patience=10)], checkpoint=path, resume=True,
        )  # fmt: skip
    _assert_unchanged(before, model, optimizer)


def test_checkpoints_that_do_not_fit_the_run_are_refused(tmp_path):
    path = tmp_path / "run.npz"
    _fit("float64", True, epochs=1, checkpoint=path)

    def resume(**changes):
        model, optimizer, scheduler, train, val = _setup("float64", True)
        options = {"scheduler": scheduler, "callbacks": [EarlyStopping(patience=10)], **changes}
        fit(
            model, train, nn.CrossEntropyLoss(), optimizer, 2, val, progress=False,
            checkpoint=path, resume=True, **options,
        )  # fmt: skip

    with pytest.raises(CheckpointError, match="has a scheduler's, but fit got scheduler=None"):
        resume(scheduler=None)
    with pytest.raises(CheckpointError, match=r"callbacks \['EarlyStopping'\], this run's .* \[\]"):
        resume(callbacks=[])
    state = mt.load(path)
    mt.save({**state, "world_size": 2, "ranks": state["ranks"] * 2}, path)
    with pytest.raises(CheckpointError, match="written by a run on 2 processes, this one has 1"):
        resume()
    mt.save({"model": state["model"]}, path)  # a checkpoint, not one of fit's
    with pytest.raises(CheckpointError, match=r"not one fit wrote \(it holds \['model'\]\)"):
        resume()
    path.write_bytes(b"PK\x03\x04 damaged")
    with pytest.raises(CheckpointError, match=r"fit: cannot resume from .*: load: .*damaged"):
        resume()
    random = {**state["ranks"][0]["random"], "loaders": [None, None]}  # no loader's own
    mt.save({**state, "ranks": [{**state["ranks"][0], "random": random}]}, path)
    with pytest.raises(CheckpointError, match="train loader shuffled with minitrain's generator"):
        resume()


def test_bad_checkpoint_arguments_are_refused_before_training(tmp_path):
    model, optimizer, _, train, _ = _setup("float64", True)
    before = model[0].weight.array.copy()
    loss = nn.CrossEntropyLoss()
    with pytest.raises(ArgumentError, match="resume=True needs checkpoint="):
        fit(model, train, loss, optimizer, resume=True, progress=False)
    with pytest.raises(DTypeError, match="resume must be True or False, got 'yes'"):
        fit(model, train, loss, optimizer, checkpoint=tmp_path / "a.npz", resume="yes")
    with pytest.raises(DTypeError, match="checkpoint must be a file name .* got int"):
        fit(model, train, loss, optimizer, checkpoint=3, progress=False)
    with pytest.raises(ArgumentError, match="names a directory"):
        fit(model, train, loss, optimizer, checkpoint=tmp_path, progress=False)
    np.testing.assert_array_equal(model[0].weight.array, before)


@pytest.mark.parametrize(
    "make",
    [
        lambda o: optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1)),
        lambda o: optim.lr_scheduler.MultiStepLR(o, [1, 3, 3], gamma=0.5),
        lambda o: optim.lr_scheduler.ExponentialLR(o, 0.9),
        lambda o: optim.lr_scheduler.LinearLR(o, total_iters=3),
        lambda o: optim.lr_scheduler.CosineAnnealingLR(o, T_max=3),
    ],
    ids=["LambdaLR", "MultiStepLR", "ExponentialLR", "LinearLR", "CosineAnnealingLR"],
)
@pytest.mark.parametrize("interval", ["epoch", "step"])
def test_every_scheduler_resumes_its_schedule(tmp_path, make, interval):
    def run(epochs, **options):
        model, optimizer, _, train, _ = _setup("float64", True, scheduler=False)
        return fit(
            model, train, nn.CrossEntropyLoss(), optimizer, epochs, scheduler=make(optimizer),
            scheduler_interval=interval, progress=False, **options,
        )  # fmt: skip

    whole = run(EPOCHS)
    run(2, checkpoint=tmp_path / "run.npz")
    assert _rows(run(EPOCHS, checkpoint=tmp_path / "run.npz", resume=True)) == _rows(whole)


def test_a_run_on_a_device_resumes_exactly(tmp_path, cuda_device, request):
    """On a GPU fit seeds the device generators each epoch from the CPU's saved generator."""

    def run(epochs, path):
        model, _, _, train, val = _setup("float32", False, scheduler=False)
        model.to("cuda")
        optimizer = optim.Adam(model.parameters(), lr=1e-2)
        history = fit(
            model, train, nn.CrossEntropyLoss(), optimizer, epochs, val, progress=False,
            checkpoint=path, resume=True,
        )  # fmt: skip
        return _rows(history)

    whole = run(EPOCHS, tmp_path / "whole.npz")
    run(2, tmp_path / "run.npz")
    resumed = run(EPOCHS, tmp_path / "run.npz")
    if request.node.callspec.params["cuda_device"] == "strict":
        assert resumed == whole
    else:  # a real GPU's atomics may add in another order
        for mine, theirs in zip(resumed, whole, strict=True):
            assert mine == pytest.approx(theirs, rel=1e-5)


# Under mpiexec


def _mpiexec() -> str:
    pytest.importorskip("mpi4py", reason="mpi4py is not installed: pip install mpi4py mpich")
    found = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec: pip install mpich")
    return found


def _start_ranks(mpiexec, tmp_path, name, checkpoint, pause="none"):
    marker, out = tmp_path / f"{name}.marker", tmp_path / f"{name}.json"
    arguments = ["data-parallel", str(checkpoint), str(out), pause, str(marker)]
    process = subprocess.Popen(
        [mpiexec, "-n", "2", sys.executable, HERE, *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, killed whole
    )
    return process, marker, out


def _finish_ranks(process, out) -> list[dict]:
    try:
        output, _ = process.communicate(timeout=240)
    finally:
        _kill_group(process)
    assert process.returncode == 0, output.decode()
    histories = []
    for rank in range(2):
        with open(f"{out}.{rank}") as file:
            histories.append(json.load(file))
    return histories, output.decode()


def _kill_group(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=60)


def test_a_data_parallel_run_killed_mid_epoch_resumes_exactly(tmp_path):
    mpiexec = _mpiexec()
    whole, _, whole_out = _start_ranks(mpiexec, tmp_path, "whole", tmp_path / "whole.npz")
    killed, marker, _ = _start_ranks(mpiexec, tmp_path, "killed", tmp_path / "run.npz", "step")
    try:
        deadline = time.monotonic() + 240
        markers = [tmp_path / f"{marker.name}.{rank}" for rank in range(2)]
        while not all(m.exists() for m in markers):
            if killed.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the ranks never paused: {killed.communicate()[0].decode()}")
            time.sleep(0.05)
        for m in markers:  # both ranks at once, mid-epoch 3: the whole job dies
            os.kill(int(m.read_text()), signal.SIGKILL)
    finally:
        _kill_group(killed)
    saved = mt.load(tmp_path / "run.npz")
    assert (saved["epoch"], saved["world_size"], len(saved["ranks"])) == (2, 2, 2)
    one, other = (entry["random"]["minitrain"] for entry in saved["ranks"])
    assert one != other  # each rank's own generator state, kept
    resumed, _, resumed_out = _start_ranks(mpiexec, tmp_path, "resumed", tmp_path / "run.npz")
    uninterrupted, _ = _finish_ranks(whole, whole_out)
    after_kill, output = _finish_ranks(resumed, resumed_out)
    for rank in range(2):
        assert len(after_kill[rank]["steps"]) == EPOCHS * BATCHES
        assert _rows(after_kill[rank]) == _rows(uninterrupted[rank]), f"rank {rank}"
    # epoch rows are averaged over the ranks, so they agree; each rank's steps are its own
    epochs = [_rows({"steps": [], "epochs": history["epochs"]}) for history in after_kill]
    assert epochs[0] == epochs[1]
    assert after_kill[0]["steps"][0]["loss"] != after_kill[1]["steps"][0]["loss"]
    # rank 1 was asked for progress lines, but only rank 0 prints
    assert "epoch 3/4" not in output and "resumed from" not in output


def test_the_digits_example_trains_and_resumes_under_mpiexec(tmp_path):
    mpiexec = _mpiexec()
    pytest.importorskip("sklearn")
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "examples")

    def run(*options):
        command = [mpiexec, "-n", "2", sys.executable, os.path.join(example, "train_digits.py")]
        done = subprocess.run(
            [*command, "--out", str(tmp_path), *options],
            capture_output=True,
            text=True,
            timeout=240,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    first = run("--epochs", "2")
    assert first.count("\ntest accuracy ") == 1 and ", 2 processes" in first  # rank 0 prints
    assert first.count("epoch 2/2:") == 1
    assert {"training.npz", "checkpoint.npz", "curves.png"} <= set(os.listdir(tmp_path))
    assert mt.load(tmp_path / "training.npz")["world_size"] == 2
    again = run("--epochs", "3", "--resume")
    assert "resumed from" in again and "epoch 3/3:" in again and "epoch 1/3" not in again


if __name__ == "__main__":
    if sys.argv[1] == "data-parallel":
        _data_parallel_child(*sys.argv[2:])
    else:
        _child(*sys.argv[1:])
