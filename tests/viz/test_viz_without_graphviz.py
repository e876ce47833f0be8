"""minitrain without the Python graphviz package: importing it and training work, text_graph
works, and only drawing needs graphviz, refused with an error naming the package."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_WITHOUT_GRAPHVIZ = textwrap.dedent(
    """
    import sys
    sys.modules["graphviz"] = None  # `import graphviz` now raises ImportError

    import io

    import minitrain as mt
    from minitrain import nn, optim, viz

    assert "graphviz" not in {name for name, module in sys.modules.items() if module}
    mt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    x, y = mt.randn(5, 4), mt.tensor([0, 1, 2, 1, 0])
    before = model[0].weight.detach().clone()
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward(retain_graph=True)
    optimizer.step()
    assert not (model[0].weight.detach() == before).all().item(), "the step changed nothing"

    text = io.StringIO()
    viz.text_graph(loss, model=model, file=text)
    assert "SoftmaxCrossEntropyGrad" in text.getvalue(), text.getvalue()
    for draw in (lambda: viz.draw_graph(loss, model=model), lambda: viz.Graph):
        try:
            draw()
        except viz.GraphvizPackageMissingError as error:
            assert isinstance(error, ImportError) and error.name == "graphviz"
            print("REFUSED:", error)
        else:
            raise AssertionError("drawing without graphviz did not raise")
    print("OK")
    """
)


def test_minitrain_imports_and_trains_without_graphviz_and_drawing_names_the_package():
    result = subprocess.run(
        [sys.executable, "-c", _WITHOUT_GRAPHVIZ], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    refusals = [line for line in result.stdout.splitlines() if line.startswith("REFUSED:")]
    assert len(refusals) == 2
    for line in refusals:
        assert "Python package graphviz" in line and "pip install graphviz" in line
    assert result.stdout.rstrip().endswith("OK")


def test_importing_minitrain_does_not_import_graphviz():
    code = "import sys, minitrain; print('graphviz' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
