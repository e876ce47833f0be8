"""The package's layers point one way, and private names stay in their module: read from the
imports of every module in minitrain/ (docs/ARCHITECTURE.md draws the layers). A private name is
never imported from another module nor read as an attribute of an imported module or class; the
engine's direct use of a Tensor's slots (`_grad`, `_requires_grad`, `_hooks`, `_plain_view`, on
the hot path) is instance state, which this test does not see, and the one exception the
architecture page names. The engine keeps no state in module globals (no `global` statement)."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "minitrain"

# Lowest first: a module may import from its own layer and the ones before it. Read in this
# order, the folders are the layers: the engine (autograd/) sits on the foundation, Tensor on
# the engine, the ops on Tensor, and so on up.
LAYERS = {
    "foundation": (
        "minitrain.errors",
        "minitrain.runtime",
        "minitrain.backend",
        "minitrain.cuda",
        "minitrain.multiprocessing",
    ),
    # the engine works on Nodes and arrays: it imports no Tensor (autograd/boundary.py)
    "autograd": ("minitrain.autograd",),
    "tensor": (
        "minitrain.tensor",
        "minitrain.tensor_types",
        "minitrain.tensor_repr",
        "minitrain.inplace",
        "minitrain.arguments",
        "minitrain.creation",
        "minitrain.distributed",
        # PyTorch's program set-up names (inference_mode is no_grad; backends, amp, compile)
        "minitrain.compat",
    ),
    # autograd.functional (vjp, jacobian, hessian, ...) is built from ops: it sits in their layer
    # Tensor's method table calls ops: it sits in their layer, as the top-level functions do
    # autograd.function (PyTorch's custom Function) runs Tensors and records its Node through Op
    # subclasses: it sits in their layer too
    "ops": (
        "minitrain.ops",
        "minitrain.functions",
        "minitrain.tensor_methods",
        "minitrain.autograd.functional",
        "minitrain.autograd.function",
    ),
    "nn": ("minitrain.nn",),
    "training": (
        # minitrain.compile: captures a module's calls (nn below it) and will capture the
        # optimizer's step beside it
        "minitrain.capture",
        "minitrain.optim",
        "minitrain.utils",
        "minitrain.train",
        "minitrain.io",
    ),
    "viz": ("minitrain.viz", "minitrain.onnx"),
}
RANK = {layer: rank for rank, layer in enumerate(LAYERS)}

# The imports from a lower layer into a higher one that must stay, each with its reason: exact
# module pairs, so that tensor.py importing, say, ops.convolution still fails.
_OPS_FOR_TENSOR = (
    "Tensor's operators and methods are ops (x + y is ops.add): imported at the end of "
    "tensor.py, once Tensor exists"
)
ALLOWED_UPWARD = {
    ("minitrain.autograd", "minitrain.autograd.function"): (
        "`from minitrain.autograd import Function`, as PyTorch's: the package's __getattr__ reads "
        "it from the ops layer, which minitrain/__init__.py has imported by then"
    ),
    ("minitrain.backend", "minitrain.autograd.grad_mode"): (
        "a device-side check runs at once under anomaly mode, which backend reads from the "
        "engine's recording state"
    ),
    ("minitrain.tensor", "minitrain.ops"): _OPS_FOR_TENSOR,
    ("minitrain.tensor", "minitrain.ops.pointwise.arithmetic"): _OPS_FOR_TENSOR
    + " (the operators' ops)",
    ("minitrain.tensor", "minitrain.tensor_methods"): _OPS_FOR_TENSOR
    + " (the method table, bound on Tensor)",
    ("minitrain.tensor", "minitrain.ops.core.variants"): _OPS_FOR_TENSOR
    + " (the methods ops declare, bound on Tensor)",
}


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> str | None:
    """The layer a minitrain module belongs to (a package's layer covers its submodules; the
    longest prefix that matches wins, so a submodule can sit in another layer than its package)."""
    matches = [
        (len(prefix), layer)
        for layer, prefixes in LAYERS.items()
        for prefix in prefixes
        if module == prefix or module.startswith(prefix + ".")
    ]
    return max(matches)[1] if matches else None  # None: minitrain/__init__.py, above every layer


def imports_of(module: str) -> list[tuple[int, str, list[str]]]:
    """(line, imported minitrain module, imported names) of every import in the module,
    those inside functions too; `from . import x` counts as importing module x."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, a.name, []) for a in node.names if a.name.startswith("minitrain")
            ]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("minitrain"):
                continue
            names = [a.name for a in node.names]
            submodules = [n for n in names if f"{target}.{n}" in MODULES]
            found += [(node.lineno, f"{target}.{n}", []) for n in submodules]
            rest = [n for n in names if n not in submodules]
            if rest or not submodules:
                found.append((node.lineno, target, rest))
    return found


