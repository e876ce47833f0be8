"""In-place methods (`add_`, ..., `x += y`, `x[i] = v`) compared with PyTorch: values, the tensor
itself returned, gradients through a non-leaf, `_version` after each, and the errors (a leaf that
requires grad, a dtype or a shape the target cannot hold). Each test runs the same code on
`torch` and on `minitrain`, whose Tensor methods share PyTorch's names."""

import operator

import numpy as np
import pytest

import minitrain
from minitrain.errors import DTypeError, GraphError, ShapeError

rng = np.random.default_rng(20)
POS = rng.uniform(0.3, 1.7, (2, 3))  # y = 2 * POS is in (0.6, 3.4): log, sqrt, 1/y are smooth
MIXED = POS * np.array([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0]])  # signs for abs, sign, relu
OTHER = rng.uniform(0.3, 1.7, (2, 3))
WEIGHTS = rng.normal(size=(2, 3))  # the loss (y * WEIGHTS).sum() tells the elements apart
MASK = np.array([[True, False, True], [False, False, True]])


def array(tensor):
    return np.array(tensor.detach().numpy())


def assign(tensor, index, value):
    """tensor[index] = value, as an expression."""
    tensor[index] = value
    return tensor


def grad_of(tensor):
    return None if tensor.grad is None else array(tensor.grad)


def assert_same(mine, theirs, rtol=1e-12, atol=1e-12):
    """Arrays (or None, or tuples of them) equal to float64 precision."""
    if isinstance(theirs, tuple):
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs, strict=True):
            assert_same(a, b, rtol, atol)
    elif theirs is None:
        assert mine is None
    else:
        assert mine is not None
        np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=atol)


# (id, data of x, the in-place call on y = x * 2 with o, a leaf that requires grad)
OPS = [
    ("add_", POS, lambda y, o, lib: y.add_(o)),
    ("add_alpha", POS, lambda y, o, lib: y.add_(o, alpha=-3)),
    ("add_number", POS, lambda y, o, lib: y.add_(2.5)),
    ("sub_", POS, lambda y, o, lib: y.sub_(o)),
    ("sub_alpha", POS, lambda y, o, lib: y.sub_(o, alpha=2)),
    ("mul_", POS, lambda y, o, lib: y.mul_(o)),
    ("mul_row", POS, lambda y, o, lib: y.mul_(o[0])),
    ("mul_number", POS, lambda y, o, lib: y.mul_(-1.5)),
    ("div_", POS, lambda y, o, lib: y.div_(o)),
    ("div_number", POS, lambda y, o, lib: y.div_(4.0)),
    ("pow_", POS, lambda y, o, lib: y.pow_(o)),
    ("pow_number", POS, lambda y, o, lib: y.pow_(3)),
    ("neg_", MIXED, lambda y, o, lib: y.neg_()),
    ("abs_", MIXED, lambda y, o, lib: y.abs_()),
    ("exp_", MIXED, lambda y, o, lib: y.exp_()),
    ("log_", POS, lambda y, o, lib: y.log_()),
    ("sqrt_", POS, lambda y, o, lib: y.sqrt_()),
    ("rsqrt_", POS, lambda y, o, lib: y.rsqrt_()),
    ("square_", MIXED, lambda y, o, lib: y.square_()),
    ("reciprocal_", POS, lambda y, o, lib: y.reciprocal_()),
    ("sin_", MIXED, lambda y, o, lib: y.sin_()),
    ("cos_", MIXED, lambda y, o, lib: y.cos_()),
    ("sign_", MIXED, lambda y, o, lib: y.sign_()),
    ("floor_", MIXED, lambda y, o, lib: y.floor_()),
    ("ceil_", MIXED, lambda y, o, lib: y.ceil_()),
    ("trunc_", MIXED, lambda y, o, lib: y.trunc_()),
    ("round_", MIXED, lambda y, o, lib: y.round_()),
    ("round_decimals", MIXED, lambda y, o, lib: y.round_(decimals=1)),
    ("cumsum_", MIXED, lambda y, o, lib: y.cumsum_(1)),
    ("tril_", MIXED, lambda y, o, lib: y.tril_()),
    ("triu_", MIXED, lambda y, o, lib: y.triu_(1)),
    ("relu_", MIXED, lambda y, o, lib: y.relu_()),
    ("sigmoid_", MIXED, lambda y, o, lib: y.sigmoid_()),
    ("tanh_", MIXED, lambda y, o, lib: y.tanh_()),
    ("clamp_", POS, lambda y, o, lib: y.clamp_(1.0, 2.5)),
    ("clamp_min_only", POS, lambda y, o, lib: y.clamp_(min=2.0)),
    ("clip_", POS, lambda y, o, lib: y.clip_(max=2.0)),
    ("clamp_min_", POS, lambda y, o, lib: y.clamp_min_(2.0)),
    ("clamp_max_", POS, lambda y, o, lib: y.clamp_max_(2.0)),
    ("masked_fill_", MIXED, lambda y, o, lib: y.masked_fill_(lib.tensor(MASK), -1.0)),
    ("masked_fill_tensor", MIXED, lambda y, o, lib: y.masked_fill_(lib.tensor(MASK), o.sum())),
    ("fill_", MIXED, lambda y, o, lib: y.fill_(4.0)),
    ("fill_tensor", MIXED, lambda y, o, lib: y.fill_(o[1, 2])),
    ("zero_", MIXED, lambda y, o, lib: y.zero_()),
    ("copy_", MIXED, lambda y, o, lib: y.copy_(o)),
    ("copy_broadcast", MIXED, lambda y, o, lib: y.copy_(o[1])),
    ("iadd", POS, lambda y, o, lib: operator.iadd(y, o)),
    ("iadd_number", POS, lambda y, o, lib: operator.iadd(y, 1)),
    ("isub", POS, lambda y, o, lib: operator.isub(y, o[:, :1])),
    ("imul", POS, lambda y, o, lib: operator.imul(y, o)),
    ("itruediv", POS, lambda y, o, lib: operator.itruediv(y, o)),
    ("itruediv_number", POS, lambda y, o, lib: operator.itruediv(y, 3)),
]
OP_IDS = [case[0] for case in OPS]


