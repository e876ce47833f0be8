"""Train a small CNN on scikit-learn's 8x8 handwritten digits, end to end with minitrain.

Conv2d, BatchNorm2d, ReLU and max pooling twice, then LayerNorm and a Linear classifier, trained
with Adam on 80% of the images and tested on the held-out 20%. Writes into runs/digits/: the loss
and accuracy curves (curves.png), the backward graph of one training step (graph.svg, when
Graphviz's dot is installed), fit's checkpoint of the whole training state at each epoch's end
(training.npz: `--resume` goes on from it after a crash) and a checkpoint of the model and
optimizer (checkpoint.npz), which it then reloads into a fresh model to check that it gives the
same test accuracy. With `--device cuda` the model trains on a GPU (CuPy needed): `fit` moves
each batch to it.

Under `mpiexec -n 2` (mpi4py and mpich: pip install 'minitrain[distributed]') it trains data
parallel: each process a shard of the training set (DistributedSampler) and the same global
batch of 64, the model wrapped in DistributedDataParallel; rank 0 prints and writes the files.

    python examples/train_digits.py [--epochs 12] [--out runs/digits] [--device cpu|cuda]
                                    [--resume]
    OMP_NUM_THREADS=1 mpiexec -n 2 python examples/train_digits.py   # a thread per process
"""

from __future__ import annotations

import argparse
import os
import time

import minitrain as mt
from minitrain import distributed, nn, optim, viz
from minitrain.train import evaluate, fit
from minitrain.utils.data import (
    DataLoader,
    DistributedSampler,
    TensorDataset,
    load_digits,
    random_split,
)

BATCH_SIZE = 64  # the global batch: split over the processes under mpiexec


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),  # 16 x 8 x 8
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 16 x 4 x 4
        nn.Conv2d(16, 32, 3, padding=1),  # 32 x 4 x 4
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.MaxPool2d(2),  # 32 x 2 x 2
        nn.Flatten(),  # 128
        nn.LayerNorm(128),
        nn.Linear(128, 10),
    )


def main(
    epochs: int = 12,
    out: str = "runs/digits",
    seed: int = 0,
    device: str = "cpu",
    resume: bool = False,
) -> float:
    """Train and test; returns the test accuracy. Data parallel over the processes of
    minitrain.distributed's group where one is initialized (under mpiexec), else alone."""
    joined = distributed.is_initialized()
    rank = distributed.get_rank() if joined else 0
    world = distributed.get_world_size() if joined else 1
    say = print if rank == 0 else lambda *args: None
    mt.manual_seed(seed)
    images, labels = load_digits()
    train_set, test_set = random_split(TensorDataset(images, labels), [0.8, 0.2], seed=seed)
    if world > 1:
        if BATCH_SIZE % world:
            raise SystemExit(f"{world} processes do not split the batch of {BATCH_SIZE} evenly")
        shard = DistributedSampler(train_set, num_replicas=world, rank=rank, seed=seed)
        train_loader = DataLoader(train_set, batch_size=BATCH_SIZE // world, sampler=shard)
    else:
        train_loader = DataLoader(train_set, batch_size=BATCH_SIZE, shuffle=True, seed=seed)
    test_loader = DataLoader(test_set, batch_size=256)
    say(f"digits: {len(train_set)} training and {len(test_set)} test images of 8x8")

    net = build_model().to(device)  # before the optimizer is built, as in PyTorch
    # every rank starts from rank 0's parameters, and averages its gradients with the others'
    model = nn.parallel.DistributedDataParallel(net) if world > 1 else net
    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    say(net, f"on {mt.device(device)}" + (f", {world} processes" if world > 1 else ""))

    if rank == 0:
        os.makedirs(out, exist_ok=True)
    start = time.perf_counter()
    history = fit(
        model,
        train_loader,
        loss_fn,
        optimizer,
        epochs,
        test_loader,
        scheduler,
        checkpoint=os.path.join(out, "training.npz"),  # the whole state, each epoch
        resume=resume,
    )
    accuracy = history["val_accuracy"][-1]
    say(
        f"test accuracy {accuracy:.2%} after {epochs} epochs in {time.perf_counter() - start:.1f} s"
    )
    if rank == 0:
        _write_files(net, optimizer, history, train_loader, test_loader, loss_fn, out, device)
    return accuracy


def _write_files(net, optimizer, history, train_loader, test_loader, loss_fn, out, device):
    """The curves, a checkpoint of the model and optimizer (reloaded to check it), the graph."""
    print("wrote", history.plot(os.path.join(out, "curves.png")))
    checkpoint = os.path.join(out, "checkpoint.npz")
    mt.save({"model": net.state_dict(), "optimizer": optimizer.state_dict()}, checkpoint)
    print("wrote", checkpoint)
    restored = build_model().to(device)
    restored.load_state_dict(mt.load(checkpoint, map_location=device)["model"])
    accuracy = evaluate(net, test_loader)["accuracy"]  # this process's model
    again = evaluate(restored, test_loader)["accuracy"]
    if again != accuracy:
        raise SystemExit(f"the reloaded checkpoint gives {again:.4%}, not {accuracy:.4%}")
    print(f"reloaded the checkpoint: same test accuracy, {again:.2%}")
    _draw_one_step(net, train_loader, loss_fn, out)  # last: a training step moves BN's statistics


def _draw_one_step(model, loader, loss_fn, out: str) -> None:
    """The backward graph of one training step, as SVG (when Graphviz's dot is installed)."""
    model.train()
    device = next(model.parameters()).device
    inputs, targets = (batch.to(device) for batch in next(iter(loader)))
    loss = loss_fn(model(inputs), targets)
    graph = viz.draw_graph(loss, model=model)
    try:
        print("wrote", graph.write(os.path.join(out, "graph.svg")))
    except viz.GraphvizNotFoundError as error:  # the graph is a bonus: training succeeded
        print(f"backward graph not rendered: {error}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--out", default="runs/digits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N (CuPy and a GPU)")
    parser.add_argument("--resume", action="store_true", help="go on from OUT/training.npz")
    arguments = parser.parse_args()
    distributed.init_process_group()  # the processes mpiexec started; alone, a world of one
    main(arguments.epochs, arguments.out, arguments.seed, arguments.device, arguments.resume)
