"""Where the sliding windows of the conv and pool ops sit, and the checks of their attributes.

Window; the checks of the window attributes (ints per spatial dim, ONNX pads, auto_pad); and the
geometry of a conv and of a pool.

Two spellings meet here, each in its place. The public kernels (conv_grad, im2col, col2im,
avg_pool_grad) and the Op classes' attributes spell the window as ONNX does (kernel_shape,
strides, pads in ONNX order, dilations, group, auto_pad), their contract (docs/kernels.md), and
so do their errors. The ops (conv, max_pool, unfold_patches, ...) take PyTorch's (kernel_size,
stride, padding, dilation, groups): `padding_pads` and `conv_padding` translate padding to ONNX
pads, and `torch_conv_window` and `torch_pool_window` the whole window, once, with errors
spelled as PyTorch's (TORCH_NAMES).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError

AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")

# What the window attributes are called in errors: ONNX's names, the kernels' own, and
# PyTorch's, the ops'.
ONNX_NAMES = {
    "kernel_shape": "kernel_shape",
    "strides": "strides",
    "pads": "pads",
    "dilations": "dilations",
    "group": "group",
}
TORCH_NAMES = {
    "kernel_shape": "kernel_size",
    "strides": "stride",
    "pads": "padding",
    "dilations": "dilation",
    "group": "groups",
}


class Window(NamedTuple):
    """Where the sliding windows of a conv or pool sit, per spatial dim: kernel taps, strides,
    pads in ONNX order (all begins, then all ends), dilations, and the output size."""

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    pads: tuple[int, ...]
    dilations: tuple[int, ...]
    out: tuple[int, ...]

    @property
    def pads_begin(self) -> tuple[int, ...]:
        return self.pads[: len(self.kernel)]

    @property
    def pads_end(self) -> tuple[int, ...]:
        return self.pads[len(self.kernel) :]

    @property
    def reach(self) -> tuple[int, ...]:
        """Input positions a window spans: dilation * (k - 1) + 1 per dim."""
        return tuple(d * (k - 1) + 1 for k, d in zip(self.kernel, self.dilations, strict=True))

    def slices(self, offset: tuple[int, ...]) -> tuple[slice, ...]:
        """Per dim, the padded-input positions kernel tap `offset` reads, one per output."""
        return tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offset, self.dilations, self.strides, self.out, strict=True)
        )

    def canonical(self) -> tuple[tuple[int, int, int], ...]:
        """kernel, strides, pads_begin, dilations and out as 3-tuples, missing leading dims
        filled with a size-1 dim, so one numba kernel serves 1, 2 and 3 spatial dims."""
        lead = 3 - len(self.kernel)
        return (
            (1,) * lead + self.kernel,
            (1,) * lead + self.strides,
            (0,) * lead + self.pads_begin,
            (1,) * lead + self.dilations,
            (1,) * lead + self.out,
        )


def spatial_ints(value, dims: int, name: str, caller: str, minimum: int) -> tuple[int, ...]:
    """An int (the same for every spatial dim) or a sequence of `dims` ints, each >= minimum."""
    items = (value,) * dims if isinstance(value, (int, np.integer)) else value
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise DTypeError(f"{caller}: {name} must be an int or {dims} ints, got {value!r}")
    items = tuple(items)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        raise DTypeError(f"{caller}: {name} must be ints, got {value!r}")
    if len(items) != dims:
        raise ShapeError(
            f"{caller}: {name} needs {dims} values (one per spatial dim), got {len(items)}: "
            f"{value!r}"
        )
    if any(v < minimum for v in items):
        raise ArgumentError(f"{caller}: {name} must be >= {minimum}, got {value!r}")
    return tuple(int(v) for v in items)


def onnx_pads(pads, dims: int, caller: str) -> tuple[int, ...]:
    """pads in ONNX order, [b0, b1, ..., e0, e1, ...]: None (no padding), one int (every side)
    or 2 * dims non-negative ints."""
    if pads is None:
        return (0,) * (2 * dims)
    if isinstance(pads, (int, np.integer)):
        pads = (pads,) * (2 * dims)
    if isinstance(pads, Sequence) and len(pads) != 2 * dims:
        raise ShapeError(
            f"{caller}: pads needs 2 * {dims} values, all begins then all ends "
            f"[b0, b1, ..., e0, e1, ...], got {len(pads)}: {pads!r}"
        )
    return spatial_ints(pads, 2 * dims, "pads", caller, 0)


def padding_pads(padding, dims: int, caller: str) -> tuple[int, ...]:
    """PyTorch's `padding` of an op with `dims` spatial dims as ONNX pads (all begins, then all
    ends): an int (every side), one int per spatial dim (both ends of that dim), or, beyond
    PyTorch, one (begin, end) pair per spatial dim (PyTorch pads asymmetrically with F.pad
    first). Every value >= 0; strings are conv_padding's."""
    if isinstance(padding, (str, bytes)):
        raise DTypeError(
            f"{caller}: padding must be an int, {dims} ints or {dims} (begin, end) pairs, got "
            f"{padding!r}"
        )
    if isinstance(padding, Sequence) and any(isinstance(p, Sequence) for p in padding):
        if len(padding) != dims or not all(
            isinstance(p, Sequence) and not isinstance(p, str) and len(p) == 2 for p in padding
        ):
            raise ShapeError(
                f"{caller}: padding as pairs needs one (begin, end) pair per spatial dim "
                f"({dims}), got {padding!r}"
            )
        begins = spatial_ints([p[0] for p in padding], dims, "padding", caller, 0)
        ends = spatial_ints([p[1] for p in padding], dims, "padding", caller, 0)
        return begins + ends
    per_dim = spatial_ints(padding, dims, "padding", caller, 0)
    return per_dim + per_dim


