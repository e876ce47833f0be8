"""Many parameters' gradients cleared at once (zero_grads): what Module.zero_grad and
Optimizer.zero_grad do."""

from __future__ import annotations

from ...tensor import Tensor

__all__ = ["zero_grads"]


def zero_grads(parameters, set_to_none: bool = True) -> None:
    """Clear the gradients of `parameters` (tensors): to None, which frees them, or to zeros in
    place (`set_to_none=False`). What Module.zero_grad and Optimizer.zero_grad do."""
    for param in parameters:
        if param.grad is None:
            continue
        if set_to_none:
            param.grad = None
        elif param.grad.requires_grad:
            # a .grad from create_graph, in a graph: as PyTorch's detach_() then zero_(), but
            # without writing into memory that graph may have saved
            param.grad = Tensor.wrap(param.xp.zeros_like(param.grad.array))
        else:
            param.grad.array[...] = 0
            param.grad.bump_version()  # a graph that saved it would see stale values
