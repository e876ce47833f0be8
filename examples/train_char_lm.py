"""Train a tiny GPT-style character language model on the help texts that ship with Python.

The text is `pydoc_data.topics` (the pages of `help()`, about 460 KB of English), read at run
time; its characters are the vocabulary, the last tenth of each page the validation set. The
model: token and position embeddings, pre-norm blocks of causal self-attention
(F.scaled_dot_product_attention) and a GELU MLP, RMSNorm (or LayerNorm: --norm layer), and an
output layer tied to the token embedding; `--arch lstm` puts an nn.LSTM in place of the blocks.
Training: AdamW, a linear warm-up then a cosine decay of the learning rate, gradient clipping
(nn.utils.clip_grad_norm_). It prints a progress bar and a table of the train and validation
losses in nats per character beside the unigram entropy of the text (what a model that knows
only how often each character occurs scores), and writes into --out the loss curves
(curves.png, when matplotlib is installed) and a checkpoint (checkpoint.npz), which it reloads
into a fresh model to check that it gives the same validation loss. Last, text sampled from the
model at two temperatures.

    python examples/train_char_lm.py [--steps 1000] [--context 64] [--width 128] [--layers 4]
        [--heads 4] [--batch 32] [--arch gpt|lstm] [--norm rms|layer] [--tiny] [--out DIR]
        [--device cpu|cuda|cuda:N] [--compile]

`--tiny` trains a one-block model in a few seconds (the test suite runs it); options given with
it override its sizes. `--compile` trains and evaluates the model through `minitrain.compile`
(the same losses as eager; the sampling, whose inputs grow by a character at a time, stays
eager).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import math
import os
import sys
import time

import numpy as np

import minitrain as mt
from minitrain import nn, optim
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)


@dataclasses.dataclass
class Config:
    """The model's size, the training run and its evaluation. Defaults: a 4-block GPT of width
    128 (0.8 M parameters), trained for a few minutes on 2 cores."""

    arch: str = "gpt"  # "gpt" or "lstm"
    norm: str = "rms"  # "rms" (RMSNorm) or "layer" (LayerNorm)
    steps: int = 1000
    context: int = 64
    width: int = 128
    layers: int = 4
    heads: int = 4
    batch: int = 32
    lr: float = 3e-3
    min_lr_ratio: float = 0.1  # the cosine decays to lr * min_lr_ratio
    warmup: int = 60
    weight_decay: float = 0.1
    clip: float = 1.0
    eval_every: int = 100
    eval_batches: int = 8
    seed: int = 0
    device: str = "cpu"  # where the model trains: "cpu", "cuda" (needs CuPy and a GPU), "cuda:1"
    compile: bool = False  # train and evaluate through minitrain.compile (sampling stays eager)


# Seconds, not minutes: one block of width 32 for 150 steps (the test suite runs it).
TINY = {
    "steps": 150,
    "context": 32,
    "width": 32,
    "layers": 1,
    "heads": 2,
    "batch": 16,
    "lr": 1e-2,
    "warmup": 15,
    "eval_every": 50,
    "eval_batches": 4,
}


def load_texts(validation_share: float = 0.1) -> tuple[str, str]:
    """The help topics of Python's pydoc in name order, as a training and a validation text:
    the last tenth of every topic goes to validation, so both hold every kind of page."""
    from pydoc_data.topics import topics

    pages = [topics[name] for name in sorted(topics)]
    cuts = [round(len(page) * (1 - validation_share)) for page in pages]
    train = "\n\n".join(page[:cut] for page, cut in zip(pages, cuts, strict=True))
    validation = "\n\n".join(page[cut:] for page, cut in zip(pages, cuts, strict=True))
    return train, validation


class Vocabulary:
    """The characters of a text, each with an index (in code-point order)."""

    def __init__(self, text: str) -> None:
        self.chars = "".join(sorted(set(text)))
        self.index = {char: i for i, char in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> np.ndarray:
        return np.array([self.index[char] for char in text], dtype=np.int64)

    def decode(self, indices) -> str:
        return "".join(self.chars[i] for i in indices)


def unigram_entropy(data: np.ndarray, vocabulary_size: int) -> float:
    """-sum p log p over the characters' frequencies in `data`, in nats per character."""
    counts = np.bincount(data, minlength=vocabulary_size)
    p = counts[counts > 0] / len(data)
    return float(-(p * np.log(p)).sum())


