"""A tour of minitrain's autograd on a tiny two-layer MLP written with raw tensors.

It records one forward pass inside `with mt.Tape() as tape:` and shows what the tape holds (the
nodes, named by their backward kernels, and the bytes saved for backward), runs `loss.backward()`
and prints every parameter's gradient, then checks those gradients against finite differences
with `mt.gradcheck` on a float64 copy of the same function.
"""

import numpy as np

import minitrain as mt


def mlp_loss(x, target, w1, b1, w2, b2):
    """Mean squared error of a 2-layer MLP: relu(x @ w1 + b1) @ w2 + b2."""
    hidden = (x @ w1 + b1).maximum(0.0)
    prediction = hidden @ w2 + b2
    return ((prediction - target) ** 2).mean()


def section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 60 - len(title)))


def main() -> None:
    mt.manual_seed(0)
    np.set_printoptions(precision=4, suppress=True)

    x = mt.randn(8, 2)
    target = mt.randn(8, 1)
    params = {
        "w1": mt.randn(2, 4, requires_grad=True),
        "b1": mt.zeros(4, requires_grad=True),
        "w2": mt.randn(4, 1, requires_grad=True),
        "b2": mt.zeros(1, requires_grad=True),
    }

    section("forward, recorded on a tape")
    with mt.Tape() as tape:
        loss = mlp_loss(x, target, *params.values())
    print(f"loss = {loss.item():.6f}")
    print(f"{len(tape.nodes)} nodes, in recording order:")
    for index, node in enumerate(tape.nodes):
        print(f"  {index:2d}  {node.name}")
    print(f"saved for backward: {tape.saved_bytes()} bytes")

    section("backward")
    loss.backward()
    print(f"saved for backward after it: {tape.saved_bytes()} bytes")
    for name, param in params.items():
        print(f"{name}.grad  shape {param.grad.shape}")
        print(np.round(param.grad.numpy(), 4))

    section("gradcheck (float64, finite differences)")
    x64, target64 = (mt.tensor(t.numpy(), dtype="float64") for t in (x, target))
    params64 = [mt.tensor(p.numpy(), dtype="float64", requires_grad=True) for p in params.values()]
    result = mt.gradcheck(lambda *ps: mlp_loss(x64, target64, *ps), params64)
    if result is False:
        raise SystemExit("gradcheck failed: analytic and numerical gradients disagree")
    print(f"gradcheck passed for {', '.join(params)}")


if __name__ == "__main__":
    main()
