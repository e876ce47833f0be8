"""Broadcasting and dtype promotion in the engine, against torch.

Gradients are summed back to each shape and have their tensor's dtype; the binary ops, where,
concat, stack, matmul and linear promote (or refuse) dtypes as torch does."""

import itertools

import numpy as np
import pytest

import minitrain
from minitrain.errors import DTypeError


def leaf(values, dtype=np.float64):
    return minitrain.tensor(np.asarray(values, dtype=dtype), requires_grad=True)


def test_broadcast_gradients_are_summed_back_to_each_shape():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    xv, yv, wv = rng.standard_normal((3, 1)), rng.standard_normal(4), rng.standard_normal((3, 4))
    x, y = leaf(xv), leaf(yv)
    out = x + y
    assert out.shape == (3, 4)
    (out * minitrain.tensor(wv)).sum().backward()
    assert x.grad.shape == (3, 1) and y.grad.shape == (4,)
    np.testing.assert_allclose(x.grad.numpy(), wv.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), wv.sum(axis=0), rtol=1e-12)

    tx = torch.tensor(xv, requires_grad=True)
    ty = torch.tensor(yv, requires_grad=True)
    ((tx + ty) * torch.tensor(wv)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)


def test_broadcast_mul_against_scalar_shaped_tensor():
    torch = pytest.importorskip("torch")
    xv, sv = np.arange(6.0).reshape(2, 3), np.array(1.5)
    x, s = leaf(xv), leaf(sv)
    (x * s).sum().backward()
    assert s.grad.shape == ()
    np.testing.assert_allclose(s.grad.numpy(), xv.sum())
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3), 1.5))
    tx = torch.tensor(xv, requires_grad=True)
    ts = torch.tensor(sv, requires_grad=True)
    (tx * ts).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy())


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_gradient_dtype_equals_tensor_dtype(dtype):
    x = leaf([1.0, 2.0, 3.0], dtype=dtype)
    y = leaf([[1.0], [2.0]], dtype=dtype)
    ((x * y).exp() * 0.5 + x).sum().backward()
    assert x.grad.dtype == dtype
    assert y.grad.dtype == dtype


def test_gradient_dtype_of_a_float32_leaf_mixed_with_float64():
    x = leaf([1.0, 2.0], dtype=np.float32)
    y = leaf([3.0, 4.0], dtype=np.float64)
    out = x * y
    assert out.dtype == np.float64
    out.sum().backward()
    assert x.grad.dtype == np.float32
    assert y.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


@pytest.mark.parametrize(
    "other", [np.array(["a", "b", "c"]), np.str_("a")], ids=["string_array", "numpy_string"]
)
def test_promotion_leaves_non_numeric_operands_to_numpy(other):
    # no KeyError from the promotion's dtype categories: numpy's own refusal, as before
    with pytest.raises(TypeError):
        minitrain.tensor(np.ones(3, np.float32)) + other


def test_numpy_scalars_and_0d_tensors_do_not_widen_the_dtype_like_torch():
    torch = pytest.importorskip("torch")
    x, tx = minitrain.tensor(np.ones(3, np.float32)), torch.ones(3)
    cases = [
        (x * np.float64(2), tx * 2.0),
        (x / np.sqrt(64), tx / np.sqrt(64).item()),  # np.sqrt gives an np.float64
        (x + minitrain.tensor(np.float64(1)), tx + torch.tensor(1.0, dtype=torch.float64)),
        (
            minitrain.tensor(np.ones(3, np.int32)) + minitrain.tensor(np.int64(1)),
            torch.ones(3, dtype=torch.int32) + torch.tensor(1),
        ),
        (
            minitrain.tensor(np.ones(3, np.float16)) + minitrain.tensor(np.ones(3, np.int64)),
            torch.ones(3, dtype=torch.float16) + torch.ones(3, dtype=torch.int64),
        ),
        (
            minitrain.tensor(np.ones(3, np.int32)) + minitrain.tensor(np.float64(0.5)),
            torch.ones(3, dtype=torch.int32) + torch.tensor(0.5, dtype=torch.float64),
        ),
        (
            minitrain.tensor(np.ones(3, np.float16)).clip(np.float64(0.5), np.int64(2)),
            torch.ones(3, dtype=torch.float16).clip(0.5, 2),
        ),
    ]
    for out, reference in cases:
        assert str(out.dtype) == str(reference.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(out.numpy(), reference.numpy())
    assert [str(out.dtype) for out, _ in cases] == [
        "float32",
        "float32",
        "float32",
        "int32",
        "float16",
        "float64",
        "float16",
    ]


_PROMOTION_DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64]
_PROMOTION_DTYPES += [np.float16, np.float32, np.float64]
_BINARY_OPS = {
    "add": (minitrain.ops.add, lambda torch, a, b: a + b),
    "sub": (minitrain.ops.sub, lambda torch, a, b: a - b),
    "mul": (minitrain.ops.mul, lambda torch, a, b: a * b),
    "div": (minitrain.ops.div, lambda torch, a, b: a / b),
    "pow": (minitrain.ops.pow, lambda torch, a, b: a**b),
    "maximum": (minitrain.ops.maximum, lambda torch, a, b: torch.maximum(a, b)),
    "minimum": (minitrain.ops.minimum, lambda torch, a, b: torch.minimum(a, b)),
}
_WHERE_CONDITION = np.array([True, False, True])


