"""Tensor contraction: einsum, Einstein summation over any subscripts PyTorch accepts, run as a
chain of `einsum` ops of one or two operands each (a batched matmul where two meet), in the
order numpy's greedy path search picks."""

from __future__ import annotations

import functools
import math
import string

import numpy as np

from ...errors import ArgumentError, DTypeError, ShapeError
from ..core.op import Op, device_module, shape_of
from ..pointwise.conversion import cast
from ..shapes.indexing import placed_at
from ..shapes.shape import Reshape

__all__ = ["einsum"]

# A label is an int: a letter's place in _LETTERS (so sorting labels sorts the letters as PyTorch
# does, capitals first, and PyTorch's sublist ints are the same labels), or, for the dims an
# ellipsis covers, _ELLIPSIS for the last of them, _ELLIPSIS + 1 for the one before, ...
_LETTERS = string.ascii_uppercase + string.ascii_lowercase
_ELLIPSIS = len(_LETTERS)


def _unique(labels) -> tuple:
    """labels without repeats, in the order of their first appearance."""
    return tuple(dict.fromkeys(labels))


def _numpy_einsum(xp, x, labels, out_labels):
    """numpy's einsum of one operand (a sum, a diagonal, a transpose), never a view of x; the
    einsum op on a Tensor x (xp the graph math)."""
    compact = {label: _LETTERS[i] for i, label in enumerate(_unique(labels))}
    spelled = "".join(compact[label] for label in labels)
    out = xp.einsum(spelled + "->" + "".join(compact[label] for label in out_labels), x)
    return out.copy() if xp.may_share_memory(out, x) else out


def _contract(xp, a, a_labels, b, b_labels, out_labels):
    """einsum of a (and b, unless None) to out_labels: the labels of a and b not in out_labels
    are summed over, as a batched matmul (see _pair_plan)."""
    if b is None:
        return _numpy_einsum(xp, a, a_labels, out_labels)
    a_labels, b_labels = tuple(a_labels), tuple(b_labels)
    plan = _pair_plan(a_labels, a.shape, b_labels, b.shape, tuple(out_labels))
    (a_kept, a_order, a_shape), (b_kept, b_order, b_shape), inner, placed_shape, out_order = plan
    if a_kept != a_labels:
        a = _numpy_einsum(xp, a, a_labels, a_kept)
    if b_kept != b_labels:
        b = _numpy_einsum(xp, b, b_labels, b_kept)
    a = xp.transpose(a, a_order).reshape(a_shape)
    b = xp.transpose(b, b_order).reshape(b_shape)
    out = xp.matmul(a, b) if inner else a * b  # no inner labels: (B, M, 1) * (B, 1, N)
    return xp.transpose(out.reshape(placed_shape), out_order)


@functools.lru_cache(maxsize=512)
def _pair_plan(a_labels, a_shape, b_labels, b_shape, out_labels) -> tuple:
    """How two operands contract, a pure function of their labels and shapes (cached: a
    training loop asks the same each step).

    Each operand first loses the labels nothing else needs (summed away) and its repeated
    ones (their diagonal): its kept labels. The rest is a batched matmul of (B, M, K) by
    (B, K, N): batch, the labels in both and in out; rows, a's own; columns, b's own; inner,
    those both have and out does not. Returns, per operand, (kept labels, transpose order,
    matrix shape); whether there are inner labels; the shape of the product laid out as
    batch + rows + columns; and the transpose that takes that to out_labels."""
    a_kept = tuple(label for label in _unique(a_labels) if label in b_labels or label in out_labels)
    b_kept = tuple(label for label in _unique(b_labels) if label in a_kept or label in out_labels)
    sizes = dict(zip(a_labels, a_shape, strict=True)) | dict(zip(b_labels, b_shape, strict=True))
    batch = tuple(label for label in out_labels if label in a_kept and label in b_kept)
    rows = tuple(label for label in a_kept if label not in b_kept)
    columns = tuple(label for label in b_kept if label not in a_kept)
    inner = tuple(label for label in a_kept if label in b_kept and label not in out_labels)

    def matrices(kept, first, second):
        order = tuple(kept.index(label) for label in batch + first + second)
        shape = tuple(
            math.prod(sizes[label] for label in group) for group in (batch, first, second)
        )
        return kept, order, shape

    placed = batch + rows + columns
    return (
        matrices(a_kept, rows, inner),
        matrices(b_kept, inner, columns),
        bool(inner),
        tuple(sizes[label] for label in placed),
        tuple(placed.index(label) for label in out_labels),
    )


