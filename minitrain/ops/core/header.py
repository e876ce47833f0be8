"""The Op header, checked when an op class is defined (minitrain/ops/core/op.py, `Op`'s
docstring): its names, its inputs, attrs and saved values, and the two fields that let an op keep
a second copy of its arithmetic, each only beside the `make bench` row that shows it pays:
`fused_backward` (a separate tensor_backward beside a fused first-order kernel) and `numba_bench`
(numba variants)."""

from __future__ import annotations

import re

from ...errors import GraphError

__all__ = ["validate_header"]


def validate_header(cls, base, ctx_fields) -> None:
    """Refuse an op class whose header is wrong, naming the class and the field: `base` is Op
    (whose forward and backward a subclass must both replace), `ctx_fields` the names Ctx
    keeps for itself."""
    subject = f"op class {cls.__name__}"
    if not re.fullmatch(r"[a-z_][a-z0-9_]*", cls.name or ""):
        raise GraphError(f"{subject}: `name` must be a lowercase identifier, got {cls.name!r}")
    for field in ("inputs", "attrs", "saved"):
        value = getattr(cls, field)
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            raise GraphError(f"{subject}: `{field}` must be a tuple of names, got {value!r}")
    if not cls.inputs or (cls.variadic and len(cls.inputs) != 1):
        raise GraphError(f"{subject}: needs at least one input (exactly one name when variadic)")
    if cls.promoted and (
        not isinstance(cls.promoted, tuple)
        or len(set(cls.promoted)) != 2
        or not set(cls.promoted) <= set(cls.inputs)
    ):
        raise GraphError(f"{subject}: `promoted` must name two of its inputs, got {cls.promoted!r}")
    if not (set(cls.saved_as) <= set(cls.saved) and set(cls.saved_as.values()) <= set(cls.inputs)):
        raise GraphError(
            f"{subject}: `saved_as` must map saved names to input names, got {cls.saved_as!r}"
        )
    clash = (set(cls.attrs) & set(cls.saved)) | ((set(cls.attrs) | set(cls.saved)) & ctx_fields)
    if clash:
        raise GraphError(f"{subject}: names {sorted(clash)} clash between attrs, saved and ctx")
    if cls.forward is base.forward or cls.backward is base.backward:
        raise GraphError(f"{subject}: define both forward and backward")
    if cls.tensor_backward is not None and not cls.fused_backward:
        raise GraphError(
            f"{subject}: a tensor_backward is a second copy of the derivative, kept only beside "
            f"a fused backward a benchmark shows pays: name its `make bench` row in "
            f"fused_backward, or write backward once, with ctx.xp"
        )
    _check_numba_row(cls, subject)


def _check_numba_row(cls, subject: str) -> None:
    """An op with numba variants names the `make bench` row that keeps them (`numba_bench`)."""
    if not isinstance(cls.numba_bench, str):
        raise GraphError(f"{subject}: `numba_bench` must be a bench row's name (a str)")
    variant = cls.numba_forward is not None or cls.numba_backward is not None
    if variant and not cls.numba_bench:
        raise GraphError(
            f"{subject}: a numba variant is a second copy of the op's arithmetic, kept only for "
            f"ops on the measured hot list: name in numba_bench the `make bench` row that shows "
            f"it pays (benchmarks/README.md), or drop numba_forward and numba_backward"
        )
