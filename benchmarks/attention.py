"""scaled_dot_product_attention against PyTorch's in the same process: causal self-attention
(B=8, H=4, T=256, D=32, float32), forward plus backward to query, key and value, each
framework's work included (recording, the backward walk, the leaf gradients); and the memory the
op holds for backward at T=1024 against attention built from primitives (matmul, masked_fill,
softmax, matmul), measured with Tape.saved_bytes. Alone: `python -m benchmarks.attention`."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, best_times, try_import_torch

BATCH, HEADS, LENGTH, WIDTH = 8, 4, 256, 32
MEMORY_LENGTH = 1024
TIME_TARGET = 1.2
MEMORY_TARGET = 1 / 8


def _inputs(length: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    shape = (BATCH, HEADS, length, WIDTH)
    return [rng.standard_normal(shape, dtype=np.float32) for _ in range(4)]


def _speed() -> Result:
    import minitrain as mt
    from minitrain.nn import functional as F  # noqa: N812 (PyTorch's spelling)

    queries, keys, values, upstream = _inputs(LENGTH)

    def minitrain_step():
        q, k, v = (mt.Tensor(a, requires_grad=True) for a in (queries, keys, values))
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(upstream)

    steps = [minitrain_step]
    torch = try_import_torch()
    if torch is not None:
        torch_upstream = torch.from_numpy(upstream)

        def torch_step():
            q, k, v = (torch.from_numpy(a).requires_grad_() for a in (queries, keys, values))
            attention = torch.nn.functional.scaled_dot_product_attention
            attention(q, k, v, is_causal=True).backward(torch_upstream)

        steps.append(torch_step)
    times = best_times(steps, number=10)
    return Result(
        f"SDPA causal {BATCH}x{HEADS}x{LENGTH}x{WIDTH} fwd+bwd",
        times[0],
        times[1] if len(times) > 1 else None,
        target=TIME_TARGET,
    )


def _saved_bytes(attend) -> int:
    """Bytes the recorded graph of `attend(q, k, v)` holds for backward, T = MEMORY_LENGTH."""
    import minitrain as mt

    q, k, v = (mt.Tensor(a, requires_grad=True) for a in _inputs(MEMORY_LENGTH)[:3])
    with mt.Tape() as tape:
        attend(q, k, v)
    return tape.saved_bytes()


def _memory() -> Result:
    from minitrain import ops
    from minitrain.nn import functional as F  # noqa: N812 (PyTorch's spelling)

    hidden = np.triu(np.ones((MEMORY_LENGTH, MEMORY_LENGTH), bool), 1)

    def primitives(q, k, v):
        scores = (q @ k.swapaxes(-1, -2)) * (1 / WIDTH**0.5)
        return ops.softmax(ops.masked_fill(scores, hidden, -np.inf), -1) @ v

    def fused(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return Result(
        f"SDPA T={MEMORY_LENGTH} saved, op / primitives",
        _saved_bytes(fused),
        _saved_bytes(primitives),
        per="graph",
        target=MEMORY_TARGET,
        unit="MiB",
        note="the torch column: the same attention from matmul, masked_fill, softmax, matmul",
    )


def run() -> list[Result]:
    return [_speed(), _memory()]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
