"""minitrain.viz: the drawn graph holds the ops, names, shapes and gradients autograd recorded."""

from __future__ import annotations

import io
import re
import shutil

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn, viz
from minitrain.autograd import Node
from minitrain.errors import DTypeError, GraphError
from minitrain.viz.describe import format_bytes

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot not installed")


def small_cnn():
    mt.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(4 * 4 * 4, 3),
    )


def cnn_loss(model=None):
    model = model or small_cnn()
    x = mt.Tensor(np.random.default_rng(1).standard_normal((2, 1, 8, 8)).astype(np.float32))
    return model, nn.CrossEntropyLoss()(model(x), np.array([0, 2]))


def graph_nodes(loss) -> list[Node]:
    found, stack = {}, [loss.node]
    while stack:
        node = stack.pop()
        if id(node) not in found:
            found[id(node)] = node
            stack.extend(p for p in node.parents if type(p) is Node)
    return sorted(found.values(), key=lambda node: node.seq)


def node_statements(source: str) -> dict[str, str]:
    """DOT node id -> its attribute text, for the op nodes (n<seq>) and leaves (t<id>)."""
    return dict(re.findall(r"^\s*((?:n|t)\d+) \[(.*)\]$", source, flags=re.M))


def edges(source: str) -> list[tuple[str, str]]:
    return re.findall(r"^\s*(\w+) -> (\w+)", source, flags=re.M)


def stat(text: str, which: str, name: str) -> float:
    """A number from a 'grad min .. mean .. max .. norm ..' line."""
    return float(re.search(rf"{which} [^<\n]*?\b{name} ([-+0-9.e]+|nan|inf)", text).group(1))


# The graph of a small CNN.
def test_cnn_graph_has_every_kernel_parameter_and_saved_shape():
    model, loss = cnn_loss()
    source = viz.draw_graph(loss, model=model).source
    for kernel in (
        "ConvGrad",
        "BatchNormalizationGrad",
        "ReluGrad",
        "MaxPoolGrad",
        "FlattenGrad",
        "LinearGrad",
        "SoftmaxCrossEntropyGrad",
    ):
        assert f"<B>{kernel}</B>" in source
    for name, p in model.named_parameters():
        assert f"<B>{name}</B>" in source
        assert f"{tuple(p.shape)} float32" in source
    assert "saved x (2, 1, 8, 8) float32 512 B" in source  # conv's input, saved for dW
    assert "saved w (4, 1, 3, 3) float32 144 B" in source
    assert "saved indices (2, 4, 4, 4) int64 1.0 KiB" in source
    assert "strides=(1, 1)  pads=(1, 1, 1, 1)" in source  # attributes, shown by default
    assert "eps=1e-05" in source
    with mt.Tape() as tape:
        model, loss = cnn_loss(model)
    caption = f"7 ops, {format_bytes(tape.saved_bytes())} saved for backward"
    assert caption in viz.draw_graph(loss).source


def test_one_box_per_recorded_op_and_edges_from_inputs_toward_the_output():
    model, loss = cnn_loss()
    source = viz.draw_graph(loss, model=model).source
    nodes = graph_nodes(loss)
    statements = node_statements(source)
    assert sorted(k for k in statements if k.startswith("n")) == sorted(f"n{n.seq}" for n in nodes)
    expected = {(f"n{loss.node.seq}", "out0")}
    for node in nodes:
        for parent in node.parents:
            if type(parent) is Node:
                expected.add((f"n{parent.seq}", f"n{node.seq}"))
            elif parent is not None:
                expected.add((f"t{id(parent)}", f"n{node.seq}"))
    found = edges(source)
    assert set(found) == expected and len(found) == len(expected)
    for a, b in found:  # recording order: an edge never runs back to an earlier op
        if a.startswith("n") and b.startswith("n"):
            assert int(a[1:]) < int(b[1:])