class Einsum(Op):
    """One contraction of einsum: out[out_labels] = the sum, over the labels not in out_labels,
    of a[a_labels] * b[b_labels] (b None: of a alone). Labels are ints; one may repeat within
    an operand (its diagonal), each appears at most once in out_labels."""

    name = "einsum"
    inputs = ("a", "b")
    attrs = ("a_labels", "b_labels", "out_labels")
    saved = ("a", "b")
    same_dtype = True

    @staticmethod
    def forward(ctx, a, b):
        # da reads b and db reads a: keep only what a needed gradient reads
        ctx.save(a=a if ctx.needs_grad[1] else None, b=b if ctx.needs_grad[0] else None)
        return _contract(ctx.xp, a, ctx.a_labels, b, ctx.b_labels, ctx.out_labels)

    @staticmethod
    def backward(ctx, grad):
        """da = einsum(grad, b -> a's labels), db = einsum(grad, a -> b's labels).

        out is linear in each operand, so each gradient is the contraction of grad with the
        other operand. A label of the operand that neither grad nor the other has (summed over
        it alone) gets the same gradient at every index: broadcast back. A label repeated in
        the operand (its diagonal) gets the gradient on that diagonal, zeros off it."""
        grad_a = grad_b = None
        if ctx.needs_grad[0]:
            grad_a = _operand_grad(ctx, grad, ctx.b, ctx.b_labels, ctx.a_labels, ctx.shapes[0])
        if ctx.needs_grad[1]:
            grad_b = _operand_grad(ctx, grad, ctx.a, ctx.a_labels, ctx.b_labels, ctx.shapes[1])
        return grad_a, grad_b


def _operand_grad(ctx, grad, other, other_labels, labels, shape):
    """The gradient of the operand with `labels` and `shape`, `other` the other one (or None):
    arrays, or under create_graph Tensors (ctx.xp the graph math: the contraction's transposes,
    reshapes and batched matmul recorded as ops)."""
    xp, out_labels = ctx.xp, ctx.out_labels
    unique = _unique(labels)
    reached = tuple(
        label
        for label in unique
        if label in out_labels or (other is not None and label in other_labels)
    )
    g = _contract(xp, grad, out_labels, other, other_labels, reached)
    sizes = dict(zip(labels, shape, strict=True))
    if len(reached) < len(unique):  # labels summed in this operand alone: equal at each index
        spread = tuple(sizes[label] if label in reached else 1 for label in unique)
        g = xp.broadcast_to(g.reshape(spread), tuple(sizes[label] for label in unique))
    if len(unique) < len(labels):  # a repeated label: g goes on that diagonal
        index = tuple(
            device_module(ctx)
            .arange(sizes[label])
            .reshape(
                tuple(-1 if place == unique.index(label) else 1 for place in range(len(unique)))
            )
            for label in labels
        )
        return placed_at(xp, g, shape, index)  # a diagonal: each position once
    return g


def einsum(*args):
    """Einstein summation, as PyTorch's einsum: `einsum(equation, *operands)` (the operands
    spread out or as one list) or the sublist form `einsum(op0, sublist0, op1, sublist1, ...,
    [sublist_out])`.

    The equation names each operand's dims with letters (a-z, A-Z), "..." standing for the
    dims between; a letter's dims are multiplied together and summed over unless the output
    names them. After "->" comes the output; without it, the ellipsis dims and the letters
    seen once, in alphabetical order (capitals first). A letter repeated in one operand takes
    its diagonal ("ii->" is the trace); dims of size 1 broadcast, as do the ellipsis dims.
    Operands share one dtype. Forward and backward run as batched matmuls, one pair of
    operands at a time, in the order of numpy's greedy path."""
    terms, output, operands = _terms(args)
    shapes = [shape_of(x) for x in operands]
    labels = [
        _expanded(term, shape, i) for i, (term, shape) in enumerate(zip(terms, shapes, strict=True))
    ]
    ellipsis = max((sum(label >= _ELLIPSIS for label in term) for term in labels), default=0)
    covered = tuple(_ELLIPSIS + i for i in reversed(range(ellipsis)))
    if output is None:
        letters = [label for term in labels for label in term if label < _ELLIPSIS]
        output = covered + tuple(sorted(label for label in letters if letters.count(label) == 1))
    else:
        output = _output(output, labels, covered)
    sizes = _sizes(labels, shapes)
    operands = [
        _squeezed(x, term, shape, sizes)
        for x, term, shape in zip(operands, labels, shapes, strict=True)
    ]
    if len(operands) == 1:
        x, term = operands[0]
        if getattr(x, "dtype", np.dtype(float)).kind in "biu" and set(term) - set(output):
            x = cast(x, np.int64)  # a sum of integers is int64, as PyTorch's
        return Einsum.apply(x, None, a_labels=term, b_labels=None, out_labels=output)
    kinds = {np.dtype(getattr(x, "dtype", float)).kind for x, _ in operands}
    if "b" in kinds:
        raise DTypeError("einsum: cannot multiply bool operands (cast them first)")
    return _chain(operands, output)


