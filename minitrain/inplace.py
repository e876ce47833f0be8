"""In-place ops as PyTorch has them: Tensor's `add_`, `mul_`, ..., `x += y`, `x[i] = v`, and the
version counters that catch a value saved for backward being changed under the graph.

An in-place op computes its out-of-place twin (`x.mul_(y)` computes `x * y`, recorded as usual),
writes the result into x's own array, so that every tensor viewing that memory sees it, and bumps
x's version. PyTorch's rules hold:

- a leaf that requires grad cannot change in place while grad mode is on (under `no_grad` it
  can: optimizers and nn.init write so);
- on a tensor in the graph the op is recorded, and the tensor takes the op's node, so gradients
  flow through it; the op's own saved copy of the tensor's old values is a copy (PyTorch's
  `original_self`), but any other saved reference to it is checked at backward.

Every tensor has a version (`x._version`): the count of in-place writes its memory has seen,
shared by every tensor viewing that memory. The versions and the rules on views live in
minitrain/autograd/versions.py; the ops here count their writes and ask those rules.
`Node.run_backward` raises a GraphError naming the kernel, the saved value and both versions
where a value the op saved was written after the op was recorded.
"""

from __future__ import annotations

import inspect
import weakref

import numpy as np

from . import backend
from .autograd import versions
from .autograd.grad_mode import is_grad_enabled
from .autograd.grad_mode import recording as recording_state
from .errors import DTypeError, GraphError, ShapeError
from .runtime.generator import numpy_source


def write_in_place(target, compute, caller: str):
    """The in-place op `caller` on `target`: `compute()` gives the out-of-place result (a
    Tensor of target's shape), whose values go into target's array; target's version is bumped
    and, where the op was recorded, target takes the op's node. Returns target."""
    recording = is_grad_enabled()
    if recording and target.node is None and target.requires_grad:
        raise GraphError(
            f"{caller}: a leaf tensor that requires grad cannot change in place while grad mode "
            f"is on; do it under minitrain.no_grad() (as optimizers do), or on a clone"
        )
    if recording and target.node is not None and target.node.ctx.is_view:
        raise GraphError(
            f"{caller}: cannot change in place a view ({target.node.op.name}) of a tensor that "
            f"requires grad; change the tensor itself, or a clone of the view"
        )
    if not getattr(target.array.flags, "writeable", True):  # (CuPy has no such flag)
        raise ShapeError(
            f"{caller}: the tensor's memory is read-only (a broadcast view shares one element "
            f"among many); clone it first"
        )
    result = compute()
    if result.shape != target.shape:
        raise ShapeError(
            f"{caller}: the result has shape {result.shape}, which does not fit in the tensor's "
            f"shape {target.shape} (an in-place op cannot broadcast its target)"
        )
    if not np.can_cast(result.dtype, target.dtype, "same_kind"):
        raise DTypeError(
            f"{caller}: the result's dtype {result.dtype} cannot be written into the tensor's "
            f"{target.dtype} (cast one of them first)"
        )
    if recording and result.node is None and target.node is not None:
        # a result outside the graph (a comparison's 1 and 0) replaces values in it: the tensor
        # becomes a constant of the graph, its old values' gradient zero, as in PyTorch
        result = result.where(np.True_, target)
    node = result.node
    source = versions.plain_view_source(target) if recording and target.node is None else None
    if source is not None and source.requires_grad:
        raise GraphError(
            f"{caller}: this view was taken while no gradient was recorded (under no_grad) of "
            f"a tensor that requires grad; it cannot change in place with grad mode on"
        )
    if node is not None and source is not None:
        raise GraphError(
            f"{caller}: cannot write a value that requires grad into a view of another "
            f"tensor's memory outside the graph (that tensor would not get its gradient); "
            f"write into the tensor itself (base[index] = value), or into a clone"
        )
    capture = recording_state.capture
    if capture is not None:  # minitrain.compile is capturing: the write is a step of its own
        capture.write(target, result, caller)
    if node is not None:
        _keep_old_values(node, target)
    target.array[...] = result.array
    written = versions.clock.note_write(target.array)
    if node is not None:
        _become_output(node, result, target, written)
    return target


def in_place_twin(function, name: str):
    """The method `name` (`hypot_`) writing `function(self, ...)` into self, for an op that
    declares the "inplace" variant (ops/core/variants.py); its signature is function's, the
    tensor as self."""

    def method(self, *args, **kwargs):
        return write_in_place(self, lambda: function(self, *args, **kwargs), name)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"In-place `{function.__name__}`: its result written into this tensor, which is returned."
    )
    tensor, *rest = inspect.signature(function).parameters.values()
    method.__signature__ = inspect.signature(function).replace(
        parameters=[tensor.replace(name="self"), *rest]
    )
    return method


def _keep_old_values(node, target) -> None:
    """Where the op saved target's array as the input that is target itself (x in x.mul_(y);
    in x.reciprocal_(), computed as 1 / x, the second input), save a copy: the write is about
    to change it (PyTorch's `original_self`). Any other reference to that memory (the second x
    in x.mul_(x), or x.detach() in x.mul_(x.detach())) stays, and its version check fails at
    backward, as in PyTorch. target's input is the one whose gradient goes to target's node;
    a target outside the graph has no node, and is the first input holding its array."""
    saved, parents = node.ctx.__dict__, node.parents
    for name, index in node.op.saved_inputs:
        if saved.get(name) is target.array and (
            target.node is None or parents[index] is target.node
        ):
            saved[name] = target.array.copy()
            return


