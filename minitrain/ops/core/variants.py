"""What a user reaches an op by besides `minitrain.ops.<name>`, declared once beside its function,
as PyTorch's native_functions.yaml declares `variants: function, method`: the top-level function
(`minitrain.atan2(x, y)`), the Tensor method (`x.atan2(y)`), the in-place twin (`x.atan2_(y)`),
the `nn.functional` entry (`F.<name>(x, alpha, inplace)`) and the `nn` layer (`nn.<Module>(alpha,
inplace)`). tensor.py binds the methods and twins, functions.py the functions,
nn/functional/activations.py the functional entries and nn/modules/activation.py the layers from
these declarations (nn/modules/declared.py builds those two), so that putting an op on PyTorch's
surface is one decorator:

    @variants("function", "method", "inplace")
    def atan2(input, other):
        ...

    @variants("functional", module="ScaledTanh", inplace_flag="shown")  # (an example)
    def scaled_tanh(input, alpha: float = 1.0):
        ...

The function takes PyTorch's parameters, the tensor first as `input`: the method is the same
function, with the tensor as self; the functional entry is the function with PyTorch's
`inplace=False` after its parameters where `inplace_flag` says torch's takes one; the layer takes
the function's other parameters (and `inplace`) as its constructor's, keeps them as attributes of
the same names, and applies the function to its input.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

from ...errors import GraphError

__all__ = ["Variants", "declared", "variants"]

_KINDS = frozenset({"function", "method", "inplace", "functional"})
# PyTorch's `inplace` argument of an F entry and its layer: "shown" in the layer's repr when
# True (`Mish(inplace=True)`), or "hidden" there (`Hardswish()`, whatever it holds)
_INPLACE_FLAGS = frozenset({"", "shown", "hidden"})
_DECLARED: dict[str, Variants] = {}


@dataclasses.dataclass(frozen=True)
class Variants:
    """One declaration: `function`, and the names it is bound by."""

    function: Callable
    functions: tuple[str, ...]  # top-level names: minitrain.<name>
    methods: tuple[str, ...]  # Tensor methods: x.<name>(...)
    inplace: tuple[str, ...]  # the in-place twins' method names: name_ (and each alias's)
    functional: tuple[str, ...] = ()  # nn.functional names: F.<name>
    module: str = ""  # the nn layer's class name: nn.<module>, PyTorch's ("CELU", "Mish")
    inplace_flag: str = ""  # PyTorch's `inplace=False` on F.<name> and its layer: _INPLACE_FLAGS


def variants(*kinds: str, aliases: tuple[str, ...] = (), module: str = "", inplace_flag: str = ""):
    """Declare the decorated function's variants: any of "function", "method", "inplace",
    "functional"; `aliases`, PyTorch's other names for the function, method and twin (`arctan2`
    for `atan2`, `arctan2_` for `atan2_`); `module`, the name of its `nn` layer (PyTorch's:
    "CELU"), whose constructor takes the function's parameters after `input`, each with its
    default; `inplace_flag`, where PyTorch's F entry and layer take `inplace=False`: "shown"
    where the layer's repr shows `inplace=True`, "hidden" where it does not."""
    unknown = set(kinds) - _KINDS
    if unknown or not kinds:
        raise GraphError(f"variants: kinds must be among {sorted(_KINDS)}, got {kinds}")
    if inplace_flag not in _INPLACE_FLAGS:
        raise GraphError(
            f"variants: inplace_flag must be among {sorted(_INPLACE_FLAGS)}, got {inplace_flag!r}"
        )
    if (module or inplace_flag) and "functional" not in kinds:
        raise GraphError("variants: a module or an inplace_flag goes with the functional entry")
    if module and not (module.isidentifier() and module[0].isupper()):
        raise GraphError(f"variants: module must be a class name, got {module!r}")

    def declare(function):
        name = function.__name__
        parameters = list(inspect.signature(function).parameters.values())
        first = parameters[0].name if parameters else None
        if {"method", "inplace", "functional"} & set(kinds) and first != "input":
            raise GraphError(
                f"variants: {name}'s first parameter must be the tensor, named 'input' as "
                f"PyTorch names it, to be a method or an nn.functional entry; got {first!r}"
            )
        if module and any(p.default is p.empty for p in parameters[1:]):
            raise GraphError(
                f"variants: {name}'s parameters after input need defaults: they are its layer "
                f"nn.{module}'s constructor's"
            )
        if inplace_flag and "inplace" in (p.name for p in parameters):
            raise GraphError(f"variants: {name} takes its own inplace; its F entry adds one")
        if name in _DECLARED:
            raise GraphError(f"variants: {name} is declared twice")
        names = (name, *aliases)
        _DECLARED[name] = Variants(
            function,
            names if "function" in kinds else (),
            names if "method" in kinds else (),
            tuple(f"{n}_" for n in names) if "inplace" in kinds else (),
            (name,) if "functional" in kinds else (),
            module,
            inplace_flag,
        )
        return function

    return declare


def declared() -> list[Variants]:
    """Every declaration, in the order the families were imported."""
    return list(_DECLARED.values())