def _terms(args) -> tuple:
    """(subscripts per operand, output subscripts or None, operands): each subscripts a list of
    labels and "..." (Ellipsis)."""
    if not args or (isinstance(args[0], str) and len(args) < 2):
        raise ArgumentError(
            "einsum: needs an equation and at least one operand, or operands each followed by "
            "its subscripts list"
        )
    if isinstance(args[0], str):
        operands = args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
        terms, output = _parse(args[0])
        if len(terms) != len(operands):
            raise ArgumentError(
                f"einsum: equation {args[0]!r} has subscripts for {len(terms)} operands, but "
                f"{len(operands)} were given"
            )
        return terms, output, list(operands)
    pairs = len(args) // 2
    operands = list(args[0 : 2 * pairs : 2])
    terms = [_sublist(args[2 * i + 1], i) for i in range(pairs)]
    output = _sublist(args[-1], "out") if len(args) % 2 else None
    return terms, output, operands


@functools.lru_cache(maxsize=512)
def _parse(equation: str) -> tuple:
    """The equation's subscripts per operand and its output's (None where there is no "->"),
    as tuples (cached: a training loop parses the same equation each step)."""
    terms, term, output, i = [], [], None, 0
    while i < len(equation):
        char = equation[i]
        if char in _LETTERS:
            term.append(_LETTERS.index(char))
        elif char == "." and equation[i : i + 3] == "...":
            if Ellipsis in term:
                raise ArgumentError(f"einsum: {equation!r} has two ellipses in one term")
            term.append(Ellipsis)
            i += 2
        elif char == "," and output is None:
            terms.append(term)
            term = []
        elif char == "-" and equation[i : i + 2] == "->" and output is None:
            terms.append(term)
            term = output = []
            i += 1
        elif not char.isspace():
            raise ArgumentError(
                f"einsum: invalid subscript {char!r} at index {i} of {equation!r}: subscripts are "
                f"letters a-z and A-Z, with ',' between operands, '...' and one '->'"
            )
        i += 1
    if output is None:
        terms.append(term)
    return tuple(map(tuple, terms)), None if output is None else tuple(output)


def _sublist(sublist, operand) -> list:
    """A sublist of the sublist form: ints in [0, 52) (0 is 'A', 26 is 'a') and Ellipsis."""
    try:
        items = list(sublist)
    except TypeError:
        raise DTypeError(
            f"einsum: the subscripts of operand {operand} must be a list, got {sublist!r}"
        ) from None
    for item in items:
        if item is not Ellipsis and (
            isinstance(item, bool)
            or not isinstance(item, (int, np.integer))
            or not 0 <= item < _ELLIPSIS
        ):
            raise ArgumentError(
                f"einsum: subscript {item!r} of operand {operand} must be an int in [0, 52) or "
                f"Ellipsis"
            )
    return [item if item is Ellipsis else int(item) for item in items]


def _spelled(labels) -> str:
    """Labels as the equation writes them."""
    return "".join("..." if label is Ellipsis else _LETTERS[label] for label in labels)


