"""scaled_dot_product_attention against PyTorch's flash attention in the same process: causal
self-attention in float32, forward plus backward to query, key and value, each framework's work
included (recording, the backward walk, the leaf gradients), at (B=8, H=4, T=256, D=32) and at the
transformer block's shape (B=16, H=4, T=128, D=64); and the memory the op holds for backward at
T=1024 against attention built from primitives (matmul, masked_fill, softmax, matmul), measured
with Tape.saved_bytes. PyTorch's CPU SDPA picks its flash kernel for float32 with is_causal and no
mask; the bench pins it there (`sdpa_kernel(FLASH_ATTENTION)`, which raises if flash cannot run)
and checks the backward node's name. Alone: `python -m benchmarks.attention`."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

BATCH, HEADS, LENGTH, WIDTH = 8, 4, 256, 32
SHAPES = ((BATCH, HEADS, LENGTH, WIDTH), (16, 4, 128, 64))  # (B, H, T, D), a row each
MEMORY_LENGTH = 1024
TIME_TARGET = 1.0  # issue 34: at least the speed of PyTorch's flash attention
MEMORY_TARGET = 1 / 8


def _inputs(length: int, shape=None) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    shape = shape or (BATCH, HEADS, length, WIDTH)
    return [rng.standard_normal(shape, dtype=np.float32) for _ in range(4)]


def _torch_flash_step(torch, queries, keys, values, upstream):
    """PyTorch's step, held to its flash attention kernel; fails loudly if another one runs."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch_upstream = torch.from_numpy(upstream)
    attention = torch.nn.functional.scaled_dot_product_attention

    def torch_step():
        q, k, v = (torch.from_numpy(a).requires_grad_() for a in (queries, keys, values))
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            output = attention(q, k, v, is_causal=True)
        output.backward(torch_upstream)
        return output

    backward_node = type(torch_step().grad_fn).__name__
    if "Flash" not in backward_node:
        raise RuntimeError(f"PyTorch's SDPA ran {backward_node}, not its flash attention")
    return torch_step


def _speed(shape) -> Result:
    import minitrain as mt
    from minitrain.nn import functional as F  # noqa: N812 (PyTorch's spelling)

    queries, keys, values, upstream = _inputs(shape[2], shape)

    def minitrain_step():
        q, k, v = (mt.Tensor(a, requires_grad=True) for a in (queries, keys, values))
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(upstream)

    steps = [minitrain_step]
    torch = try_import_torch()
    if torch is not None:
        steps.append(_torch_flash_step(torch, queries, keys, values, upstream))
    times = alternating_times(steps, number=10)
    return Result(
        f"SDPA causal {'x'.join(map(str, shape))} fwd+bwd",
        times[0],
        times[1] if len(times) > 1 else None,
        target=TIME_TARGET,
        round_ratios=times.ratios_if_pair(),
        note="" if torch is None else "against PyTorch's CPU flash attention (pinned)",
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
    return [*(_speed(shape) for shape in SHAPES), _memory()]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
