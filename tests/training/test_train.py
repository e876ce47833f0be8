"""The training loop: fit learns, records its history, schedules, stops on a non-finite loss
before harming the parameters, and reports; evaluate restores the mode and records nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn, optim
from minitrain.errors import ArgumentError, DTypeError
from minitrain.train import EarlyStopping, History, NonFiniteLossError, evaluate, fit


def _blobs(seed: int, n: int = 120):
    """Three well separated Gaussian blobs in 2-D, as (inputs, labels) batches of 20."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    centres = np.array([[3.0, 0.0], [-3.0, 0.0], [0.0, 3.0]])
    points = (centres[labels] + 0.5 * rng.standard_normal((n, 2))).astype(np.float32)
    return [(mt.tensor(points[i : i + 20]), labels[i : i + 20]) for i in range(0, n, 20)]


def _model():
    mt.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 3))


def test_fit_learns_and_records_every_step_and_epoch():
    model, train, val = _model(), _blobs(0), _blobs(1)
    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    history = fit(
        model, train, nn.CrossEntropyLoss(), optimizer, epochs=5, val_loader=val, progress=False
    )
    assert len(history.steps) == 5 * len(train) and len(history.epochs) == 5
    assert [r["step"] for r in history.steps] == list(range(30))
    assert history["loss"][-1] < 0.5 * history["loss"][0]
    assert history["val_accuracy"][-1] > 0.95
    assert set(history.epochs[0]) >= {"loss", "accuracy", "val_loss", "val_accuracy", "lr"}
    # the epoch loss is the sample-weighted mean of that epoch's step losses
    steps = [r["loss"] for r in history.steps[:6]]
    assert history["loss"][0] == pytest.approx(np.mean(steps))
    assert history.to_dict()["epochs"][2]["epoch"] == 2


def test_fit_steps_the_scheduler_per_epoch_or_per_step():
    model = _model()
    optimizer = optim.SGD(model.parameters(), lr=1.0)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    history = fit(
        model, _blobs(0), nn.CrossEntropyLoss(), optimizer, 3, scheduler=scheduler, progress=False
    )
    assert history["lr"] == [1.0, 0.5, 0.25]
    optimizer = optim.SGD(model.parameters(), lr=1.0)
    scheduler = optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    history = fit(
        model,
        _blobs(0)[:2],
        nn.CrossEntropyLoss(),
        optimizer,
        1,
        scheduler=scheduler,
        progress=False,
        scheduler_interval="step",
    )
    assert [r["lr"] for r in history.steps] == [1.0, 0.5]  # the lr each step used
    assert history["lr"] == [0.5]  # the one the epoch's last step used


def test_a_non_finite_loss_stops_before_the_step_changes_anything():
    model = _model()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    calls = {"n": 0}
    snapshots = []

    def loss_fn(output, target):
        calls["n"] += 1
        loss = nn.functional.cross_entropy(output, target)
        return loss * math.nan if calls["n"] == 4 else loss

    class Snapshot(mt.train.Callback):
        def on_step_end(self, step, loss, history):
            snapshots.append([p.array.copy() for p in model.parameters()])

    with pytest.raises(NonFiniteLossError, match="loss is nan at epoch 1, step 3") as caught:
        fit(model, _blobs(0), loss_fn, optimizer, 2, progress=False, callbacks=[Snapshot()])
    assert len(caught.value.history.steps) == 3
    for before, param in zip(snapshots[-1], model.parameters(), strict=True):
        np.testing.assert_array_equal(param.array, before)


def test_early_stopping_ends_training_and_fit_returns_the_history(capsys):
    model = _model()
    optimizer = optim.SGD(model.parameters(), lr=0.0)  # nothing improves
    history = fit(
        model,
        _blobs(0),
        nn.CrossEntropyLoss(),
        optimizer,
        epochs=10,
        val_loader=_blobs(1),
        callbacks=[EarlyStopping(patience=2)],
    )
    assert len(history.epochs) == 3
    assert "stopped early: val_loss has not improved" in capsys.readouterr().out


