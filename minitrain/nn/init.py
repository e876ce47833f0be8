"""Parameter initialisation, in place, with PyTorch's names, formulas and defaults. Each function
that draws takes an optional `generator` (a minitrain.Generator, as torch's `generator=`, or a
numpy Generator), which draws on the host; by default minitrain's generator for the tensor's
device draws (the CPU's, or on a GPU cupy.random's; `manual_seed` seeds both)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import backend
from ..errors import ArgumentError, DTypeError, ShapeError
from ..runtime.generator import Generator
from ..tensor import Tensor

__all__ = [
    "calculate_gain", "fan_in_and_fan_out", "uniform_", "normal_", "constant_", "zeros_",
    "ones_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_",
    "trunc_normal_", "orthogonal_", "eye_", "dirac_", "sparse_",
]  # fmt: skip


_GAINS = {
    "linear": 1.0,
    "identity": 1.0,
    "conv1d": 1.0,
    "conv2d": 1.0,
    "conv3d": 1.0,
    "conv_transpose1d": 1.0,
    "conv_transpose2d": 1.0,
    "conv_transpose3d": 1.0,
    "sigmoid": 1.0,
    "tanh": 5.0 / 3.0,
    "relu": math.sqrt(2.0),
    "selu": 3.0 / 4.0,
}


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table); `param` is leaky_relu's
    negative slope (default 0.01)."""
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1.0 + slope**2))
    if nonlinearity not in _GAINS:
        raise ArgumentError(
            f"calculate_gain: unknown nonlinearity {nonlinearity!r}; "
            f"expected one of {sorted([*_GAINS, 'leaky_relu'])}"
        )
    return _GAINS[nonlinearity]


def fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight: (in, out) for (out, in), times the receptive field for
    convolution weights (out, in, *kernel)."""
    if tensor.ndim < 2:
        raise ShapeError(
            f"fan_in_and_fan_out: needs a weight of at least 2 dims, got shape {tensor.shape}"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ArgumentError(f"init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _empty(tensor: Tensor) -> bool:
    if 0 not in tensor.shape:
        return False
    warnings.warn(
        f"init: initializing a tensor of shape {tensor.shape}, with no elements, does nothing",
        stacklevel=3,  # the caller of kaiming_uniform_ / kaiming_normal_
    )
    return True


def _fill(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Write values into the tensor's array in place (its dtype and device kept)."""
    tensor.array[...] = backend.to_device(values.astype(tensor.dtype), tensor.device)
    tensor.bump_version()
    return tensor


def _numpy_generator(generator, caller: str) -> np.random.Generator | None:
    """The numpy Generator `generator=` names: a minitrain.Generator's stream, a numpy
    Generator itself, or None (the global stream)."""
    if generator is None or isinstance(generator, np.random.Generator):
        return generator
    if isinstance(generator, Generator):
        return generator.numpy_generator()
    raise DTypeError(
        f"{caller}: generator must be a minitrain.Generator or a numpy Generator, got "
        f"{type(generator).__name__}"
    )


def _host_source(generator, caller: str) -> np.random.Generator:
    """A numpy Generator to draw host values from: `generator`'s, or the global CPU stream."""
    return _numpy_generator(generator, caller) or backend.generator()


