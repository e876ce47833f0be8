"""Threads: models trained side by side compute what they compute alone, the thread state is
PyTorch's (per thread or process-wide), versions catch another thread's writes, generators.

What is per thread and what is shared, as PyTorch 2.13 has it (each checked below, against
torch where it is installed): grad mode (no_grad, enable_grad, set_grad_enabled) and
inference_mode are per thread, a new thread starting with recording on; anomaly mode, the
default dtype and the default generator are process-wide. minitrain has no saved-tensor hooks
and its autocast changes nothing, so neither has state to share.

The default generator (`manual_seed`, and every draw made without `generator=`: randn, rand,
dropout, parameter initialisation) is one stream for the process, as PyTorch's: a seed set in
one thread moves every thread's draws, and threads drawing from it at once get numbers that
depend on how they interleave. A `minitrain.Generator` per thread, passed as `generator=`,
gives draws that depend on its seed alone.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn, optim
from minitrain.errors import GraphError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)
from minitrain.ops.convolution import chunking
from minitrain.runtime import blas

STEPS = 4


def together(*functions: Callable[[], object], switch_interval: float | None = None) -> list:
    """Each function run at once with the others, started together on a Barrier: the first on
    this (the main) thread, where the conv ops split a batch over threads of their own
    (runtime/threads.py), the rest on threads of their own. Their results in order; the first
    exception raised in any is raised here, once all have stopped. `switch_interval`: how often
    Python switches between threads meanwhile (its default, 5 ms, where None)."""
    barrier = threading.Barrier(len(functions))
    results: list = [None] * len(functions)
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait(timeout=60)
            results[index] = functions[index]()
        except BaseException as error:  # noqa: BLE001 (raised below, on the test's thread)
            errors.append(error)
            barrier.abort()  # a thread still waiting to start raises instead of waiting on

    interval = sys.getswitchinterval()
    sys.setswitchinterval(switch_interval or interval)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(1, len(functions))]
    try:
        for thread in threads:
            thread.start()
        run(0)
    finally:
        for thread in threads:
            thread.join(300)
        sys.setswitchinterval(interval)
    if errors:
        raise errors[0]
    assert not any(thread.is_alive() for thread in threads), "a thread did not finish"
    return results


# Training jobs. Each builds its model, optimizer and data on the caller's thread (parameter
# initialisation draws from the shared generator, so all are built before any thread starts),
# and returns a step, which trains once and returns what to compare (the loss, by default).


class Job(NamedTuple):
    step: Callable[[], object]
    module: nn.Module
    forward: Callable | None = None  # what the step calls the model through, if not the module


class Trained(NamedTuple):
    """What a job's steps returned, and its parameters and buffers after them."""

    steps: list
    state: dict[str, np.ndarray]


def train(job: Job, steps: int = STEPS) -> Trained:
    returned = [job.step() for _ in range(steps)]
    state = {name: value.numpy().copy() for name, value in job.module.state_dict().items()}
    return Trained(returned, state)


def inputs(seed: int, *shape: int) -> mt.Tensor:
    return mt.tensor(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32))


def mlp(compiled: bool = False) -> Job:
    """An MLP trained with Adam on cross entropy."""
    mt.manual_seed(1)
    model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 5))
    forward = mt.compile(model) if compiled else model
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    x, y = inputs(11, 24, 12), mt.tensor(np.random.default_rng(12).integers(0, 5, 24))

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(forward(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return Job(step, model, forward)


def cnn() -> Job:
    """A small CNN (Conv2d, BatchNorm2d, ReLU, MaxPool2d) trained with SGD and momentum; its
    first conv's batch is big enough to run in chunks side by side on the main thread. (The
    tests train it there: on another thread the same chunks run one after another with BLAS at
    its own thread count, and OpenBLAS's long sums, the first conv's weight gradient, may round
    differently on two threads than on the one it has side by side.)"""
    mt.manual_seed(2)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 8 * 8, 10),
    )
    optimizer = optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    x, y = inputs(21, 16, 3, 32, 32), mt.tensor(np.random.default_rng(22).integers(0, 10, 16))

    def step():
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()

    return Job(step, model)


