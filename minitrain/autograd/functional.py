"""PyTorch's `torch.autograd.functional` for minitrain: vjp, jvp, jacobian, hessian, vhp and hvp
of a Python function at a point, built from the engine's `grad` (with create_graph) and ops.

For f with inputs x (a Tensor or a tuple of them) and outputs y, J is the Jacobian dy/dx (one
block `J[i][j] = dy_i/dx_j` of shape y_i.shape + x_j.shape per output and input):

- vjp(f, x, v) = v^T J, one backward pass: `grad(y, x, grad_outputs=v)`.
- jvp(f, x, v) = J v by the double-vjp trick, with reverse mode only: g(u) = J^T u, the vjp
  for a dummy cotangent u (zeros that require grad) taken with create_graph, is linear in u
  with Jacobian J^T; so the vjp of g with v, `grad(g(u), u, grad_outputs=v)`, is (J^T)^T v =
  J v, whatever u is.
- jacobian(f, x): row by row; row k of J[i] is the vjp with the k-th unit cotangent of output
  i. The rows are stacked and reshaped to y_i.shape + x_j.shape.
- hessian(f, x) of a scalar f: the jacobian of the gradient x -> grad(f(x), x) taken with
  create_graph, so `H[i][j] = d(df/dx_i)/dx_j`, of shape x_i.shape + x_j.shape.
- vhp(f, x, v) = v^T H: the vjp of the gradient ("double backward").
- hvp(f, x, v) = H v: the double-vjp trick on the gradient, u -> u^T H by double backward
  with a dummy u, then its vjp with v. H is symmetric where f is twice continuously
  differentiable, and then hvp = vhp; hvp costs one backward more, but both are computed as
  PyTorch computes them, so each matches its PyTorch namesake.

As PyTorch's, func sees fresh tensors: detached copies of the inputs that require grad (with
create_graph, an input that requires grad is passed as a differentiable alias instead, so the
results flow back to it). Results are detached unless create_graph. Where an output does not
depend on an input, the result is zeros (the mathematical value); strict=True raises a
GraphError there instead, and also where an output does not require grad, where (under
create_graph) a result does not depend on the inputs, and where a gradient that a hessian, vhp
or hvp differentiates again does not depend on the inputs (f linear in them).

vectorize=True (one batched backward through vmap) and the forward-mode strategies are not
supported: they raise an ArgumentError.
"""

from __future__ import annotations

from collections.abc import Callable

from ..creation import zeros_like
from ..errors import ArgumentError, DTypeError, GraphError, ShapeError
from ..ops import reshape, stack
from ..tensor import Tensor
from .api import grad
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

Tensors = Tensor | tuple[Tensor, ...]

# What a result left None by the backward pass means (see _zeros_where_none).
_UNUSED = "the output of func does not depend on inputs[{index}]"
_CONSTANT = "output {index} of func does not depend on the inputs"
_LINEAR = "the gradient of func does not depend on inputs[{index}] (the Hessian there is zero)"