def check_padding_string(padding: str, caller: str) -> None:
    """A conv's padding given as a string must be 'valid' or 'same'."""
    if padding not in ("valid", "same"):
        raise ArgumentError(
            f"{caller}: padding must be an int, ints, (begin, end) pairs, 'valid' or 'same', "
            f"got {padding!r}"
        )


def conv_padding(padding, spatial, kernel, strides, dilations, caller: str) -> tuple[int, ...]:
    """A conv's PyTorch `padding` as ONNX pads: padding_pads' forms, 'valid' (none) or 'same'
    (ONNX's SAME_UPPER: for stride 1 PyTorch's 'same', the odd pad at the end; for a larger
    stride, which PyTorch refuses, ceil(L / stride) outputs)."""
    if not isinstance(padding, str):
        return padding_pads(padding, len(kernel), caller)
    check_padding_string(padding, caller)
    auto_pad = "VALID" if padding == "valid" else "SAME_UPPER"
    return auto_pads(auto_pad, spatial, kernel, strides, dilations, caller)


def check_strides_dilations(caller, strides, dilations, dims: int, names=ONNX_NAMES) -> tuple:
    """strides and dilations (None: 1), each an int or `dims` ints, every one >= 1, as tuples."""
    strides = spatial_ints(1 if strides is None else strides, dims, names["strides"], caller, 1)
    dilations = spatial_ints(
        1 if dilations is None else dilations, dims, names["dilations"], caller, 1
    )
    return strides, dilations


def check_group(caller: str, group, names=ONNX_NAMES) -> None:
    """A conv's group must be a positive int (bools refused)."""
    if isinstance(group, bool) or not isinstance(group, (int, np.integer)) or group < 1:
        raise ArgumentError(f"{caller}: {names['group']} must be a positive int, got {group!r}")


def check_kernel(caller: str, w_shape, strides, dilations, names=ONNX_NAMES) -> tuple:
    """The kernel of a conv or transposed conv (W's spatial dims, none empty), its strides and
    its dilations, checked, as (kernel, strides, dilations)."""
    kernel = tuple(int(k) for k in w_shape[2:])
    if 0 in kernel:
        raise ShapeError(f"{caller}: W {w_shape} has an empty kernel")
    return (kernel, *check_strides_dilations(caller, strides, dilations, len(kernel), names))


def check_rank(caller: str, x_shape, name: str = "input") -> None:
    """x_shape must be (N, C, *spatial) with 1 to 3 spatial dims."""
    if len(x_shape) not in (3, 4, 5):
        raise ShapeError(
            f"{caller}: {name} must be (N, C, *spatial) with 1 to 3 spatial dims, got shape "
            f"{x_shape}"
        )


def check_conv_ranks(caller: str, x_shape, w_shape, w_layout: str) -> int:
    """X (N, C, *spatial) with 1 to 3 spatial dims, and W of X's rank, laid out as `w_layout`
    says (for the error); returns the number of spatial dims."""
    check_rank(caller, x_shape, "input X")
    if len(w_shape) != len(x_shape):
        raise ShapeError(
            f"{caller}: weight W {w_shape} must be {w_layout} with the rank of X {x_shape}"
        )
    return len(x_shape) - 2


