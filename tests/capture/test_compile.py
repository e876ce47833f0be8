"""minitrain.compile: captured programs replay what eager computes (values, gradients, running
statistics, random draws), guards capture again where they must, and what a replay cannot repeat
runs eagerly with a warning that says why."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import minitrain as mt
from minitrain.capture import CompileWarning
from minitrain.errors import GraphError


def _replays(compiled) -> int:
    inner = getattr(compiled, "_compiled", None) or compiled.compiled
    return inner.replays


def _train_side_by_side(make_model, batches, loss_fn, steps=5, lr=0.05, train=True):
    """Train one model eagerly and its copy compiled from the same weights and seeds; returns
    (eager model, compiled model, eager losses, compiled losses, compiled wrapper)."""
    mt.manual_seed(0)
    eager = make_model()
    twin = copy.deepcopy(eager)
    compiled = mt.compile(twin)
    eager.train(train)
    twin.train(train)
    results = []
    for model, call in ((eager, eager), (twin, compiled)):
        optimizer = mt.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        losses = []
        for step in range(steps):
            x, y = batches[step % len(batches)]
            mt.manual_seed(100 + step)  # the same dropout masks for both
            optimizer.zero_grad()
            loss = loss_fn(call(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        results.append(losses)
    return eager, twin, results[0], results[1], compiled


def _assert_same_state(a, b, rtol=1e-5, atol=1e-6):
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        np.testing.assert_allclose(y.numpy(), x.numpy(), rtol=rtol, atol=atol, err_msg=name)


def _batches(shape, classes, count=3, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (
            mt.tensor(rng.standard_normal(shape).astype(np.float32)),
            mt.tensor(rng.integers(0, classes, shape[0])),
        )
        for _ in range(count)
    ]


def test_mlp_training_equals_eager_and_replays():
    def make():
        return mt.nn.Sequential(
            mt.nn.Linear(12, 32), mt.nn.GELU(), mt.nn.Dropout(0.2), mt.nn.Linear(32, 5)
        )

    eager, twin, losses, compiled_losses, compiled = _train_side_by_side(
        make, _batches((16, 12), 5), mt.nn.functional.cross_entropy, steps=6
    )
    np.testing.assert_allclose(compiled_losses, losses, rtol=1e-6)
    _assert_same_state(eager, twin)
    assert _replays(compiled) == 4  # the first two calls capture, eagerly


def test_cnn_with_batch_norm_and_inplace_relu_equals_eager():
    def make():
        return mt.nn.Sequential(
            mt.nn.Conv2d(3, 8, 3, padding=1),
            mt.nn.BatchNorm2d(8),
            mt.nn.ReLU(inplace=True),
            mt.nn.MaxPool2d(2),
            mt.nn.Flatten(),
            mt.nn.Linear(8 * 4 * 4, 4),
        )

    eager, twin, losses, compiled_losses, compiled = _train_side_by_side(
        make, _batches((6, 3, 8, 8), 4), mt.nn.functional.cross_entropy
    )
    np.testing.assert_allclose(compiled_losses, losses, rtol=1e-5)
    _assert_same_state(eager, twin)  # running statistics too
    assert _replays(compiled) == 3
    # eval mode is a new set of guards: the running statistics normalize, as eagerly
    eager.eval()
    twin.eval()
    x = _batches((6, 3, 8, 8), 4, seed=1)[0][0]
    for _ in range(3):
        np.testing.assert_allclose(compiled(x).numpy(), eager(x).numpy(), rtol=1e-5, atol=1e-6)


def test_transformer_layer_equals_eager():
    def make():
        return mt.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True)

    rng = np.random.default_rng(3)
    batches = [
        (
            mt.tensor(rng.standard_normal((2, 5, 16)).astype(np.float32)),
            mt.tensor(rng.standard_normal((2, 5, 16)).astype(np.float32)),
        )
        for _ in range(3)
    ]
    eager, twin, losses, compiled_losses, _ = _train_side_by_side(
        make, batches, mt.nn.functional.mse_loss
    )
    np.testing.assert_allclose(compiled_losses, losses, rtol=1e-5)
    _assert_same_state(eager, twin)


def test_embedding_lstm_reads_each_batch_indices():
    class CharModel(mt.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = mt.nn.Embedding(11, 8, padding_idx=0)
            self.lstm = mt.nn.LSTM(8, 16, batch_first=True)
            self.head = mt.nn.Linear(16, 11)

        def forward(self, tokens):
            out, _ = self.lstm(self.embed(tokens))
            return self.head(out).reshape(-1, 11)

    rng = np.random.default_rng(5)
    batches = [
        (mt.tensor(rng.integers(0, 11, (3, 7))), mt.tensor(rng.integers(0, 11, 21)))
        for _ in range(4)
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        eager, twin, losses, compiled_losses, _ = _train_side_by_side(
            CharModel, batches, mt.nn.functional.cross_entropy, steps=8
        )
    np.testing.assert_allclose(compiled_losses, losses, rtol=1e-5)
    _assert_same_state(eager, twin)


def test_gradients_reach_inputs_and_several_outputs():
    w = mt.randn(4, 4, requires_grad=True)

    def f(x, y):
        h = (x @ w).tanh()
        return {"sum": (h * y).sum(), "h": h, "scale": 2}

    compiled = mt.compile(f)
    rng = np.random.default_rng(0)
    for _ in range(4):
        xv, yv = rng.standard_normal((2, 3, 4)).astype(np.float32)
        grads = []
        for fn in (f, compiled):
            x, y = mt.tensor(xv, requires_grad=True), mt.tensor(yv, requires_grad=True)
            w.grad = None
            out = fn(x, y)
            assert out["scale"] == 2
            (out["sum"] + out["h"].square().mean()).backward()
            grads.append((x.grad.numpy(), y.grad.numpy(), w.grad.numpy(), out["h"].numpy()))
        for eager_value, compiled_value in zip(*grads, strict=True):
            np.testing.assert_allclose(compiled_value, eager_value, rtol=1e-6, atol=1e-7)
    assert compiled.compiled.replays == 2
    assert out["sum"].grad_fn.name == "CompiledBackward"


def test_new_shapes_and_frozen_parameters_capture_again():
    model = mt.nn.Linear(3, 2)
    compiled = mt.compile(model)
    for rows in (4, 4, 4, 5, 5, 5):
        x = mt.randn(rows, 3)
        np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6)
    assert compiled._compiled.captures == 4 and compiled._compiled.replays == 2
    model.weight.requires_grad_(False)
    for _ in range(3):
        model.bias.grad = None
        compiled(mt.randn(4, 3)).sum().backward()
        assert model.weight.grad is None and model.bias.grad is not None


def test_replaced_parameter_is_read_after_a_new_capture():
    model = mt.nn.Linear(3, 2)
    compiled = mt.compile(model)
    x = mt.randn(4, 3)
    for _ in range(3):
        compiled(x)
    model.weight = mt.nn.Parameter(mt.zeros(2, 3))
    np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy())
    np.testing.assert_allclose(compiled(x).numpy(), np.broadcast_to(model.bias.numpy(), (4, 2)))


@pytest.mark.parametrize(
    "body, reason",
    [
        (lambda x: x * 2 if x.sum() > 0 else x * 3, "read a tensor's values"),
        (lambda x: x * mt.randn(*x.shape), "random numbers outside an op"),
        (lambda x: x * float(x.mean()), "read a tensor's values"),
        (lambda x: x * mt.tensor(x.numpy().mean()), "read a tensor's values"),
    ],
    ids=["branch", "randn", "float", "numpy"],
)
def test_what_a_replay_cannot_repeat_runs_eagerly_with_a_warning(body, reason):
    compiled = mt.compile(body)
    rng = np.random.default_rng(1)
    with pytest.warns(CompileWarning, match=reason):
        compiled(mt.tensor(rng.standard_normal(5).astype(np.float32)))
    for _ in range(3):
        xv = rng.standard_normal(5).astype(np.float32)
        mt.manual_seed(7)
        got = compiled(mt.tensor(xv)).numpy()
        mt.manual_seed(7)
        np.testing.assert_allclose(got, body(mt.tensor(xv)).numpy())
    assert compiled.compiled.replays == 0
    with pytest.raises(GraphError, match=reason):
        mt.compile(body, fullgraph=True)(mt.tensor(xv))


def test_a_constant_computed_from_the_data_outside_the_ops_is_caught():
    def scaled(x):  # .array read by numpy: invisible to the recorder, caught by two captures
        return x * mt.tensor(np.float32(x.array.std()))

    compiled = mt.compile(scaled)
    rng = np.random.default_rng(2)
    xs = [mt.tensor(rng.standard_normal(6).astype(np.float32)) for _ in range(4)]
    with pytest.warns(CompileWarning, match="change between calls"):
        compiled(xs[0])
        compiled(xs[1])
    for x in xs[2:]:
        np.testing.assert_allclose(compiled(x).numpy(), scaled(x).numpy())


def test_training_step_with_backward_and_optimizer_inside_runs_eagerly():
    model = mt.nn.Linear(3, 1)
    optimizer = mt.optim.SGD(model.parameters(), lr=0.1)

    @mt.compile
    def step(x, y):
        optimizer.zero_grad()
        loss = mt.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    x, y = mt.randn(8, 3), mt.randn(8, 1)
    with pytest.warns(CompileWarning, match="backward"):
        step(x, y)
    before = model.weight.numpy().copy()
    step(x, y)
    assert not np.array_equal(model.weight.numpy(), before)  # each call trains


def test_custom_function_inside_runs_eagerly():
    class Cube(mt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x * x * grad

    compiled = mt.compile(lambda x: Cube.apply(x).sum())
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(CompileWarning, match="Cube"):
        compiled(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 12.0])


def test_parameter_changed_before_backward_raises_as_eagerly():
    model = mt.nn.Sequential(mt.nn.Linear(3, 3), mt.nn.Tanh(), mt.nn.Linear(3, 1))
    compiled = mt.compile(model)
    x = mt.randn(2, 3)
    for _ in range(2):
        compiled(x)
    out = compiled(x)
    with mt.no_grad():
        model[2].weight.mul_(2)
    with pytest.raises(GraphError, match="modified by an in-place operation"):
        out.sum().backward()


def test_create_graph_and_a_second_backward_through_a_replay_raise_naming_it():
    compiled = mt.compile(lambda x: (x * x).sum())
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        out = compiled(x)
    with pytest.raises(GraphError, match="CompiledBackward.*create_graph"):
        mt.grad(out, x, create_graph=True)
    (g,) = mt.grad(out, x, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    with pytest.raises(GraphError, match="CompiledBackward: a compiled call's backward runs once"):
        mt.grad(out, x)
    out = compiled(x)
    out.backward()
    with pytest.raises(GraphError, match="second time"):
        out.backward()


def test_anomaly_mode_and_open_tapes_run_eagerly():
    compiled = mt.compile(lambda x: (x * 2).exp())
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        compiled(x)
    with mt.autograd.detect_anomaly():
        out = compiled(x)
    assert out.grad_fn.name != "CompiledBackward"
    assert compiled.compiled.replays == 1


def test_optimized_module_reads_through_and_keeps_pytorch_state_keys():
    model = mt.nn.Linear(3, 2)
    compiled = mt.compile(model)
    assert compiled._orig_mod is model
    assert compiled.weight is model.weight and compiled.in_features == 3
    assert list(compiled.state_dict()) == ["_orig_mod.weight", "_orig_mod.bias"]
    assert mt.compile(model, disable=True) is model
    with pytest.raises(mt.errors.DTypeError, match="module or function"):
        mt.compile(3)


def test_an_argument_that_is_not_a_tensor_runs_eagerly_with_the_reason():
    compiled = mt.compile(lambda x, a: mt.tensor(a) * x)
    with pytest.warns(CompileWarning, match="ndarray"):
        out = compiled(mt.ones(2), np.array([1.0, 2.0], np.float32))
    np.testing.assert_allclose(out.numpy(), [1.0, 2.0])


# What a program holds for: regressions found by reading the capture against eager runs.


def _three_calls_then(compiled, *args):
    for _ in range(3):
        compiled(*args)


def test_arguments_aliased_at_capture_are_not_taken_for_one_later():
    compiled = mt.compile(lambda x, y: x * 2 + y)
    x = mt.tensor([1.0, 1.0])
    _three_calls_then(compiled, x, x)
    a, b = mt.tensor([1.0, 1.0]), mt.tensor([10.0, 10.0])
    np.testing.assert_array_equal(compiled(a, b).numpy(), [12.0, 12.0])


def test_a_global_passed_as_the_argument_pins_the_program_to_it():
    w = mt.tensor([3.0, 3.0])
    compiled = mt.compile(lambda x: x * w)
    _three_calls_then(compiled, w)
    np.testing.assert_array_equal(compiled(mt.tensor([1.0, 2.0])).numpy(), [3.0, 6.0])


def test_module_attributes_and_rebound_globals_are_guarded():
    class Scaled(mt.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale, self.use_relu = 2.0, False

        def forward(self, x):
            y = x * self.scale
            return y.relu() if self.use_relu else y

    model = Scaled()
    compiled = mt.compile(model)
    x = mt.tensor([-1.0, 2.0])
    _three_calls_then(compiled, x)
    model.scale, model.use_relu = 5.0, True
    np.testing.assert_array_equal(compiled(x).numpy(), [0.0, 10.0])
    global _SHIFT
    _SHIFT = mt.tensor([1.0, 1.0])
    shifted = mt.compile(_shifted)
    _three_calls_then(shifted, x)
    _SHIFT = mt.tensor([2.0, 2.0])
    np.testing.assert_array_equal(shifted(x).numpy(), [1.0, 4.0])


_SHIFT = None


def _shifted(x):
    return x + _SHIFT


def test_replaced_layers_and_buffers_are_read_after_a_new_capture():
    model = mt.nn.Sequential(mt.nn.Linear(3, 3), mt.nn.ReLU(), mt.nn.Linear(3, 2))
    compiled = mt.compile(model)
    x = mt.randn(4, 3)
    _three_calls_then(compiled, x)
    model[2] = mt.nn.Linear(3, 2)
    np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy())
    norm = mt.nn.BatchNorm1d(2)
    step = mt.compile(lambda v: norm(v))
    _three_calls_then(step, mt.randn(8, 2))
    norm.running_mean = mt.zeros(2)
    step(mt.randn(8, 2) + 5.0)
    assert norm.running_mean.numpy().min() > 0.3  # the new buffer moved


def test_a_module_attribute_set_during_the_call_runs_eagerly():
    class Counted(mt.nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            return x * 2

    model = Counted()
    with pytest.warns(CompileWarning, match="Counted.calls was set"):
        for _ in range(5):
            mt.compile(model)(mt.ones(2))
    assert model.calls == 5


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # numpy's, for 1 / 0 (pytest's config)
def test_negative_zero_is_a_guard_of_its_own():
    compiled = mt.compile(lambda x, s: 1.0 / (x * s))
    _three_calls_then(compiled, mt.ones(2), 0.0)
    np.testing.assert_array_equal(compiled(mt.ones(2), -0.0).numpy(), [-np.inf, -np.inf])


def test_masks_indices_and_eval_statistics_are_read_at_each_replay():
    table = mt.randn(5, 2)
    picked = mt.compile(lambda idx, tokens: table.index_select(0, idx) * (tokens != 0))
    warm = mt.tensor([0, 1])
    _three_calls_then(picked, warm, mt.tensor([[1], [1]]))  # one batch, again and again
    idx, tokens = mt.tensor([3, 4]), mt.tensor([[0], [1]])
    np.testing.assert_array_equal(
        picked(idx, tokens).numpy(), (table.index_select(0, idx) * (tokens != 0)).numpy()
    )
    norm = mt.nn.BatchNorm1d(3).eval()
    compiled = mt.compile(norm)
    x = mt.randn(4, 3)
    _three_calls_then(compiled, x)
    norm.load_state_dict(
        {
            "running_mean": mt.tensor([1.0, 2.0, 3.0]),
            "running_var": mt.tensor([4.0, 4.0, 4.0]),
            "weight": norm.weight.detach(),
            "bias": norm.bias.detach(),
            "num_batches_tracked": mt.tensor(0),
        }
    )
    np.testing.assert_allclose(compiled(x).numpy(), norm(x).numpy(), rtol=1e-6)


def test_hooks_and_requires_grad_set_inside_run_eagerly():
    def hooked(x):
        y = x * 2
        y.register_hook(lambda g: g * 0)
        return y.sum()

    x = mt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(CompileWarning, match="register_hook"):
        for _ in range(3):
            x.grad = None
            mt.compile(hooked)(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])
    layer = mt.nn.Linear(2, 2)
    seen = []
    layer.register_forward_hook(lambda module, args, out: seen.append(out))
    with pytest.warns(CompileWarning, match="forward hooks"):
        compiled = mt.compile(layer)
        for _ in range(3):
            compiled(mt.ones(1, 2))
    assert len(seen) == 3
    with pytest.warns(CompileWarning, match="requires_grad was set"):
        mt.compile(lambda v: v.requires_grad_() * 2)(mt.ones(2))


def test_outputs_sharing_memory_run_eagerly_and_others_change_in_place():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(CompileWarning, match="shares its memory with an argument"):
        mt.compile(lambda v: v.reshape(-1))(x)

    def pair(v):
        y = v * 2
        return y, y.reshape(2, 1)

    with pytest.warns(CompileWarning, match="another returned value"):
        mt.compile(pair)(x)

    def two(v):
        return (v * v) + 0, v * 3

    compiled = mt.compile(two)
    for _ in range(3):
        a, b = compiled(x)
        a.add_(1)  # a replay's outputs are not views that refuse this
        np.testing.assert_array_equal(a.detach().numpy(), [2.0, 5.0])


def test_training_and_eval_calls_keep_a_program_each():
    model = mt.nn.Sequential(mt.nn.Linear(3, 3), mt.nn.Dropout(0.5))
    compiled = mt.compile(model)
    x = mt.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for _ in range(4):
            model.train()
            compiled(x)
            model.eval()
            np.testing.assert_allclose(compiled(x).numpy(), model(x).numpy(), rtol=1e-6)
    assert compiled._compiled.replays == 4


def test_a_replay_lets_go_of_intermediates_as_eagerly():
    def chain(x):
        for _ in range(20):
            x = x + 1.0
        return x

    compiled = mt.compile(chain)
    x = mt.zeros(1000)
    _three_calls_then(compiled, x)
    program = compiled.compiled.entries[next(iter(compiled.compiled.entries))].programs[0]
    replay = mt.capture.program.Replay(program, [x])
    replay.forward()
    assert sum(v is not None for v in replay.values) == 2  # the argument and the result


def test_second_review_regressions():
    """What a second reading found: an argument that shares its array with a parameter, a global
    function rebound, a global read in a comprehension, a function attribute swapped, an uncalled
    child's weight replaced, a bound method after eval(), hooks added after the capture, .grad
    read inside, a returned constant changed in place by the caller."""
    weight = mt.randn(3)
    compiled = mt.compile(lambda x: x * 2 + weight)
    _three_calls_then(compiled, weight.detach())
    x = mt.randn(3)
    np.testing.assert_array_equal(compiled(x).numpy(), (x * 2 + weight).numpy())

    global _ACTIVATION
    _ACTIVATION = mt.relu
    activated = mt.compile(_activated)
    v = mt.tensor([-1.0, 0.5, 2.0])
    _three_calls_then(activated, v)
    _ACTIVATION = mt.tanh
    np.testing.assert_allclose(activated(v).numpy(), np.tanh([-1.0, 0.5, 2.0]) * 3, rtol=1e-6)

    class Reads(mt.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.act = mt.nn.Linear(3, 3), mt.relu

        def forward(self, x):
            return self.act(x @ self.emb.weight)

    model = Reads()
    compiled = mt.compile(model)
    _three_calls_then(compiled, v.reshape(1, 3))
    model.act = mt.tanh
    model.emb.weight = mt.nn.Parameter(mt.ones(3, 3) * 0.5)
    np.testing.assert_allclose(compiled(v.reshape(1, 3)).numpy(), model(v.reshape(1, 3)).numpy())

    net = mt.nn.Sequential(mt.nn.Linear(3, 3), mt.nn.Dropout(0.5))
    forward = mt.compile(net.forward)
    _three_calls_then(forward, v.reshape(1, 3))
    net.eval()
    np.testing.assert_allclose(forward(v.reshape(1, 3)).numpy(), net(v.reshape(1, 3)).numpy())

    layer = mt.nn.Linear(3, 3)
    compiled = mt.compile(layer)
    _three_calls_then(compiled, v.reshape(1, 3))
    layer.register_forward_hook(lambda module, args, out: out * 0)
    with pytest.warns(CompileWarning, match="forward hooks"):
        np.testing.assert_array_equal(compiled(v.reshape(1, 3)).numpy(), np.zeros((1, 3)))
    with pytest.warns(CompileWarning, match=r"\.grad was read"):
        mt.compile(lambda p: p.grad)(mt.ones(2, requires_grad=True))

    def scaled(x):
        constant = mt.tensor(2.0)
        return x * constant, constant

    made = mt.compile(scaled)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for _ in range(5):
            constant = made(v)[1]
            np.testing.assert_array_equal(constant.numpy(), 2.0)
            constant.add_(10)  # the caller's own: the next call makes a new one, as eagerly
    assert made.compiled.replays == 3


_ACTIVATION = None


def _activated(x):
    return sum(_ACTIVATION(x) for _ in range(3))
