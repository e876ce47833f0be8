"""The exceptions minitrain raises, each also an instance of the matching builtin.

Every error minitrain raises on purpose is a MinitrainError, except where Python's protocols
name the builtin: IndexError for an index out of range (getitem, containers, datasets; a dim
or a class index out of range is a DimensionError or IndexOutOfRangeError, both IndexErrors),
KeyError for a missing or bad name (ModuleDict, History), and RuntimeError from
clip_grad_norm_ on a non-finite norm, as in PyTorch."""

__all__ = [
    "MinitrainError", "ArgumentError", "ShapeError", "DimensionError", "IndexOutOfRangeError",
    "DTypeError", "DeviceError", "GraphError", "GradcheckError", "DistributedError",
    "CheckpointError", "PackingError", "WorkerError",
]  # fmt: skip


class MinitrainError(Exception):
    """Base class of every error minitrain raises on purpose (see the module docstring)."""


class ArgumentError(MinitrainError, ValueError):
    """An argument value an op, layer, optimizer or loader cannot take: a negative stride, a
    probability outside [0, 1], an unknown mode name."""


class ShapeError(MinitrainError, ValueError):
    """Shapes that do not fit: broadcasting, matmul dims, reshape sizes, axes out of range."""


class DimensionError(ShapeError, IndexError):
    """A dim out of range for a tensor's rank: also the IndexError PyTorch raises."""


class IndexOutOfRangeError(MinitrainError, IndexError):
    """An index value outside what it indexes (a class index past the number of classes):
    also the IndexError PyTorch raises."""


class DTypeError(MinitrainError, TypeError):
    """A dtype or an argument type an op cannot take."""


class DeviceError(MinitrainError, RuntimeError):
    """Arrays on different devices, or a device that is not available."""


class GraphError(MinitrainError, RuntimeError):
    """Misuse of the autograd graph: a second backward through freed values, a non-scalar root."""


class GradcheckError(MinitrainError, AssertionError):
    """Analytic and finite-difference gradients disagree."""


class DistributedError(MinitrainError, RuntimeError):
    """Processes that cannot work together: a collective before init_process_group, ranks that
    disagree on a tensor's shape, a collective that timed out, MPI (mpi4py) missing."""


class CheckpointError(MinitrainError, ValueError):
    """A checkpoint that cannot be saved or loaded: an unsupported value, a damaged or foreign
    file, an unknown format version."""


class PackingError(ArgumentError, RuntimeError):
    """Sequences or lengths that nn.utils.rnn cannot pack or pad (lengths not sorted with
    enforce_sorted=True, a length of 0, as many lengths as sequences not given): an
    ArgumentError, and the RuntimeError PyTorch raises."""


class WorkerError(MinitrainError, RuntimeError):
    """A DataLoader worker process that exited unexpectedly (killed, or out of memory), or a
    DataLoader that timed out waiting for its workers: RuntimeErrors, as in PyTorch."""