def test_kernel_formula_in_tooltips():
    model, loss = cnn_loss()
    source = viz.draw_graph(loss, model=model).source
    statements = node_statements(source)
    for node in graph_nodes(loss):
        first_line = node.op.backward.__doc__.strip().splitlines()[0]
        assert viz.kernel_formula(node.op) == first_line
        tooltip = re.search(r'tooltip="([^"]*)"', statements[f"n{node.seq}"]).group(1)
        assert tooltip.startswith(node.name + ": ")
        assert len(tooltip) > len(node.name) + 5


def test_modules_become_labelled_clusters_and_params_dict_names_leaves():
    model, loss = cnn_loss()
    clustered = viz.draw_graph(loss, model=model).source
    for path, module in model.named_modules():
        if path and list(module.parameters()):
            assert f'label="{path}: {type(module).__name__}"' in clustered
    # the conv's op and its weight sit inside the conv's box
    box = clustered[clustered.index('label="0: Conv2d"') :]
    box = box[: box.index("}")]
    conv = next(n for n in graph_nodes(loss) if n.name == "ConvGrad")
    assert f"n{conv.seq} [" in box and f"t{id(model[0].weight)} [" in box

    named = viz.draw_graph(loss, params=dict(model.named_parameters())).source
    assert "subgraph" not in named and "<B>0.weight</B>" in named
    assert viz.draw_graph(loss, params=model).source == clustered  # a Module as params


def test_nested_modules_nest_their_boxes():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(3, 3), nn.Tanh())

        def forward(self, x):
            return self.inner(x) * 2  # the mul belongs to Block itself

    model = nn.Sequential(Block(), nn.Linear(3, 1))
    loss = model(mt.randn(4, 3)).sum()
    source = viz.draw_graph(loss, model=model).source
    outer = source.index('label="0: Block"')
    inner = source.index('label="0.inner: Sequential"')
    leaf = source.index('label="0.inner.0: Linear"')
    assert outer < inner < leaf
    mul = next(n for n in graph_nodes(loss) if n.name == "MulGrad")
    assert mul.scope is model[0]
    block = source[outer : source.rindex("subgraph", 0, inner)]  # Block's box, before inner's
    assert f"n{mul.seq} [" in block


# Values and gradients.
def test_gradient_statistics_equal_the_gradients_backward_computes():
    model, loss = cnn_loss()
    relu_out = next(n for n in graph_nodes(loss) if n.name == "ReluGrad").output()
    assert relu_out is None  # intermediates are not kept alive by the graph

    with mt.Tape() as tape:
        model, loss = cnn_loss(model)
    hidden = next(t for n, t in zip(tape.nodes, tape.outputs, strict=True) if n.name == "ReluGrad")
    hidden.retain_grad()
    loss.backward(retain_graph=True)
    weights = {name: p.grad.array.copy() for name, p in model.named_parameters()}
    source = viz.draw_graph(loss, model=model, show_values=True).source
    statements = node_statements(source)
    for name, p in model.named_parameters():
        text = statements[f"t{id(p)}"]
        assert stat(text, "grad", "norm") == pytest.approx(np.linalg.norm(p.grad.array), rel=5e-3)
        assert stat(text, "grad", "max") == pytest.approx(p.grad.array.max(), rel=5e-3, abs=1e-9)
        assert stat(text, "value", "mean") == pytest.approx(p.array.mean(), rel=5e-3, abs=1e-9)
        np.testing.assert_array_equal(p.grad.array, weights[name])  # drawing changed no .grad
    relu = statements[f"n{hidden.node.seq}"]
    assert stat(relu, "grad", "norm") == pytest.approx(np.linalg.norm(hidden.grad.array), rel=5e-3)
    assert stat(relu, "value", "min") == pytest.approx(0.0, abs=1e-12)  # the tape kept it alive
    assert "grad: d(the output)/d(tensor)" in source


def test_drawing_runs_no_hooks_and_works_before_backward():
    calls = []
    w = mt.randn(3, requires_grad=True)
    w.register_hook(lambda g: calls.append(g) or g * 100)
    h = w * 3
    h.register_hook(lambda g: calls.append(g))
    loss = (h * h).sum()
    source = viz.draw_graph(loss, params={"w": w}, show_values=True).source
    assert calls == [] and w.grad is None
    expected = np.linalg.norm(18 * w.array)  # d/dw sum((3w)^2) = 18 w
    assert stat(node_statements(source)[f"t{id(w)}"], "grad", "norm") == pytest.approx(
        expected, rel=5e-3
    )


