"""Checks of the exercises of 01_tape_and_autograd: count a graph's nodes, clip a gradient with a
hook, write an op of your own, and descend without reusing a graph."""

from __future__ import annotations

import numpy as np

import minitrain as mt
from exercises import exercise
from minitrain.errors import GraphError, MinitrainError


@exercise
def check_count_nodes(count_nodes):
    leaf = mt.randn(3, requires_grad=True)
    found = count_nodes(leaf)
    assert found == 0, f"a leaf has no node (leaf.node is None): expected 0, got {found}"

    x, target = mt.randn(4, 3), mt.randn(4, 2)
    w = mt.randn(3, 2, requires_grad=True)
    bias = mt.zeros(2, requires_grad=True)
    with mt.Tape() as tape:
        loss = (((x @ w + bias).relu() - target) ** 2).mean()
    found = count_nodes(loss)
    assert found != len(tape.nodes) + 2, (
        f"got {found} for the linear model of section 1, which has {len(tape.nodes)} ops: "
        f"the leaves w and bias are Tensors among the parents, not Nodes; do not count them"
    )
    assert found == len(tape.nodes), (
        f"the linear model of section 1 records {len(tape.nodes)} ops, count_nodes says {found}"
    )

    a = mt.randn(3, requires_grad=True)
    h = a.exp()
    shared = h * h + h  # exp feeds both inputs of the mul, and the add
    found = count_nodes(shared)
    assert found == 3, (
        f"h = a.exp(); y = h * h + h records 3 ops (exp, mul, add), count_nodes says {found}: "
        f"the exp node is reached three times but is one node; keep a set of the nodes seen"
    )

    y = a
    for _ in range(3000):
        y = y * 1.0001
    try:
        found = count_nodes(y)
    except RecursionError:
        raise AssertionError(
            "a chain of 3000 multiplications hit Python's recursion limit: walk the graph with "
            "a loop and a list as a stack, not a recursive function"
        ) from None
    assert found == 3000, f"a chain of 3000 multiplications has 3000 nodes, got {found}"


@exercise
def check_clip_hook(clip_hook):
    limit = 5.0
    x = mt.tensor([0.1, 1.0, -2.0], dtype="float64", requires_grad=True)
    x.register_hook(clip_hook(limit))
    ((x * 10) ** 2).sum().backward()  # dL/dx = 200 x = [20, 200, -400]
    got = x.grad.numpy()
    assert np.allclose(got, [5.0, 5.0, -5.0]), (
        f"a hook clip_hook(5.0) on the leaf x of L = sum((10 x)^2), x = [0.1, 1, -2]: dL/dx = "
        f"[20, 200, -400], clipped [5, 5, -5]; x.grad is {got}"
    )

    x = mt.tensor([0.1, 1.0, -2.0], dtype="float64", requires_grad=True)
    h = x * 10
    seen = []
    h.register_hook(lambda grad: seen.append(grad.numpy().copy()) or None)
    h.register_hook(lambda grad: seen.append(grad))  # the very gradient clip_hook receives
    h.register_hook(clip_hook(limit))
    (h**2).sum().backward()  # dL/dh = 2 h = [2, 20, -40]
    got = x.grad.numpy()
    assert np.array_equal(seen[1].numpy(), seen[0]), (
        "the hook changed the gradient it was given in place: return a new tensor instead "
        "(the same array may be on its way to another input too, an add's gradient is)"
    )
    assert not np.allclose(got, [5.0, 5.0, -5.0]), (
        f"with the hook on h = 10 x, x.grad is {got}: clipped after the chain rule. The hook "
        f"clips dL/dh; the engine then multiplies by dh/dx = 10"
    )
    assert np.allclose(got, [20.0, 50.0, -50.0]), (
        f"with the hook on h = 10 x: dL/dh = 2h = [2, 20, -40] is clipped to [2, 5, -5], then "
        f"multiplied by dh/dx = 10, so x.grad should be [20, 50, -50]; it is {got}"
    )

    x = mt.tensor([0.3, -0.2, 0.05], dtype="float64", requires_grad=True)
    x.register_hook(clip_hook(0.1))
    (x * x).sum().backward()  # 2 x = [0.6, -0.4, 0.1]
    got = x.grad.numpy()
    assert np.allclose(got, [0.1, -0.1, 0.1]), (
        f"clip_hook(0.1) on x, L = sum(x^2), x = [0.3, -0.2, 0.05]: expected [0.1, -0.1, 0.1], "
        f"got {got} (does the hook use its `limit`?)"
    )


