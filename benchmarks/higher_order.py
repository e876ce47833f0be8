"""A Hessian-vector product against PyTorch's: the MLP of the training benchmark (784-256-256-10,
ReLU, batch 128, cross entropy), its loss as a function of the six weight tensors, and
`autograd.functional.hvp` of it along a random direction in both frameworks (a create_graph
backward, then a backward through that backward). Alone: `python -m benchmarks.higher_order`."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

HVP_TARGET = 1.5


def _problem():
    """The MLP's weights, a direction of the same shapes, and a batch: float32 arrays."""
    rng = np.random.default_rng(0)
    sizes = [(784, 256), (256, 256), (256, 10)]
    weights = []
    for fan_in, fan_out in sizes:
        bound = 1 / np.sqrt(fan_in)
        weights.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        weights.append(rng.uniform(-bound, bound, fan_out).astype(np.float32))
    direction = [rng.standard_normal(w.shape).astype(np.float32) for w in weights]
    x = rng.standard_normal((128, 784)).astype(np.float32)
    labels = rng.integers(0, 10, 128)
    return weights, direction, x, labels


def _minitrain_hvp(weights, direction, x, labels):
    import minitrain as mt
    from minitrain.autograd import functional

    inputs = tuple(mt.Tensor(w) for w in weights)
    v = tuple(mt.Tensor(d) for d in direction)
    x = mt.Tensor(x)

    def loss(w1, b1, w2, b2, w3, b3):
        hidden = mt.ops.relu(mt.ops.linear(x, w1, b1))
        hidden = mt.ops.relu(mt.ops.linear(hidden, w2, b2))
        return mt.ops.cross_entropy(mt.ops.linear(hidden, w3, b3), labels)

    return lambda: functional.hvp(loss, inputs, v)


def _torch_hvp(weights, direction, x, labels):
    import torch
    from torch.nn import functional

    inputs = tuple(torch.from_numpy(w) for w in weights)
    v = tuple(torch.from_numpy(d) for d in direction)
    x, labels = torch.from_numpy(x), torch.from_numpy(labels)

    def loss(w1, b1, w2, b2, w3, b3):
        hidden = functional.relu(functional.linear(x, w1, b1))
        hidden = functional.relu(functional.linear(hidden, w2, b2))
        return functional.cross_entropy(functional.linear(hidden, w3, b3), labels)

    return lambda: torch.autograd.functional.hvp(loss, inputs, v)


def run() -> list[Result]:
    torch = try_import_torch()
    problem = _problem()
    ours = _minitrain_hvp(*problem)
    fns = [ours] if torch is None else [ours, _torch_hvp(*problem)]
    note = ""
    if torch is not None:  # the same numbers, or the ratio means nothing
        got = ours()[1]
        want = fns[1]()[1]
        worst = max(
            float(np.max(np.abs(g.array - w.numpy())) / (np.max(np.abs(w.numpy())) + 1e-30))
            for g, w in zip(got, want, strict=True)
        )
        note = f"largest difference from PyTorch's hvp, relative to its largest entry: {worst:.1e}"
    times = alternating_times(fns, number=5)
    return [
        Result(
            "hvp of the MLP loss (6 weight tensors)",
            times[0],
            times[1] if torch else None,
            round_ratios=times.ratios_if_pair(),
            per="hvp",
            target=HVP_TARGET,
            note=note,
        )
    ]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