def run_op(lib, data, call, dtype):
    """y = x * 2; y.op_(...); (y * WEIGHTS).sum().backward(): what the op gives and changes."""
    x = lib.tensor(data.astype(dtype), requires_grad=True)
    o = lib.tensor(OTHER.astype(dtype), requires_grad=True)
    y = x * 2
    before = y._version
    returned = call(y, o, lib)
    bumps = y._version - before
    (y * lib.tensor(WEIGHTS.astype(dtype))).sum().backward()
    dtypes = [str(t.dtype).removeprefix("torch.") for t in (y, x.grad)]
    return returned is y, bumps, dtypes, array(y), grad_of(x), grad_of(o)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("name", "data", "call"), OPS, ids=OP_IDS)
def test_in_place_op_matches_torch_through_a_non_leaf(torch, name, data, call, dtype):
    same, bumps, dtypes, values, x_grad, o_grad = run_op(minitrain, data, call, dtype)
    t_same, t_bumps, t_dtypes, t_values, t_x_grad, t_o_grad = run_op(torch, data, call, dtype)
    assert same and t_same  # the tensor itself comes back
    assert bumps == t_bumps == 1  # one write, one version
    assert dtypes == t_dtypes == [dtype, dtype]
    tolerance = (
        {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {"rtol": 2e-6, "atol": 1e-6}
    )
    assert_same(values, t_values, **tolerance)
    assert_same((x_grad, o_grad), (t_x_grad, t_o_grad), **tolerance)


@pytest.mark.parametrize(("name", "data", "call"), OPS, ids=OP_IDS)
def test_in_place_op_on_a_leaf_that_requires_grad_raises_in_grad_mode(torch, name, data, call):
    for lib, error in ((torch, RuntimeError), (minitrain, GraphError)):
        w = lib.tensor(data.copy(), requires_grad=True)
        o = lib.tensor(OTHER.copy(), requires_grad=True)
        with pytest.raises(error, match="leaf"):
            call(w, o, lib)
        assert w._version == 0
        np.testing.assert_array_equal(array(w), data)  # nothing was written


@pytest.mark.parametrize(("name", "data", "call"), OPS, ids=OP_IDS)
def test_in_place_op_on_a_leaf_works_under_no_grad(torch, name, data, call):
    results = []
    for lib in (minitrain, torch):
        w = lib.tensor(data.copy(), requires_grad=True)
        o = lib.tensor(OTHER.copy(), requires_grad=True)
        with lib.no_grad():
            assert call(w, o, lib) is w
        assert w.is_leaf and w.requires_grad and w.grad_fn is None
        # still a leaf of the graphs built after the write
        (w * lib.tensor(WEIGHTS)).sum().backward()
        results.append((array(w), w._version, grad_of(w), o.grad is None))
    (values, version, grad, no_o_grad), (t_values, t_version, t_grad, t_no_o_grad) = results
    assert version == t_version == 1
    assert no_o_grad and t_no_o_grad  # nothing recorded under no_grad
    assert_same((values, grad), (t_values, t_grad))


# x[index] = value on y (2, 3, 4) in the graph: (id, index, value); each takes lib (and o, the
# other leaf, for values that take a gradient)
Y3 = rng.normal(size=(2, 3, 4))
O3 = rng.normal(size=(2, 3, 4))
W3 = rng.normal(size=(2, 3, 4))
MASK3 = Y3 > 0.3
SETITEMS = [
    ("int", lambda lib: 1, lambda o: o[0]),
    ("negative_int_number", lambda lib: -1, lambda o: 5.0),
    ("two_ints", lambda lib: (0, 2), lambda o: o[1, 1]),
    ("step_slice", lambda lib: (slice(None), slice(None, None, 2)), lambda o: o[:, 1:3]),
    ("none", lambda lib: (None, 0), lambda o: o[:1, 0]),
    ("ellipsis", lambda lib: (Ellipsis, 1), lambda o: o[..., 2]),
    ("int_ellipsis_int", lambda lib: (0, Ellipsis, -1), lambda o: 1.5),
    ("broadcast_value", lambda lib: (slice(None), 1), lambda o: o[0, 0]),
    ("zero_d_value", lambda lib: (1, 2, 3), lambda o: o.sum()),
    ("int_tensor", lambda lib: lib.tensor([1, 0]), lambda o: o[:2]),
    ("int_list", lambda lib: [0], lambda o: -2.0),
    ("two_int_tensors", lambda lib: (lib.tensor([0, 1]), lib.tensor([2, 0])), lambda o: o[0, :2]),
    ("int_then_array", lambda lib: (1, slice(None), lib.tensor([0, 3])), lambda o: o[0, :, :2]),
    ("bool_mask_number", lambda lib: lib.tensor(MASK3), lambda o: 0.0),
    ("bool_mask_values", lambda lib: lib.tensor(MASK3), lambda o: o[o.detach() > -10][:7]),
    ("bool_mask_first_dim", lambda lib: lib.tensor([True, False]), lambda o: o[1:2]),
]
assert MASK3.sum() == 7  # bool_mask_values takes 7 values


def run_setitem(lib, index, value):
    x = lib.tensor(Y3.copy(), requires_grad=True)
    o = lib.tensor(O3.copy(), requires_grad=True)
    y = x * 2
    before = y._version
    y[index(lib)] = value(o)
    bumps = y._version - before
    (y * lib.tensor(W3)).sum().backward()
    return bumps, array(y), grad_of(x), grad_of(o)


@pytest.mark.parametrize(("name", "index", "value"), SETITEMS, ids=[c[0] for c in SETITEMS])
def test_setitem_matches_torch_through_a_non_leaf(torch, name, index, value):
    bumps, values, x_grad, o_grad = run_setitem(minitrain, index, value)
    t_bumps, t_values, t_x_grad, t_o_grad = run_setitem(torch, index, value)
    assert bumps == t_bumps == 1
    assert_same(values, t_values)
    assert_same((x_grad, o_grad), (t_x_grad, t_o_grad))


@pytest.mark.parametrize(("name", "index", "value"), SETITEMS, ids=[c[0] for c in SETITEMS])
def test_setitem_without_a_graph_matches_torch(torch, name, index, value):
    results = []
    for lib in (minitrain, torch):
        y = lib.tensor(Y3.copy())
        o = lib.tensor(O3.copy())
        y[index(lib)] = value(o)
        assert not y.requires_grad and y.grad_fn is None
        results.append((y._version, array(y)))
    assert results[0][0] == results[1][0] == 1
    assert_same(results[0][1], results[1][1])


def test_setitem_on_a_leaf_raises_in_grad_mode_and_works_under_no_grad(torch):
    for lib, error in ((torch, RuntimeError), (minitrain, GraphError)):
        w = lib.tensor(POS.copy(), requires_grad=True)
        with pytest.raises(error, match="leaf"):
            w[0] = 1.0
        with lib.no_grad():
            w[0, 1:] = 1.0
            w[lib.tensor(MASK)] = 0.0
        assert w._version == 2 and w.is_leaf and w.requires_grad
        np.testing.assert_array_equal(array(w)[0], [0.0, 1.0, 0.0])


def test_setitem_of_a_value_that_requires_grad_into_a_tensor_that_does_not(torch):
    results = []
    for lib in (minitrain, torch):
        buffer = lib.zeros(2, 3, dtype=lib.float64)
        o = lib.tensor(OTHER.copy(), requires_grad=True)
        buffer[1] = o[0] * 3
        assert buffer.requires_grad and not buffer.is_leaf
        (buffer * lib.tensor(WEIGHTS)).sum().backward()
        results.append((array(buffer), grad_of(o)))
    assert_same(results[0], results[1])


def test_in_place_op_with_an_operand_that_requires_grad_puts_the_target_in_the_graph(torch):
    results = []
    for lib in (minitrain, torch):
        y = lib.tensor(POS.copy())
        o = lib.tensor(OTHER.copy(), requires_grad=True)
        y.add_(o).mul_(o)
        assert y.requires_grad and not y.is_leaf
        (y * lib.tensor(WEIGHTS)).sum().backward()
        results.append((array(y), grad_of(o), y._version))
    assert_same(results[0][:2], results[1][:2])
    assert results[0][2] == results[1][2] == 2


def test_in_place_op_on_a_graph_tensor_under_no_grad_keeps_its_node(torch):
    results = []
    for lib in (minitrain, torch):
        x = lib.tensor(POS.copy(), requires_grad=True)
        y = x * 2
        node = y.grad_fn
        with lib.no_grad():
            y.add_(1)
        assert y.grad_fn is node and y.requires_grad
        (y * lib.tensor(WEIGHTS)).sum().backward()
        results.append((array(y), grad_of(x)))
    assert_same(results[0], results[1])


def test_uniform_and_normal_replace_the_values_and_cut_the_gradient(torch):
    for method, args in (("uniform_", (-2.0, 3.0)), ("normal_", (1.0, 0.5))):
        grads = []
        for lib in (minitrain, torch):
            x = lib.tensor(np.ones((200, 50)), requires_grad=True)
            y = x * 2
            assert getattr(y, method)(*args) is y
            assert y._version == 1
            y.sum().backward()
            grads.append(grad_of(x))
            values = array(y)
            if method == "uniform_":
                assert values.min() >= -2.0 and values.max() < 3.0
                assert abs(values.mean() - 0.5) < 0.05
            else:
                assert abs(values.mean() - 1.0) < 0.02 and abs(values.std() - 0.5) < 0.02
        assert_same(grads[0], grads[1])  # zeros: the old values no longer matter
        np.testing.assert_array_equal(grads[0], 0.0)


def test_uniform_and_normal_follow_minitrains_seed():
    draws = []
    for _ in range(2):
        minitrain.manual_seed(7)
        draws.append((array(minitrain.zeros(5).uniform_()), array(minitrain.zeros(5).normal_())))
    assert_same(draws[0], draws[1])
    assert not np.array_equal(draws[0][0], draws[0][1])


def test_requires_grad_and_detach_in_place_match_torch(torch):
    for lib, error in ((torch, RuntimeError), (minitrain, GraphError)):
        w = lib.tensor(POS.copy())
        assert w.requires_grad_() is w and w.requires_grad and w._version == 0
        assert w.requires_grad_(False) is w and not w.requires_grad
        x = lib.tensor(POS.copy(), requires_grad=True)
        y = x * 2
        z = y * 3
        with pytest.raises(error):
            y.requires_grad_(False)  # a tensor computed by an op
        assert y.detach_() is y
        assert y.is_leaf and not y.requires_grad and y.grad_fn is None and y._version == 0
        np.testing.assert_allclose(array(y), 2 * POS)
        z.sum().backward()  # the graph built before still runs through y's old node
        np.testing.assert_allclose(array(x.grad), 6.0)
        with pytest.raises(error):
            (x * 2)[0].detach_()  # a view cannot leave the graph in place


def test_views_see_in_place_writes_and_writes_through_views_reach_the_base(torch):
    results = []
    for lib in (minitrain, torch):
        base = lib.tensor(MIXED.copy())
        row, column, flat, transposed = base[0], base[:, 1], base.reshape(6), base.t()
        detached = base.detach()
        base.mul_(2)
        row.add_(1)  # through views of a tensor outside the graph
        transposed[2] = 0.0
        flat.neg_()
        taken = [array(t) for t in (base, row, column, flat, transposed, detached)]
        results.append((taken, [t._version for t in (base, row, flat, detached)]))
    for mine, theirs in zip(results[0][0], results[1][0], strict=True):
        assert_same(mine, theirs)
    assert results[0][1] == results[1][1] == [4, 4, 4, 4]


def test_a_graph_tensors_detached_copy_sees_its_in_place_writes(torch):
    for lib in (minitrain, torch):
        x = lib.tensor(POS.copy(), requires_grad=True)
        y = x * 2
        seen = y.detach()
        y.mul_(3)
        np.testing.assert_allclose(array(seen), 6 * POS)
        assert seen._version == y._version == 1


# An integer (or bool) target: raises exactly where PyTorch does, else the same values and dtype.
INT_CASES = [
    ("iadd_float", lambda t, lib: operator.iadd(t, 1.5)),
    ("iadd_int", lambda t, lib: operator.iadd(t, 2)),
    ("add_float_tensor", lambda t, lib: t.add_(lib.tensor([0.5, 0.5, 0.5]))),
    ("imul_int", lambda t, lib: operator.imul(t, 3)),
    ("itruediv", lambda t, lib: operator.itruediv(t, 2)),
    ("pow_int", lambda t, lib: t.pow_(2)),
    ("pow_float", lambda t, lib: t.pow_(0.5)),
    ("sqrt_", lambda t, lib: t.sqrt_()),
    ("exp_", lambda t, lib: t.exp_()),
    ("sigmoid_", lambda t, lib: t.sigmoid_()),
    ("reciprocal_", lambda t, lib: t.reciprocal_()),
    ("neg_", lambda t, lib: t.neg_()),
    ("abs_", lambda t, lib: t.abs_()),
    ("square_", lambda t, lib: t.square_()),
    ("sign_", lambda t, lib: t.sign_()),
    ("relu_", lambda t, lib: t.relu_()),
    ("floor_", lambda t, lib: t.floor_()),
    ("clamp_int", lambda t, lib: t.clamp_(0, 2)),
    ("clamp_float", lambda t, lib: t.clamp_(0.5, 2.5)),
    ("fill_float", lambda t, lib: t.fill_(2.7)),
    ("masked_fill_float", lambda t, lib: t.masked_fill_(lib.tensor([True, False, True]), 2.7)),
    ("copy_float", lambda t, lib: t.copy_(lib.tensor([1.5, -2.5, 3.9]))),
    ("setitem_float", lambda t, lib: assign(t, 0, 2.7)),
    ("bool_iadd_int", lambda t, lib: operator.iadd(t > 0, 1)),
    ("bool_fill", lambda t, lib: (t > 1).fill_(True)),
    ("int32_iadd_int64", lambda t, lib: operator.iadd(t.int(), lib.tensor([5, 5, 5]))),
    ("float32_iadd_float64", lambda t, lib: operator.iadd(t.float(), lib.tensor(np.ones(3)))),
]


@pytest.mark.parametrize(("name", "call"), INT_CASES, ids=[c[0] for c in INT_CASES])
def test_result_dtype_that_cannot_be_cast_to_the_target_raises_as_in_torch(torch, name, call):
    try:
        expected = call(torch.tensor([1, 2, 3]), torch)
    except RuntimeError as error:
        assert "can't be cast" in str(error)
        with pytest.raises(DTypeError, match="cannot be written"):
            call(minitrain.tensor([1, 2, 3]), minitrain)
        return
    got = call(minitrain.tensor([1, 2, 3]), minitrain)
    assert str(got.dtype) == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(array(got), expected.numpy())


def test_a_failed_dtype_check_changes_nothing(torch):
    for lib in (minitrain, torch):
        t = lib.tensor([1, 2, 3])
        with pytest.raises((RuntimeError, DTypeError)):
            t.add_(0.5)
        assert t._version == 0
        np.testing.assert_array_equal(array(t), [1, 2, 3])


# Results bigger than the target, or of another shape than the region written: (id, the call)
SHAPE_CASES = [
    ("add_", lambda t, lib: t.add_(lib.ones(2, 3, dtype=t.dtype))),
    ("iadd", lambda t, lib: operator.iadd(t, lib.ones(2, 3, dtype=t.dtype))),
    ("mul_", lambda t, lib: t.mul_(lib.ones(2, 1, dtype=t.dtype))),
    ("pow_", lambda t, lib: t.pow_(lib.ones(4, 3, dtype=t.dtype))),
    ("copy_", lambda t, lib: t.copy_(lib.ones(2, 3, dtype=t.dtype))),
    ("masked_fill_", lambda t, lib: t.masked_fill_(lib.ones(2, 3, dtype=lib.bool), 0.0)),
    ("setitem_bigger_value", lambda t, lib: t.__setitem__(slice(0, 2), lib.ones(2, 2))),
    ("setitem_other_length", lambda t, lib: t.__setitem__(slice(0, 2), lib.ones(3))),
]


@pytest.mark.parametrize("graph", [False, True], ids=["plain", "in_graph"])
@pytest.mark.parametrize(("name", "call"), SHAPE_CASES, ids=[c[0] for c in SHAPE_CASES])
def test_result_shape_the_target_cannot_hold_raises(torch, name, call, graph):
    for lib, error in ((torch, RuntimeError), (minitrain, ShapeError)):
        x = lib.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=graph)
        t = x * 2 if graph else x
        with pytest.raises(error):
            call(t, lib)
        assert t._version == 0
        np.testing.assert_allclose(array(t), [2.0, 4.0, 6.0] if graph else [1.0, 2.0, 3.0])