def _become_output(node, result, target, written: int) -> None:
    """target is now the op's output: its node, and the saved output (if the op keeps one) is
    target's array, checked against writes after this one (clock number `written`). A
    retain_grad() moves along, as in PyTorch: `.grad` is then the gradient of the new values."""
    previous = target.node
    if previous is not None and previous.retains_grad:
        previous.retains_grad = False
        node.retains_grad = True
    target.node = node
    target._requires_grad = True
    node.output = weakref.ref(target)
    versions.supersede(previous, written)  # views taken before now are stale (Op.apply checks)
    saved = node.ctx.__dict__
    if node.op.saves_output and saved.get("out") is result.array:
        saved["out"] = target.array
        node.ctx.out_written = written


def _fill(target, value, caller: str):
    return write_in_place(target, lambda: target.masked_fill(np.True_, value), caller)


def _copy(target, src, caller: str):
    """src's values written into target, cast to target's dtype first where it differs: an
    integer or bool target takes no gradient, so a src that requires grad is detached there."""
    src = src if isinstance(src, type(target)) else type(target)(src)

    def compute():
        value = src
        if value.dtype != target.dtype:
            if target.dtype.kind not in "fc":
                value = value.detach()
            value = value.to(target.dtype)
        return value.where(np.True_, target)

    return write_in_place(target, compute, caller)


class InPlaceMethods:
    """Tensor's in-place methods and its version, each as PyTorch's (see the module docstring):
    they change the tensor's own array and return the tensor."""

    __slots__ = ()

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's memory has seen (shared with its views)."""
        return versions.clock.version(self.array)

    def bump_version(self) -> None:
        """Count a write made to `.array` directly (optimizers, nn.init): the values saved from
        this tensor's memory for a backward recorded before it then fail that backward."""
        versions.clock.note_write(self.array)

    def requires_grad_(self, requires_grad: bool = True):
        """Set whether autograd records operations on this tensor (a leaf), in place; returns it."""
        self.requires_grad = requires_grad
        return self

    def detach_(self):
        """Take this tensor out of the graph, in place: a leaf that does not require grad."""
        if self.node is not None and self.node.ctx.is_view:
            raise GraphError("detach_: cannot detach a view in place; use .detach()")
        self.node = None
        self._requires_grad = False
        return self

    def mul_(self, other):
        """In-place `mul`: its result written into this tensor, which is returned."""
        return write_in_place(self, lambda: self * other, "mul_")

    def neg_(self):
        """In-place `neg`: its result written into this tensor, which is returned."""
        return write_in_place(self, lambda: -self, "neg_")

    def cumsum_(self, dim, *, dtype=None):
        """In-place `cumsum`: its result written into this tensor, which is returned."""
        if dtype is not None and np.dtype(dtype) != self.dtype:
            raise DTypeError(
                f"cumsum_: dtype {np.dtype(dtype)} is not the tensor's own {self.dtype}: an "
                f"in-place result keeps its tensor's dtype (as in PyTorch)"
            )
        return write_in_place(self, lambda: self.cumsum(dim), "cumsum_")

    def fill_(self, value):
        """Every element set to value (a number or a 0-d tensor, which gets the gradient)."""
        return _fill(self, value, "fill_")

    def zero_(self):
        """Every element set to zero, in place; returns the tensor."""
        return _fill(self, 0, "zero_")

    def copy_(self, src):
        """src's values (broadcast to this tensor's shape, cast to its dtype, as PyTorch casts
        any dtype to any) written here; the gradient flows to src."""
        return _copy(self, src, "copy_")

    def uniform_(self, a: float = 0.0, b: float = 1.0, *, generator=None):
        """Values drawn uniformly from [a, b), from minitrain's generator (or `generator`, a
        minitrain.Generator)."""
        source = numpy_source(generator, "uniform_")
        values = backend.draw(self.device, "uniform", self.shape, self.dtype, a, b, source)
        return _copy(self, type(self)(values), "uniform_")

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None):
        """Values drawn from a normal distribution, from minitrain's generator (or
        `generator`, a minitrain.Generator)."""
        source = numpy_source(generator, "normal_")
        values = backend.draw(self.device, "normal", self.shape, self.dtype, mean, std, source)
        return _copy(self, type(self)(values), "normal_")

    def __iadd__(self, other):
        """`x += other`: `add_(other)`, the result written into this tensor."""
        return self.add_(other)

    def __isub__(self, other):
        """`x -= other`: `sub_(other)`, the result written into this tensor."""
        return self.sub_(other)

    def __imul__(self, other):
        """`x *= other`: `mul_(other)`, the result written into this tensor."""
        return self.mul_(other)

    def __itruediv__(self, other):
        """`x /= other`: `div_(other)`, the result written into this tensor."""
        return self.div_(other)