def _conv_output_size(length, begin, end, reach, stride, dim, caller, pads_name) -> int:
    padded = length + begin + end
    if reach > padded:
        raise ShapeError(
            f"{caller}: the kernel spans {reach} positions in spatial dim {dim}, more than the "
            f"padded input's {padded} (size {length} + {pads_name} {begin}, {end})"
        )
    return (padded - reach) // stride + 1


def conv_window(
    spatial, kernel, strides, pads, dilations, caller: str = "conv", names: dict = ONNX_NAMES
) -> Window:
    """The Window of a conv: per dim `floor((L + pad_begin + pad_end - reach) / stride) + 1`
    outputs, reach = dilation * (k - 1) + 1. Raises when a kernel outspans the padded input."""
    dims = len(kernel)
    begin, end = pads[:dims], pads[dims:]
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    out = tuple(
        _conv_output_size(*args, dim, caller, names["pads"])
        for dim, args in enumerate(zip(spatial, begin, end, reach, strides, strict=True))
    )
    return Window(tuple(kernel), tuple(strides), tuple(pads), tuple(dilations), out)


def auto_pads(auto_pad: str, spatial, kernel, strides, dilations, caller: str) -> tuple[int, ...]:
    """ONNX auto_pad as explicit pads. SAME_UPPER / SAME_LOWER: ceil(L / stride) outputs, from
    `max(0, (out - 1) * stride + reach - L)` padding split in two, the odd one at the end (UPPER)
    or at the beginning (LOWER). VALID: no padding."""
    if auto_pad not in AUTO_PADS[1:]:
        raise ArgumentError(f"{caller}: auto_pad must be one of {AUTO_PADS}, got {auto_pad!r}")
    dims = len(kernel)
    if auto_pad == "VALID":
        return (0,) * (2 * dims)
    begins, ends = [], []
    for length, k, s, d in zip(spatial, kernel, strides, dilations, strict=True):
        total = max(0, (-(-length // s) - 1) * s + d * (k - 1) + 1 - length)
        small, large = total // 2, total - total // 2
        begins.append(small if auto_pad == "SAME_UPPER" else large)
        ends.append(large if auto_pad == "SAME_UPPER" else small)
    return tuple(begins + ends)


def _check_conv_shapes(caller, x_shape, w_shape, group, names) -> int:
    """X (N, C, *spatial) and W (M, C/group, *kernel) of one rank, group dividing C and M, W's
    channels C/group; returns the number of spatial dims."""
    dims = check_conv_ranks(caller, x_shape, w_shape, "(M, C/group, *kernel)")
    check_group(caller, group, names)
    channels, filters = x_shape[1], w_shape[0]
    if channels % group or filters % group:
        raise ShapeError(
            f"{caller}: {names['group']} {group} must divide both X's channels C = {channels} "
            f"(X {x_shape}) and W's filters M = {filters} (W {w_shape})"
        )
    if w_shape[1] != channels // group:
        raise ShapeError(
            f"{caller}: W {w_shape} must have C/group = {channels}/{group} = "
            f"{channels // group} input channels in dim 1, got {w_shape[1]} (X {x_shape})"
        )
    return dims


def check_conv_window(
    caller, x_shape, w_shape, strides, pads, dilations, group, auto_pad
) -> Window:
    """Check a conv's shapes and ONNX attributes (before anything runs) and return its Window:
    X (N, C, *spatial), W (M, C/group, *kernel), pads or auto_pad, errors naming `caller` and
    the attributes as ONNX does (the kernels' contract: conv_grad)."""
    dims = _check_conv_shapes(caller, x_shape, w_shape, group, ONNX_NAMES)
    kernel, strides, dilations = check_kernel(caller, w_shape, strides, dilations)
    if auto_pad == "NOTSET":
        pads = onnx_pads(pads, dims, caller)
    elif pads is not None:
        raise ArgumentError(
            f"{caller}: give pads or auto_pad={auto_pad!r}, not both (got {pads!r})"
        )
    else:
        pads = auto_pads(auto_pad, x_shape[2:], kernel, strides, dilations, caller)
    return conv_window(x_shape[2:], kernel, strides, pads, dilations, caller)


def torch_conv_window(caller, x_shape, w_shape, stride, padding, dilation, groups) -> Window:
    """The Window of a conv op called with PyTorch's arguments (stride, padding as conv_padding
    takes it, dilation, groups), checked before anything runs, errors naming `caller` and
    PyTorch's arguments."""
    _check_conv_shapes(caller, x_shape, w_shape, groups, TORCH_NAMES)
    kernel, strides, dilations = check_kernel(caller, w_shape, stride, dilation, TORCH_NAMES)
    pads = conv_padding(padding, x_shape[2:], kernel, strides, dilations, caller)
    return conv_window(x_shape[2:], kernel, strides, pads, dilations, caller, TORCH_NAMES)


def check_pool_input(caller: str, x_shape) -> None:
    """(N, C, *spatial) with 1 to 3 spatial dims, none of them empty (as PyTorch requires: a
    window over no input has no max and no mean)."""
    check_rank(caller, x_shape)
    if 0 in x_shape[2:]:
        raise ShapeError(f"{caller}: input {tuple(x_shape)} has an empty spatial dim")


def _pool_output_size(length, begin, end, reach, stride, ceil_mode, dim, caller) -> int:
    padded = length + begin + end
    out = (padded - reach + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= length + begin:
        out -= 1  # the last window must start inside the input or the left padding
    if out < 1:
        overhang = f" plus the stride - 1 = {stride - 1} ceil_mode lets it overhang" * ceil_mode
        raise ShapeError(
            f"{caller}: the window spans {reach} positions in spatial dim {dim}, more than the "
            f"padded input's {padded} (size {length} + pads {begin}, {end}){overhang}"
        )
    return out


def pool_window(
    caller: str,
    x_shape,
    kernel_shape,
    strides,
    pads,
    dilations,
    ceil_mode: bool,
    names: dict = ONNX_NAMES,
) -> Window:
    """Check a pool's input rank and attributes (before anything runs) and return its Window.

    Outputs per dim: floor((L + pad_begin + pad_end - reach) / stride) + 1, reach =
    dilation * (k - 1) + 1; ceil instead of floor with ceil_mode, dropping a last window that
    would start in the right padding (so with ceil_mode, as in PyTorch, a window may reach
    past the padded input, even be longer than it). Each pad must be at most kernel // 2
    (PyTorch's rule)."""
    check_pool_input(caller, x_shape)
    if not isinstance(ceil_mode, (bool, np.bool_)):
        raise DTypeError(f"{caller}: ceil_mode must be a bool, got {ceil_mode!r}")
    dims = len(x_shape) - 2
    kernel = spatial_ints(kernel_shape, dims, names["kernel_shape"], caller, 1)
    strides, dilations = check_strides_dilations(caller, strides, dilations, dims, names)
    pads = onnx_pads(pads, dims, caller)
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilations, strict=True)]
    for dim in range(dims):
        if max(pads[dim], pads[dims + dim]) > kernel[dim] // 2:
            raise ArgumentError(
                f"{caller}: {names['pads']} {pads[dim]}, {pads[dims + dim]} in spatial dim "
                f"{dim} exceed half the kernel: at most {kernel[dim] // 2} for kernel "
                f"{kernel[dim]}"
            )
    out = tuple(
        _pool_output_size(
            x_shape[2 + dim],
            pads[dim],
            pads[dims + dim],
            reach[dim],
            strides[dim],
            bool(ceil_mode),
            dim,
            caller,
        )
        for dim in range(dims)
    )
    return Window(kernel, strides, pads, dilations, out)


def pool_stride(stride, kernel: tuple[int, ...], caller: str) -> tuple[int, ...]:
    """A pool's PyTorch `stride`: None or empty means the kernel size, else an int or one per
    spatial dim, each >= 1."""
    if stride is None or (isinstance(stride, Sequence) and len(stride) == 0):
        return kernel
    return spatial_ints(stride, len(kernel), "stride", caller, 1)


def torch_pool_window(caller, x_shape, kernel_size, stride, padding, dilation, ceil_mode) -> Window:
    """The Window of a pool op called with PyTorch's arguments (kernel_size; stride, None for
    the kernel size; padding as padding_pads takes it; dilation), checked before anything runs,
    errors naming `caller` and PyTorch's arguments."""
    check_pool_input(caller, x_shape)
    dims = len(x_shape) - 2
    kernel = spatial_ints(kernel_size, dims, "kernel_size", caller, 1)
    strides = pool_stride(stride, kernel, caller)
    pads = padding_pads(padding, dims, caller)
    return pool_window(caller, x_shape, kernel, strides, pads, dilation, ceil_mode, TORCH_NAMES)


def cover_ends(window: Window, spatial) -> tuple[int, ...]:
    """End pads that put every window inside the padded input, ceil_mode's overhang included."""
    return tuple(
        max(end, (n - 1) * s + r - length - begin)
        for length, begin, end, n, s, r in zip(
            spatial,
            window.pads_begin,
            window.pads_end,
            window.out,
            window.strides,
            window.reach,
            strict=True,
        )
    )
