"""SummaryWriter, as torch.utils.tensorboard's: scalars, histograms, images, text, figures and
hparams written to TensorBoard event files through the tensorboard package (its EventFileWriter
writes the records, its protos hold them). Without tensorboard installed this module still
imports, so a program's import line works; constructing a writer raises ModuleNotFoundError
saying what to install."""

from __future__ import annotations

import os
import socket
import time
import warnings
from datetime import datetime

import numpy as np

try:
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from . import images, summaries

    _missing: ModuleNotFoundError | None = None
except ModuleNotFoundError as error:
    # tensorboard, or the protobuf it needs ("google"), is missing: reported on first use
    if (error.name or "").split(".")[0] not in {"tensorboard", "google"}:
        raise
    _missing = error

__all__ = ["SummaryWriter"]

INSTALL_HINT = (
    "SummaryWriter needs the tensorboard package: pip install tensorboard "
    "(or pip install 'minitrain[tensorboard]')"
)


class SummaryWriter:
    """Writes what a training run logs to event files in `log_dir`, for TensorBoard to show
    (`tensorboard --logdir runs`), as `torch.utils.tensorboard.SummaryWriter` does.

    log_dir: the folder (made if missing); by default `runs/<Mon>DD_HH-MM-SS_<hostname><comment>`,
    new each run. comment: the default folder's suffix (ignored with a log_dir). purge_step:
    after a crash at step T+X, restarting at step T, TensorBoard hides the events at steps >= T
    written before (the same log_dir). max_queue: events kept before an add writes them all;
    flush_secs: how often the queue is written anyway. filename_suffix: added to every event
    file's name.

    Values may be Tensors (their values are read, on the host: a GPU tensor is copied, its graph
    left alone), numpy or CuPy arrays, or numbers. Not written: graphs (`add_graph` warns and
    writes nothing) and embeddings (`add_embedding` raises NotImplementedError); audio, video,
    meshes, PR curves and custom scalar layouts are not offered. Where PyTorch raises
    AssertionError or NotImplementedError on a bad value, this raises minitrain's ShapeError,
    ArgumentError (ValueErrors) or DTypeError (a TypeError).

    Needs the tensorboard package (`pip install tensorboard`); without it the import works and
    construction raises ModuleNotFoundError."""

    def __init__(
        self,
        log_dir: str | os.PathLike | None = None,
        comment: str = "",
        purge_step: int | None = None,
        max_queue: int = 10,
        flush_secs: int = 120,
        filename_suffix: str = "",
    ) -> None:
        if _missing is not None:
            raise ModuleNotFoundError(INSTALL_HINT, name="tensorboard") from _missing
        if not log_dir:
            started = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{started}_{socket.gethostname()}{comment}")
        self.log_dir = str(log_dir)
        self.purge_step = purge_step
        self.max_queue = max_queue
        self.flush_secs = flush_secs
        self.filename_suffix = filename_suffix
        # the event files by folder: log_dir's, and add_scalars' one per series; None once
        # closed, reopened by the next add
        self._writers: dict[str, EventFileWriter] | None = None
        self._main_writer()

    def _open(self, folder: str) -> EventFileWriter:
        writer = EventFileWriter(folder, self.max_queue, self.flush_secs, self.filename_suffix)
        if self._writers is None:
            self._writers = {}
        self._writers[folder] = writer
        return writer

    def _main_writer(self) -> EventFileWriter:
        """log_dir's event file, opened again after close() as PyTorch's is."""
        if self._writers is not None and self.log_dir in self._writers:
            return self._writers[self.log_dir]
        writer = self._open(self.log_dir)
        if self.purge_step is not None:
            # TensorBoard drops the events at steps >= purge_step read before a restart here
            step = int(self.purge_step)
            writer.add_event(Event(step=step, file_version="brain.Event:2"))
            writer.add_event(Event(step=step, session_log=SessionLog(status=SessionLog.START)))
            self.purge_step = None
        return writer

    @staticmethod
    def _write(writer: EventFileWriter, summary, global_step, walltime) -> None:
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(global_step)  # a Tensor or numpy step too
        writer.add_event(event)

    def get_logdir(self) -> str:
        """The folder the event files are written to."""
        return self.log_dir

    def add_scalar(
        self,
        tag: str,
        scalar_value,
        global_step: int | None = None,
        walltime: float | None = None,
        new_style: bool = False,
        double_precision: bool = False,
    ) -> None:
        """Log one value (a number, or a one-element Tensor or array) under `tag` at
        `global_step` (walltime: seconds since the epoch, now by default). new_style writes it
        as a tensor of the scalars plugin (float32, float64 with double_precision) instead of
        the classic `simple_value`."""
        summary = summaries.scalar(tag, scalar_value, new_style, double_precision)
        self._write(self._main_writer(), summary, global_step, walltime)

    def add_scalars(
        self,
        main_tag: str,
        tag_scalar_dict: dict,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log several values in one chart: each `{tag: value}` is written under `main_tag`
        to its own run, the folder `<log_dir>/<main_tag>_<tag>` ("/" in main_tag read as "_"),
        as PyTorch does."""
        walltime = time.time() if walltime is None else walltime
        written = {tag: summaries.scalar(main_tag, value) for tag, value in tag_scalar_dict.items()}
        base = self._main_writer().get_logdir()
        for tag, summary in written.items():
            folder = f"{base}/{main_tag.replace('/', '_')}_{tag}"
            writer = self._writers.get(folder) or self._open(folder)
            self._write(writer, summary, global_step, walltime)

    def add_histogram(
        self,
        tag: str,
        values,
        global_step: int | None = None,
        bins="tensorflow",
        walltime: float | None = None,
        max_bins: int | None = None,
    ) -> None:
        """Log the histogram of `values` (a Tensor or array, any shape). bins: "tensorflow"
        (TensorFlow's exponential buckets, PyTorch's default), an int, a sequence of edges, or a
        numpy.histogram name ("auto", "fd", "sturges", ...); max_bins merges neighbouring
        buckets down to at most that many."""
        if isinstance(bins, str) and bins == "tensorflow":
            bins = summaries.tensorflow_bins()
        summary = summaries.histogram(tag, values, bins, max_bins)
        self._write(self._main_writer(), summary, global_step, walltime)

    def add_histogram_raw(
        self,
        tag: str,
        min,
        max,
        num,
        sum,
        sum_squares,
        bucket_limits,
        bucket_counts,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log a histogram already counted: its min, max, number of values, sum, sum of
        squares, and the buckets' right edges and counts (as many of each)."""
        summary = summaries.histogram_raw(
            tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts
        )
        self._write(self._main_writer(), summary, global_step, walltime)

    def add_image(
        self,
        tag: str,
        img_tensor,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "CHW",
    ) -> None:
        """Log an image, laid out as `dataformats` ("CHW" by default, "HWC", "HW", ...): uint8
        values are bytes, any other dtype is read as [0, 1]; 1 channel is grey, 3 RGB, 4 RGBA."""
        summary = summaries.image(tag, img_tensor, dataformats, "add_image")
        self._write(self._main_writer(), summary, global_step, walltime)

    def add_images(
        self,
        tag: str,
        img_tensor,
        global_step: int | None = None,
        walltime: float | None = None,
        dataformats: str = "NCHW",
    ) -> None:
        """Log a batch of images ("NCHW" by default, or "NHWC", ...; 1 or 3 channels) as one
        image, tiled eight to a row as PyTorch does."""
        summary = summaries.image(tag, img_tensor, dataformats, "add_images")
        self._write(self._main_writer(), summary, global_step, walltime)

    def add_figure(
        self,
        tag: str,
        figure,
        global_step: int | None = None,
        close: bool = True,
        walltime: float | None = None,
    ) -> None:
        """Log a matplotlib figure (or a list of figures, tiled) as an image, drawn with Agg;
        `close` closes the figures after. Needs matplotlib."""
        try:
            import matplotlib  # noqa: F401
        except ModuleNotFoundError as error:
            raise ModuleNotFoundError(
                "add_figure needs matplotlib: pip install matplotlib", name="matplotlib"
            ) from error
        if isinstance(figure, list):
            batch = [images.figure_to_array(one, close) for one in figure]
            self.add_image(tag, np.stack(batch), global_step, walltime, "NCHW")
        else:
            drawn = images.figure_to_array(figure, close)
            self.add_image(tag, drawn, global_step, walltime, "CHW")

    def add_text(
        self,
        tag: str,
        text_string: str,
        global_step: int | None = None,
        walltime: float | None = None,
    ) -> None:
        """Log a string (TensorBoard renders it as markdown) under `<tag>/text_summary`."""
        summary = summaries.text(tag, text_string)
        self._write(self._main_writer(), summary, global_step, walltime)

    def add_hparams(
        self,
        hparam_dict: dict,
        metric_dict: dict,
        hparam_domain_discrete: dict | None = None,
        run_name: str | None = None,
        global_step: int | None = None,
    ) -> None:
        """Log a run's hyperparameters (int, float, str, bool or one-element Tensor values;
        None ones skipped; a bool is stored as the number 1.0 or 0.0, as PyTorch stores it)
        with its metrics, for the HPARAMS tab: written, with each metric as a scalar, to the
        folder `<log_dir>/<run_name>` (`str(time.time())` by default).
        hparam_domain_discrete: {name: [every value it may take]}."""
        records = summaries.hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        folder = os.path.join(self._main_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=folder) as run:
            for summary in records:
                run._write(run._main_writer(), summary, global_step, None)
            for tag, value in metric_dict.items():
                run.add_scalar(tag, value, global_step)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True) -> None:
        """Writes nothing, with a warning. PyTorch traces the model with torch.jit into a
        GraphDef; minitrain has no tracer to TensorBoard's graph format, and a program that
        logs its graph once should still train and log the rest, so this warns rather than
        raises. minitrain.viz draws the backward graph of a computed value instead."""
        warnings.warn(
            f"SummaryWriter.add_graph: minitrain does not write model graphs to TensorBoard; "
            f"nothing was written for {type(model).__name__} (minitrain.viz.draw_graph draws "
            f"a backward graph)",
            UserWarning,
            stacklevel=2,
        )

    def add_embedding(
        self,
        mat,
        metadata=None,
        label_img=None,
        global_step=None,
        tag="default",
        metadata_header=None,
    ) -> None:
        """Not supported: raises NotImplementedError (the projector's files are not written)."""
        raise NotImplementedError(
            "SummaryWriter.add_embedding: minitrain does not write TensorBoard projector "
            "embeddings; log the vectors another way (e.g. numpy.save)"
        )

    def flush(self) -> None:
        """Write every queued event to disk now."""
        for writer in (self._writers or {}).values():
            writer.flush()

    def close(self) -> None:
        """Write every queued event and close the files (a second close does nothing; a later
        add opens a new event file, as PyTorch's writer does)."""
        for writer in (self._writers or {}).values():
            writer.flush()
            writer.close()
        self._writers = None

    def __enter__(self) -> SummaryWriter:
        return self

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        self.close()
