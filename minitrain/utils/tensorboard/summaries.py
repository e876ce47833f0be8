"""The Summary protos a SummaryWriter writes, built from Tensors, arrays and numbers with
tensorboard's protos and plugin metadata, in the forms torch.utils.tensorboard writes (so
TensorBoard and its event readers see the same tags and values): scalars, histograms, images,
text and the hparams plugin's three records. Imports tensorboard: writer.py imports this module
only where tensorboard is installed."""

from __future__ import annotations

import functools
import numbers

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2
from tensorboard.plugins.hparams import metadata as hparams_metadata
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata

from ... import backend
from ...errors import ArgumentError, DTypeError, ShapeError
from ...tensor import Tensor
from . import images

__all__ = [
    "to_numpy", "scalar", "tensorflow_bins", "histogram", "histogram_raw", "image", "text",
    "hparams",
]  # fmt: skip


def to_numpy(value, caller: str) -> np.ndarray:
    """The values of a Tensor (copied to the host from a GPU; its graph is not touched), an
    array (numpy's or CuPy's), or a Python or numpy number (as a one-element array), as a numpy
    array."""
    if isinstance(value, Tensor):
        value = value.array
    if backend.is_array(value):
        return backend.to_device(value, backend.device("cpu"))
    if isinstance(value, numbers.Number | np.generic):
        return np.array([value])
    raise DTypeError(
        f"{caller}: expected a Tensor, an array or a number, got {type(value).__name__} "
        f"(PyTorch raises NotImplementedError here)"
    )


def scalar(tag: str, value, new_style: bool = False, double_precision: bool = False) -> Summary:
    """One value, as `simple_value` (TensorBoard's classic scalar), or with `new_style` as a
    one-element float tensor (double with `double_precision`) of the scalars plugin.

    value: a number, or a Tensor or array of one element (of any shape)."""
    array = to_numpy(value, "add_scalar").squeeze()
    if array.ndim != 0:
        raise ShapeError(
            f"add_scalar: {tag!r} needs one value, got {array.size} (shape "
            f"{np.shape(value)}); PyTorch raises AssertionError here"
        )
    if array.dtype.kind not in "biuf":
        raise DTypeError(f"add_scalar: {tag!r} needs a real number, got dtype {array.dtype}")
    number = float(array)
    if not new_style:
        return Summary(value=[Summary.Value(tag=tag, simple_value=number)])
    if double_precision:
        proto = TensorProto(dtype="DT_DOUBLE", double_val=[number])
    else:
        proto = TensorProto(dtype="DT_FLOAT", float_val=[number])
    plugin = scalar_metadata.create_summary_metadata(display_name="", description="")
    return Summary(value=[Summary.Value(tag=tag, tensor=proto, metadata=plugin)])


@functools.cache
def tensorflow_bins() -> list[float]:
    """TensorFlow's default histogram bucket edges, PyTorch's `bins="tensorflow"`: +-1e-12
    growing by 1.1 up to 1e20 each way, and 0 (about 1500 edges)."""
    positive, edge = [], 1e-12
    while edge < 1e20:
        positive.append(edge)
        edge *= 1.1  # a product, not a power: PyTorch's edges to the last bit
    return [-edge for edge in reversed(positive)] + [0.0] + positive


def histogram(tag: str, values, bins, max_bins: int | None = None) -> Summary:
    """A histogram proto of `values` (any shape, read as float64) over numpy's `bins` (an int,
    a sequence of edges, or one of numpy.histogram's names such as "auto" or "fd"), at most
    `max_bins` buckets (neighbours summed). Only the buckets from the first to the last
    non-empty one are kept, after an empty bucket whose right edge is the lowest left edge:
    TensorBoard stores right edges alone."""
    flat = to_numpy(values, "add_histogram").astype(np.float64).reshape(-1)
    if flat.size == 0:
        raise ArgumentError(f"add_histogram: {tag!r} has no values to count")
    if isinstance(bins, str | numbers.Integral) and not np.isfinite(flat).all():
        raise ArgumentError(
            f"add_histogram: {tag!r} has nan or infinite values, and bins={bins!r} spans the "
            f"values' range, which must be finite (bins='tensorflow' or given edges leave "
            f"them out of the buckets)"
        )
    counts, edges = np.histogram(flat, bins=bins)
    if max_bins is not None and len(counts) > max_bins:
        group = len(counts) // max_bins
        counts = np.pad(counts, (0, -len(counts) % group)).reshape(-1, group).sum(axis=1)
        edges = np.append(edges[:-1:group], edges[-1])
    filled = np.flatnonzero(counts)
    if filled.size == 0:
        raise ArgumentError(
            f"add_histogram: no value of {tag!r} falls within the bins "
            f"[{edges[0]}, {edges[-1]}] (values in [{flat.min()}, {flat.max()}])"
        )
    first, last = int(filled[0]), int(filled[-1])
    if first > 0:
        counts = counts[first - 1 : last + 1]
    else:
        counts = np.concatenate([[0], counts[: last + 1]])
    return histogram_raw(
        tag,
        min=flat.min(),
        max=flat.max(),
        num=flat.size,
        sum=flat.sum(),
        sum_squares=flat.dot(flat),
        bucket_limits=edges[first : last + 2].tolist(),
        bucket_counts=counts.tolist(),
    )


def _vector(values, name: str) -> np.ndarray:
    """A list, Tensor or array of numbers as a flat float64 array."""
    if isinstance(values, list | tuple):
        return np.asarray(values, dtype=np.float64)
    return to_numpy(values, f"add_histogram_raw ({name})").astype(np.float64).reshape(-1)


