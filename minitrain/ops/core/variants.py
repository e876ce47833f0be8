"""What a user reaches an op by besides `minitrain.ops.<name>`, declared once beside its function,
as PyTorch's native_functions.yaml declares `variants: function, method`: the top-level function
(`minitrain.atan2(x, y)`), the Tensor method (`x.atan2(y)`) and the in-place twin
(`x.atan2_(y)`). tensor.py binds the methods and twins and functions.py the functions from these
declarations, so that putting an op on PyTorch's surface is one decorator:

    @variants("function", "method", "inplace")
    def atan2(input, other):
        ...

The function takes PyTorch's parameters, the tensor first as `input`: the method is the same
function, with the tensor as self.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

from ...errors import GraphError

__all__ = ["Variants", "declared", "variants"]

_KINDS = frozenset({"function", "method", "inplace"})
_DECLARED: dict[str, Variants] = {}


@dataclasses.dataclass(frozen=True)
class Variants:
    """One declaration: `function`, and the names it is bound by."""

    function: Callable
    functions: tuple[str, ...]  # top-level names: minitrain.<name>
    methods: tuple[str, ...]  # Tensor methods: x.<name>(...)
    inplace: tuple[str, ...]  # the in-place twins' method names: name_ (and each alias's)


def variants(*kinds: str, aliases: tuple[str, ...] = ()):
    """Declare the decorated function's variants: any of "function", "method", "inplace";
    `aliases`, PyTorch's other names for the function, method and twin (`arctan2` for
    `atan2`, `arctan2_` for `atan2_`)."""
    unknown = set(kinds) - _KINDS
    if unknown or not kinds:
        raise GraphError(f"variants: kinds must be among {sorted(_KINDS)}, got {kinds}")

    def declare(function):
        name = function.__name__
        first = next(iter(inspect.signature(function).parameters), None)
        if ("method" in kinds or "inplace" in kinds) and first != "input":
            raise GraphError(
                f"variants: {name}'s first parameter must be the tensor, named 'input' as "
                f"PyTorch names it, to be a method; got {first!r}"
            )
        if name in _DECLARED:
            raise GraphError(f"variants: {name} is declared twice")
        names = (name, *aliases)
        _DECLARED[name] = Variants(
            function,
            names if "function" in kinds else (),
            names if "method" in kinds else (),
            tuple(f"{n}_" for n in names) if "inplace" in kinds else (),
        )
        return function

    return declare


def declared() -> list[Variants]:
    """Every declaration, in the order the families were imported."""
    return list(_DECLARED.values())