def test_after_plain_backward_saved_values_show_as_freed_and_gradients_are_not_traced():
    model, loss = cnn_loss()
    loss.backward()
    source = viz.draw_graph(loss, model=model, show_values=True).source
    assert "saved x, w: freed by backward" in source
    assert "grad min" not in source
    assert "backward(retain_graph=True)" in source  # the caption says how to get them


def test_a_non_finite_gradient_is_drawn_in_red():
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * np.float32(np.inf)).sum()  # d loss/dw = inf
    statements = node_statements(viz.draw_graph(loss, show_values=True).source)
    assert "0 nan, 2 inf" in statements[f"t{id(w)}"]
    assert 'color="#C62828"' in statements[f"t{id(w)}"]
    mul = statements[f"n{loss.node.parents[0].seq}"]
    assert 'color="#C62828"' not in mul  # its own output's gradient (ones) is finite


# Large graphs, tapes, several outputs.
def test_max_nodes_keeps_the_last_ops_and_counts_the_rest():
    x = mt.randn(3, requires_grad=True)
    y = x
    for _ in range(3000):  # deeper than Python's recursion limit
        y = y * 1.0001
    loss = y.sum()
    source = viz.draw_graph(loss, max_nodes=10).source
    assert len([k for k in node_statements(source) if k.startswith("n")]) == 10
    assert "2991 earlier ops not drawn (max_nodes=10)" in source
    full = viz.draw_graph(loss).source
    assert len([k for k in node_statements(full) if k.startswith("n")]) == 3001
    out = io.StringIO()
    viz.text_graph(loss, max_nodes=5, file=out)
    text = out.getvalue()
    assert text.count("earlier ops not shown (max_nodes=5)") == 1
    assert text.count("SumGrad") == 1 and text.count("MulGrad") == 4
    out = io.StringIO()
    viz.text_graph(loss, file=out)  # iterative: no RecursionError
    assert out.getvalue().count("MulGrad  mul #") == 3000


def test_tape_draws_everything_it_recorded_and_marks_each_unconsumed_output():
    a = mt.randn(3, requires_grad=True)
    with mt.Tape() as tape:
        b = a.exp()
        first = (b * 2).sum()
        second = b.tanh()
    source = tape.draw(params={"a": a}).source
    assert len(tape.outputs) == len(tape.nodes) == 4
    assert {e for e in edges(source) if e[1].startswith("out")} == {
        (f"n{first.node.seq}", "out0"),
        (f"n{second.node.seq}", "out1"),
    }
    assert "<B>output 0</B>" in source and "<B>output 1</B>" in source
    many = viz.draw_graph([first, second.sum()], show_values=True).source
    assert "grad: d(the sum of the outputs)/d(tensor)" in many


def test_text_graph_shows_the_tree_with_inputs_names_and_shared_nodes_once():
    model, loss = cnn_loss()
    out = io.StringIO()
    viz.text_graph(loss, model=model, file=out)
    text = out.getvalue()
    lines = text.splitlines()
    assert lines[0] == "output () float32"
    assert lines[1].startswith("└─ SoftmaxCrossEntropyGrad  cross_entropy #")
    assert any(re.search(r"├─ w: 0\.weight \(4, 1, 3, 3\) float32", line) for line in lines)
    assert any("· saved x (2, 1, 8, 8) float32 512 B" in line for line in lines)
    assert any(line.endswith("[0: Conv2d]") and "ConvGrad" in line for line in lines)

    x = mt.randn(2, requires_grad=True)
    shared = x.exp()
    diamond = (shared * shared.tanh()).sum()  # exp's output feeds two ops
    out = io.StringIO()
    viz.text_graph(diamond, params={"x": x}, file=out)
    text = out.getvalue()
    assert text.count("ExpGrad") == 2 and text.count("(see above)") == 1
    assert text.count("x (2,) float32") == 1


