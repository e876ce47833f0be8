"""Solutions to the exercises of 01_tape_and_autograd."""

from __future__ import annotations

import minitrain as mt
from minitrain import ops


def count_nodes(tensor) -> int:
    """The number of Nodes `tensor.backward()` would visit: a walk over `node.parents` with a
    stack (no recursion), each node counted once however many consumers reach it."""
    if tensor.node is None:
        return 0
    seen = {tensor.node}
    stack = [tensor.node]
    while stack:
        node = stack.pop()
        for parent in node.parents:
            # a parent is a Node, a leaf Tensor (no node of its own) or None (no gradient)
            if parent is None or isinstance(parent, mt.Tensor) or parent in seen:
                continue
            seen.add(parent)
            stack.append(parent)
    return len(seen)


def clip_hook(limit: float):
    """A hook that clips a gradient to [-limit, limit], returning a new tensor (the gradient it
    receives may be on its way to other inputs too: never change it in place)."""

    def hook(grad):
        return grad.clip(-limit, limit)

    return hook


class SiLU(ops.Op, register=False):
    """silu(x) = x * sigmoid(x), one op: d/dx = s + x s (1 - s) with s = sigmoid(x)."""

    name = "silu"
    inputs = ("x",)
    saved = ("x", "sigmoid")

    @staticmethod
    def forward(ctx, x):
        sigmoid = 1 / (1 + ctx.xp.exp(-x))
        ctx.save(x=x, sigmoid=sigmoid)
        return x * sigmoid

    @staticmethod
    def backward(ctx, grad):
        s = ctx.sigmoid
        return grad * (s + ctx.x * s * (1 - s))  # product rule, with sigmoid' = s (1 - s)


def silu(x):
    return SiLU.apply(x)


def descend(w, lr: float, steps: int) -> list[float]:
    """Gradient descent on L(w) = sum((w^2 - 1)^2): a new forward, so a new graph, every step.
    The graph of a step holds the w it was recorded with; after `w -= ...` it describes a point
    that is gone, and minitrain refuses to walk it (the version of w's memory moved on)."""
    losses = []
    for _ in range(steps):
        loss = ((w * w - 1) ** 2).sum()
        loss.backward()
        with mt.no_grad():
            w -= lr * w.grad
        w.grad = None
        losses.append(loss.item())
    return losses
