"""Op.apply's short path and the walk's inlined backward give what the full path gives: the same
output, ctx and Node, and every check and behaviour (hooks, retain_grad, version errors,
promotion, anomaly mode, no_grad) still happens through them."""

from __future__ import annotations

import numpy as np
import pytest

import minitrain as mt
from minitrain.autograd import Node
from minitrain.autograd.versions import clock
from minitrain.errors import GraphError, ShapeError
from minitrain.ops.core.op import Op
from minitrain.ops.pointwise.arithmetic import Add, Div, Mul, Sub


@pytest.fixture
def full_path_calls(monkeypatch):
    """The names of the ops that took the full path (`_apply_any`) while the test ran. The
    process's latest rebind is put back to none for the test: an in-place op on a graph tensor
    in an earlier test (any, in this process) sends every later op down the full path."""
    monkeypatch.setattr(clock, "latest_rebind", -1)
    calls = []
    full_path = Op._apply_any.__func__

    def spy(cls, inputs, attrs):
        calls.append(cls.name)
        return full_path(cls, inputs, attrs)

    monkeypatch.setattr(Op, "_apply_any", classmethod(spy))
    return calls


def _leaf(values, requires_grad=True, dtype=np.float32):
    return mt.Tensor(np.asarray(values, dtype=dtype), requires_grad=requires_grad)


def _same_record(short, full):
    """Two results of one op: one from the short path, one from the full path."""
    np.testing.assert_array_equal(short.array, full.array)
    assert short.dtype == full.dtype and short.requires_grad == full.requires_grad
    if full.node is None:
        assert short.node is None
        return
    s, f = short.node, full.node
    assert s.op is f.op
    assert s.ctx.needs_grad == f.ctx.needs_grad
    assert s.ctx.shapes == f.ctx.shapes and s.ctx.dtypes == f.ctx.dtypes
    assert s.ctx.records == f.ctx.records and s.ctx.xp is f.ctx.xp
    assert [type(p) for p in s.parents] == [type(p) for p in f.parents]
    for a, b in zip(s.parents, f.parents, strict=True):
        assert (a is b) if not isinstance(a, Node) else (a.op is b.op)
    assert sorted(s.ctx.saved_values()) == sorted(f.ctx.saved_values())


CASES = [
    (Mul, lambda x, c: (x, c), {}),
    (Add, lambda x, c: (x, 2.5), {}),
    (Sub, lambda x, c: (3, x), {}),
    (Div, lambda x, c: (c, x), {}),
    (Mul, lambda x, c: (c, c), {}),  # nothing requires grad: not recorded
    # Mul and Div set their saved values themselves: only what a needed gradient reads
    (Mul, lambda x, c: (c, x), {}),
    (Mul, lambda x, c: (x, x), {}),
    (Div, lambda x, c: (x, c), {}),
    (Div, lambda x, c: (x, x), {}),
    (Div, lambda x, c: (x, 2), {}),
]


@pytest.mark.parametrize("op, make_inputs, attrs", CASES)
def test_short_path_records_what_the_full_path_records(op, make_inputs, attrs, full_path_calls):
    x = _leaf([[1.0, 2.0], [3.0, 4.0]])
    c = _leaf([[0.5, -1.0], [2.0, 1.5]], requires_grad=False)
    inputs = make_inputs(x * 1.0, c)
    short = op.apply(*inputs, **attrs)
    assert full_path_calls == []  # the short path served
    full = op._apply_any(inputs, attrs)
    _same_record(short, full)


def test_short_path_takes_attributes_and_checks_them(full_path_calls):
    x = _leaf([[1.0, 2.0], [3.0, 4.0]])
    op = x.sum(dim=1).node.op
    attrs = {name: getattr(x.sum(dim=1).node.ctx, name) for name in op.attrs}
    short = op.apply(x, **attrs)
    full = op._apply_any((x,), attrs)
    _same_record(short, full)
    assert full_path_calls == ["sum"]  # only the call made to compare
    with pytest.raises(GraphError, match="expected attributes"):
        op.apply(x, nonsense=1)
    with pytest.raises(GraphError, match="expected attributes"):
        op.apply(x)


def test_gradients_equal_through_both_paths():
    data = np.random.default_rng(0).random((3, 4)) + 0.5
    c = mt.Tensor(np.full((3, 4), 1.5))

    def chain(x, use_full):
        steps = [Mul, Add, Sub, Div]
        y = x
        for op in steps * 3:
            y = op._apply_any((y, c), {}) if use_full else op.apply(y, c)
        return (y * 0.5).sum()

    grads = []
    for use_full in (False, True):
        x = mt.Tensor(data.copy(), requires_grad=True)
        chain(x, use_full).backward()
        grads.append(x.grad.array)
    np.testing.assert_array_equal(grads[0], grads[1])


def test_chain_gradient_matches_finite_differences_in_float64():
    data = np.random.default_rng(1).random((2, 3)) + 0.5
    c = mt.Tensor(np.full((2, 3), 1.25))

    def f(array):
        y = mt.Tensor(array, requires_grad=True)
        out = y
        for _ in range(3):
            out = (out * c + c - 0.5) / c
        return y, (out * out).sum()

    x, loss = f(data.copy())
    loss.backward()
    numeric = np.zeros_like(data)
    step = 1e-6
    for index in np.ndindex(*data.shape):
        plus, minus = data.copy(), data.copy()
        plus[index] += step
        minus[index] -= step
        numeric[index] = (f(plus)[1].item() - f(minus)[1].item()) / (2 * step)
    np.testing.assert_allclose(x.grad.array, numeric, rtol=1e-6, atol=1e-8)