def make_norm(kind: str, width: int) -> nn.Module:
    return nn.RMSNorm(width) if kind == "rms" else nn.LayerNorm(width)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention in which each position sees itself and the positions before."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: mt.Tensor) -> mt.Tensor:
        batch, length, width = x.shape
        qkv = self.qkv(x).reshape(batch, length, 3, self.heads, width // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (batch, heads, length, head width)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(batch, length, width))


class Block(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x)): the pre-norm transformer block."""

    def __init__(self, width: int, heads: int, norm: str) -> None:
        super().__init__()
        self.norm1 = make_norm(norm, width)
        self.attention = CausalSelfAttention(width, heads)
        self.norm2 = make_norm(norm, width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x: mt.Tensor) -> mt.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    """Token and position embeddings, `layers` blocks, a last norm, and logits from the token
    embedding itself (the output layer's weight is the embedding's: weight tying)."""

    def __init__(self, vocabulary_size: int, config: Config) -> None:
        super().__init__()
        width = config.width
        self.token_embedding = nn.Embedding(vocabulary_size, width)
        self.position_embedding = nn.Embedding(config.context, width)
        self.blocks = nn.ModuleList(
            [Block(width, config.heads, config.norm) for _ in range(config.layers)]
        )
        self.norm = make_norm(config.norm, width)
        self.head = nn.Linear(width, vocabulary_size, bias=False)
        self.head.weight = self.token_embedding.weight
        # GPT-2's initialisation: N(0, 0.02), the layers that write into the residual stream
        # scaled down by sqrt(2 * layers) so that the stream's variance does not grow with depth
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(param)
            elif param.ndim == 2:
                residual = name.endswith(("proj.weight", "mlp.2.weight"))
                std = 0.02 / math.sqrt(2 * config.layers) if residual else 0.02
                nn.init.normal_(param, 0.0, std)

    def forward(self, tokens) -> mt.Tensor:
        """Logits (batch, time, vocabulary) for integer tokens (batch, time)."""
        positions = mt.arange(tokens.shape[1], device=self.position_embedding.weight.device)
        x = self.token_embedding(tokens) + self.position_embedding(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class LSTMModel(nn.Module):
    """Token embedding, an nn.LSTM of `layers` layers, and logits from the token embedding (tied,
    as in the GPT). PyTorch's initialisation: the embedding N(0, 1), which the LSTM's inputs need
    (at GPT-2's 0.02 its gates barely move and it learns only the unigram frequencies at first)."""

    def __init__(self, vocabulary_size: int, config: Config) -> None:
        super().__init__()
        self.token_embedding = nn.Embedding(vocabulary_size, config.width)
        self.lstm = nn.LSTM(config.width, config.width, num_layers=config.layers, batch_first=True)
        self.head = nn.Linear(config.width, vocabulary_size, bias=False)
        self.head.weight = self.token_embedding.weight

    def forward(self, tokens) -> mt.Tensor:
        out, _ = self.lstm(self.token_embedding(tokens))
        return self.head(out)


def build_model(vocabulary_size: int, config: Config) -> nn.Module:
    if config.arch == "gpt":
        if config.width % config.heads:
            raise ValueError(
                f"train_char_lm: width {config.width} must divide into {config.heads} heads"
            )
        return GPT(vocabulary_size, config)
    if config.arch == "lstm":
        return LSTMModel(vocabulary_size, config)
    raise ValueError(f"train_char_lm: arch must be 'gpt' or 'lstm', got {config.arch!r}")


def make_optimizer(model: nn.Module, config: Config) -> optim.AdamW:
    """AdamW with weight decay on the matrices (embeddings included) only, not on biases and
    norm gains, as GPT-2 is trained."""
    matrices = [p for p in model.parameters() if p.ndim >= 2]
    others = [p for p in model.parameters() if p.ndim < 2]
    groups = [
        {"params": matrices, "weight_decay": config.weight_decay},
        {"params": others, "weight_decay": 0.0},
    ]
    return optim.AdamW(groups, lr=config.lr, betas=(0.9, 0.99))


def learning_rate_factor(step: int, config: Config) -> float:
    """lr / peak lr at `step`: linear from 1/warmup to 1 over the warm-up, then a cosine down to
    min_lr_ratio at the last step."""
    if step < config.warmup:
        return (step + 1) / config.warmup
    progress = (step - config.warmup) / max(1, config.steps - config.warmup)
    cosine = 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))
    return config.min_lr_ratio + (1.0 - config.min_lr_ratio) * cosine


