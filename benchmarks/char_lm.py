"""The character language model's training step (examples/train_char_lm.py) against the same model
in PyTorch, loaded strictly from the same weights: zero_grad, forward, cross entropy, backward,
gradient clipping and the AdamW step, on one batch. Two sizes: the example's default (a 4-block
GPT of width 128, context 64, batch 32) and issue 34's tiny GPT (2 blocks, width 128, context 64,
batch 16). Alone: `python -m benchmarks.char_lm`."""

from __future__ import annotations

import os
import sys

import numpy as np

from benchmarks.common import Result, alternating_times, try_import_torch

TARGET_RATIO = 1.2
# (Config fields that differ from the example's defaults, target, calls a round): a row each
SIZES = (({}, TARGET_RATIO, 3), ({"layers": 2, "batch": 16}, 1.0, 6))  # 1.0: issue 34
_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def _example():
    sys.path.insert(0, _EXAMPLES)
    try:
        import train_char_lm
    finally:
        sys.path.remove(_EXAMPLES)
    return train_char_lm


def _torch_gpt(torch, vocabulary_size: int, config):
    """The example's GPT in PyTorch, module for module (so the state dicts share their keys)."""
    nn, functional = torch.nn, torch.nn.functional

    def make_norm(width):
        return nn.RMSNorm(width) if config.norm == "rms" else nn.LayerNorm(width)

    class CausalSelfAttention(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(width, 3 * width)
            self.proj = nn.Linear(width, width)

        def forward(self, x):
            batch, time, width = x.shape
            qkv = self.qkv(x).reshape(batch, time, 3, self.heads, width // self.heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
            y = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.proj(y.transpose(1, 2).reshape(batch, time, width))

    class Block(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.norm1 = make_norm(width)
            self.attention = CausalSelfAttention(width, heads)
            self.norm2 = make_norm(width)
            self.mlp = nn.Sequential(
                nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
            )

        def forward(self, x):
            x = x + self.attention(self.norm1(x))
            return x + self.mlp(self.norm2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            width = config.width
            self.token_embedding = nn.Embedding(vocabulary_size, width)
            self.position_embedding = nn.Embedding(config.context, width)
            self.blocks = nn.ModuleList([Block(width, config.heads) for _ in range(config.layers)])
            self.norm = make_norm(width)
            self.head = nn.Linear(width, vocabulary_size, bias=False)
            self.head.weight = self.token_embedding.weight

        def forward(self, tokens):
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            x = self.token_embedding(tokens) + self.position_embedding(positions)
            for block in self.blocks:
                x = block(x)
            return self.head(self.norm(x))

    return GPT()


def training_steps(torch, device: str = "cpu", compiled: bool = False, **sizes):
    """(minitrain's step, PyTorch's step or None, both first losses, the example's Config with
    `sizes` in place of its defaults) on one batch, the models and the batch on `device`;
    minitrain's model called through minitrain.compile where `compiled`."""
    import minitrain as mt

    example = _example()
    config = example.Config(**sizes)
    mt.manual_seed(config.seed)
    train_text, val_text = example.load_texts()
    vocabulary = example.Vocabulary(train_text + val_text)
    data = vocabulary.encode(train_text)
    rng = np.random.default_rng(0)
    inputs, targets = example.batch_of(
        data, rng.integers(0, len(data) - config.context - 1, config.batch), config.context
    )
    model = example.build_model(len(vocabulary), config).to(device)
    optimizer = example.make_optimizer(model, config)
    call = mt.compile(model) if compiled else model
    tokens, next_tokens = mt.tensor(inputs, device=device), mt.tensor(targets, device=device)
    first_losses = [example.loss_of(call, tokens, next_tokens).item()]

    def minitrain_step():
        optimizer.zero_grad()
        example.loss_of(call, tokens, next_tokens).backward()
        mt.nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()

    if torch is None:
        return minitrain_step, None, first_losses, config
    twin = _torch_gpt(torch, len(vocabulary), config)
    state = {
        name: torch.from_numpy(value.cpu().numpy().copy())
        for name, value in model.state_dict().items()
    }
    twin.load_state_dict(state, strict=True)
    twin.to(device)
    matrices = [p for p in twin.parameters() if p.ndim >= 2]
    others = [p for p in twin.parameters() if p.ndim < 2]
    twin_optimizer = torch.optim.AdamW(
        [
            {"params": matrices, "weight_decay": config.weight_decay},
            {"params": others, "weight_decay": 0.0},
        ],
        lr=config.lr,
        betas=(0.9, 0.99),
    )
    x, y = torch.from_numpy(inputs).to(device), torch.from_numpy(targets).to(device)

    def loss_of_twin():
        logits = twin(x)
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), y.reshape(-1)
        )

    with torch.no_grad():
        first_losses.append(loss_of_twin().item())

    def torch_step():
        twin_optimizer.zero_grad()
        loss_of_twin().backward()
        torch.nn.utils.clip_grad_norm_(twin.parameters(), config.clip)
        twin_optimizer.step()

    return minitrain_step, torch_step, first_losses, config


def run() -> list[Result]:
    torch = try_import_torch()
    results = []
    for sizes, target, number in SIZES:
        ours, theirs, first_losses, config = training_steps(torch, **sizes)
        times = alternating_times([ours] if theirs is None else [ours, theirs], number=number)
        note = "first loss " + " vs ".join(f"{loss:.6f}" for loss in first_losses)
        results.append(
            Result(
                f"char LM train step (GPT {config.layers}x{config.width}, T={config.context}, "
                f"b{config.batch})",
                times[0],
                times[1] if theirs is not None else None,
                per="step",
                target=target,
                note=note,
                round_ratios=times.ratios_if_pair(),
            )
        )
    return results


if __name__ == "__main__":
    from benchmarks.common import print_table

    print_table(run())