def _fill_drawn(tensor: Tensor, kind: str, low, high, generator) -> Tensor:
    """Fill with backend.draw's values (on the tensor's device), or a given generator's
    (drawn on the host, then copied there)."""
    generator = _numpy_generator(generator, f"{kind}_")
    if generator is None:
        tensor.array[...] = backend.draw(tensor.device, kind, tensor.shape, tensor.dtype, low, high)
        tensor.bump_version()
        return tensor
    if kind == "uniform":
        return _fill(tensor, generator.uniform(low, high, tensor.shape))
    return _fill(tensor, generator.normal(low, high, tensor.shape))


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with U(a, b)."""
    return _fill_drawn(tensor, "uniform", a, b, generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2)."""
    return _fill_drawn(tensor, "normal", mean, std, generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill tensor with val, in place (outside the graph); returns tensor."""
    tensor.array[...] = val
    tensor.bump_version()
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    """Fill tensor with zeros, in place; returns tensor."""
    return constant_(tensor, 0)


def ones_(tensor: Tensor) -> Tensor:
    """Fill tensor with ones, in place; returns tensor."""
    return constant_(tensor, 1)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot and Bengio, 2010)."""
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan) (He et al., 2015); `a` is the negative
    slope when nonlinearity is leaky_relu. A tensor with no elements is left alone (it has no
    fan), with a warning, as in PyTorch."""
    if _empty(tensor):
        return tensor
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0.0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator=None,
) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan); a tensor with no elements is left alone."""
    if _empty(tensor):
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator=None,
) -> Tensor:
    """N(mean, std^2) truncated to [a, b] (a and b are values, not multiples of std), as
    PyTorch's. Drawn by rejection: normal values outside [a, b] are drawn again (PyTorch inverts
    the CDF instead; the distribution is the same, the numbers are not)."""
    if not a < b:
        raise ArgumentError(f"trunc_normal_: needs a < b, got a={a}, b={b}")
    if not std > 0:
        raise ArgumentError(f"trunc_normal_: std must be positive, got {std}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "trunc_normal_: mean is more than 2 std from [a, b]; the values may be "
            "concentrated at one end",
            stacklevel=2,
        )
    # the normal's mass inside [a, b]: how many draws one kept value costs on average
    mass = 0.5 * (
        math.erf((b - mean) / (std * math.sqrt(2))) - math.erf((a - mean) / (std * math.sqrt(2)))
    )
    if mass <= 1e-12:
        raise ArgumentError(
            f"trunc_normal_: [a, b] = [{a}, {b}] holds almost none of N({mean}, {std}^2)"
        )
    source = _host_source(generator, "trunc_normal_")
    values = np.empty(tensor.numel(), np.float64)
    filled = 0
    while filled < values.size:
        wanted = values.size - filled
        drawn = source.normal(mean, std, min(int(wanted / mass * 1.1) + 16, 1 << 24))
        kept = drawn[(drawn >= a) & (drawn <= b)][:wanted]
        values[filled : filled + kept.size] = kept
        filled += kept.size
    return _fill(tensor, values.reshape(tensor.shape))


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix times gain (Saxe et al., 2013), as PyTorch's: the tensor read
    as (shape[0], numel / shape[0]); its rows are orthonormal when rows <= columns (W W^T = I),
    its columns otherwise (W^T W = I). The Q of a normal matrix's QR, the signs fixed by R's
    diagonal so that Q is uniformly distributed. Needs 2 or more dims; an empty tensor is left
    alone."""
    if tensor.ndim < 2:
        raise ShapeError(
            f"orthogonal_: only tensors with 2 or more dimensions are supported, got shape "
            f"{tuple(tensor.shape)}"
        )
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    columns = tensor.numel() // rows
    flat = _host_source(generator, "orthogonal_").normal(0.0, 1.0, (rows, columns))
    if rows < columns:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))  # each column's sign made that of R's diagonal entry
    if rows < columns:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape))


def eye_(tensor: Tensor) -> Tensor:
    """The identity matrix in a 2-D tensor (ones on the diagonal of a rectangular one too)."""
    if tensor.ndim != 2:
        raise ShapeError(
            f"eye_: only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}"
        )
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """The Dirac delta in a convolution weight (out, in, *kernel) of 3, 4 or 5 dims: each of the
    first min(out / groups, in) output channels of each group passes its input channel through
    (a one at the kernel's centre), so the convolution keeps those channels' values."""
    if tensor.ndim not in (3, 4, 5):
        raise ShapeError(
            f"dirac_: only tensors with 3, 4 or 5 dimensions are supported, got shape "
            f"{tuple(tensor.shape)}"
        )
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ArgumentError(f"dirac_: groups must be a positive int, got {groups!r}")
    if tensor.shape[0] % groups:
        raise ArgumentError(
            f"dirac_: dim 0 of shape {tuple(tensor.shape)} must be divisible by groups={groups}"
        )
    out_per_group = tensor.shape[0] // groups
    centre = tuple(size // 2 for size in tensor.shape[2:])
    values = np.zeros(tensor.shape)
    for group in range(groups):
        for channel in range(min(out_per_group, tensor.shape[1])):
            values[(group * out_per_group + channel, channel, *centre)] = 1.0
    return _fill(tensor, values)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """A sparse 2-D matrix (Martens, 2010), as PyTorch's: N(0, std^2) values, then in each
    column ceil(sparsity * rows) entries, at rows drawn at random, set to zero."""
    if tensor.ndim != 2:
        raise ShapeError(
            f"sparse_: only tensors with 2 dimensions are supported, got shape "
            f"{tuple(tensor.shape)}"
        )
    if isinstance(sparsity, bool) or not 0.0 <= sparsity <= 1.0:
        raise ArgumentError(f"sparse_: sparsity must be in [0, 1], got {sparsity!r}")
    rows, columns = tensor.shape
    source = _host_source(generator, "sparse_")
    values = source.normal(0.0, std, (rows, columns))
    zeros = math.ceil(sparsity * rows)
    for column in range(columns):
        values[source.permutation(rows)[:zeros], column] = 0.0
    return _fill(tensor, values)