def _expanded(term, shape, index: int) -> tuple:
    """An operand's labels, one per dim: the ellipsis replaced by the labels of the dims it
    covers (the last of them _ELLIPSIS)."""
    letters = [label for label in term if label is not Ellipsis]
    covered = len(shape) - len(letters)
    if covered < 0 or (covered and Ellipsis not in term):
        raise ShapeError(
            f"einsum: operand {index} has {len(shape)} dims (shape {shape}), but its subscripts "
            f"{_spelled(term)!r} name {len(letters)}"
            + ("" if Ellipsis in term else " and no ellipsis covers the rest")
        )
    labels = []
    for label in term:
        if label is Ellipsis:
            labels.extend(_ELLIPSIS + i for i in reversed(range(covered)))
        else:
            labels.append(label)
    return tuple(labels)


def _output(output, labels, covered) -> tuple:
    """The explicit output's labels; an ellipsis there stands for every ellipsis dim (summed
    over where the output has none, as in PyTorch)."""
    seen = {label for term in labels for label in term}
    result = []
    for label in output:
        if label is Ellipsis:
            result.extend(covered)
            continue
        if label not in seen:
            raise ShapeError(
                f"einsum: output subscript {_LETTERS[label]!r} appears in no operand's subscripts"
            )
        if label in result:
            raise ShapeError(f"einsum: output subscript {_LETTERS[label]!r} appears twice")
        result.append(label)
    return tuple(result)


def _name(label) -> str:
    return "dim of the ellipsis" if label >= _ELLIPSIS else f"subscript {_LETTERS[label]!r}"


def _sizes(labels, shapes) -> dict:
    """Each label's size: the same for a label repeated in one operand; across operands the
    same or 1 (broadcast)."""
    sizes, where = {}, {}
    for index, (term, shape) in enumerate(zip(labels, shapes, strict=True)):
        own = {}
        for label, size in zip(term, shape, strict=True):
            if own.setdefault(label, size) != size:
                raise ShapeError(
                    f"einsum: {_name(label)} is repeated in operand {index} (shape {shape}) "
                    f"with sizes {own[label]} and {size}: a diagonal needs them equal"
                )
        for label, size in own.items():
            known = sizes.get(label)
            if known is None or known == 1:
                sizes[label], where[label] = size, index
            elif size not in (1, known):
                raise ShapeError(
                    f"einsum: {_name(label)} has size {size} in operand {index} (shape {shape}) "
                    f"but {known} in operand {where[label]} (shape {shapes[where[label]]})"
                )
    return sizes


def _squeezed(x, term, shape, sizes) -> tuple:
    """(operand, labels) without its dims of size 1 that broadcast against another size: the
    operand is the same at every index of those labels."""
    kept = [i for i, label in enumerate(term) if not (shape[i] == 1 and sizes[label] != 1)]
    if len(kept) == len(term):
        return x, term
    return Reshape.apply(x, shape=tuple(shape[i] for i in kept)), tuple(term[i] for i in kept)


def _chain(operands, output):
    """The operands contracted two at a time, in the order of numpy's greedy path; each result
    keeps the labels that the output or an operand still to come needs."""
    path = [(0, 1)] if len(operands) == 2 else _path(operands, output)
    for step in path:
        (x, term), *rest = [operands[i] for i in step]
        operands = [operand for i, operand in enumerate(operands) if i not in step]
        for position, (y, other) in enumerate(rest, 1):
            later = [t for _, t in operands] + [t for _, t in rest[position:]]
            if later:
                needed = set(output).union(*later)
                out = tuple(label for label in _unique(term + other) if label in needed)
            else:
                out = output
            x = Einsum.apply(x, y, a_labels=term, b_labels=other, out_labels=out)
            term = out
        operands.append((x, term))
    return operands[0][0]


def _path(operands, output) -> list:
    """numpy's greedy contraction order: pairs of positions in the list of operands left (each
    pair contracted is removed, its result appended)."""
    compact = {}
    for _, term in operands:
        for label in term:
            compact.setdefault(label, len(compact))
    if len(compact) > _ELLIPSIS:  # more labels than numpy's einsum_path takes
        return [(0, 1)] * (len(operands) - 1)
    arguments = []
    for x, term in operands:
        stand_in = np.broadcast_to(np.empty(()), shape_of(x))  # the shape, no memory
        arguments += [stand_in, [compact[label] for label in term]]
    path, _ = np.einsum_path(*arguments, [compact[label] for label in output], optimize="greedy")
    return [tuple(step) for step in path[1:]]