def test_chain_matches_pytorch():
    torch = pytest.importorskip("torch")
    data = np.random.default_rng(2).random((4, 4), dtype=np.float32) + 0.5
    constant = np.full((4, 4), 1.01, dtype=np.float32)

    def chain(x, c):
        y = x
        for _ in range(5):
            y = ((y * c + c) - c) / c
        return y.sum()

    x = mt.Tensor(data, requires_grad=True)
    loss = chain(x, mt.Tensor(constant))
    loss.backward()
    tx = torch.tensor(data, requires_grad=True)
    tloss = chain(tx, torch.from_numpy(constant))
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-6)
    np.testing.assert_allclose(x.grad.array, tx.grad.numpy(), rtol=1e-6)


def test_unusual_inputs_take_the_full_path(full_path_calls):
    x = _leaf([1.0, 2.0])
    x * np.float64(2.0)  # a numpy number: the full path makes it a Python float
    x * np.array([1.0, 2.0], np.float32)  # an array
    x * True  # a bool
    x * _leaf([1.0, 2.0], dtype=np.float64)  # two dtypes: promoted
    assert full_path_calls == ["mul"] * 4


def test_promotion_still_happens():
    x = _leaf([1.0, 2.0])
    y = _leaf([3.0, 4.0], dtype=np.float64)
    out = x * y
    assert out.dtype == np.float64
    out.sum().backward()
    assert x.grad.dtype == np.float32 and y.grad.dtype == np.float64


def test_integers_divided_give_float32_through_the_short_path(full_path_calls):
    a = mt.Tensor(np.array([1, 2, 3]))
    b = mt.Tensor(np.array([2, 2, 2]))
    assert (a / b).dtype == np.float32
    assert (a.double() / b.double()).dtype == np.float64
    assert full_path_calls == []


def test_broadcast_error_names_the_op_through_the_short_path():
    with pytest.raises(ShapeError, match="mul: shapes do not broadcast"):
        _leaf([1.0, 2.0]) * _leaf([1.0, 2.0, 3.0])


def test_hooks_and_retain_grad_through_the_short_path():
    x = _leaf([1.0, 2.0])
    seen = []
    y = x * 3.0
    y.retain_grad()
    y.register_hook(lambda grad: seen.append(grad.array.copy()) or grad * 2)
    x.register_hook(lambda grad: seen.append(grad.array.copy()))
    (y * y).sum().backward()
    np.testing.assert_allclose(seen[0], [6.0, 12.0])
    np.testing.assert_allclose(y.grad.array, [12.0, 24.0])  # after its hook, as PyTorch
    np.testing.assert_allclose(seen[1], [36.0, 72.0])
    np.testing.assert_allclose(x.grad.array, [36.0, 72.0])


def test_version_error_through_the_short_path_and_inlined_backward():
    x = _leaf([1.0, 2.0])
    c = mt.Tensor(np.array([3.0, 4.0], np.float32))
    y = x * c  # saves c for x's gradient
    c.array[...] = 0  # a direct write, counted
    c.bump_version()
    with pytest.raises(GraphError, match="modified by an in-place operation"):
        y.sum().backward()


def test_second_backward_refused_through_the_inlined_backward():
    x = _leaf([1.0, 2.0])
    loss = (x * x).sum()
    loss.backward()
    with pytest.raises(GraphError, match="backward through the graph a second time"):
        loss.backward()


def test_wrong_gradient_count_refused_through_the_inlined_backward():
    class TwoGrads(Op, register=False):
        name = "two_grads"
        inputs = ("x",)

        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(GraphError, match="backward returned 2 gradients for 1 inputs"):
        TwoGrads.apply(_leaf([1.0])).sum().backward()


def test_anomaly_mode_still_checks(full_path_calls):
    x = _leaf([1.0, 0.0])
    with mt.autograd.detect_anomaly(), np.errstate(all="ignore"):
        with pytest.raises(GraphError, match="anomaly in forward"):
            mt.Tensor(np.array([1.0, 1.0], np.float32)) / (x * 0.0)
    assert "mul" in full_path_calls


def test_no_grad_records_nothing_through_the_short_path(full_path_calls):
    x = _leaf([1.0, 2.0])
    with mt.no_grad():
        y = x * x
    assert y.node is None and not y.requires_grad
    assert full_path_calls == []


def test_a_rebind_sends_later_calls_to_the_full_path_and_its_view_checks(full_path_calls):
    x = _leaf([1.0, 2.0, 3.0])
    y = x * 1.0
    view = y[:2]
    y.mul_(2.0)  # y becomes the in-place op's output: a rebind
    with pytest.raises(GraphError, match="this view was taken from the output"):
        view * 1.0
    assert "mul" in full_path_calls


def test_mul_and_div_save_only_when_recording_and_only_what_backward_reads():
    x, c = _leaf([[1.0, 2.0]]), _leaf([[3.0, 4.0]], requires_grad=False)
    mul, div = x * c, x / c
    assert mul.node.ctx.a is None and mul.node.ctx.b is c.array  # da reads b; no db
    assert div.node.ctx.a is None and div.node.ctx.b is c.array  # da reads b only
    both = x / (x * 1.0)
    assert both.node.ctx.a is x.array and both.node.ctx.b is not None
    both.sum().backward()  # then the saved values are freed
    with pytest.raises(GraphError, match="not available"):
        _ = both.node.ctx.a


def test_a_forward_that_saves_too_little_is_refused_through_the_short_path(
    full_path_calls, monkeypatch
):
    # an earlier test's in-place rebind sends every later call to the full path: not this one
    monkeypatch.setattr(clock, "latest_rebind", -1)

    class SavesNothing(Op, register=False):
        name = "saves_nothing"
        inputs = ("x",)
        saved = ("x",)

        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(GraphError, match="did not save"):
        SavesNothing.apply(_leaf([1.0]))
    assert full_path_calls == []
