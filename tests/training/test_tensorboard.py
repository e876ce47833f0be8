"""minitrain.utils.tensorboard.SummaryWriter, as torch.utils.tensorboard's: what it writes is read
back with tensorboard's own event reader (EventAccumulator) and compared, where torch is
installed, with what PyTorch's writer writes for the same calls. Without tensorboard the import
still works and constructing a writer names what to install (checked in a child process that
hides tensorboard, whether or not it is installed here)."""

from __future__ import annotations

import importlib
import inspect
import io
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import minitrain as mt
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.utils.tensorboard import SummaryWriter

REPOSITORY = Path(__file__).resolve().parents[2]


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


needs_tensorboard = pytest.mark.skipif(
    not _importable("tensorboard"), reason="tensorboard is not installed (pip install tensorboard)"
)


def read(folder) -> object:
    """Every event under `folder` (one run), as TensorBoard's EventAccumulator reads them."""
    accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator"
    ).EventAccumulator
    # 0: keep every event of each kind, not a reservoir sample
    kinds = ("scalars", "histograms", "images", "tensors", "compressedHistograms", "audio")
    return accumulator(str(folder), size_guidance=dict.fromkeys(kinds, 0)).Reload()


def scalars(run, tag) -> list[tuple[int, float]]:
    return [(event.step, event.value) for event in run.Scalars(tag)]


def pixels(image_event) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(image_event.encoded_image_string)))