def transformer(compiled: bool = False) -> Job:
    """A transformer encoder layer trained with AdamW, its gradients clipped by their norm."""
    mt.manual_seed(3)
    model = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    forward = mt.compile(model) if compiled else model
    optimizer = optim.AdamW(model.parameters(), lr=1e-2)
    x, target = inputs(31, 4, 6, 16), inputs(32, 4, 6, 16)

    def step():
        optimizer.zero_grad()
        loss = F.mse_loss(forward(x), target)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        return loss.item(), norm.item()

    return Job(step, model, forward)


def gradient_penalty() -> Job:
    """Higher order: a loss with the norm of its input gradient (create_graph=True), trained
    by the gradient of that, and a Hessian-vector product (mt.autograd.grad of a grad)."""
    mt.manual_seed(4)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = optim.SGD(model.parameters(), lr=1e-2)
    x = inputs(41, 8, 6).requires_grad_()
    direction = inputs(42, 8, 6)

    def step():
        optimizer.zero_grad()
        out = model(x).sum()
        (dx,) = mt.autograd.grad(out, x, create_graph=True)
        (hessian_times_direction,) = mt.autograd.grad((dx * direction).sum(), x, retain_graph=True)
        loss = out + (dx * dx).sum()
        loss.backward()
        optimizer.step()
        return loss.item(), hessian_times_direction.numpy().copy()

    return Job(step, model)


def taped(make: Callable[[], Job]) -> Job:
    """make()'s job with each step's forward and backward inside a Tape: a step also returns
    the names of the nodes the tape saw, which must be this thread's alone."""
    job = make()

    def step():
        with mt.Tape() as tape:
            returned = job.step()
        return returned, [node.name for node in tape.nodes]

    return Job(step, job.module)


def assert_same(alone: list[Trained], at_once: list[Trained]) -> None:
    """Bit for bit: every step's returns, every parameter and buffer."""
    for one, other in zip(alone, at_once, strict=True):
        np.testing.assert_equal(other.steps, one.steps)
        assert other.state.keys() == one.state.keys()
        for name in one.state:
            np.testing.assert_array_equal(other.state[name], one.state[name], err_msg=name)


def alone_then_together(*makers: Callable[[], Job]) -> tuple[list[Trained], list[Trained]]:
    """Each job trained alone, one after the other; then fresh ones, all at once."""
    alone = [train(make()) for make in makers]
    jobs = [make() for make in makers]
    at_once = together(*(lambda job=job: train(job) for job in jobs))
    return alone, at_once


@pytest.fixture
def conv_splits(monkeypatch):
    """The threads each conv's side_by_side ran on, one list per call (threads.py's pool
    included), to show the CNN's convolutions did split their batch."""
    calls: list[set[int]] = []
    original = chunking.side_by_side

    def spy(work, shares):
        ran_on: set[int] = set()

        def noted(t, share):
            ran_on.add(threading.get_ident())
            work(t, share)

        calls.append(ran_on)
        original(noted, shares)

    monkeypatch.setattr(chunking, "side_by_side", spy)
    return calls


def test_three_models_trained_at_once_match_each_trained_alone(conv_splits):
    alone, at_once = alone_then_together(cnn, mlp, transformer)
    assert_same(alone, at_once)
    assert any(len(ran_on) > 1 for ran_on in conv_splits), "no conv ran side by side"


def test_higher_order_gradients_beside_training_match_each_alone():
    alone, at_once = alone_then_together(cnn, gradient_penalty, mlp)
    assert_same(alone, at_once)


def test_compiled_models_in_two_threads_match_each_alone():
    makers = [lambda: mlp(compiled=True), lambda: transformer(compiled=True)] * 2
    alone = [train(make()) for make in makers]
    jobs = [make() for make in makers]
    at_once = together(*(lambda job=job: train(job) for job in jobs))
    assert_same(alone, at_once)
    # two captures, then replays (the count kept by the module's CompiledFunction)
    assert [job.forward._compiled.replays for job in jobs] == [STEPS - 2] * len(jobs)
    eager = [train(mlp()), train(transformer())]
    assert_same(eager, at_once[:2])  # the replays computed what the eager models do