@exercise
def check_silu(silu):
    try:
        _check_silu(silu)
    except AssertionError:
        raise
    except MinitrainError as error:  # a header that does not match forward, ...
        raise AssertionError(f"{type(error).__name__}: {error}") from None


def _check_silu(silu):
    x = mt.randn(3, 4, dtype="float64", requires_grad=True)
    with mt.Tape() as tape:
        y = silu(x)
    assert isinstance(y, mt.Tensor), f"silu must return a Tensor, got {type(y).__name__}"
    values = x.numpy()
    expected = values / (1 + np.exp(-values))
    assert y.shape == x.shape, f"silu(x) of shape {x.shape} has shape {y.shape}"
    assert np.allclose(y.numpy(), expected), (
        f"silu(x) should be x * sigmoid(x) = x / (1 + exp(-x)); at x = {values[0, 0]:.4f} "
        f"expected {expected[0, 0]:.6f}, got {y.numpy()[0, 0]:.6f}"
    )
    names = [node.name for node in tape.nodes]
    assert len(names) == 1, (
        f"silu recorded {len(names)} ops {names}: compute x * sigmoid(x) on arrays inside your "
        f"Op's forward (ctx.xp.exp), so that it is one op with one backward"
    )
    op = tape.nodes[0].op
    assert not op.__module__.startswith("minitrain"), (
        f"silu ran minitrain's own op {op.name}: write an Op class of your own"
    )
    y.sum().backward()
    sigmoid = 1 / (1 + np.exp(-values))
    derivative = sigmoid + values * sigmoid * (1 - sigmoid)
    assert x.grad is not None and np.allclose(x.grad.numpy(), derivative), (
        "x.grad after silu(x).sum().backward() is not sigmoid(x) + x sigmoid(x) (1 - sigmoid(x))"
    )
    mt.gradcheck(silu, [mt.randn(2, 5, dtype="float64", requires_grad=True)])  # raises if wrong
    single = silu(mt.randn(6))
    assert single.dtype == "float32", f"silu of a float32 tensor is {single.dtype}, not float32"


def _double_well(w: np.ndarray) -> tuple[float, np.ndarray]:
    """L(w) = sum((w^2 - 1)^2) and its gradient 4 w (w^2 - 1)."""
    return float(((w * w - 1) ** 2).sum()), 4 * w * (w * w - 1)


@exercise
def check_descend(descend):
    start, lr, steps = np.array([0.5, -1.5, 2.0]), 0.02, 5
    w = mt.tensor(start, requires_grad=True)
    try:
        losses = descend(w, lr, steps)
    except GraphError as error:
        raise AssertionError(
            f"descend raised GraphError: {error}. The second backward walked the graph of the "
            f"first step, whose saved values are of the old w: build a new graph each step"
        ) from None
    expected_w, expected_losses = start.copy(), []
    for _ in range(steps):
        loss, grad = _double_well(expected_w)
        expected_losses.append(loss)
        expected_w = expected_w - lr * grad
    losses = [float(loss) for loss in losses]
    assert len(losses) == steps, f"descend(w, lr, {steps}) returned {len(losses)} losses"
    for step, (got, want) in enumerate(zip(losses, expected_losses, strict=True)):
        assert np.isclose(got, want), (
            f"step {step}: loss {got:.6f}, expected {want:.6f} (the loss of the w of that step, "
            f"before its update)"
        )
    assert np.allclose(w.numpy(), expected_w), (
        f"after {steps} steps w is {w.numpy()}, expected {expected_w}: update w in place "
        f"(`with mt.no_grad(): w -= lr * w.grad`) and clear w.grad after each step"
    )
