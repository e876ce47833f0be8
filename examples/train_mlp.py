"""Train a two-layer MLP on scikit-learn's 8x8 digits (flattened to 64 features) with minitrain.

python examples/train_mlp.py [--epochs 20]
"""

from __future__ import annotations

import argparse

import minitrain as mt
from minitrain import nn, optim
from minitrain.train import fit
from minitrain.utils.data import DataLoader, TensorDataset, load_digits, random_split


def main(epochs: int = 20, seed: int = 0) -> float:
    mt.manual_seed(seed)
    images, labels = load_digits()
    dataset = TensorDataset(images.reshape(len(images), -1), labels)
    train_set, test_set = random_split(dataset, [0.8, 0.2], seed=seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Dropout(0.1), nn.Linear(128, 10))
    optimizer = optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    history = fit(
        model,
        DataLoader(train_set, batch_size=64, shuffle=True, seed=seed),
        nn.CrossEntropyLoss(label_smoothing=0.05),
        optimizer,
        epochs,
        val_loader=DataLoader(test_set, batch_size=256),
    )
    accuracy = history["val_accuracy"][-1]
    print(f"test accuracy {accuracy:.2%}")
    return accuracy


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    main(arguments.epochs, arguments.seed)
