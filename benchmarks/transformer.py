"""A pre-norm transformer block's training step against PyTorch (issue 34's workload): width 256,
4 heads of 64, context 128, batch 16; LayerNorm, separate q, k and v Linear layers, causal
F.scaled_dot_product_attention, an output projection, LayerNorm and a GELU MLP of 4x the width,
with residual connections; the mean squared error to a fixed target, backward and an AdamW step.
Both blocks are built from the same public nn layers by the same code and start from the same
weights. PyTorch's SDPA runs its CPU flash kernel here (float32, is_causal, no mask: the
`SDPA causal 16x4x128x64` row pins and checks it at this shape). Alone:
`python -m benchmarks.transformer`."""

from __future__ import annotations

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

WIDTH, HEADS, LENGTH, BATCH = 256, 4, 128, 16
TARGET = 1.0  # issue 34
LR, WEIGHT_DECAY = 1e-3, 0.01


def _block(framework):
    """The block as a module of `framework` (minitrain or torch), both spelled alike."""
    nn, functional = framework.nn, framework.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(WIDTH)
            self.query = nn.Linear(WIDTH, WIDTH)
            self.key = nn.Linear(WIDTH, WIDTH)
            self.value = nn.Linear(WIDTH, WIDTH)
            self.proj = nn.Linear(WIDTH, WIDTH)
            self.norm2 = nn.LayerNorm(WIDTH)
            self.mlp = nn.Sequential(
                nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH)
            )

        def _heads(self, x):
            """(batch, time, width) -> (batch, heads, time, width / heads)."""
            batch, time, _ = x.shape
            return x.reshape(batch, time, HEADS, WIDTH // HEADS).transpose(1, 2)

        def forward(self, x):
            batch, time, _ = x.shape
            h = self.norm1(x)
            q, k, v = (self._heads(layer(h)) for layer in (self.query, self.key, self.value))
            y = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(batch, time, WIDTH))
            return x + self.mlp(self.norm2(x))

    return Block()


def _data():
    rng = np.random.default_rng(0)
    shape = (BATCH, LENGTH, WIDTH)
    return rng.standard_normal(shape, dtype=np.float32), rng.standard_normal(
        shape, dtype=np.float32
    )


def training_steps(torch, compiled: bool = False):
    """(minitrain's step, PyTorch's step or None, both first losses); minitrain's block called
    through minitrain.compile where `compiled`."""
    import minitrain as mt

    mt.manual_seed(0)
    ours = _block(mt)
    call = mt.compile(ours) if compiled else ours
    optimizer = mt.optim.AdamW(ours.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    inputs, targets = _data()
    x, y = mt.Tensor(inputs), mt.Tensor(targets)

    def minitrain_loss():
        return mt.nn.functional.mse_loss(call(x), y)

    def minitrain_step():
        optimizer.zero_grad()
        minitrain_loss().backward()
        optimizer.step()

    first_losses = [minitrain_loss().item()]
    if torch is None:
        return minitrain_step, None, first_losses
    theirs = _block(torch)
    state = {
        name: torch.from_numpy(p.cpu().numpy().copy()) for name, p in ours.state_dict().items()
    }
    theirs.load_state_dict(state, strict=True)
    their_optimizer = torch.optim.AdamW(theirs.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    tx, ty = torch.from_numpy(inputs), torch.from_numpy(targets)

    def torch_loss():
        return torch.nn.functional.mse_loss(theirs(tx), ty)

    def torch_step():
        their_optimizer.zero_grad()
        torch_loss().backward()
        their_optimizer.step()

    with torch.no_grad():
        first_losses.append(torch_loss().item())
    return minitrain_step, torch_step, first_losses


def run() -> list[Result]:
    torch = try_import_torch()
    ours, theirs, first_losses = training_steps(torch)
    times = alternating_times([ours] if theirs is None else [ours, theirs], number=3)
    return [
        Result(
            f"transformer block d={WIDTH} T={LENGTH} b{BATCH} SDPA AdamW",
            times[0],
            times[1] if theirs is not None else None,
            per="step",
            target=TARGET,
            note="first loss " + " vs ".join(f"{loss:.6f}" for loss in first_losses),
            round_ratios=times.ratios_if_pair(),
        )
    ]


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
