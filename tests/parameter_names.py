"""The parameter names of a minitrain function or method as the signature tables write them:
'input, dim, *, dtype' (numpy's dim and keepdim spellings, keyword-only, left out)."""

from __future__ import annotations

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