def test_progress_lines_when_not_a_terminal_and_silence_when_off(capsys):
    model = _model()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    fit(model, _blobs(0), nn.CrossEntropyLoss(), optimizer, 2, progress=True)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("epoch 2/2: loss=")
    fit(model, _blobs(0), nn.CrossEntropyLoss(), optimizer, 1, progress=False)
    assert capsys.readouterr().out == ""


def test_progress_bar_in_a_notebook_kernel(capsys, monkeypatch):
    pytest.importorskip("tqdm")
    from minitrain.train import progress

    monkeypatch.setattr(progress, "in_notebook", lambda: True)  # stderr is no tty here
    model = _model()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    fit(model, _blobs(0), nn.CrossEntropyLoss(), optimizer, 1, progress=True)
    captured = capsys.readouterr()
    assert "epoch 1/1" in captured.err and "6/6" in captured.err and "loss=" in captured.err
    assert captured.out == ""  # the bar replaces the plain lines


def test_evaluate_restores_modes_and_records_nothing():
    model = nn.Sequential(nn.Linear(2, 3), nn.Dropout(0.5))
    model.train()
    model[1].eval()  # a mixed state must come back as it was
    seen = []
    model.register_forward_hook(lambda m, args, out: seen.append(out.requires_grad))
    results = evaluate(model, _blobs(0), nn.CrossEntropyLoss())
    assert set(results) == {"loss", "accuracy"} and 0.0 <= results["accuracy"] <= 1.0
    assert seen and not any(seen)
    assert model.training and not model[1].training


def test_custom_metrics_and_errors():
    model = _model()
    optimizer = optim.SGD(model.parameters(), lr=0.1)

    def mean_logit(output, target):
        return float(output.array.mean())

    history = fit(
        model, _blobs(0), nn.CrossEntropyLoss(), optimizer, 1, metrics=[mean_logit], progress=False
    )
    assert "mean_logit" in history.epochs[0]
    with pytest.raises(ValueError, match="unknown metric 'f1'"):
        fit(model, _blobs(0), nn.CrossEntropyLoss(), optimizer, 1, metrics=["f1"])
    with pytest.raises(ValueError, match="each batch must be a pair"):
        fit(model, [mt.zeros(2, 2)], nn.CrossEntropyLoss(), optimizer, 1, progress=False)
    with pytest.raises(ValueError, match="epochs must be a positive int"):
        fit(model, _blobs(0), nn.CrossEntropyLoss(), optimizer, 0)
    with pytest.raises(KeyError, match="no per-epoch column 'val_loss'"):
        History(epochs=[{"epoch": 0, "loss": 1.0}])["val_loss"]


@pytest.mark.parametrize(
    "arguments, error, complaint",
    [
        ({"epochs": True}, DTypeError, "fit: epochs must be a positive int, got True"),
        ({"epochs": 2.0}, DTypeError, "fit: epochs must be a positive int, got 2.0"),
        ({"loss_fn": "cross_entropy"}, DTypeError, "fit: loss_fn must be callable, got str"),
        ({"optimizer": object()}, DTypeError, "fit: optimizer must be an Optimizer.*object"),
        ({"train_loader": 5}, DTypeError, "fit: train_loader must give .* batches.*int"),
        ({"val_loader": 5}, DTypeError, "fit: val_loader must give .* batches.*int"),
        ({"val_loader": []}, ArgumentError, "fit: val_loader has no batches"),
        ({"train_loader": iter(_blobs(0))}, ArgumentError, "train_loader is an iterator.*2 times"),
        ({"val_loader": iter(_blobs(1))}, ArgumentError, "val_loader is an iterator.*2 times"),
        ({"scheduler": object()}, DTypeError, "fit: scheduler must have a step.*object"),
        ({"callbacks": [EarlyStopping(), object()]}, DTypeError, r"fit: callbacks\[1\].*object"),
        ({"metrics": {"mean": 3}}, DTypeError, "fit: a metric must be a name or a function, got 3"),
        (
            {"metrics": {"loss": lambda output, target: 0.0}},
            ArgumentError,
            "fit: a metric may not be named 'loss'",
        ),
        ({"model": lambda x: x}, DTypeError, "fit: model must be a Module, got function"),
    ],
    ids=[
        "epochs-bool",
        "epochs-float",
        "loss_fn",
        "optimizer",
        "train_loader-int",
        "val_loader-int",
        "val_loader-empty",
        "train_loader-iterator",
        "val_loader-iterator",
        "scheduler",
        "callback",
        "metric-not-callable",
        "metric-named-loss",
        "model",
    ],
)
def test_bad_arguments_are_refused_before_any_training(arguments, error, complaint):
    model = _model()
    model.eval()
    before = [p.array.copy() for p in model.parameters()]
    call = {
        "model": model,
        "train_loader": _blobs(0),
        "loss_fn": nn.CrossEntropyLoss(),
        "optimizer": optim.SGD(model.parameters(), lr=0.1),
        "epochs": 2,
        "progress": False,
        **arguments,
    }
    with pytest.raises(error, match=complaint):
        fit(**call)
    assert not model.training  # not even the mode changed
    for param, saved in zip(model.parameters(), before, strict=True):
        np.testing.assert_array_equal(param.array, saved)


