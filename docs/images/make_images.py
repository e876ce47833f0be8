"""Regenerate the README's pictures: the backward graph of a small model and the training curves.

    .venv/bin/python docs/images/make_images.py

Writes, next to this script: graph.png (minitrain's graph view of one training step of a small
CNN, drawn after backward with the value and gradient statistics of every tensor) and
digits_curves.png (the loss and accuracy curves of `make demo`'s CNN on the 8x8 digits). Needs
matplotlib (and Pillow, which it brings) and Graphviz's `dot`; takes a few seconds. Both are
stored with a 64-colour palette, which keeps each under 100 KB.
"""

from __future__ import annotations

import importlib.util
import io
import os

import minitrain as mt
from minitrain import nn, optim, viz
from minitrain.utils.data import DataLoader, TensorDataset, load_digits, random_split
from minitrain.train import fit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DPI = 80


def _train_digits_module():
    """examples/train_digits.py as a module: the README's curves are `make demo`'s model."""
    path = os.path.join(ROOT, "examples", "train_digits.py")
    spec = importlib.util.spec_from_file_location("train_digits", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _save_png(data: bytes, name: str) -> str:
    """Store PNG bytes with a 64-colour palette (text and flat boxes lose nothing visible)."""
    from PIL import Image

    path = os.path.join(HERE, name)
    image = Image.open(io.BytesIO(data)).convert("RGB")
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


def draw_graph(images, labels) -> str:
    """One training step of a small CNN, drawn after backward with every tensor's gradient."""
    mt.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64, 10),
    )
    # Copies: a saved view of the data set counts the whole data set's bytes (the view keeps it).
    batch, targets = mt.tensor(images[:16].copy()), mt.tensor(labels[:16].copy())
    loss = nn.CrossEntropyLoss()(model(batch), targets)
    loss.backward(retain_graph=True)
    graph = viz.draw_graph(loss, model=model, show_values=True, show_attrs=False)
    graph.attr(dpi=str(DPI))
    return _save_png(graph.pipe(format="png"), "graph.png")


def digits_curves(images, labels) -> str:
    """The loss and accuracy curves of examples/train_digits.py's CNN (`make demo`)."""
    example = _train_digits_module()
    mt.manual_seed(0)
    train_set, test_set = random_split(TensorDataset(images, labels), [0.8, 0.2], seed=0)
    model = example.build_model()
    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    epochs = 12
    history = fit(
        model,
        DataLoader(train_set, batch_size=64, shuffle=True, seed=0),
        nn.CrossEntropyLoss(),
        optimizer,
        epochs,
        DataLoader(test_set, batch_size=256),
        optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs),
        progress=False,
    )
    figure = history.plot()
    figure.set_size_inches(10, 3.4)
    figure.suptitle(
        f"make demo: a small CNN on the 8x8 digits, "
        f"{history['val_accuracy'][-1]:.1%} test accuracy after {epochs} epochs"
    )
    figure.tight_layout()
    data = io.BytesIO()
    figure.savefig(data, format="png", dpi=DPI)
    return _save_png(data.getvalue(), "digits_curves.png")


def main() -> None:
    images, labels = load_digits()
    for path in (
        draw_graph(images, labels),
        digits_curves(images, labels),
    ):
        print(f"wrote {os.path.relpath(path, ROOT)} ({os.path.getsize(path) / 1024:.0f} KB)")


if __name__ == "__main__":
    main()