def _promotion_operands(torch, position):
    """One operand of a binary op in every form: (label, minitrain value, torch value), for a
    tensor with dims and a 0-d tensor of each dtype, a numpy scalar of each dtype, and a Python
    bool, int and float. A numpy scalar goes to torch as the Python number of its kind (torch
    itself reads np.bool_ as a float)."""
    values, number = ([1, 2, 3], 3) if position == 0 else ([2, 1, 2], 2)
    operands = []
    for dtype in _PROMOTION_DTYPES:
        name = np.dtype(dtype).name
        boolean = dtype is np.bool_
        dims = np.array([True, position == 1, True] if boolean else values, dtype)
        zero_d = np.array(True if boolean else number, dtype)
        for label, array in ((f"{name}(3,)", dims), (f"{name}()", zero_d)):
            float_dtype = array.dtype.kind == "f"
            operands.append(
                (
                    label,
                    minitrain.tensor(array, requires_grad=float_dtype),
                    torch.tensor(array, requires_grad=float_dtype),
                )
            )
        scalar = dtype(True if boolean else number)
        operands.append((f"np.{name}", scalar, scalar.item()))
    for number_value in (True, number, number + 0.5):
        operands.append((type(number_value).__name__, number_value, number_value))
    return operands


def _apply_binary(op, a, b):
    if op == "where":
        return minitrain.ops.where(minitrain.tensor(_WHERE_CONDITION), a, b)
    return _BINARY_OPS[op][0](a, b)


def _apply_binary_in_torch(torch, op, a, b):
    """torch's result, or None where torch has no such op (bool - bool, torch.maximum of a
    number, ...)."""
    try:
        if op == "where":
            return torch.where(torch.tensor(_WHERE_CONDITION), a, b)
        return _BINARY_OPS[op][1](torch, a, b)
    except (RuntimeError, TypeError, NotImplementedError):
        return None


def _binary_case_failures(torch, op, operand_a, operand_b) -> list[str]:
    """How minitrain's `op` of one pair of operands differs from torch's: the output dtype
    (torch.result_type, float32 for an integer division), the values, and the dtype (each input's
    own) and values of each input's gradient."""
    (label_a, a, torch_a), (label_b, b, torch_b) = operand_a, operand_b
    case = f"{op}({label_a}, {label_b})"
    tensors = [v for v in (a, b) if isinstance(v, minitrain.Tensor)]
    torch_tensors = [v for v in (torch_a, torch_b) if isinstance(v, torch.Tensor)]
    theirs = _apply_binary_in_torch(torch, op, torch_a, torch_b)
    if theirs is None and (len(torch_tensors) == 2 or op == "where"):
        return []  # an op torch does not define
    expected = str(
        theirs.dtype if theirs is not None else torch.result_type(torch_a, torch_b)
    ).removeprefix("torch.")
    if op in ("sub", "pow") and expected == "bool":
        # torch defines bool - bool and bool ** bool only with a number (not two tensors), numpy
        # not at all (an error, an int8 power): not a question of promotion
        return []
    try:
        ours = _apply_binary(op, a, b)
    except Exception as error:  # noqa: BLE001 (reported with its case)
        return [f"{case}: raised {error!r}, torch gives {expected}"]
    if str(ours.dtype) != expected:
        return [f"{case}: {ours.dtype}, torch {expected}"]
    if theirs is not None:
        np.testing.assert_allclose(
            ours.numpy().astype(np.float64),
            theirs.detach().numpy().astype(np.float64),
            rtol=1e-3,
            err_msg=case,
        )
    if not ours.requires_grad:
        return []
    ours.sum().backward()
    try:
        theirs.sum().backward()
    except (AttributeError, RuntimeError):  # no torch op, or torch fails (f16 - True)
        theirs = None
    failures = []
    for tensor, torch_tensor in zip(tensors, torch_tensors, strict=True):
        if not tensor.requires_grad:
            continue
        if tensor.grad.dtype != tensor.dtype:
            failures.append(f"{case}: a {tensor.dtype} input got a {tensor.grad.dtype} gradient")
        elif theirs is not None:
            np.testing.assert_allclose(
                tensor.grad.numpy().astype(np.float64),
                torch_tensor.grad.numpy().astype(np.float64),
                rtol=1e-2,
                err_msg=case,
            )
        tensor.grad = torch_tensor.grad = None
    return failures