def test_import_works_and_construction_names_the_install_without_tensorboard(tmp_path):
    """Runs whether or not tensorboard is installed: a child process hides it."""
    child = textwrap.dedent(
        """
        import sys
        sys.modules["tensorboard"] = None  # as if not installed: `import tensorboard` fails
        from minitrain.utils.tensorboard import SummaryWriter
        try:
            SummaryWriter(sys.argv[1])
        except ModuleNotFoundError as error:
            print("MISSING:", error.name, "|", error)
        else:
            print("CONSTRUCTED")
        """
    )
    folder = tmp_path / "never_made"
    env = dict(os.environ, PYTHONPATH=str(REPOSITORY))
    done = subprocess.run(
        [sys.executable, "-c", child, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "MISSING: tensorboard |" in done.stdout, done.stdout
    assert "pip install tensorboard" in done.stdout
    assert not folder.exists()  # refused before anything was made


@needs_tensorboard
def test_scalars_are_read_back_with_their_steps_and_values(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(4):
            writer.add_scalar("loss", mt.tensor(0.5 * step), step)  # a 0-d Tensor
        writer.add_scalar("acc", np.float32(0.25), 7, walltime=123.0)
        writer.add_scalar("acc", mt.tensor([[0.75]], requires_grad=True), 8)  # one element
        writer.add_scalar("acc", 2, 9)
        writer.add_scalar("acc", True, 10)
    run = read(tmp_path)
    assert sorted(run.Tags()["scalars"]) == ["acc", "loss"]
    assert scalars(run, "loss") == [(0, 0.0), (1, 0.5), (2, 1.0), (3, 1.5)]
    assert scalars(run, "acc") == [(7, 0.25), (8, 0.75), (9, 2.0), (10, 1.0)]
    assert run.Scalars("acc")[0].wall_time == 123.0


@needs_tensorboard
def test_new_style_scalars_are_scalar_plugin_tensors(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("single", 1.25, 0, new_style=True)
        writer.add_scalar("double", 0.1, 0, new_style=True, double_precision=True)
    run = read(tmp_path)
    single, double = run.Tensors("single")[0].tensor_proto, run.Tensors("double")[0].tensor_proto
    assert list(single.float_val) == [1.25] and list(double.double_val) == [0.1]
    assert set(run.PluginTagToContent("scalars")) == {"single", "double"}


@needs_tensorboard
def test_add_scalars_writes_one_run_per_series(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        for step in range(3):
            writer.add_scalars("train/loss", {"a": step, "b": mt.tensor(10.0 * step)}, step)
    assert {path.name for path in tmp_path.iterdir() if path.is_dir()} == {
        "train_loss_a",
        "train_loss_b",
    }
    assert scalars(read(tmp_path / "train_loss_a"), "train/loss") == [(0, 0), (1, 1), (2, 2)]
    assert scalars(read(tmp_path / "train_loss_b"), "train/loss") == [
        (0, 0.0),
        (1, 10.0),
        (2, 20.0),
    ]


@needs_tensorboard
def test_histograms_count_every_value(tmp_path):
    values = np.random.default_rng(0).normal(size=(40, 5))
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram("weights", mt.tensor(values), 3)
        writer.add_histogram("fixed", np.arange(10.0), 4, bins=[0, 2.5, 5, 7.5, 9])
        writer.add_histogram("merged", np.arange(100.0), 5, bins=10, max_bins=3)
    run = read(tmp_path)
    weights = run.Histograms("weights")[0]
    assert weights.step == 3
    histogram = weights.histogram_value
    assert histogram.num == 200 and sum(histogram.bucket) == 200
    assert histogram.min == values.min() and histogram.max == values.max()
    assert np.isclose(histogram.sum, values.sum()) and np.isclose(
        histogram.sum_squares, (values**2).sum()
    )
    fixed = run.Histograms("fixed")[0].histogram_value
    # numpy's buckets [0, 2.5) [2.5, 5) [5, 7.5) [7.5, 9], after an empty one ending at 0
    assert list(fixed.bucket_limit) == [0, 2.5, 5, 7.5, 9] and list(fixed.bucket) == [0, 3, 2, 3, 2]
    merged = run.Histograms("merged")[0].histogram_value
    assert len(merged.bucket) == 1 + 4 and sum(merged.bucket) == 100  # 10 buckets, 3 at a time


@needs_tensorboard
def test_add_histogram_raw_writes_what_it_is_given(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_histogram_raw("raw", 0, 4, 6, 10, 30, [1, 2, 4], mt.tensor([1.0, 2.0, 3.0]), 2)
        with pytest.raises(ArgumentError, match="3 bucket_limits but 2 bucket_counts"):
            writer.add_histogram_raw("raw", 0, 4, 6, 10, 30, [1, 2, 4], [1, 5], 3)
    histogram = read(tmp_path).Histograms("raw")[0].histogram_value
    assert list(histogram.bucket_limit) == [1, 2, 4] and list(histogram.bucket) == [1, 2, 3]
    assert (histogram.min, histogram.max, histogram.num) == (0, 4, 6)


@needs_tensorboard
def test_images_are_png_in_the_layouts_asked(tmp_path):
    chw = np.random.default_rng(1).random((3, 5, 7)).astype(np.float32)
    with SummaryWriter(tmp_path) as writer:
        writer.add_image("chw", mt.tensor(chw), 1)
        writer.add_image(
            "hwc", (chw.transpose(1, 2, 0) * 255).astype(np.uint8), 1, dataformats="HWC"
        )
        writer.add_image("grey", np.full((5, 7), 0.5), 1, dataformats="HW")
        writer.add_images("batch", np.ones((10, 1, 2, 3)), 1)
    run = read(tmp_path)
    expected = (chw.transpose(1, 2, 0) * 255).clip(0, 255).astype(np.uint8)
    image = run.Images("chw")[0]
    assert (image.height, image.width) == (5, 7)
    np.testing.assert_array_equal(pixels(image), expected)
    np.testing.assert_array_equal(pixels(run.Images("hwc")[0]), expected)
    np.testing.assert_array_equal(pixels(run.Images("grey")[0]), np.full((5, 7, 3), 127))
    batch = run.Images("batch")[0]
    assert (batch.height, batch.width) == (2 * 2, 3 * 8)  # ten images, eight to a row
    grid = pixels(batch)
    assert (grid[:2] == 255).all() and (grid[2:, :6] == 255).all() and (grid[2:, 6:] == 0).all()


@needs_tensorboard
def test_text_is_a_text_plugin_string(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        writer.add_text("notes", "lr **0.1**, é", 5)
    run = read(tmp_path)
    event = run.Tensors("notes/text_summary")[0]
    assert event.step == 5
    assert [value.decode() for value in event.tensor_proto.string_val] == ["lr **0.1**, é"]
    assert "notes/text_summary" in run.PluginTagToContent("text")


@needs_tensorboard
def test_hparams_write_the_plugin_records_and_metrics_to_a_run(tmp_path):
    plugin = pytest.importorskip("tensorboard.plugins.hparams.metadata")
    with SummaryWriter(tmp_path) as writer:
        writer.add_hparams(
            {"lr": 0.1, "optimizer": "sgd", "skipped": None, "layers": mt.tensor(3)},
            {"hparam/accuracy": 0.9},
            hparam_domain_discrete={"optimizer": ["sgd", "adam"]},
            run_name="trial",
        )
    run = read(tmp_path / "trial")
    assert scalars(run, "hparam/accuracy") == [(0, pytest.approx(0.9))]
    contents = run.PluginTagToContent("hparams")
    start = plugin.parse_session_start_info_plugin_data(contents[plugin.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.1
    assert start.hparams["optimizer"].string_value == "sgd"
    assert start.hparams["layers"].number_value == 3 and "skipped" not in start.hparams
    experiment = plugin.parse_experiment_plugin_data(contents[plugin.EXPERIMENT_TAG])
    assert [info.name for info in experiment.hparam_infos] == ["lr", "optimizer", "layers"]
    assert [v.string_value for v in experiment.hparam_infos[1].domain_discrete.values] == [
        "sgd",
        "adam",
    ]
    assert [info.name.tag for info in experiment.metric_infos] == ["hparam/accuracy"]
    with pytest.raises(TypeError, match="must be dicts"):
        SummaryWriter(tmp_path / "other").add_hparams([("lr", 0.1)], {})


@needs_tensorboard
def test_default_log_dir_is_runs_time_host_comment(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    writer = SummaryWriter(comment="_lr0.1")
    writer.close()
    folder = Path(writer.get_logdir())
    assert folder.parent == Path("runs")
    pattern = r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_" + re.escape(socket.gethostname() + "_lr0.1")
    assert re.fullmatch(pattern, folder.name), folder.name
    assert any(name.startswith("events.out.tfevents.") for name in os.listdir(folder))
    assert SummaryWriter(tmp_path / "given", comment="ignored").get_logdir() == str(
        tmp_path / "given"
    )


@needs_tensorboard
def test_filename_suffix_and_reopening_after_close(tmp_path):
    writer = SummaryWriter(tmp_path, filename_suffix=".mine")
    writer.add_scalar("x", 1.0, 0)
    writer.close()
    writer.close()  # a second close does nothing
    writer.add_scalar("x", 2.0, 1)  # opens a new event file, as PyTorch's writer does
    writer.flush()
    writer.close()
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 2 and all(name.endswith(".mine") for name in files)
    assert scalars(read(tmp_path), "x") == [(0, 1.0), (1, 2.0)]


@needs_tensorboard
def test_purge_step_hides_the_steps_a_restart_writes_again(tmp_path):
    with SummaryWriter(tmp_path) as crashed:
        for step in range(10):
            crashed.add_scalar("loss", float(step), step)
    with SummaryWriter(tmp_path, purge_step=6) as resumed:
        for step in range(6, 8):
            resumed.add_scalar("loss", 100.0 + step, step)
    steps_and_values = scalars(read(tmp_path), "loss")
    assert steps_and_values == [(step, float(step)) for step in range(6)] + [(6, 106.0), (7, 107.0)]


@needs_tensorboard
def test_bad_values_are_refused_before_anything_is_written(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.raises(ShapeError, match="add_scalar: 'loss' needs one value, got 2"):
            writer.add_scalar("loss", mt.tensor([1.0, 2.0]), 0)
        with pytest.raises(DTypeError, match="add_scalar: expected a Tensor, an array or a number"):
            writer.add_scalar("loss", [1.0], 0)
        with pytest.raises(DTypeError, match="add_scalar: expected"):
            writer.add_scalars("pair", {"a": 1.0, "b": "two"}, 0)
        with pytest.raises(DTypeError, match="add_text: 'notes' needs a str"):
            writer.add_text("notes", 3, 0)
        with pytest.raises(ArgumentError, match="add_histogram: 'empty' has no values"):
            writer.add_histogram("empty", np.zeros(0), 0)
        with pytest.raises(ArgumentError, match="'nan' has nan or infinite values, and bins=10"):
            writer.add_histogram("nan", np.array([1.0, np.nan]), 0, bins=10)
        with pytest.raises(ArgumentError, match="no value of 'far' falls within the bins"):
            writer.add_histogram("far", np.array([1e30]), 0)
        with pytest.raises(ArgumentError, match="dataformats must name each"):
            writer.add_image("img", np.zeros((3, 2, 2)), 0, dataformats="CCW")
        with pytest.raises(ShapeError, match=r"shape \(2, 2\) does not match dataformats 'CHW'"):
            writer.add_image("img", np.zeros((2, 2)), 0)
        with pytest.raises(ShapeError, match="1 or 3 channels"):
            writer.add_images("batch", np.zeros((2, 4, 2, 2)), 0)
    run = read(tmp_path)
    assert not any(run.Tags()[kind] for kind in ("scalars", "histograms", "images", "tensors"))
    assert not (tmp_path / "pair_a").exists()  # add_scalars checks every value first


@needs_tensorboard
def test_add_graph_warns_and_add_embedding_raises(tmp_path):
    with SummaryWriter(tmp_path) as writer:
        with pytest.warns(UserWarning, match="add_graph: minitrain does not write model graphs"):
            writer.add_graph(mt.nn.Linear(2, 3), mt.randn(1, 2))
        with pytest.raises(NotImplementedError, match="add_embedding"):
            writer.add_embedding(mt.randn(4, 3))
    assert read(tmp_path).Tags()["graph"] is False


@needs_tensorboard
def test_figures_are_drawn_to_images(tmp_path):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1), dpi=20)
    figure.add_subplot().plot([0, 1], [1, 0])
    with SummaryWriter(tmp_path) as writer:
        writer.add_figure("one", figure, 0, close=False)
        writer.add_figure("two", [figure, figure], 0, close=False)
    run = read(tmp_path)
    one, two = run.Images("one")[0], run.Images("two")[0]
    assert (one.width, one.height) == (40, 20) and (two.width, two.height) == (80, 20)
    drawn = pixels(one)
    assert drawn.min() < 255  # the line and the axes are drawn on the white figure
    np.testing.assert_array_equal(pixels(two)[:, :40], drawn)


@needs_tensorboard
def test_values_on_a_device_are_read_on_the_host(tmp_path, cuda_device):
    with SummaryWriter(tmp_path) as writer:
        writer.add_scalar("loss", mt.tensor(2.5, device=cuda_device), 0)
        writer.add_histogram("w", mt.arange(6.0, device=cuda_device), 0, bins=3)
        writer.add_image("img", mt.ones(1, 2, 2, device=cuda_device), 0)
    run = read(tmp_path)
    assert scalars(run, "loss") == [(0, 2.5)]
    assert list(run.Histograms("w")[0].histogram_value.bucket) == [0, 2, 2, 2]
    assert (pixels(run.Images("img")[0]) == 255).all()


@needs_tensorboard
def test_signatures_are_pytorchs():
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    for name in [
        "__init__", "add_scalar", "add_scalars", "add_histogram", "add_histogram_raw",
        "add_image", "add_images", "add_figure", "add_text", "add_hparams", "add_graph",
        "add_embedding", "flush", "close", "get_logdir",
    ]:  # fmt: skip
        ours = inspect.signature(getattr(SummaryWriter, name)).parameters
        theirs = inspect.signature(getattr(TorchWriter, name)).parameters
        assert list(ours) == list(theirs), name
        assert [p.default for p in ours.values()] == [p.default for p in theirs.values()], name
    assert torch is not None


def _log_everything(writer_class, folder, tensor, figure=None):
    """The same calls, to minitrain's writer (tensor=mt.tensor) or PyTorch's (torch.tensor)."""
    rng = np.random.default_rng(3)
    weights, chw = rng.normal(size=300), rng.random((3, 6, 5)).astype(np.float32)
    with writer_class(str(folder)) as writer:
        for step in range(3):
            writer.add_scalar("loss", tensor(1.0 / (step + 1)), step)
        writer.add_scalar("new", 0.3, 1, new_style=True)
        writer.add_scalars("pair", {"a": 1.0, "b": tensor(2.0)}, 4)
        writer.add_histogram("tf_bins", tensor(weights), 1)
        writer.add_histogram("auto", weights, 2, bins="auto")
        writer.add_histogram("merged", weights, 3, bins=50, max_bins=7)
        writer.add_image("chw", tensor(chw), 0)
        writer.add_image(
            "hwc", (chw * 255).astype(np.uint8).transpose(1, 2, 0), 0, dataformats="HWC"
        )
        writer.add_image("hw", chw[0], 0, dataformats="HW")
        writer.add_images("nchw", np.stack([chw] * 9), 0)
        writer.add_images("nhwc", np.stack([chw[:1].transpose(1, 2, 0)] * 3), 0, dataformats="NHWC")
        writer.add_text("note", "hello *world*", 2)
        if figure is not None:
            writer.add_figure("figure", figure, 0, close=False)
        writer.add_hparams({"lr": 0.01, "opt": "adam", "depth": 4}, {"hp/acc": 0.5}, run_name="hp")


def _everything_read(folder) -> dict:
    run = read(folder)
    tags = run.Tags()
    found = {"tags": {kind: sorted(tags[kind]) for kind in ("scalars", "histograms", "images")}}
    found["scalars"] = {tag: scalars(run, tag) for tag in tags["scalars"]}
    found["histograms"] = {
        tag: [(e.step, e.histogram_value) for e in run.Histograms(tag)]
        for tag in tags["histograms"]
    }
    found["images"] = {
        tag: [(e.step, e.width, e.height, pixels(e).tolist()) for e in run.Images(tag)]
        for tag in tags["images"]
    }
    found["tensors"] = {
        tag: [(e.step, e.tensor_proto.SerializeToString()) for e in run.Tensors(tag)]
        for tag in tags["tensors"]
        if not tag.startswith("_hparams_")
    }
    found["subruns"] = sorted(path.name for path in Path(folder).iterdir() if path.is_dir())
    return found


@needs_tensorboard
def test_what_is_written_reads_back_as_pytorchs_writer_writes_it(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter as TorchWriter

    figure = None
    try:
        from matplotlib.figure import Figure

        figure = Figure(figsize=(1.5, 1), dpi=20)
        figure.add_subplot().plot([0, 1, 2], [2, 0, 1])
    except ImportError:
        pass
    _log_everything(SummaryWriter, tmp_path / "ours", mt.tensor, figure)
    _log_everything(TorchWriter, tmp_path / "torch", torch.tensor, figure)
    ours, theirs = _everything_read(tmp_path / "ours"), _everything_read(tmp_path / "torch")
    assert ours == theirs
    for run in ["pair_a", "pair_b"]:
        assert _everything_read(tmp_path / "ours" / run) == _everything_read(
            tmp_path / "torch" / run
        )
    hparams_ours, hparams_theirs = read(tmp_path / "ours" / "hp"), read(tmp_path / "torch" / "hp")
    assert scalars(hparams_ours, "hp/acc") == scalars(hparams_theirs, "hp/acc")
    # compared as messages: a protobuf map's entries (the hparams) serialize in no fixed order
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    def hparams_messages(accumulator):
        return {
            tag: HParamsPluginData.FromString(content)
            for tag, content in accumulator.PluginTagToContent("hparams").items()
        }

    assert hparams_messages(hparams_ours) == hparams_messages(hparams_theirs)
