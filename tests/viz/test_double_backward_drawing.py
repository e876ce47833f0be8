"""A gradient taken with create_graph=True draws as a graph: the ops its backward recorded are
shaded and boxed by the node whose backward recorded them, beside the forward ops they read."""

from __future__ import annotations

import io
import re

import numpy as np

import minitrain as mt
from minitrain import nn, viz
from minitrain.autograd import BackwardScope


def _sin_times_x():
    x = mt.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    sin = x.sin()
    y = (sin * x).sum()
    (g,) = mt.grad(y, x, create_graph=True)
    return x, sin, y, g


def test_the_backward_ops_remember_whose_backward_recorded_them():
    x, sin, y, g = _sin_times_x()
    nodes = mt.autograd.graph_nodes([g])
    recorded_by = {
        node.op.name: (node.scope.name, node.scope.seq)
        for node in nodes
        if type(node.scope) is BackwardScope and node.scope.seq is not None
    }
    # d/dx sum(sin(x) * x) = sin(x) + x cos(x): MulGrad gives grad * x and grad * sin(x), and
    # SinGrad's backward multiplies by cos(x), an op of its own
    assert recorded_by["cos"] == ("SinGrad", sin.node.seq)
    forward = [node for node in nodes if node.scope is None]
    assert [node.op.name for node in forward] == ["sin"]  # the forward op the gradient reads
    np.testing.assert_allclose(g.array, np.sin(x.array) + x.array * np.cos(x.array), rtol=1e-12)


def test_draw_graph_boxes_and_shades_the_ops_create_graph_recorded():
    _, sin, y, g = _sin_times_x()
    source = viz.draw_graph(g).source
    boxes = re.findall(r'label="(create_graph: [^"]*)"', source)
    assert f"create_graph: backward of SinGrad #{sin.node.seq}" in boxes
    assert f"create_graph: backward of MulGrad #{y.node.parents[0].seq}" in boxes
    assert "create_graph: gradient sums and casts" in boxes  # x's two gradients added
    # the forward's sin keeps the op fill; the recorded cos is shaded
    sin_box = re.search(rf"\bn{sin.node.seq} \[.*", source).group(0)
    cos_node = next(n for n in mt.autograd.graph_nodes([g]) if n.op.name == "cos")
    cos_box = re.search(rf"\bn{cos_node.seq} \[.*", source).group(0)
    assert 'fillcolor="#F2F2F2"' in sin_box
    assert 'fillcolor="#FBE3CC"' in cos_box


def test_text_graph_names_the_backward_each_op_belongs_to():
    _, sin, _, g = _sin_times_x()
    out = io.StringIO()
    viz.text_graph(g, file=out)
    text = out.getvalue()
    assert "CosGrad  cos #" in text
    assert f"[create_graph: backward of SinGrad #{sin.node.seq}]" in text
    assert re.search(r"SinGrad  sin #\d+ -> \(3,\) float64\n", text)  # the forward op: no box


def test_a_gradient_penalty_graph_shows_module_boxes_and_backward_boxes():
    mt.manual_seed(0)
    critic = nn.Sequential(nn.Linear(2, 4), nn.Tanh(), nn.Linear(4, 1))
    points = mt.tensor(np.random.default_rng(0).standard_normal((3, 2)), requires_grad=True)
    critic = critic.double()
    (g,) = mt.grad(critic(points).sum(), points, create_graph=True)
    penalty = ((g * g).sum(axis=1).sqrt() - 1).pow(2).mean()
    source = viz.draw_graph(penalty, model=critic).source
    labels = re.findall(r'label="([^"<]*)"', source)
    assert "0: Linear" in labels and "2: Linear" in labels  # the forward, by module
    assert any(label.startswith("create_graph: backward of LinearGrad") for label in labels)
    assert any(label.startswith("create_graph: backward of TanhGrad") for label in labels)


def test_the_scope_does_not_keep_the_forward_nodes_alive():
    # the gradient's graph remembers whose backward recorded each op by name and number only:
    # a forward node it does not need (relu's, whose backward is a where on a constant mask)
    # is freed with its saved values
    import gc
    import weakref

    x = mt.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    w = mt.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    r = mt.ops.relu(x * 3)
    relu_node = weakref.ref(r.node)
    (g,) = mt.grad((r * w).sum(), x, create_graph=True)
    del r
    gc.collect()
    assert relu_node() is None
    assert any(type(n.scope) is BackwardScope for n in mt.autograd.graph_nodes([g]))