def test_epochs_may_be_a_numpy_int_and_metrics_a_single_name():
    model = _model()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    history = fit(
        model,
        _blobs(0),
        nn.CrossEntropyLoss(),
        optimizer,
        np.int64(2),
        metrics="accuracy",
        progress=False,
    )
    assert len(history.epochs) == 2 and "accuracy" in history.epochs[0]


def test_evaluate_names_itself_in_its_errors():
    model = _model()
    with pytest.raises(ArgumentError, match="evaluate: unknown metric 'f1'"):
        evaluate(model, _blobs(0), metrics=["f1"])
    with pytest.raises(DTypeError, match="evaluate: loss_fn must be callable"):
        evaluate(model, _blobs(0), "cross_entropy")
    with pytest.raises(DTypeError, match="evaluate: loader must give .* batches"):
        evaluate(model, None)


def test_history_plot_writes_an_image(tmp_path):
    pytest.importorskip("matplotlib")
    model = _model()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    history = fit(
        model, _blobs(0), nn.CrossEntropyLoss(), optimizer, 2, val_loader=_blobs(1), progress=False
    )
    backend = pytest.importorskip("matplotlib").get_backend()
    path = history.plot(tmp_path / "curves" / "loss.png")
    with open(path, "rb") as image:
        assert image.read(8) == b"\x89PNG\r\n\x1a\n"
    figure = history.plot()  # no path: the Figure, for a notebook to show
    assert [ax.get_title() for ax in figure.axes] == ["loss", "accuracy"]
    assert len(figure.axes[0].lines) == 3  # per step, per epoch, validation
    assert pytest.importorskip("matplotlib").get_backend() == backend  # pyplot left alone
    assert sorted(p.name for p in (tmp_path / "curves").iterdir()) == ["loss.png"]  # no temp


def test_training_resumed_from_a_checkpoint_matches_an_uninterrupted_run(tmp_path):
    def make():
        mt.manual_seed(0)
        model = nn.Sequential(nn.Linear(2, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
        optimizer = optim.Adam(model.parameters(), lr=0.01)
        return model, optimizer, optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    def train(model, optimizer, scheduler, epochs):
        loss_fn = nn.CrossEntropyLoss()
        fit(model, _blobs(0), loss_fn, optimizer, epochs, scheduler=scheduler, progress=False)

    model, optimizer, scheduler = make()
    train(model, optimizer, scheduler, 4)
    parts = (model, optimizer, scheduler)
    model, optimizer, scheduler = make()
    train(model, optimizer, scheduler, 2)
    path = tmp_path / "epoch2.ckpt"
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    mt.save({**state, "scheduler": scheduler.state_dict(), "epoch": 2}, path)
    model, optimizer, scheduler = make()  # a fresh start, as a new process would make
    checkpoint = mt.load(path)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    train(model, optimizer, scheduler, 4 - checkpoint["epoch"])
    uninterrupted = parts[0].state_dict()
    for name, value in model.state_dict().items():
        assert value.dtype == uninterrupted[name].dtype
        np.testing.assert_array_equal(value.numpy(), uninterrupted[name].numpy(), err_msg=name)
    assert optimizer.param_groups[0]["lr"] == parts[1].param_groups[0]["lr"] == 0.01 * 0.5**4