@pytest.mark.parametrize("op", [*_BINARY_OPS, "where"])
def test_binary_op_dtypes_and_gradient_dtypes_match_torch_result_type(op):
    """Every pair of operand forms (tensor with dims, 0-d tensor, numpy scalar or Python
    number, of every dtype), as _binary_case_failures compares them with torch."""
    torch = pytest.importorskip("torch")
    failures, cases = [], 0
    for operand_a in _promotion_operands(torch, 0):
        for operand_b in _promotion_operands(torch, 1):
            both_numbers = not any(
                isinstance(v[1], minitrain.Tensor) for v in (operand_a, operand_b)
            )
            if both_numbers and op != "where":
                continue  # torch has no op on two numbers
            cases += 1
            failures += _binary_case_failures(torch, op, operand_a, operand_b)
    assert not failures, f"{len(failures)} of {cases} cases differ from torch:\n" + "\n".join(
        failures[:30]
    )
    assert cases > 700


def test_a_numpy_float_alone_keeps_its_dtype_and_beside_a_tensor_is_a_number():
    # alone it is the data (float64 stays float64); as an operand of a float32 tensor it is a
    # number to PyTorch, which leaves the tensor's dtype
    assert minitrain.ops.exp(np.float64(1.0)).dtype == np.float64
    assert (minitrain.ones(3) * np.float64(2.0)).dtype == np.float32


@pytest.mark.parametrize("join", ["concat", "stack"])
def test_concat_and_stack_promote_like_torch(join):
    """Every pair of dtypes: the result's dtype and values are torch.cat's / torch.stack's
    (int64 with float32 gives float32, where numpy widens to float64), and each floating input's
    gradient keeps its own dtype."""
    torch = pytest.importorskip("torch")
    ours_join, torch_join = (
        getattr(minitrain.ops, join),
        getattr(torch, join.replace("concat", "cat")),
    )
    failures = []
    for first, second in itertools.product(_PROMOTION_DTYPES, repeat=2):
        arrays = [np.array([1, 0, 1], first), np.array([0, 1, 1], second)]
        tensors = [minitrain.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
        ours, theirs = ours_join(tensors), torch_join([torch.tensor(a) for a in arrays])
        if str(ours.dtype) != str(theirs.dtype).removeprefix("torch."):
            failures.append(f"{first.__name__}, {second.__name__}: {ours.dtype}, {theirs.dtype}")
            continue
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        if ours.requires_grad:
            ours.sum().backward()
            for tensor in tensors:
                if tensor.requires_grad:
                    assert tensor.grad.dtype == tensor.dtype
                    np.testing.assert_array_equal(tensor.grad.numpy(), 1)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "dtypes",
    [(np.float32, np.float64), (np.float64, np.float32), (np.float32, np.int64)],
    ids=lambda dtypes: f"{dtypes[0].__name__}-{dtypes[1].__name__}",
)
def test_matmul_and_linear_refuse_mixed_dtypes_as_torch_does(dtypes):
    """Unlike the elementwise ops, torch's matmul and linear (and conv) do not promote: a
    float64 input would turn a float32 model float64 without a word. minitrain refuses alike,
    naming the op and the dtypes, before anything is recorded."""
    torch = pytest.importorskip("torch")
    first, second = (np.ones((2, 2), dtype) for dtype in dtypes)
    with pytest.raises(RuntimeError):
        torch.tensor(first) @ torch.tensor(second)
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(torch.tensor(first), torch.tensor(second))
    a = minitrain.tensor(first, requires_grad=first.dtype.kind == "f")
    names = f"{np.dtype(dtypes[0]).name}, b {np.dtype(dtypes[1]).name}"
    with pytest.raises(DTypeError, match=f"matmul: inputs must share one dtype, got a {names}"):
        a @ minitrain.tensor(second)
    with pytest.raises(DTypeError, match="linear: .* got x .*, weight .*"):
        minitrain.ops.linear(a, minitrain.tensor(second))
    with pytest.raises(DTypeError, match="linear: .*, bias float16"):
        minitrain.ops.linear(a, a, minitrain.tensor(np.zeros(2, np.float16)))
    assert a.grad_fn is None and a.grad is None
    # a list of Python floats is float32, as minitrain.tensor makes it: no mismatch there
    weight = minitrain.tensor(np.ones((2, 2), np.float32))
    assert minitrain.ops.linear([[1.0, 2.0]], weight).dtype == np.float32