def test_the_chain_of_the_issue_matches_torch(torch):
    """y = x * 2; y.add_(1); y[0] = 0; y.mul_(x): values, versions and x.grad."""
    results = []
    for lib in (minitrain, torch):
        x = lib.tensor(POS.copy(), requires_grad=True)
        y = x * 2
        versions = [y._version]
        y.add_(1)
        versions.append(y._version)
        y[0] = 0
        versions.append(y._version)
        y.mul_(x)
        versions.append(y._version)
        (y * lib.tensor(WEIGHTS)).sum().backward()
        results.append((array(y), grad_of(x), versions))
    assert_same(results[0][:2], results[1][:2])
    assert results[0][2] == results[1][2] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("name", "call", "raises"),
    [
        ("mul_self", lambda y: y.mul_(y), True),
        ("div_self", lambda y: y.div_(y), True),
        ("pow_self", lambda y: y.pow_(y), True),
        ("mul_own_detached", lambda y: y.mul_(y.detach()), True),
        ("add_self", lambda y: y.add_(y), False),  # add saves nothing
        ("mul_own_clone", lambda y: y.mul_(y.clone()), False),
    ],
)
def test_an_in_place_op_reading_its_own_target(torch, name, call, raises):
    """y.mul_(y) raises at backward in both: the op saved y as its other operand too, and the
    write changed it (the copy of its old values each keeps for `self` does not cover it)."""
    results = []
    for lib, error in ((minitrain, GraphError), (torch, RuntimeError)):
        x = lib.tensor(POS.copy(), requires_grad=True)
        y = x * 2
        call(y)
        loss = (y * lib.tensor(WEIGHTS)).sum()
        if raises:
            with pytest.raises(error, match="modified by an in-?place operation"):
                loss.backward()
        else:
            loss.backward()
            results.append(grad_of(x))
    if not raises:
        assert_same(results[0], results[1])


