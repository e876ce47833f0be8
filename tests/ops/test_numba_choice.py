"""How numba is chosen, and what keeps a numba kernel: one question, `backend.numba_takes`,
asked once per call (by `Op.apply` through `numba_applies`, or by a public kernel itself), and a
`make bench` row named in each numba op's `numba_bench` (benchmarks/README.md's table)."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

from minitrain import backend, ops
from minitrain.errors import GraphError
from minitrain.ops.core.op import Op
from minitrain.ops.sequence import attention, attention_numba

README = pathlib.Path(__file__).parents[2] / "benchmarks" / "README.md"


def _bench_rows() -> list[str]:
    """The row names of benchmarks/README.md's tables, lowercased (as test_second_order reads
    them for fused_backward)."""
    return [name.lower() for name in re.findall(r"`([^`|]+)`", README.read_text())]


def _has_numba_variant(op) -> bool:
    return op.numba_forward is not None or op.numba_backward is not None


def test_every_numba_op_names_a_bench_row_that_exists():
    rows = _bench_rows()
    named = {name: op for name, op in ops.registry().items() if op.numba_bench}
    for name, op in ops.registry().items():
        if _has_numba_variant(op):
            assert name in named, f"{name}: a numba variant without a numba_bench row"
    for name, op in named.items():
        row = op.numba_bench.lower()
        assert any(r.startswith(row) for r in rows), f"{name}: no bench row {op.numba_bench!r}"


def test_the_recurrent_cells_and_attention_name_their_rows():
    registry = ops.registry()
    assert registry["lstm_cell"].numba_bench == "train step LSTM"
    assert registry["gru_cell"].numba_bench == registry["gru_cell"].fused_backward
    assert registry["gru_cell"].numba_bench == "train step GRU"
    assert registry["scaled_dot_product_attention"].numba_bench == "SDPA causal"
    assert any(r.startswith("train step gru") for r in _bench_rows())


def test_an_op_with_a_numba_variant_and_no_row_is_refused():
    with pytest.raises(GraphError, match="numba_bench"):

        class Unmeasured(Op):
            name = "test_unmeasured_numba_op"
            inputs = ("x",)

            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, grad):
                return grad

            @staticmethod
            def numba_forward(ctx, x):
                return x

    assert "test_unmeasured_numba_op" not in ops.registry()


def test_a_fused_backward_row_is_the_numba_row_unless_another_is_named():
    class Measured(Op, register=False):
        name = "test_measured_numba_op"
        inputs = ("x",)
        fused_backward = "softmax 4096x1000"

        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

        @staticmethod
        def numba_forward(ctx, x):
            return x

    class Named(Measured, register=False):
        numba_bench = "cross_entropy 4096x1000"

    assert Measured.numba_bench == "softmax 4096x1000"
    assert Named.numba_bench == "cross_entropy 4096x1000"


def test_numba_takes_wants_no_empty_array():
    full, empty = np.ones((2, 3), np.float32), np.ones((2, 0), np.float32)
    with backend.use_numba(True):
        assert backend.numba_takes(full, None, full)
        assert not backend.numba_takes(full, empty)
        assert not backend.numba_takes(empty, full)
        assert not backend.numba_takes(full, full.astype(np.float64))
        assert not backend.numba_takes(full.astype(np.float16))
        assert not backend.numba_takes(None)
    with backend.use_numba(False):
        assert not backend.numba_takes(full)


@pytest.mark.parametrize(
    "shapes",
    [((2, 4, 3), (2, 0, 3), (2, 0, 5)), ((2, 4, 3), (2, 6, 3), (2, 6, 0))],
    ids=["no_keys", "no_value_features"],
)
def test_attention_asks_numba_takes_once_a_direction(monkeypatch, shapes):
    # attention has no test of its own: its forward and attention_grad each ask
    # backend.numba_takes of (q, k, v), which refuses an empty one, so the numba blocks (which
    # need keys) never see one
    asked = []
    real = backend.numba_takes

    def counting(*arrays):
        asked.append(tuple(a.shape for a in arrays))
        return real(*arrays)

    def refuse(*args):
        raise AssertionError("the numba path ran on an empty array")

    monkeypatch.setattr(attention.backend, "numba_takes", counting)
    monkeypatch.setattr(attention, "numba_forward", refuse)
    monkeypatch.setattr(attention, "numba_backward", refuse)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    with backend.use_numba(True):
        out = ops.scaled_dot_product_attention(q, k, v).array
        scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
        if k.shape[-2]:  # each row's log of its sum of exps (the kernel's saved statistic)
            top = scores.max(axis=-1, keepdims=True)
            lse = (top + np.log(np.exp(scores - top).sum(axis=-1, keepdims=True)))[..., 0]
        else:
            lse = np.full(q.shape[:-1], np.inf)
        attention.attention_grad(np.ones_like(out), q, k, v, out, lse)
    assert len(asked) == 2
    assert not hasattr(attention_numba, "numba_takes")
