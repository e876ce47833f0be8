"""draw_graph for vanishing gradients: max_nodes keeping the input end (keep="input", "both"),
and boxes filled by the norm of their gradient (color_by="grad_norm")."""

from __future__ import annotations

import io
import re
import shutil

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn, viz
from minitrain.autograd import Node, graph_nodes
from minitrain.errors import ArgumentError, MinitrainError

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot not installed")


def node_statements(source: str) -> dict[str, str]:
    """DOT node id -> its attribute text, for the op nodes (n<seq>) and leaves (t<id>)."""
    return dict(re.findall(r"^\s*((?:n|t)\d+) \[(.*)\]$", source, flags=re.M))


def drawn_ops(source: str) -> list[int]:
    return sorted(int(key[1:]) for key in node_statements(source) if key.startswith("n"))


def edges(source: str) -> list[tuple[str, str]]:
    return re.findall(r"^\s*(\w+) -> (\w+)", source, flags=re.M)


def fill(statement: str) -> str:
    return re.search(r'fillcolor="(#[0-9A-Fa-f]{6})"', statement).group(1)


def luminance(colour: str) -> float:
    """The relative luminance of an sRGB colour (WCAG): 1 for white, 0 for black."""
    channels = np.array([int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    linear = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def sigmoid_mlp(depth: int = 6):
    mt.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(8, 8), nn.Sigmoid()]
    model = nn.Sequential(*layers, nn.Linear(8, 1))
    return model, model(mt.randn(4, 8)).pow(2).mean()


# keep: which end max_nodes keeps.
def test_keep_input_draws_the_first_layers_and_leaves_out_the_last():
    model, loss = sigmoid_mlp()
    recorded = [node.seq for node in graph_nodes([loss])]
    source = viz.draw_graph(loss, model=model, max_nodes=5, keep="input").source
    assert drawn_ops(source) == recorded[:5]
    statements = node_statements(source)
    assert f"t{id(model[0].weight)}" in statements  # the first layer's parameters are drawn
    assert f"t{id(model[12].weight)}" not in statements  # the last layer's are not
    later = len(recorded) - 5
    assert f"{later} later ops not drawn (max_nodes=5, keep='input')" in source
    # the drawing runs on through the box of the ops left out, to the output
    fifth = f"n{recorded[4]}"
    assert (fifth, "omitted") in edges(source) and ("omitted", "out0") in edges(source)
    assert 'label="0: Linear"' in source and 'label="12: Linear"' not in source


def test_keep_output_is_the_default_and_keeps_the_last_ops():
    model, loss = sigmoid_mlp()
    recorded = [node.seq for node in graph_nodes([loss])]
    source = viz.draw_graph(loss, model=model, max_nodes=5).source
    assert source == viz.draw_graph(loss, model=model, max_nodes=5, keep="output").source
    assert drawn_ops(source) == recorded[-5:]
    assert f"{len(recorded) - 5} earlier ops not drawn (max_nodes=5)" in source
    assert f"t{id(model[0].weight)}" not in node_statements(source)


def test_keep_both_draws_both_ends_around_the_ops_left_out():
    model, loss = sigmoid_mlp()
    recorded = [node.seq for node in graph_nodes([loss])]
    source = viz.draw_graph(loss, model=model, max_nodes=7, keep="both").source
    assert drawn_ops(source) == recorded[:4] + recorded[-3:]  # the odd one at the input end
    middle = len(recorded) - 7
    assert f"{middle} ops in between not drawn (max_nodes=7, keep='both')" in source
    found = edges(source)
    assert (f"n{recorded[3]}", "omitted") in found  # the input end feeds the left-out ops
    assert ("omitted", f"n{recorded[-3]}") in found  # which feed the output end
    statements = node_statements(source)
    assert f"t{id(model[0].weight)}" in statements and f"t{id(model[12].weight)}" in statements


def test_a_cut_does_not_change_what_each_kept_op_shows():
    model, loss = sigmoid_mlp(depth=3)
    recorded = [node.seq for node in graph_nodes([loss])]
    full = node_statements(viz.draw_graph(loss, model=model, show_values=True).source)
    kept = node_statements(
        viz.draw_graph(loss, model=model, show_values=True, max_nodes=4, keep="input").source
    )
    for seq in recorded[:4]:  # output shapes, saved arrays and statistics as in the full graph
        assert kept[f"n{seq}"] == full[f"n{seq}"]


def test_text_graph_keeps_the_input_end_under_one_line_for_the_rest():
    model, loss = sigmoid_mlp()
    recorded = graph_nodes([loss])
    out = io.StringIO()
    viz.text_graph(loss, model=model, max_nodes=5, keep="input", show_saved=False, file=out)
    lines = out.getvalue().splitlines()
    assert lines[1] == "└─ ... later ops not shown (max_nodes=5, keep='input')"
    shown = [int(seq) for seq in re.findall(r" #(\d+) ->", out.getvalue())]
    assert shown == [node.seq for node in reversed(recorded[:5])]  # each once, output first
    assert any(line.endswith("0.weight (8, 8) float32") for line in lines)
    assert not any("12.weight" in line for line in lines)

    out = io.StringIO()
    viz.text_graph(loss, max_nodes=4, keep="both", show_saved=False, file=out)
    text = out.getvalue()
    assert text.count("ops in between not shown (max_nodes=4, keep='both')") == 1
    shown = [int(seq) for seq in re.findall(r" #(\d+) ->", text)]
    assert shown == [node.seq for node in reversed(recorded[:2] + recorded[-2:])]


def test_keep_input_of_a_graph_with_two_branches_walks_the_left_out_ops_once():
    x = mt.randn(3, requires_grad=True)
    shared = x.exp()  # read by both branches, both left out
    left, right = shared, shared
    for _ in range(4):
        left, right = left * 2, right.tanh()
    loss = (left + right).sum()
    out = io.StringIO()
    viz.text_graph(loss, params={"x": x}, max_nodes=1, keep="input", file=out)
    text = out.getvalue()
    assert text.count("ExpGrad") == 1 and text.count("later ops not shown") == 1
    source = viz.draw_graph(loss, max_nodes=1, keep="input").source
    assert edges(source).count((f"n{shared.node.seq}", "omitted")) == 1


# color_by="grad_norm": fills ordered by the norm of the gradient.
def saturated_tanh_chain(depth: int = 6):
    """y <- tanh(3 y), from x in [1, 2]: each tanh saturates (1 - y^2 about 0.01), so going
    toward the input the tanh multiplies the gradient by 1 - y^2 and the `* 3` by 3: the norms
    fall by about 30 a layer. Returns x, the loss, and the exact norm of the gradient of
    sum(y_depth) for every op's output, by seq, and for x."""
    x = mt.tensor(np.array([1.0, 1.5, 2.0]), requires_grad=True)
    values, y = [x.numpy()], x
    scaled_nodes, tanh_nodes = [], []
    for _ in range(depth):
        scaled = y * 3.0
        y = scaled.tanh()
        scaled_nodes.append(scaled.node)
        tanh_nodes.append(y.node)
        values.append(y.numpy())
    loss = y.sum()
    norms, grad = {loss.node.seq: 1.0}, np.ones(3)  # d loss / d loss
    for layer in reversed(range(depth)):
        norms[tanh_nodes[layer].seq] = np.linalg.norm(grad)
        grad = grad * (1 - values[layer + 1] ** 2)  # through tanh: to 3 y's gradient
        norms[scaled_nodes[layer].seq] = np.linalg.norm(grad)
        grad = grad * 3.0
    return x, loss, norms, np.linalg.norm(grad)


def test_fills_darken_as_the_gradient_norm_grows():
    x, loss, norms, x_norm = saturated_tanh_chain()
    source = viz.draw_graph(loss, params={"x": x}, color_by="grad_norm").source
    statements = node_statements(source)
    boxes = {f"n{seq}": norm for seq, norm in norms.items()} | {f"t{id(x)}": x_norm}
    by_norm = sorted(boxes, key=boxes.get)
    assert boxes[by_norm[0]] < 1e-9 < 1 < boxes[by_norm[-1]]  # vanished over 9 decades
    assert len(set(boxes.values())) == len(boxes)  # all different
    shades = [luminance(fill(statements[key])) for key in by_norm]
    assert all(a > b for a, b in zip(shades, shades[1:], strict=False)), shades  # darker
    for key, norm in boxes.items():  # each box says its norm
        assert f"grad norm {norm:.3g}</FONT>" in statements[key]
        assert f"(grad norm {norm:.3g})" in statements[key]  # in the tooltip too


def test_the_colour_bar_and_caption_give_the_scale():
    x, loss, norms, x_norm = saturated_tanh_chain()
    source = viz.draw_graph(loss, params={"x": x}, color_by="grad_norm").source
    statements = node_statements(source)
    legend = re.search(r"^\s*legend \[(.*)\]$", source, flags=re.M).group(1)
    cells = re.findall(r'<TD BGCOLOR="(#[0-9A-F]{6})"><FONT POINT-SIZE="9">([^<]*)</FONT>', legend)
    assert len(cells) == 5
    boxes = {f"n{seq}": norm for seq, norm in norms.items()} | {f"t{id(x)}": x_norm}
    smallest, largest = min(boxes, key=boxes.get), max(boxes, key=boxes.get)
    assert float(cells[0][1]) == pytest.approx(boxes[smallest], rel=0.05)
    assert float(cells[-1][1]) == pytest.approx(boxes[largest], rel=0.05)
    assert cells[0][0] == fill(statements[smallest])  # the ends coloured as those boxes
    assert cells[-1][0] == fill(statements[largest])
    shades = [luminance(colour) for colour, _ in cells]
    assert all(a > b for a, b in zip(shades, shades[1:], strict=False))
    caption = re.search(r'label="([^"]*)" labelloc=b', source).group(1)
    low, high = boxes[smallest], boxes[largest]
    assert f"log scale, from {low:.2g} (pale yellow) to {high:.2g} (blue)" in caption


def test_colours_with_statistics_and_with_a_cut():
    x, loss, norms, _ = saturated_tanh_chain()
    source = viz.draw_graph(
        loss, params={"x": x}, color_by="grad_norm", show_values=True, max_nodes=4, keep="input"
    ).source
    statements = node_statements(source)
    drawn = drawn_ops(source)
    assert drawn == sorted(norms)[:4]
    assert source.count("grad norm ") == 5  # the statistics hold it: tooltips only, 4 ops, x
    # the scale spans the drawn boxes: the largest drawn gradient is the darkest colour
    legend = re.search(r"^\s*legend \[(.*)\]$", source, flags=re.M).group(1)
    last = re.findall(r'BGCOLOR="(#[0-9A-F]{6})"><FONT POINT-SIZE="9">([^<]*)<', legend)[-1]
    assert float(last[1]) == pytest.approx(norms[drawn[-1]], rel=0.05)
    assert fill(statements[f"n{drawn[-1]}"]) == last[0]


def test_zero_and_non_finite_gradients():
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    v = mt.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * 0.0).sum() + (v * 3.0).sum()
    statements = node_statements(viz.draw_graph(loss, color_by="grad_norm").source)
    assert fill(statements[f"t{id(w)}"]) == "#FFFFFF"
    source = viz.draw_graph(loss, color_by="grad_norm").source
    assert "white: a gradient of zeros" in source

    bad = mt.tensor([1.0, 2.0], requires_grad=True)
    loss = (bad * np.float32(np.inf)).sum()
    source = viz.draw_graph(loss, color_by="grad_norm").source
    statement = node_statements(source)[f"t{id(bad)}"]
    assert 'color="#C62828"' in statement  # red, as show_values marks it
    assert "red border: nan or inf" in source


