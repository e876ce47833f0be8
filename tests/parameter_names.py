"""The parameter names of a minitrain function or method as the signature tables write them:
'input, dim, *, dtype' (numpy's dim and keepdim spellings, keyword-only, left out)."""

from __future__ import annotations

import ast
import inspect

# numpy's names for dim and keepdim, which minitrain's functions and methods take beside
# PyTorch's (and torch takes undocumented); keyword-only wherever minitrain takes them
NUMPY_SPELLINGS = {"axis", "keepdims"}


def parameter_names(function, method: bool = False) -> str:
    """`function`'s parameters as 'input, dim, *, dtype' (`method`: without self)."""
    parameters = list(inspect.signature(function).parameters.values())[1 if method else 0 :]
    names, star = [], False
    for p in parameters:
        if p.name in NUMPY_SPELLINGS:
            assert p.kind is p.KEYWORD_ONLY, f"{p.name} is not keyword-only"
            continue
        if p.kind is p.KEYWORD_ONLY and not star:
            names.append("*")
        star = star or p.kind in (p.KEYWORD_ONLY, p.VAR_POSITIONAL)
        names.append({p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name)
    return ", ".join(names)


# torch's parameters with no meaning here (tensor placement, memory and output options)
TORCH_ONLY = {
    "out", "memory_format", "layout", "pin_memory", "non_blocking", "copy",
    "sparse_grad",
}  # fmt: skip


def torch_parameter_names(function, method: bool = False) -> str:
    """The parameters of torch's `function` (a Tensor method: `method`, without self) as
    parameter_names writes them, TORCH_ONLY's left out: from its Python signature where it has
    one, else from its docstring's first line ('atan2(input, other, *, out=None) -> Tensor')."""
    if inspect.isfunction(function):
        signature = inspect.signature(function)
        kept = [p for p in signature.parameters.values() if p.name not in TORCH_ONLY]

        def stand_in():
            pass

        stand_in.__signature__ = signature.replace(parameters=kept)
        return parameter_names(stand_in, method)
    head = function.__doc__.strip().splitlines()[0].split(" -> ")[0]
    arguments = ast.parse(f"def {head}: pass").body[0].args
    names = [a.arg for a in arguments.posonlyargs + arguments.args if a.arg not in TORCH_ONLY]
    if arguments.vararg:
        names.append("*" + arguments.vararg.arg)
    keywords = [a.arg for a in arguments.kwonlyargs if a.arg not in TORCH_ONLY]
    if keywords:
        names += (["*"] if not arguments.vararg else []) + keywords
    return ", ".join(names)
