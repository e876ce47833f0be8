"""PyTorch's entry points into the walk: `backward` and `grad` (torch.autograd's), and the seed
gradients of their roots."""

from __future__ import annotations

from ..errors import DTypeError, GraphError, ShapeError
from .boundary import is_tensor, new_tensor, wrap
from .grad_mode import recording
from .versions import check_view_current, clock
from .walk import check_accumulates, propagate

__all__ = ["backward", "grad", "root_grads"]


def root_grads(outputs, grad_outputs, op_name, create_graph: bool = False):
    """Check roots and build their seed gradients (ones for a one-element output): arrays, or
    under create_graph Tensors (a given gradient that requires grad stays in its graph, so the
    gradients computed from it are differentiable with respect to it too)."""
    seeds = []
    for i, (out, grad) in enumerate(zip(outputs, grad_outputs, strict=True)):
        node = getattr(out, "node", None)
        if node is not None and node.seq < clock.latest_rebind and node.ctx.is_view:
            check_view_current(node)
        if not is_tensor(out):
            raise GraphError(f"{op_name}: outputs[{i}] is a {type(out).__name__}, not a Tensor")
        if not out.requires_grad:
            raise GraphError(
                f"{op_name}: outputs[{i}] does not require grad and has no graph "
                f"(was it computed under no_grad, or from tensors with requires_grad=False?)"
            )
        xp = out.xp
        if grad is None:
            if out.array.size != 1:
                raise GraphError(
                    f"{op_name}: a gradient can be created implicitly only for outputs with one "
                    f"element; outputs[{i}] has shape {out.shape}: pass its gradient explicitly"
                )
            seeds.append(xp.ones_like(out.array))
            continue
        array = grad.array if is_tensor(grad) else xp.asarray(grad)
        if array.dtype.kind not in "biuf":  # PyTorch casts other real dtypes, refuses complex
            raise DTypeError(
                f"{op_name}: gradient for outputs[{i}] has dtype {array.dtype}, which cannot "
                f"be cast to the output's {out.dtype}"
            )
        if array.shape != out.shape:
            raise ShapeError(
                f"{op_name}: gradient for outputs[{i}] has shape {array.shape}, "
                f"but the output has shape {out.shape}"
            )
        if create_graph and is_tensor(grad) and grad.requires_grad:
            seeds.append(grad if grad.dtype == out.dtype else grad.astype(out.dtype))
            continue
        seeds.append(array.astype(out.dtype, copy=False))
    if create_graph:
        return [s if is_tensor(s) else wrap(s) for s in seeds]
    return seeds


def _as_list(tensors):
    return [tensors] if is_tensor(tensors) else list(tensors)


def _grad_outputs_for(outputs, grad_outputs, caller, one_output: bool = False):
    """The per-output list of given gradients (None: ones for a one-element output);
    `one_output`: the caller gave one tensor, whose one gradient may be an array or a list."""
    if grad_outputs is None:
        return [None] * len(outputs)
    if is_tensor(grad_outputs) or one_output:
        grad_outputs = [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ShapeError(f"{caller}: got {len(grad_outputs)} gradients for {len(outputs)} outputs")
    return grad_outputs


def _check_wrt(inputs, caller, argument):
    if not inputs:
        raise GraphError(
            f"{caller}: `{argument}` is empty; pass the tensors to differentiate with respect to"
        )
    for i, t in enumerate(inputs):
        if not is_tensor(t) or not t.requires_grad:
            raise GraphError(f"{caller}: {argument}[{i}] is not a tensor that requires grad")


def _note_walk(caller: str) -> None:
    """A backward walk inside a capture (minitrain.compile) is not part of what it replays."""
    if recording.capture is not None:
        recording.capture.breaks(
            f"{caller}() ran inside the compiled function; compile the forward and call "
            f"backward outside it"
        )


def backward(
    tensors,
    grad_tensors=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    inputs=None,
) -> None:
    """Accumulate the gradients of `tensors` into the leaves' `.grad`, as
    `torch.autograd.backward`: `grad_tensors` are the gradients of `tensors` (None: ones, for
    one-element tensors); the saved values are freed unless `retain_graph` (which defaults to
    `create_graph`); with `create_graph` the backward is itself recorded and each `.grad`
    carries the graph of how it was computed, for a derivative of the derivative; `inputs`, when
    given, are the only tensors (leaves or not) whose `.grad` receives anything."""
    _note_walk("backward")
    one_output = is_tensor(tensors)
    tensors = _as_list(tensors)
    grad_tensors = _grad_outputs_for(tensors, grad_tensors, "backward", one_output)
    if retain_graph is None:
        retain_graph = create_graph
    if inputs is not None:
        inputs = _as_list(inputs)
        _check_wrt(inputs, "backward", "inputs")
    seeds = root_grads(tensors, grad_tensors, "backward", create_graph)
    if inputs is None:
        propagate(tensors, seeds, retain_graph, create_graph=create_graph)
        return

    def accumulate(found):
        for tensor, g in zip(inputs, found, strict=True):
            if g is not None and tensor._grad is not None:
                check_accumulates(tensor)
        for tensor, g in zip(inputs, found, strict=True):
            if g is not None:
                tensor._accumulate_grad(g)

    propagate(tensors, seeds, retain_graph, inputs, create_graph, accumulate, ready_hooks=True)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
):
    """Gradients of `outputs` with respect to `inputs`, returned as a tuple of Tensors, as
    `torch.autograd.grad`.

    Leaves' `.grad` is left alone. `inputs` may be leaves or intermediate tensors. An input the
    outputs do not depend on raises GraphError unless `allow_unused=True` (then its entry is
    None) or `materialize_grads=True` (then zeros). As PyTorch's, only the ops between the
    outputs and the inputs run their backward: the graph below the inputs keeps its saved values,
    and hooks there do not fire. With `create_graph`, the backward is recorded and the gradients
    carry graphs (differentiate them again for second and higher derivatives); `retain_graph`
    defaults to `create_graph`.
    """
    _note_walk("grad")
    if is_grads_batched:
        raise GraphError(
            "grad: is_grads_batched=True (vmap over grad_outputs) is not supported; call grad "
            "once per row of grad_outputs"
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if materialize_grads and not allow_unused:
        raise GraphError("grad: materialize_grads=True needs allow_unused=True (or None)")
    one_output = is_tensor(outputs)
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    grad_outputs = _grad_outputs_for(outputs, grad_outputs, "grad", one_output)
    _check_wrt(inputs, "grad", "inputs")
    if retain_graph is None:
        retain_graph = create_graph
    seeds = root_grads(outputs, grad_outputs, "grad", create_graph)
    found = propagate(outputs, seeds, retain_graph, capture=inputs, create_graph=create_graph)
    result = []
    for i, g in enumerate(found):
        if g is None:
            if not allow_unused:
                raise GraphError(
                    f"grad: inputs[{i}] (shape {inputs[i].shape}) was not used to compute the "
                    f"outputs; pass allow_unused=True to get None for it"
                )
            if materialize_grads:  # as PyTorch's: zeros that require grad under create_graph
                zeros = inputs[i].xp.zeros_like(inputs[i].array)
                g = new_tensor(zeros, requires_grad=create_graph)
        result.append(g if g is None or is_tensor(g) else new_tensor(g))
    return tuple(result)