def test_colouring_changes_no_grad_and_needs_the_saved_values():
    model, loss = sigmoid_mlp(depth=2)
    viz.draw_graph(loss, model=model, color_by="grad_norm")
    assert all(p.grad is None for p in model.parameters())
    loss.backward()
    source = viz.draw_graph(loss, model=model, color_by="grad_norm").source
    assert "legend" not in source and "backward(retain_graph=True)" in source
    assert "#FFFFD9" not in source


@needs_dot
def test_a_coloured_cut_graph_renders(tmp_path):
    model, loss = sigmoid_mlp()
    graph = viz.draw_graph(loss, model=model, max_nodes=6, keep="both", color_by="grad_norm")
    svg = open(graph.write(tmp_path / "graph.svg")).read()
    assert "gradient norm" in svg and "ops in between not drawn" in svg


# Bad option values and the caption's grammar.
@pytest.mark.parametrize("keep", ["middle", "Input", 1, None])
def test_a_bad_keep_names_the_option(keep):
    _, loss = sigmoid_mlp(depth=1)
    for draw in (viz.draw_graph, viz.text_graph):
        with pytest.raises(ArgumentError, match=rf"{draw.__name__}: keep must be .*got") as info:
            draw(loss, max_nodes=3, keep=keep)
        assert isinstance(info.value, MinitrainError) and repr(keep) in str(info.value)


@pytest.mark.parametrize("color_by", ["grad", "grad_norms", True, 0])
def test_a_bad_color_by_names_the_option(color_by):
    _, loss = sigmoid_mlp(depth=1)
    with pytest.raises(ArgumentError, match="draw_graph: color_by must be None or 'grad_norm'"):
        viz.draw_graph(loss, color_by=color_by)


def test_one_op_is_one_op():
    w = mt.randn(3, requires_grad=True)
    assert "1 op, " in viz.draw_graph(w * 2).source
    x = mt.randn(3, requires_grad=True)
    y = (x * 2) * 3
    source = viz.draw_graph(y, max_nodes=1).source
    assert "1 op, " in source and "1 earlier op not drawn (max_nodes=1)" in source
    assert "1 later op not drawn" in viz.draw_graph(y, max_nodes=1, keep="input").source
    assert type(y.node.parents[0]) is Node