def histogram_raw(
    tag: str, min, max, num, sum, sum_squares, bucket_limits, bucket_counts
) -> Summary:
    """A histogram proto from its statistics and buckets as given (right edges and counts,
    as many of each)."""
    limits = _vector(bucket_limits, "bucket_limits")
    counts = _vector(bucket_counts, "bucket_counts")
    if limits.size != counts.size:
        raise ArgumentError(
            f"add_histogram_raw: {tag!r} has {limits.size} bucket_limits but "
            f"{counts.size} bucket_counts; they must be as many"
        )
    proto = HistogramProto(
        min=float(min),
        max=float(max),
        num=float(num),
        sum=float(sum),
        sum_squares=float(sum_squares),
        bucket_limit=limits.tolist(),
        bucket=counts.tolist(),
    )
    return Summary(value=[Summary.Value(tag=tag, histo=proto)])


def image(tag: str, values, dataformats: str, caller: str) -> Summary:
    """A PNG image proto of `values` laid out as `dataformats` (a batch tiled into a grid),
    uint8 values as bytes, any other dtype read as [0, 1] (images.py)."""
    array = images.to_uint8(images.to_hwc(to_numpy(values, caller), dataformats, caller))
    height, width, channels = array.shape
    encoded = images.encode_png(array, caller)
    picture = Summary.Image(
        height=height, width=width, colorspace=channels, encoded_image_string=encoded
    )
    return Summary(value=[Summary.Value(tag=tag, image=picture)])


def text(tag: str, string: str) -> Summary:
    """A text plugin record: one UTF-8 string under `<tag>/text_summary`, PyTorch's tag
    (TensorBoard renders it as markdown)."""
    if not isinstance(string, str):
        raise DTypeError(f"add_text: {tag!r} needs a str, got {type(string).__name__}")
    proto = TensorProto(
        dtype="DT_STRING",
        string_val=[string.encode("utf-8")],
        tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]),
    )
    plugin = text_metadata.create_summary_metadata(display_name="", description="")
    return Summary(value=[Summary.Value(tag=f"{tag}/text_summary", metadata=plugin, tensor=proto)])


def _plugin_record(tag: str, **data) -> Summary:
    # the hparams plugin reads its metadata alone; the empty tensor is tensorboard's own filler
    plugin = hparams_metadata.create_summary_metadata(plugin_data_pb2.HParamsPluginData(**data))
    return Summary(
        value=[Summary.Value(tag=tag, metadata=plugin, tensor=hparams_metadata.NULL_TENSOR)]
    )


def _hparam_value(name: str, value) -> tuple[str, object] | None:
    """(the hparams plugin's type, the value as it stores it), None for a value of None."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        value = to_numpy(value, "add_hparams").reshape(-1)[0]
    # bool is a number here, as in PyTorch, whose number check comes first (True is 1.0)
    if isinstance(value, numbers.Real | np.bool_):
        return "DATA_TYPE_FLOAT64", float(value)
    if isinstance(value, str):
        return "DATA_TYPE_STRING", value
    raise ArgumentError(
        f"add_hparams: hparam {name!r} must be an int, float, str, bool or Tensor, got "
        f"{type(value).__name__}"
    )


def hparams(
    hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: dict | None = None
) -> tuple[Summary, Summary, Summary]:
    """The hparams plugin's experiment (the hparams' names and types, the metrics' tags),
    session-start (the hparams' values) and session-end (success) records."""
    if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
        raise DTypeError(
            f"add_hparams: hparam_dict and metric_dict must be dicts, got "
            f"{type(hparam_dict).__name__} and {type(metric_dict).__name__}"
        )
    domains = hparam_domain_discrete or {}
    if not isinstance(domains, dict):
        raise DTypeError(
            f"add_hparams: hparam_domain_discrete must be a dict, got {type(domains).__name__}"
        )
    for name, choices in domains.items():
        if (
            name not in hparam_dict
            or not isinstance(choices, list)
            or not all(isinstance(choice, type(hparam_dict[name])) for choice in choices)
        ):
            raise DTypeError(
                f"add_hparams: hparam_domain_discrete[{name!r}] must be a list of values of "
                f"the type of hparam_dict[{name!r}]"
            )
    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for name, raw in hparam_dict.items():
        typed = _hparam_value(name, raw)
        if typed is None:
            continue
        kind, value = typed
        field = "number_value" if kind == "DATA_TYPE_FLOAT64" else "string_value"
        cast = float if kind == "DATA_TYPE_FLOAT64" else str
        setattr(start.hparams[name], field, value)
        domain = None
        if name in domains:
            domain = struct_pb2.ListValue(
                values=[struct_pb2.Value(**{field: cast(choice)}) for choice in domains[name]]
            )
        infos.append(
            api_pb2.HParamInfo(name=name, type=api_pb2.DataType.Value(kind), domain_discrete=domain)
        )
    metrics = [api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag)) for tag in metric_dict]
    experiment = api_pb2.Experiment(hparam_infos=infos, metric_infos=metrics)
    end = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.Value("STATUS_SUCCESS"))
    return (
        _plugin_record(hparams_metadata.EXPERIMENT_TAG, experiment=experiment),
        _plugin_record(hparams_metadata.SESSION_START_INFO_TAG, session_start_info=start),
        _plugin_record(hparams_metadata.SESSION_END_INFO_TAG, session_end_info=end),
    )