def vjp(
    func: Callable[..., Tensors],
    inputs: Tensors,
    v: Tensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """(func(*inputs), v^T J): the vector-Jacobian product, shaped like the inputs. `v` is
    shaped like func's output; it may be omitted where that output is one Tensor of one
    element."""
    with enable_grad():
        is_inputs_tuple, inputs = _fresh_inputs(inputs, create_graph, "vjp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "the output of func", "vjp")
        _check_outputs_require_grad(outputs, strict, "vjp")
        v = _checked_v(v, outputs, is_outputs_tuple, "the output of func", create_graph, "vjp")

    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(outputs, inputs, v, create_graph)
        products = _zeros_where_none(grads, inputs, strict, create_graph, "vjp", _UNUSED)
    return (
        _untuple(_detached(outputs, create_graph), is_outputs_tuple),
        _untuple(_detached(products, create_graph), is_inputs_tuple),
    )


def jvp(
    func: Callable[..., Tensors],
    inputs: Tensors,
    v: Tensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """(func(*inputs), J v): the Jacobian-vector product, shaped like func's output, by the
    double-vjp trick (see the module docstring). `v` is shaped like the inputs; it may be
    omitted where the input is one Tensor of one element."""
    with enable_grad():
        is_inputs_tuple, inputs = _fresh_inputs(inputs, create_graph, "jvp")
        v = _checked_v(v, inputs, is_inputs_tuple, "inputs", create_graph, "jvp")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "the output of func", "jvp")
        _check_outputs_require_grad(outputs, strict, "jvp")
        # the vjp is linear in its cotangent, so the dummy's value never shows in the result
        dummies = tuple(
            zeros_like(out, requires_grad=True) if out.requires_grad else None for out in outputs
        )
        transposed = _grad(outputs, inputs, dummies, create_graph=True)  # J^T u
        for index, g in enumerate(transposed):
            if strict and (g is None or not g.requires_grad):
                raise GraphError(
                    f"jvp: the output of func does not depend on inputs[{index}] (shape "
                    f"{inputs[index].shape}), which strict=True refuses"
                )

    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(transposed, _present(dummies), v, create_graph)
        grads = _spread(grads, dummies)
        products = _zeros_where_none(grads, outputs, strict, create_graph, "jvp", _CONSTANT)
    return (
        _untuple(_detached(outputs, create_graph), is_outputs_tuple),
        _untuple(_detached(products, create_graph), is_outputs_tuple),
    )


def jacobian(
    func: Callable[..., Tensors],
    inputs: Tensors,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
):
    """The Jacobian of func at inputs: one Tensor of shape output.shape + input.shape for one
    output and one input; a tuple over the inputs (or the outputs) where those are a tuple; a
    tuple (over outputs) of tuples (over inputs) where both are. Each block has its input's
    dtype."""
    _check_unsupported("jacobian", vectorize, "strategy", strategy)
    with enable_grad():
        is_inputs_tuple, inputs = _fresh_inputs(inputs, create_graph, "jacobian")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "the output of func", "jacobian")
        _check_outputs_require_grad(outputs, strict, "jacobian")
        blocks = tuple(
            _jacobian_of_output(out, index, inputs, create_graph, strict)
            for index, out in enumerate(outputs)
        )
    blocks = tuple(_detached(row, create_graph) for row in blocks)
    if not is_inputs_tuple:
        blocks = tuple(row[0] for row in blocks)
    return _untuple(blocks, is_outputs_tuple)


def _jacobian_of_output(out, index, inputs, create_graph, strict) -> tuple:
    """The blocks d out / d inputs[j], row by row: row k is the vjp with the k-th unit vector."""
    rows = [[] for _ in inputs]
    for k in range(out.numel() if out.requires_grad else 0):
        grads = grad(
            out,
            list(inputs),
            _unit_cotangent(out, k),
            retain_graph=True,
            create_graph=create_graph,
            allow_unused=True,
        )
        unreached = (
            f"output {index} of func (shape {out.shape}) does not depend on inputs[{{index}}]"
        )
        grads = _zeros_where_none(grads, inputs, strict, create_graph, "jacobian", unreached)
        for j, g in enumerate(grads):
            rows[j].append(g)
    return tuple(_block(rows_j, out, inp) for rows_j, inp in zip(rows, inputs, strict=True))


def _unit_cotangent(out: Tensor, k: int) -> Tensor:
    """A cotangent for `out`: 1 at flat position k, 0 elsewhere."""
    unit = out.xp.zeros(out.numel(), dtype=out.dtype)
    unit[k] = 1
    return Tensor.wrap(unit.reshape(out.shape))


def _block(rows: list, out: Tensor, inp: Tensor) -> Tensor:
    """The rows (one per element of out, each shaped like inp) as one out.shape + inp.shape
    block; zeros where out has no rows (it does not require grad, or is empty)."""
    shape = out.shape + inp.shape
    if not rows:
        return Tensor.wrap(inp.xp.zeros(shape, dtype=inp.dtype))
    block = stack(rows)
    return block if block.shape == shape else reshape(block, shape)


def hessian(
    func: Callable[..., Tensor],
    inputs: Tensors,
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
):
    """The Hessian of func (which returns one Tensor of one element) at inputs: one Tensor of
    shape input.shape + input.shape for one input; for a tuple of inputs, a tuple of tuples,
    `hessian[i][j]` of shape inputs[i].shape + inputs[j].shape. Computed as the jacobian of the
    gradient."""
    _check_unsupported("hessian", vectorize, "outer_jacobian_strategy", outer_jacobian_strategy)
    is_inputs_tuple, inputs = _checked_inputs(inputs, "hessian")

    def gradient(*points):
        output = _scalar_output(func, points, strict, "hessian")
        grads = _grad((output,), points, create_graph=True)
        _check_gradient_depends_on_inputs(grads, points, strict, "hessian")
        return _zeros_where_none(grads, points, False, False, "hessian", _UNUSED)

    blocks = jacobian(gradient, inputs, create_graph, strict)
    if not is_inputs_tuple:
        return blocks[0][0]
    return blocks


def vhp(
    func: Callable[..., Tensor],
    inputs: Tensors,
    v: Tensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """(func(*inputs), v^T H): the vector-Hessian product of func (which returns one Tensor of
    one element), shaped like the inputs, by double backward. `v` is shaped like the inputs; it
    may be omitted where the input is one Tensor of one element."""
    with enable_grad():
        is_inputs_tuple, inputs = _fresh_inputs(inputs, create_graph, "vhp")
        v = _checked_v(v, inputs, is_inputs_tuple, "inputs", create_graph, "vhp")
        output = _scalar_output(func, inputs, strict, "vhp")
        gradient = _grad((output,), inputs, create_graph=True)
        _check_gradient_depends_on_inputs(gradient, inputs, strict, "vhp")

    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(gradient, inputs, v, create_graph)
        products = _zeros_where_none(grads, inputs, strict, create_graph, "vhp", _LINEAR)
    return (
        _detached((output,), create_graph)[0],
        _untuple(_detached(products, create_graph), is_inputs_tuple),
    )


def hvp(
    func: Callable[..., Tensor],
    inputs: Tensors,
    v: Tensors | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple:
    """(func(*inputs), H v): the Hessian-vector product of func (which returns one Tensor of
    one element), shaped like the inputs, by the double-vjp trick on the gradient. `v` is
    shaped like the inputs; it may be omitted where the input is one Tensor of one element."""
    with enable_grad():
        is_inputs_tuple, inputs = _fresh_inputs(inputs, create_graph, "hvp")
        v = _checked_v(v, inputs, is_inputs_tuple, "inputs", create_graph, "hvp")
        output = _scalar_output(func, inputs, strict, "hvp")
        gradient = _grad((output,), inputs, create_graph=True)
        _check_gradient_depends_on_inputs(gradient, inputs, strict, "hvp")
        dummies = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        transposed = _grad(gradient, inputs, dummies, create_graph=True)  # H^T u

    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _grad(transposed, dummies, v, create_graph)
        products = _zeros_where_none(grads, inputs, strict, create_graph, "hvp", _LINEAR)
    return (
        _detached((output,), create_graph)[0],
        _untuple(_detached(products, create_graph), is_inputs_tuple),
    )


def _as_tuple(value, argument: str, caller: str) -> tuple[bool, tuple]:
    """(whether value is a tuple, value as a tuple of Tensors). As PyTorch's, only a tuple
    stands for several tensors."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for index, element in enumerate(values):
        if not isinstance(element, Tensor):
            where = f"{argument}[{index}]" if is_tuple else argument
            raise DTypeError(
                f"{caller}: {where} must be a Tensor (or {argument} a tuple of Tensors), got "
                f"{type(element).__name__}"
            )
    return is_tuple, values


def _fresh_inputs(inputs, create_graph: bool, caller: str) -> tuple[bool, tuple]:
    """(whether inputs is a tuple, the tensors func sees): see `_fresh`."""
    is_tuple, inputs = _checked_inputs(inputs, caller)
    return is_tuple, _fresh(inputs, create_graph, need_graph=True)


def _checked_inputs(inputs, caller: str) -> tuple[bool, tuple]:
    """(whether inputs is a tuple, inputs as a tuple), checked to be floating-point Tensors."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", caller)
    if not inputs:
        raise ArgumentError(f"{caller}: `inputs` is an empty tuple; pass the point to take it at")
    for index, inp in enumerate(inputs):
        if inp.dtype.kind != "f":
            where = f"inputs[{index}]" if is_tuple else "inputs"
            raise DTypeError(
                f"{caller}: {where} has dtype {inp.dtype}; only floating-point tensors can be "
                f"differentiated"
            )
    return is_tuple, inputs


def _fresh(tensors: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New Tensor objects for `tensors`, so that func's results flow back to these and not to
    the same tensors func may capture otherwise: under create_graph, an alias in the graph of
    each tensor that requires grad (the result stays differentiable with respect to it);
    otherwise a detached copy (sharing the data) that requires grad where `need_graph`."""
    fresh = []
    for tensor in tensors:
        if create_graph and tensor.requires_grad:
            fresh.append(reshape(tensor, tensor.shape))
        else:
            copy = tensor.detach()
            copy.requires_grad = need_graph
            fresh.append(copy)
    return tuple(fresh)


def _checked_v(v, like: tuple, is_like_tuple: bool, name: str, create_graph: bool, caller: str):
    """`v` as a tuple of fresh tensors, one per tensor of `like` (named `name`) and of its shape;
    None where it may be omitted (`like` is one Tensor of one element)."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            shapes = [t.shape for t in like] if is_like_tuple else like[0].shape
            raise ShapeError(
                f"{caller}: v may be omitted only where {name} is a single Tensor of one "
                f"element; {name} has shape{'s' if is_like_tuple else ''} {shapes}: pass v"
            )
        return None
    is_tuple, v = _as_tuple(v, "v", caller)
    if len(v) != len(like):
        raise ShapeError(
            f"{caller}: v has {len(v)} tensor{'s' if len(v) != 1 else ''} but {name} "
            f"{'has ' + str(len(like)) if is_like_tuple else 'is a single Tensor'}; v must "
            f"match {name} tensor by tensor"
        )
    for index, (v_i, like_i) in enumerate(zip(v, like, strict=True)):
        if v_i.shape != like_i.shape:
            which = f"[{index}]" if is_like_tuple else ""
            raise ShapeError(
                f"{caller}: v{which if is_tuple else ''} has shape {v_i.shape}, but "
                f"{name}{which} has shape {like_i.shape}"
            )
    return _fresh(v, create_graph, need_graph=False)


def _scalar_output(func, inputs: tuple, strict: bool, caller: str) -> Tensor:
    """func(*inputs), checked to be one Tensor of one element (what a Hessian is of)."""
    output = func(*inputs)
    if not isinstance(output, Tensor):
        raise DTypeError(
            f"{caller}: func must return a single Tensor of one element, got "
            f"{type(output).__name__}"
        )
    _check_outputs_require_grad((output,), strict, caller)
    if output.numel() != 1:
        raise ShapeError(
            f"{caller}: func must return a Tensor of one element (a scalar to take the Hessian "
            f"of), got shape {output.shape}"
        )
    return output


def _grad(outputs, inputs, grad_outputs=None, create_graph: bool = False) -> tuple:
    """`grad` over the outputs that are in a graph (None outputs and those that do not require
    grad, with their grad_outputs, are left out), None for the inputs they do not reach."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [
        (out, g)
        for out, g in zip(outputs, grad_outputs, strict=True)
        if out is not None and out.requires_grad
    ]
    if not kept:
        return (None,) * len(inputs)
    return grad(
        [out for out, _ in kept],
        list(inputs),
        [g for _, g in kept],
        create_graph=create_graph,
        allow_unused=True,
    )


def _present(tensors: tuple) -> tuple:
    return tuple(t for t in tensors if t is not None)


def _spread(grads: tuple, slots: tuple) -> tuple:
    """`grads`, one per present slot, put back in place among the None slots."""
    found = iter(grads)
    return tuple(None if slot is None else next(found) for slot in slots)


def _check_outputs_require_grad(outputs: tuple, strict: bool, caller: str) -> None:
    if not strict:
        return
    for index, out in enumerate(outputs):
        if not out.requires_grad:
            raise GraphError(
                f"{caller}: output {index} of func (shape {out.shape}) does not require grad: it "
                f"was not computed from the inputs in a differentiable way, which strict=True "
                f"refuses"
            )


def _check_gradient_depends_on_inputs(grads: tuple, inputs: tuple, strict: bool, caller: str):
    """strict: the gradient that is differentiated again must exist and depend on the inputs
    (a function linear in an input has a gradient constant in it, and a zero Hessian)."""
    if not strict:
        return
    for index, (g, inp) in enumerate(zip(grads, inputs, strict=True)):
        if g is None:
            raise GraphError(
                f"{caller}: the output of func does not depend on inputs[{index}] (shape "
                f"{inp.shape}), which strict=True refuses"
            )
        if not g.requires_grad:
            raise GraphError(
                f"{caller}: the gradient of func with respect to inputs[{index}] (shape "
                f"{inp.shape}) does not depend on the inputs (func is linear in them?), so its "
                f"Hessian is zero, which strict=True refuses"
            )


def _zeros_where_none(
    grads: tuple, refs: tuple, strict: bool, create_graph: bool, caller: str, unreached: str
) -> tuple:
    """grads with zeros shaped like refs[i] where grads[i] is None (the backward pass did not
    reach refs[i]; `unreached`, formatted with `index`, says what that means). Under strict, a
    GraphError there instead, and under strict with create_graph, also where a result does not
    depend on the inputs."""
    filled = []
    for index, (g, ref) in enumerate(zip(grads, refs, strict=True)):
        if g is None:
            if strict:
                raise GraphError(
                    f"{caller}: {unreached.format(index=index)} (shape {ref.shape}), which "
                    f"strict=True refuses (strict=False gives zeros there)"
                )
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            raise GraphError(
                f"{caller}: result {index} (shape {ref.shape}) does not depend on the inputs "
                f"(func is linear in them?), which strict=True refuses under create_graph=True"
            )
        filled.append(g)
    return tuple(filled)


def _detached(tensors: tuple, create_graph: bool) -> tuple:
    return tensors if create_graph else tuple(t.detach() for t in tensors)


def _untuple(tensors: tuple, is_tuple: bool):
    return tensors if is_tuple else tensors[0]


def _check_unsupported(caller: str, vectorize: bool, argument: str, strategy: str) -> None:
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ArgumentError(
            f"{caller}: {argument} must be 'reverse-mode' or 'forward-mode', got {strategy!r}"
        )
    if strategy == "forward-mode":
        raise ArgumentError(
            f"{caller}: {argument}='forward-mode' is not supported (minitrain has no forward-mode "
            f"AD); use {argument}='reverse-mode'"
        )
    if vectorize:
        raise ArgumentError(
            f"{caller}: vectorize=True (one batched backward through vmap) is not supported; "
            f"use vectorize=False, which computes the jacobian row by row"
        )
