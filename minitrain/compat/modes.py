"""`inference_mode` and `compile`, as PyTorch programs use them: inference mode is no_grad,
and `compile` hands back what it is given."""

from __future__ import annotations

from ..autograd.grad_mode import enable_grad, no_grad
from ..errors import DTypeError

__all__ = ["inference_mode", "compile"]


class inference_mode(no_grad):  # noqa: N801 (PyTorch's name)
    """PyTorch's inference_mode, as minitrain's no_grad: nothing is recorded inside the block
    or decorated function (`@inference_mode`, `@inference_mode()`, `with inference_mode():`).
    `inference_mode(False)` records again, as PyTorch's (it is enable_grad, even inside
    no_grad). Tensors made inside are ordinary tensors (minitrain
    keeps no inference flag, so they have no `is_inference()`), and may later be used in
    recorded ops."""

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return object.__new__(cls)
        if callable(mode):
            return cls()(mode)
        raise DTypeError(f"inference_mode: mode must be a bool, got {mode!r}")

    def __init__(self, mode: bool = True):
        super().__init__()
        self.on = mode
        self.enabled = not mode

    def __call__(self, fn):
        return (no_grad() if self.on else enable_grad())(fn)


def compile(  # noqa: A001 (PyTorch's name)
    model=None,
    *,
    fullgraph: bool = False,
    dynamic=None,
    backend="inductor",
    mode=None,
    options=None,
    disable: bool = False,
):
    """PyTorch's torch.compile, which minitrain does not do: the module or function comes back
    unchanged (and runs as before), silently, whatever the other arguments say. As a decorator
    too: `@compile` and `@compile(mode="max-autotune")`. A real compiler is issue 5's."""
    if model is None:
        return lambda fn: compile(fn)
    if not callable(model):
        raise DTypeError(f"compile: expected a module or function, got {type(model).__name__}")
    return model