# Above every layer: the public surface (minitrain/__init__.py) and the command line that runs a
# PyTorch program on it (minitrain/__main__.py, `python -m minitrain program.py`)
SURFACE = ("minitrain", "minitrain.__main__")


def test_every_module_has_a_layer():
    unplaced = [m for m in MODULES if m not in SURFACE and layer_of(m) is None]
    assert not unplaced, f"put these modules in a layer of LAYERS: {unplaced}"


def test_layers_point_one_way():
    upward = []
    for module in MODULES:
        importer = layer_of(module)
        if importer is None:
            continue
        for line, imported, _ in imports_of(module):
            target = layer_of(imported)
            if target is None or RANK[target] <= RANK[importer]:
                continue
            if (module, imported) not in ALLOWED_UPWARD:
                upward.append(
                    f"{MODULES[module].name}:{line} ({importer}) imports {imported} ({target})"
                )
    assert not upward, "a lower layer imports a higher one:\n" + "\n".join(upward)


def test_allowed_upward_imports_are_still_needed():
    # a pair listed as a necessary cycle that no longer occurs must leave the list
    seen = {(module, imported) for module in MODULES for _, imported, _ in imports_of(module)}
    assert set(ALLOWED_UPWARD) <= seen


def test_no_private_name_crosses_a_module():
    crossings = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), str(path))
        bound_modules = set()
        for line, imported, names in imports_of(module):
            crossings += [
                f"{path.name}:{line} imports {imported}.{name}"
                for name in names
                if name.startswith("_") and not name.startswith("__")
            ]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                for alias in node.names:
                    bound_modules.add(alias.asname or alias.name.split(".")[0])
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in bound_modules
                # the standard library's and numpy's private names used on purpose (pickle:
                # its pure-Python _Unpickler, the one whose opcodes io.torch_format restricts)
                and node.value.id
                not in {"np", "numpy", "os", "sys", "threading", "importlib", "pickle"}
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                crossings.append(f"{path.name}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not crossings, "private names used from another module:\n" + "\n".join(crossings)


def test_no_ops_module_is_named_like_an_op_function():
    # ops/__init__ star-imports the families: a module named like a function (conv.py holding
    # ops.conv) would be shadowed by it, and `minitrain.ops.conv` would be the function
    import minitrain.ops

    shadowed = [
        m
        for m in MODULES
        if m.startswith("minitrain.ops.") and m.split(".")[2] in minitrain.ops.__all__
    ]
    assert not shadowed


def test_the_engine_rebinds_no_module_global():
    # what the engine keeps lives on its objects (a Node, a Tensor, the one versions.clock)
    engine = [m for m in MODULES if m.startswith("minitrain.autograd")] + ["minitrain.inplace"]
    rebinding = [
        f"{MODULES[module].name}:{node.lineno}"
        for module in engine
        for node in ast.walk(ast.parse(MODULES[module].read_text()))
        if isinstance(node, ast.Global)
    ]
    assert not rebinding, f"module state rebound with `global`: {rebinding}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_starts_with_its_job(module):
    docstring = ast.get_docstring(ast.parse(MODULES[module].read_text()))
    assert docstring, f"{module} has no docstring naming its job"
