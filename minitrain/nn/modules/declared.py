"""The `nn.functional` entries and `nn` layers an op declares (ops/core/variants.py: "functional",
`module=`), built from its function: nn/functional/activations.py binds the entries, and
nn/modules/activation.py the layers, of every declaration.

An entry is the op's function with PyTorch's `inplace=False` after its parameters where the
declaration's `inplace_flag` says PyTorch's takes one: `inplace=True` writes the result into the
input tensor and returns it, as PyTorch's does (through the op's in-place twin where it declares
one, `x.relu_()`), with the in-place rules of minitrain/inplace.py: a leaf that requires grad is
refused while grad mode is on. A layer is a class named as PyTorch's (`CELU`), a subclass of
`DeclaredLayer`: its constructor takes the function's parameters after `input` (and `inplace`),
keeps each as an attribute of the same name, and its forward is the entry with them; its repr
shows them as PyTorch's does (`CELU(alpha=2.0, inplace=True)`).
"""

from __future__ import annotations

import inspect

from ...errors import ArgumentError, DTypeError
from ...inplace import write_in_place
from ...ops.core.variants import Variants
from ...tensor import Tensor
from .module import Module

__all__ = ["DeclaredLayer", "functional_of", "layer_of"]

_UNSET = object()  # inplace not given by name
_INPLACE = inspect.Parameter(
    "inplace", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False, annotation=bool
)


def _signature(variant: Variants) -> inspect.Signature:
    """The declared function's signature, its annotations evaluated (as PyTorch's show them)."""
    return inspect.signature(variant.function, eval_str=True)


def _options(variant: Variants) -> list[inspect.Parameter]:
    """The declared function's parameters after `input`."""
    return list(_signature(variant).parameters.values())[1:]


def _written_in_place(variant: Variants, input, args, kwargs):  # noqa: A002 (PyTorch's name)
    """variant's function of input written into input: through its in-place twin where it
    declares one, else as the twins write (minitrain/inplace.py)."""
    name = variant.function.__name__
    if not isinstance(input, Tensor):
        raise DTypeError(
            f"{name}: inplace=True writes into its input, which must be a Tensor, got "
            f"{type(input).__name__}"
        )
    if variant.inplace:
        return getattr(input, variant.inplace[0])(*args, **kwargs)
    return write_in_place(
        input, lambda: variant.function(input, *args, **kwargs), f"{name}(inplace=True)"
    )


def functional_of(variant: Variants):
    """The `nn.functional` entry of a declaration: its function, with PyTorch's `inplace`
    after its parameters where the declaration says PyTorch's takes one."""
    function, name = variant.function, variant.function.__name__
    signature = _signature(variant)
    if not variant.inplace_flag:

        def entry(*args, **kwargs):
            return function(*args, **kwargs)

        doc = function.__doc__
    else:
        positional = sum(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in _options(variant)
        )

        def entry(input, *args, inplace=_UNSET, **kwargs):  # noqa: A002 (PyTorch's name)
            if len(args) > positional:  # inplace in its place: F.<name>(x, 2.0, True)
                if len(args) > positional + 1 or inplace is not _UNSET:
                    raise ArgumentError(
                        f"{name}: takes {positional + 2} positional arguments at most, and "
                        f"inplace once"
                    )
                inplace, args = args[positional], args[:positional]
            if inplace is not _UNSET and inplace:
                return _written_in_place(variant, input, args, kwargs)
            return function(input, *args, **kwargs)

        last = list(signature.parameters.values())
        keyword_only = [p for p in last if p.kind is p.KEYWORD_ONLY]
        others = [p for p in last if p.kind is not p.KEYWORD_ONLY]
        signature = signature.replace(parameters=[*others, _INPLACE, *keyword_only])
        doc = (
            f"{inspect.cleandoc(function.__doc__ or '')}\n\n`inplace=True` writes the result "
            f"into `input` and returns it, as PyTorch's does (`input` must not be a leaf that "
            f"requires grad)."
        )
    entry.__name__ = entry.__qualname__ = name
    entry.__doc__ = doc
    entry.__signature__ = signature
    entry.__wrapped__ = function
    return entry


class DeclaredLayer(Module):
    """A layer an op declares (ops/core/variants.py `module=`): its constructor's arguments are
    the op's, kept as attributes of the same names; forward applies the op's nn.functional
    entry with them. Each such layer is a subclass, named as PyTorch's (layer_of)."""

    # set on each subclass: its nn.functional entry, the names of the entry's arguments after
    # input (inplace last where it takes one), and whether the repr shows inplace=True
    _entry = None
    _arguments: tuple[str, ...] = ()
    _shows_inplace = False

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 (PyTorch's name)
        """The layer's op of `input`, with the arguments it was built with (see the class)."""
        return type(self)._entry(input, *(getattr(self, name) for name in self._arguments))

    def extra_repr(self) -> str:
        """The arguments as PyTorch's layer shows them: each `name=value` (a string quoted),
        and `inplace=True` where it shows one."""
        shown = [
            f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"
            for name in self._arguments
            if name != "inplace"
            for value in [getattr(self, name)]
        ]
        if self._shows_inplace and getattr(self, "inplace", False):
            shown.append("inplace=True")
        return ", ".join(shown)


def layer_of(variant: Variants, entry, module_name: str) -> type:
    """The `nn` layer of a declaration (its `module`), a subclass of DeclaredLayer defined in
    `module_name`; `entry` is the declaration's nn.functional entry (functional_of)."""
    name = variant.module
    options = _options(variant) + ([_INPLACE] if variant.inplace_flag else [])
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    signature = inspect.Signature([self_parameter, *options], return_annotation=None)

    def construct(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        Module.__init__(self)
        for argument, value in list(bound.arguments.items())[1:]:
            setattr(self, argument, value)

    function = variant.function
    arguments = ", ".join(p.name for p in options)
    construct.__signature__ = signature
    construct.__name__, construct.__qualname__ = "__init__", f"{name}.__init__"
    construct.__module__ = module_name  # where the class lives (the docs resolve it there)
    construct.__doc__ = f"Keep the arguments ({arguments or 'none'}) as attributes of those names."
    call = ", ".join(["input", *(p.name for p in _options(variant))])
    doc = (
        f"PyTorch's nn.{name}: `{function.__name__}({call})` as a layer, with the arguments it "
        f"is built with, kept as attributes of the same names"
        + ("; inplace=True writes the result into the input." if variant.inplace_flag else ".")
        + f"\n\n{function.__name__}: {inspect.cleandoc(function.__doc__ or '')}"
    )
    return type(
        name,
        (DeclaredLayer,),
        {
            "__init__": construct,
            "__doc__": doc,
            "__module__": module_name,
            "__qualname__": name,
            "_entry": staticmethod(entry),
            "_arguments": tuple(p.name for p in options),
            "_shows_inplace": variant.inplace_flag == "shown",
        },
    )