def batch_of(data: np.ndarray, starts: np.ndarray, context: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and targets (the next character) of the windows of `context` starting at `starts`."""
    windows = data[starts[:, None] + np.arange(context + 1)]
    return windows[:, :-1], windows[:, 1:]


def on_device_of(model: nn.Module, array: np.ndarray) -> mt.Tensor:
    """A host array of tokens as a tensor on the device of the model's parameters."""
    return mt.tensor(array, device=next(model.parameters()).device)


def loss_of(model: nn.Module, inputs: np.ndarray, targets: np.ndarray) -> mt.Tensor:
    logits = model(on_device_of(model, inputs))
    targets = on_device_of(model, targets)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def evaluate(model: nn.Module, data: np.ndarray, config: Config) -> float:
    """The mean loss over `eval_batches` batches of `data`, the same batches at every call."""
    rng = np.random.default_rng(config.seed + 1)
    model.eval()
    with mt.no_grad():
        losses = []
        for _ in range(config.eval_batches):
            starts = rng.integers(0, len(data) - config.context - 1, config.batch)
            losses.append(loss_of(model, *batch_of(data, starts, config.context)).item())
    model.train()
    return float(np.mean(losses))


def show_progress(step: int, config: Config, loss: float, lr: float, elapsed: float) -> None:
    """One line, rewritten in place: a bar, the step, the batch's loss, the lr and the speed."""
    done = round(30 * step / config.steps)
    rate = step / elapsed if elapsed > 0 else 0.0
    print(
        f"\r[{'#' * done}{'.' * (30 - done)}] step {step}/{config.steps}  loss {loss:.3f}  "
        f"lr {lr:.2e}  {rate:.1f} steps/s",
        end="",
        flush=True,
    )


def train(model, optimizer, train_data, val_data, config: Config) -> list[dict]:
    """Train for config.steps steps; the evaluations along the way, one dict each."""
    scheduler = optim.lr_scheduler.LambdaLR(optimizer, lambda s: learning_rate_factor(s, config))
    rng = np.random.default_rng(config.seed)
    history = []
    start = time.perf_counter()
    for step in range(config.steps + 1):
        if step % config.eval_every == 0 or step == config.steps:
            row = {
                "step": step,
                "train": evaluate(model, train_data, config),
                "val": evaluate(model, val_data, config),
                "lr": optimizer.param_groups[0]["lr"],
                "seconds": time.perf_counter() - start,
            }
            history.append(row)
            print(f"\rstep {step:5d}  train {row['train']:.3f}  val {row['val']:.3f}" + " " * 40)
        if step == config.steps:
            break
        starts = rng.integers(0, len(train_data) - config.context - 1, config.batch)
        optimizer.zero_grad()
        loss = loss_of(model, *batch_of(train_data, starts, config.context))
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), config.clip)
        optimizer.step()
        scheduler.step()
        if (step + 1) % max(1, config.steps // 100) == 0:
            lr = optimizer.param_groups[0]["lr"]
            show_progress(step + 1, config, loss.item(), lr, time.perf_counter() - start)
    print()
    return history


def sample(model, vocabulary: Vocabulary, prompt: str, length: int, temperature: float, config):
    """`prompt` and `length` characters drawn one at a time from the model's distribution of the
    next character, its logits divided by `temperature` (below 1: safer, above: more varied)."""
    rng = np.random.default_rng(config.seed + 2)
    tokens = list(vocabulary.encode(prompt))
    model.eval()
    with mt.no_grad():
        for _ in range(length):
            window = on_device_of(model, np.array(tokens[-config.context :])[None])
            logits = model(window)[0, -1].cpu().numpy().astype(np.float64) / temperature
            p = np.exp(logits - logits.max())
            tokens.append(int(rng.choice(len(p), p=p / p.sum())))
    model.train()
    return vocabulary.decode(tokens)


def print_table(history: list[dict], entropy: float) -> None:
    print(f"{'step':>6} {'train':>7} {'val':>7} {'lr':>9} {'seconds':>8}   (nats per character)")
    for row in history:
        print(
            f"{row['step']:6d} {row['train']:7.3f} {row['val']:7.3f} {row['lr']:9.2e} "
            f"{row['seconds']:8.1f}"
        )
    print(f"unigram entropy of the text: {entropy:.3f}")


def plot_curves(history: list[dict], entropy: float, path: str) -> str | None:
    """The train and validation losses against the step, as a PNG, when matplotlib is
    installed; the path written, or None."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    steps = [row["step"] for row in history]
    axes.plot(steps, [row["train"] for row in history], label="train")
    axes.plot(steps, [row["val"] for row in history], label="validation")
    axes.axhline(entropy, color="gray", linestyle="--", label="unigram entropy")
    axes.set_xlabel("step")
    axes.set_ylabel("loss (nats per character)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
    return path


def main(config: Config | None = None, out: str = "runs/char_lm", tiny: bool = False) -> dict:
    """Train, report, save and reload, sample. Returns the numbers: unigram entropy, final train
    and validation loss (nats per character), the history, the checkpoint's path, the samples."""
    config = config or (Config(**TINY) if tiny else Config())
    mt.manual_seed(config.seed)
    train_text, val_text = load_texts()
    vocabulary = Vocabulary(train_text + val_text)
    train_data, val_data = vocabulary.encode(train_text), vocabulary.encode(val_text)
    entropy = unigram_entropy(train_data, len(vocabulary))
    model = build_model(len(vocabulary), config).to(config.device)  # before its optimizer
    optimizer = make_optimizer(model, config)
    parameters = sum(p.numel() for p in model.parameters())
    print(
        f"pydoc topics: {len(train_data) + len(val_data):,} characters, {len(vocabulary)} "
        f"distinct; {len(train_data):,} to train on, {len(val_data):,} to validate"
    )
    print(f"{config.arch} model: {parameters:,} parameters; {config}")
    print(f"unigram entropy {entropy:.3f} nats per character")

    # the compiled model shares its parameters with `model`: train through it, save `model`
    trained = mt.compile(model) if config.compile else model
    history = train(trained, optimizer, train_data, val_data, config)
    print_table(history, entropy)
    os.makedirs(out, exist_ok=True)
    curves = plot_curves(history, entropy, os.path.join(out, "curves.png"))
    print("wrote", curves if curves else "no curves (matplotlib is not installed)")

    checkpoint = os.path.join(out, "checkpoint.npz")
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "config": dataclasses.asdict(config),
        "vocabulary": vocabulary.chars,
    }
    mt.save(state, checkpoint)
    print("wrote", checkpoint)
    reloaded = mt.load(checkpoint)
    restored = build_model(len(reloaded["vocabulary"]), Config(**reloaded["config"]))
    restored.to(config.device)  # the same device: the same arithmetic, the same loss
    restored.load_state_dict(reloaded["model"])
    val_loss = history[-1]["val"]
    again = evaluate(restored, val_data, config)
    if not math.isclose(again, val_loss, rel_tol=1e-6):
        raise SystemExit(f"the reloaded checkpoint gives validation loss {again}, not {val_loss}")
    print(f"reloaded the checkpoint: the same validation loss, {again:.3f}")

    samples = []
    for temperature in (0.8, 1.0):
        samples.append(sample(model, vocabulary, "The ", 300, temperature, config))
        print(f"\n--- sample at temperature {temperature} ---\n{samples[-1]}")
    return {
        "unigram_entropy": entropy,
        "train_loss": history[-1]["train"],
        "val_loss": val_loss,
        "history": history,
        "checkpoint": checkpoint,
        "samples": samples,
    }


def parse_arguments(argv: list[str]) -> tuple[Config, str]:
    """The run's Config (the defaults, or TINY's with --tiny, then the options given) and --out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=("gpt", "lstm"))
    parser.add_argument("--norm", choices=("rms", "layer"))
    for name in ("steps", "context", "width", "layers", "heads", "batch", "seed"):
        parser.add_argument(f"--{name}", type=int)
    parser.add_argument("--lr", type=float)
    parser.add_argument("--device", help="cpu (the default), cuda or cuda:N (CuPy and a GPU)")
    parser.add_argument("--tiny", action="store_true", help="a one-block model, in seconds")
    parser.add_argument(
        "--compile", action="store_true", default=None, help="train through minitrain.compile"
    )
    parser.add_argument("--out", default="runs/char_lm")
    arguments = vars(parser.parse_args(argv))
    out, tiny = arguments.pop("out"), arguments.pop("tiny")
    given = {name: value for name, value in arguments.items() if value is not None}
    return Config(**{**(TINY if tiny else {}), **given}), out


if __name__ == "__main__":
    main(*parse_arguments(sys.argv[1:]))
