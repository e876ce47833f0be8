"""Ctx, what an op's forward leaves for its backward: the op's attributes and saved values as
plain attributes, beside the engine's own fields (`CTX_FIELDS`), which attributes and saved
values may not take."""

from __future__ import annotations

from ...errors import GraphError

__all__ = ["CTX_FIELDS", "Ctx"]


# Names a ctx uses for itself; attributes and saved values may not take them.
CTX_FIELDS = frozenset(
    {
        "op",
        "xp",
        "needs_grad",
        "records",
        "shapes",
        "dtypes",
        "released",
        "save",
        "release",
        "saved_values",
        "ran_numba",
        "out_written",
        "trace",
        "is_view",
        "node",
    }
)


class Ctx:
    """What an op's forward leaves for its backward.

    The op's attributes and the values its forward saves are plain attributes: forward reads
    `ctx.axis` and calls `ctx.save(x=x)`; backward reads `ctx.axis` and `ctx.x`. Also:
    `xp` (numpy or cupy), `needs_grad[i]` (does input i want a gradient), and, when recording,
    `shapes[i]` / `dtypes[i]` of the inputs.
    """

    released = False  # set once backward has freed the saved values
    ran_numba = False  # the forward ran the op's numba kernel (so may its backward)
    out_written = None  # an in-place op's clock number: its saved output was written then
    trace = None  # in anomaly mode: the line of user code that ran the op
    is_view = False  # a `views` op whose output does share its input's memory, this time

    def __init__(self, op, xp, needs_grad, records, attrs):
        # Op.apply's short path sets these same fields without this call: keep the two alike
        self.op = op
        self.xp = xp
        self.needs_grad = needs_grad
        self.records = records
        if attrs:
            self.__dict__.update(attrs)

    def save(self, **values) -> None:
        """Keep values for backward: exactly the names the op declares in `saved`."""
        if not self.records:
            return
        if values.keys() != self.op._saved_names:
            raise GraphError(
                f"{self.op.name}: forward saved {sorted(values)}, but the op declares "
                f"saved={self.op.saved}"
            )
        self.__dict__.update(values)

    def saved_values(self) -> dict:
        """The saved values still held, by name."""
        return {name: self.__dict__[name] for name in self.op.saved if name in self.__dict__}

    def release(self) -> None:
        """Drop the saved values (after backward, unless retain_graph)."""
        saved, values = self.op.saved, self.__dict__
        for name in saved:
            values.pop(name, None)
        self.released = bool(saved)

    def __getattr__(self, name):
        op = self.__dict__.get("op")
        if op is not None and name in op.saved:
            raise GraphError(
                f"{op.grad_kernel}: saved value '{name}' is not available (it was freed after "
                f"a backward, or the forward was not recorded)"
            )
        raise AttributeError(f"ctx of {getattr(op, 'name', '?')} has no attribute '{name}'")