def test_a_tape_open_in_one_thread_sees_only_that_threads_nodes():
    alone, at_once = alone_then_together(cnn, lambda: taped(mlp), transformer)
    assert_same(alone, at_once)
    names = alone[1].steps[0][1]
    assert "LinearGrad" in names or any("linear" in name.lower() for name in names)
    assert not any("conv" in name.lower() or "attention" in name.lower() for name in names)


def test_a_conv_cuts_its_batch_the_same_way_on_any_thread(monkeypatch):
    """How a batch is cut decides how the weight gradient's sums round: the same shares on the
    main thread (side by side) and on another (one after another), also while the main thread
    holds BLAS at one thread."""
    shares_seen: list[list] = []
    spy = chunking.side_by_side

    def noting(work, shares):
        shares_seen.append([list(share) for share in shares])
        spy(work, shares)

    monkeypatch.setattr(chunking, "side_by_side", noting)
    x = inputs(51, 16, 3, 32, 32).requires_grad_()
    conv = nn.Conv2d(3, 8, 3, padding=1)

    def run():
        conv(x).sum().backward()
        return shares_seen.pop(), shares_seen.pop()  # the forward's and the backward's

    on_main = run()
    on_other = together(lambda: None, run)[1]
    with blas.one_thread():  # as the main thread holds it mid-way through a conv of its own
        while_held = together(lambda: None, run)[1]
    assert len(on_main[0]) > 1
    assert on_other == on_main
    assert while_held == on_main


# The thread state, minitrain's beside PyTorch's (torch only where it is installed).

LIBRARIES = pytest.mark.parametrize("name", ["minitrain", "torch"])


def library(name: str):
    return mt if name == "minitrain" else pytest.importorskip("torch")


def in_new_thread(read: Callable[[], object]) -> object:
    return together(lambda: None, read)[1]


def records(lib) -> bool:
    """Whether an op on a tensor that requires grad is recorded in this thread now."""
    return (lib.ones(2, requires_grad=True) * 2).requires_grad


@LIBRARIES
def test_grad_mode_set_by_a_call_is_per_thread(name):
    lib = library(name)
    try:
        lib.set_grad_enabled(False)
        assert not records(lib)
        assert in_new_thread(lambda: (lib.is_grad_enabled(), records(lib))) == (True, True)
        in_new_thread(lambda: lib.set_grad_enabled(False))  # a thread's own call stays its own
        assert not lib.is_grad_enabled()
    finally:
        lib.set_grad_enabled(True)
    in_new_thread(lambda: lib.set_grad_enabled(False))
    assert lib.is_grad_enabled() and records(lib)


@LIBRARIES
def test_inference_mode_is_per_thread(name):
    lib = library(name)
    with lib.inference_mode():
        assert not records(lib)
        assert in_new_thread(lambda: (lib.is_grad_enabled(), records(lib))) == (True, True)


def anomaly_enabled(lib) -> bool:
    return lib.autograd.is_anomaly_enabled() if lib is mt else lib.is_anomaly_enabled()


@LIBRARIES
def test_anomaly_mode_is_process_wide(name):
    lib = library(name)
    with pytest.warns(UserWarning) if lib is not mt else contextlib.nullcontext():  # "slow"
        with lib.autograd.detect_anomaly():
            assert in_new_thread(lambda: anomaly_enabled(lib)) is True
    assert anomaly_enabled(lib) is False
    try:
        in_new_thread(lambda: lib.autograd.set_detect_anomaly(True))
        assert anomaly_enabled(lib) is True  # set in another thread, seen here
    finally:
        lib.autograd.set_detect_anomaly(False)


def test_anomaly_mode_set_here_checks_another_threads_ops():
    x = mt.tensor([-1.0, 4.0], requires_grad=True)

    def log():
        with np.errstate(all="ignore"):  # numpy's error state is per thread
            return x.log()

    with mt.autograd.detect_anomaly():
        with pytest.raises(GraphError, match="^log: anomaly in forward"):
            in_new_thread(log)
    assert np.isnan(in_new_thread(log).detach().numpy()[0])  # off again, for every thread