# Rendering with Graphviz's dot.
@needs_dot
def test_dot_renders_the_cnn_graph_to_svg(tmp_path):
    model, loss = cnn_loss()
    graph = viz.draw_graph(loss, model=model, show_values=True)
    path = graph.write(tmp_path / "graph.svg")
    svg = (tmp_path / "graph.svg").read_text()
    assert path == str(tmp_path / "graph.svg") and svg.lstrip().startswith("<?xml")
    assert "ConvGrad" in svg and "0.weight" in svg and "cluster" in svg
    assert "dX" in svg or "dx" in svg  # a kernel formula, as a tooltip
    assert "svg" in graph._repr_mimebundle_()["image/svg+xml"][:200]


def test_without_dot_the_graph_is_returned_and_rendering_says_how_to_install(tmp_path, monkeypatch):
    model, loss = cnn_loss()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    graph = viz.draw_graph(loss, model=model)
    assert "ConvGrad" in graph.source
    old = tmp_path / "graph.svg"
    old.write_text("the previous drawing")
    with pytest.raises(viz.GraphvizNotFoundError, match="apt-get install graphviz"):
        graph.write(old)
    assert old.read_text() == "the previous drawing"  # nothing written
    with pytest.raises(viz.GraphvizNotFoundError, match="brew install graphviz"):
        graph.render(tmp_path / "g", format="svg")
    bundle = graph._repr_mimebundle_()
    assert "Graphviz" in bundle["text/plain"] and "ConvGrad" in bundle["text/plain"]


# Notebook display.
def test_tensor_and_tape_html():
    with mt.Tape() as tape:
        w = mt.tensor([1.0, -2.0, 3.0], requires_grad=True)
        y = (w * w).sum()
    y.backward()
    html = w._repr_html_()
    assert "shape (3,)" in html and "float32" in html and "requires_grad" in html
    assert "min -2  mean 0.667  max 3" in html
    assert "grad: min -4  mean 1.33  max 6" in html  # 2w
    assert "grad_fn SumGrad" in y._repr_html_()
    table = tape._repr_html_()
    assert "2 nodes" in table and "<td>MulGrad</td>" in table and "<td>SumGrad</td>" in table


# Errors name the function and the bad value.
def test_bad_arguments_name_the_function_and_the_value():
    x = mt.randn(3)
    with pytest.raises(GraphError, match=r"draw_graph: root\[0\] \(shape \(3,\)\) does not"):
        viz.draw_graph(x)
    with pytest.raises(DTypeError, match="text_graph: root must be a Tensor.*got int"):
        viz.text_graph(3)
    y = (mt.randn(3, requires_grad=True) * 2).sum()
    with pytest.raises(ValueError, match="draw_graph: max_nodes must be a positive int.*0"):
        viz.draw_graph(y, max_nodes=0)
    with pytest.raises(DTypeError, match="draw_graph: params must be"):
        viz.draw_graph(y, params=[("w", 3)])
    with pytest.raises(DTypeError, match="draw_graph: model must be a Module"):
        viz.draw_graph(y, model={"w": x})


# What recording keeps for drawing.
def test_nodes_know_the_innermost_module_and_the_scope_ends_with_forward():
    class Failing(nn.Module):
        def forward(self, x):
            x * 2
            raise RuntimeError("inside forward")

    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    out = model(mt.randn(1, 2))
    assert out.node.scope is model[1]
    assert out.node.parents[0].scope is model[0]
    assert (out * 2).node.scope is None
    failing = Failing()
    with pytest.raises(RuntimeError, match="inside forward"):
        failing(mt.randn(2, requires_grad=True))
    assert (mt.randn(2, requires_grad=True) * 2).node.scope is None


# Names, tapes and cuts the drawing must tell truthfully.
def svg_texts(graph) -> list[str]:
    """The text lines Graphviz drew, as a reader sees them (XML entities decoded)."""
    import xml.etree.ElementTree as ElementTree

    root = ElementTree.fromstring(graph.pipe(format="svg"))
    return [element.text for element in root.iter("{http://www.w3.org/2000/svg}text")]


