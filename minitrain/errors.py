"""The exceptions minitrain raises, each also an instance of the matching builtin.

Every error minitrain raises on purpose is a MinitrainError, except where Python's protocols
name the builtin: IndexError for an index out of range (getitem, containers, datasets; a dim
or a class index out of range is a DimensionError or IndexOutOfRangeError, both IndexErrors),
KeyError for a missing or bad name (ModuleDict, History), and RuntimeError from
clip_grad_norm_ on a non-finite norm, as in PyTorch.

PyTorch's C++ checks (TORCH_CHECK) raise RuntimeError where Python would say ValueError or
TypeError: shapes that do not fit, an argument value out of range, a dtype an op does not
implement (its NotImplementedError, a RuntimeError). So ShapeError, ArgumentError and
DTypeError are RuntimeErrors as well as the builtin their name suggests: `except RuntimeError`
in a PyTorch program catches them, and minitrain's own `except ValueError` callers keep
working."""

__all__ = [
    "MinitrainError", "ArgumentError", "UnknownModeError", "ShapeError", "DimensionError",
    "IndexOutOfRangeError", "DTypeError", "IndexTypeError", "DeviceError", "GraphError",
    "GradcheckError", "DistributedError", "CheckpointError", "PackingError", "WorkerError",
]  # fmt: skip


class MinitrainError(Exception):
    """Base class of every error minitrain raises on purpose (see the module docstring)."""


class ArgumentError(MinitrainError, ValueError, RuntimeError):
    """An argument value an op, layer, optimizer or loader cannot take: a negative stride, a
    probability outside [0, 1], an unknown mode name. PyTorch raises ValueError for some and
    RuntimeError for others (chunk(0), narrow past the end, topk's k too large): it is both."""


class UnknownModeError(ArgumentError, NotImplementedError):
    """A mode name an op does not know where PyTorch raises NotImplementedError for it
    (F.pad's mode='foo'); an ArgumentError too."""


class ShapeError(MinitrainError, ValueError, RuntimeError):
    """Shapes that do not fit: broadcasting, matmul dims, reshape sizes, axes out of range.
    Also the RuntimeError PyTorch raises for them (a ValueError in minitrain's older code)."""


class DimensionError(ShapeError, IndexError):
    """A dim out of range for a tensor's rank: also the IndexError PyTorch raises."""


class IndexOutOfRangeError(MinitrainError, IndexError, RuntimeError):
    """An index value outside what it indexes (a class index past the number of classes):
    also the IndexError PyTorch raises for most, and the RuntimeError it raises for gather's,
    scatter's and index_add's ("index 5 is out of bounds for dimension 1")."""


class DTypeError(MinitrainError, TypeError, NotImplementedError):
    """A dtype or an argument type an op cannot take: PyTorch raises TypeError for an argument
    of the wrong type and NotImplementedError (a RuntimeError) for a dtype an op does not
    implement ("not implemented for 'Bool'"), or RuntimeError for a result it cannot cast; it
    is all three."""


class IndexTypeError(DTypeError, IndexError):
    """An index of a kind that cannot index, a float or a float tensor: also the IndexError
    PyTorch raises ("tensors used as indices must be long, int, byte or bool tensors")."""


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


class PackingError(ArgumentError):
    """Sequences or lengths that nn.utils.rnn cannot pack or pad (lengths not sorted with
    enforce_sorted=True, a length of 0, as many lengths as sequences not given): an
    ArgumentError, and so the RuntimeError PyTorch raises."""


class WorkerError(MinitrainError, RuntimeError):
    """A DataLoader worker process that exited unexpectedly (killed, or out of memory), or a
    DataLoader that timed out waiting for its workers: RuntimeErrors, as in PyTorch."""