@LIBRARIES
def test_the_default_dtype_is_process_wide(name):
    lib = library(name)
    try:
        lib.set_default_dtype(lib.float64)
        assert in_new_thread(lambda: lib.ones(1).dtype) == lib.float64
        in_new_thread(lambda: lib.set_default_dtype(lib.float32))
        assert lib.ones(1).dtype == lib.float32  # set in another thread, seen here
    finally:
        lib.set_default_dtype(lib.float32)


@LIBRARIES
def test_the_default_generator_is_process_wide(name):
    lib = library(name)
    lib.manual_seed(7)
    first = lib.rand(4).numpy()
    lib.manual_seed(7)
    assert np.array_equal(in_new_thread(lambda: lib.rand(4).numpy()), first)
    in_new_thread(lambda: lib.manual_seed(7))  # seeded there, drawn here
    assert np.array_equal(lib.rand(4).numpy(), first)


# Versions: the writes each memory has seen are one table for the process, so a write made in
# one thread is seen by the backward of another thread's graph.


def test_a_write_in_another_thread_is_caught_at_this_threads_backward():
    w = mt.tensor([0.5, 1.5, 2.5], requires_grad=True)
    x = mt.tensor([1.0, 2.0, 3.0])
    loss = (w * x).sum()  # mul saves x for w's gradient
    in_new_thread(lambda: x.add_(1))
    with pytest.raises(GraphError) as raised:
        loss.backward()
    message = str(raised.value)
    assert message.startswith("MulGrad: ")
    assert "modified by an in-place operation" in message
    assert "saved at version 0, now at version 1" in message
    assert w.grad is None


def test_a_write_in_another_thread_during_this_threads_walk_is_caught():
    """Each node checks its saved values when its backward runs, not when the walk starts: a
    write made by another thread once the walk began (here from a hook, which waits for it) is
    refused by the node that saved the value."""
    w = mt.tensor([0.5, 1.5, 2.5], requires_grad=True)
    x = mt.tensor([1.0, 2.0, 3.0])
    product = w * x  # mul saves x

    def write_elsewhere(grad):
        in_new_thread(lambda: x.add_(1))  # returns once the other thread has written

    product.register_hook(write_elsewhere)
    loss = product.exp().sum()
    with pytest.raises(GraphError, match=r"^MulGrad: .*version 0, now at version 1"):
        loss.backward()
    assert x._version == 1 and w.grad is None


def test_in_place_ops_on_each_threads_own_tensors_never_raise():
    """Threads recording in-place ops in their graphs (each a rebind: an in-place op making its
    tensor a new node's output), views, and writes outside the graph, all at once for many
    rounds: the process-wide numbers never make one thread refuse what is its own and valid."""
    rounds = 150

    def work(seed: int):
        values = np.random.default_rng(seed).uniform(0.5, 1.5, 4)
        w = mt.tensor(values, requires_grad=True)
        scratch = mt.zeros(4, dtype=mt.float64)
        for _ in range(rounds):
            w.grad = None
            h = w * 2
            head = h[:2]  # a view, used before h changes in place
            partial = (head * 3).sum()
            h.mul_(3)  # in the graph: h is now mul_'s output
            h.add_(1)
            with mt.no_grad():
                scratch.add_(1)
            loss = partial + (h * h).sum()
            loss.backward()
            expected = 72 * values + 12  # d/dw of ((2w * 3 + 1) ** 2)
            expected[:2] += 6
            np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-12)
        return scratch._version

    versions = together(*(lambda seed=seed: work(seed) for seed in range(4)), switch_interval=1e-6)
    assert versions == [rounds] * 4


# Random draws.


def test_a_generator_per_thread_draws_the_same_whatever_the_interleaving():
    def draws(seed: int) -> np.ndarray:
        generator = mt.Generator().manual_seed(seed)
        parts = []
        for _ in range(50):
            parts.append(mt.randn(3, generator=generator).numpy())
            parts.append(mt.rand(2, generator=generator).numpy())
            parts.append(mt.randint(0, 100, (2,), generator=generator).numpy().astype(np.float64))
        return np.concatenate(parts)

    alone = [draws(seed) for seed in range(4)]
    at_once = together(*(lambda seed=seed: draws(seed) for seed in range(4)), switch_interval=1e-6)
    for one, other in zip(alone, at_once, strict=True):
        np.testing.assert_array_equal(other, one)
    assert not np.array_equal(alone[0], alone[1])