@needs_dot
def test_names_with_dot_and_html_specials_render_literally():
    keys = ['say "hi"', "<b>&amp;</b>", "back\\slash", "ends with \\", "tab\there", "ünï☃"]
    model = nn.ModuleDict({key: nn.Linear(2, 2) for key in keys})
    loss = sum((model[key](mt.randn(1, 2)).sum() for key in keys), mt.tensor(0.0))
    texts = svg_texts(viz.draw_graph(loss, model=model))
    for key in keys:
        shown = key.replace("\t", "\\t")  # a control character shows as its escape
        assert f"{shown}: Linear" in texts  # the module's box
        assert f"{shown}.weight" in texts  # its parameter, in an HTML-like label
    w = mt.randn(2, requires_grad=True)
    texts = svg_texts(viz.draw_graph((w * 2).sum(), params={"line\nbreak \\n": w}))
    assert "line\\nbreak \\n" in texts


def test_control_characters_in_names_keep_text_graph_lines_whole():
    w = mt.randn(2, requires_grad=True)
    out = io.StringIO()
    viz.text_graph((w * 2).sum(), params={"first\nsecond": w}, file=out)
    lines = out.getvalue().splitlines()
    assert any(line.endswith("a: first\\nsecond (2,) float32") for line in lines)
    assert not any(line.startswith("second") for line in lines)


def test_ops_recorded_before_a_tape_are_not_reported_as_cut_by_max_nodes():
    w = mt.randn(3, requires_grad=True)
    before = w.exp()  # recorded outside the tape
    with mt.Tape() as tape:
        loss = (before * 2).sum()
    source = tape.draw().source
    assert "max_nodes" not in source and "earlier ops not drawn" not in source
    mul = loss.node.parents[0]
    assert ("outside", f"n{mul.seq}") in edges(source)
    assert re.search(r'^\s*outside \[label="[^"]*recorded outside the Tape', source, flags=re.M)
    out = io.StringIO()
    viz.text_graph(tape, file=out)
    assert "max_nodes" not in out.getvalue()
    assert "a: ... earlier ops, recorded outside the Tape: not shown" in out.getvalue()


def test_an_output_whose_op_max_nodes_left_out_comes_from_the_omitted_box():
    x = mt.randn(3, requires_grad=True)
    early = x * 2
    late = early
    for _ in range(5):
        late = late * 1.5
    source = viz.draw_graph([early, late.sum()], max_nodes=3).source
    declared = set(node_statements(source)) | set(re.findall(r"^\s*(\w+) \[", source, flags=re.M))
    for a, b in edges(source):  # no edge invents an undeclared (unlabelled) node
        assert a in declared and b in declared
    assert ("omitted", "out0") in edges(source)
    assert "4 earlier ops not drawn (max_nodes=3)" in source


def test_text_graph_of_a_deep_graph_stays_narrow_and_shows_every_op_once():
    x = mt.randn(3, requires_grad=True)
    w = mt.randn(3, requires_grad=True)
    y = x
    for _ in range(500):
        y = y * w  # each op has a leaf beside the op below: indentation grows every level
    out = io.StringIO()
    viz.text_graph(y.sum(), params={"x": x, "w": w}, file=out)
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) < 150
    mul_lines = [line for line in lines if "MulGrad  mul #" in line]
    assert len(mul_lines) == 500
    seqs = [int(re.search(r"mul #(\d+)", line).group(1)) for line in mul_lines]
    assert seqs == sorted(seqs, reverse=True)  # still the walk from the output to the input
    assert sum(line.endswith("x (3,) float32") for line in lines) == 1
    continued = [line for line in lines if line.endswith(", continued:")]
    assert continued and all(line.startswith("MulGrad #") for line in continued)


def test_gradient_caption_names_what_was_differentiated():
    w = mt.randn(3, requires_grad=True)
    single = viz.draw_graph(w * 2, show_values=True).source
    assert "grad: d(the sum of the output's elements)/d(tensor)" in single
    both = viz.draw_graph([w * 2, w.exp()], show_values=True).source
    assert "grad: d(the sum of all outputs' elements)/d(tensor)" in both
    assert "sum(the sum" not in single + both