def test_linear_regression_by_hand_matches_torch_step_for_step(torch):
    """The tutorial loop: `w -= lr * w.grad` under no_grad, then `w.grad.zero_()`."""
    data = np.random.default_rng(4)
    inputs = data.normal(size=(32, 3))
    targets = inputs @ np.array([[1.5], [-2.0], [0.5]]) + 0.3 + 0.05 * data.normal(size=(32, 1))
    start = data.normal(size=(3, 1))

    def steps(lib, count=20, lr=0.1):
        x, target = lib.tensor(inputs), lib.tensor(targets)
        w = lib.tensor(start.copy(), requires_grad=True)
        b = lib.tensor(np.zeros(1), requires_grad=True)
        the_w = w
        for _ in range(count):
            loss = ((x @ w + b - target) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                w -= lr * w.grad
                b -= lr * b.grad
                w.grad.zero_()
                b.grad.zero_()
            assert w is the_w and w.is_leaf and w.requires_grad and w.grad_fn is None
            yield loss.item(), array(w), array(b), w._version, array(w.grad)

    count, first = 0, None
    for mine, theirs in zip(steps(minitrain), steps(torch), strict=True):
        loss, w, b, version, grad = mine
        t_loss, t_w, t_b, t_version, t_grad = theirs
        np.testing.assert_allclose(loss, t_loss, rtol=1e-12)
        assert_same((w, b), (t_w, t_b))
        first = loss if first is None else first
        count += 1
        assert version == t_version == count
        np.testing.assert_array_equal(grad, t_grad)  # zeroed
    assert count == 20
    assert loss < first / 20  # it did fit


def test_zeroing_one_leafs_grad_leaves_the_others(torch):
    """Gradients a backward hands two leaves are separate memory, as in PyTorch: `a.grad.zero_()`
    must not clear b.grad (add's backward sends one gradient to both)."""
    for lib in (minitrain, torch):
        a = lib.tensor(POS.copy(), requires_grad=True)
        b = lib.tensor(POS.copy(), requires_grad=True)
        total = a + b
        total.retain_grad()
        (total * lib.tensor(WEIGHTS)).sum().backward()
        a.grad.zero_()
        np.testing.assert_array_equal(array(b.grad), WEIGHTS)
        np.testing.assert_array_equal(array(total.grad), WEIGHTS)


# Deliberate differences from PyTorch.


def test_in_place_on_a_view_of_a_tensor_in_the_graph_is_refused(torch):
    """PyTorch rebases the graph of the base onto the view's write (CopySlices); minitrain has no
    such rewrite and refuses the write while recording, naming the view's op. Under no_grad the
    write is allowed (the version check then guards every value saved from that memory); writing
    through the base, or a clone of the view, is the way to do it in the graph."""
    x = torch.tensor(POS.copy(), requires_grad=True)
    y = x * 2
    y[0].mul_(3)  # torch: fine
    y.sum().backward()
    expected = np.array([[6.0] * 3, [2.0] * 3])
    np.testing.assert_allclose(x.grad.numpy(), expected)

    for make in (lambda y: y[0], lambda y: y.reshape(6), lambda y: y.t(), lambda y: y[:, 1:]):
        x = minitrain.tensor(POS.copy(), requires_grad=True)
        y = x * 2
        view = make(y)
        with pytest.raises(GraphError, match="view"):
            view.mul_(3)
        with pytest.raises(GraphError, match="view"):
            view[0] = 1.0
        assert y._version == 0
        np.testing.assert_allclose(array(y), 2 * POS)
    x = minitrain.tensor(POS.copy(), requires_grad=True)
    y = x * 2
    y[0] = y[0] * 3  # the same, through the base
    y.sum().backward()
    np.testing.assert_allclose(array(x.grad), expected)


def test_writing_into_a_broadcast_view_is_refused():
    """numpy's broadcast views are read-only (one element stands for many), so minitrain
    refuses every write into an expanded tensor; PyTorch refuses `add_` there too ("more than
    one element of the written-to tensor refers to a single memory location") but lets
    `e[0] = v` write through to the shared memory."""
    e = minitrain.tensor(np.ones((1, 3))).expand(2, 3)
    for write in (lambda: e.add_(1), lambda: e.__setitem__(0, 5.0), lambda: e.zero_()):
        with pytest.raises(ShapeError, match="read-only"):
            write()
    assert e._version == 0


def test_clamp_in_place_takes_number_bounds_as_clamp_does():
    """minitrain's clip op takes numbers for its bounds (PyTorch also takes tensors); clamp_
    computes clamp, so it refuses a tensor bound with clamp's own error."""
    y = minitrain.tensor(POS.copy())
    with pytest.raises(DTypeError, match="maximum / minimum"):
        y.clamp(minitrain.tensor(OTHER))
    with pytest.raises(DTypeError, match="maximum / minimum"):
        y.clamp_(minitrain.tensor(OTHER))
    assert y._version == 0


def test_setitem_with_index_arrays_casts_the_value_as_basic_indexing_does(torch):
    """PyTorch's index_put refuses a value of another dtype (its basic-index path casts);
    minitrain casts both ways, as numpy does."""
    t = torch.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="dtypes match"):
        t[torch.tensor([0, 1])] = torch.tensor([2.7, 3.5])
    t = minitrain.tensor([1, 2, 3])
    t[minitrain.tensor([0, 1])] = minitrain.tensor([2.7, 3.5])
    np.testing.assert_array_equal(array(t), [2, 3, 3])
    assert t.dtype == np.int64 and t._version == 1
