"""In-place ops meeting the rest of the engine, compared with PyTorch: retain_grad and hooks on a
tensor written in place, `grad()`, grad modes, gradients' dtypes, 0-d and non-contiguous targets,
numpy scalars as operands."""

import numpy as np
import pytest

import minitrain

WEIGHTS = np.array([1.0, 2.0, 3.0])


def array(tensor):
    return np.array(tensor.detach().numpy())


def both(torch, case):
    """case(lib) on each; returns (minitrain's, torch's)."""
    return case(minitrain), case(torch)


def assert_same(mine, theirs):
    if isinstance(theirs, (tuple, list)):
        assert len(mine) == len(theirs)
        for a, b in zip(mine, theirs, strict=True):
            assert_same(a, b)
    elif theirs is None or isinstance(theirs, (bool, int, str)):
        assert mine == theirs
    else:
        np.testing.assert_allclose(np.asarray(mine), np.asarray(theirs), rtol=1e-6)


def test_retain_grad_follows_the_tensor_through_an_in_place_write(torch):
    """y.grad is the gradient of y's latest values, before or after the write was made."""

    def case(lib, retain_first):
        x = lib.tensor(np.ones(3), requires_grad=True)
        y = x * 2
        if retain_first:
            y.retain_grad()
        y.mul_(3)
        if not retain_first:
            y.retain_grad()
        assert y.retains_grad
        (y * lib.tensor(WEIGHTS)).sum().backward()
        return array(y.grad), array(x.grad)

    for retain_first in (True, False):
        mine, theirs = case(minitrain, retain_first), case(torch, retain_first)
        assert_same(mine, theirs)
        np.testing.assert_allclose(mine[0], WEIGHTS)  # not 3 * WEIGHTS, the old values' one


def test_a_hook_registered_before_the_write_sees_the_old_values_gradient(torch):
    def case(lib):
        x = lib.tensor(np.ones(3), requires_grad=True)
        y = x * 2
        before, after = [], []
        y.register_hook(lambda g: before.append(array(g)))
        y.mul_(3)
        y.register_hook(lambda g: after.append(array(g)))
        (y * lib.tensor(WEIGHTS)).sum().backward()
        return before, after, array(x.grad)

    mine, theirs = both(torch, case)
    assert_same(mine, theirs)
    np.testing.assert_allclose(mine[0][0], 3 * WEIGHTS)
    np.testing.assert_allclose(mine[1][0], WEIGHTS)


def test_grad_function_through_in_place_ops(torch):
    def case(lib):
        x = lib.tensor(np.array([0.5, 1.0, 2.0]), requires_grad=True)
        y = x * 2
        y.add_(1).mul_(x).exp_()
        grad = torch.autograd.grad if lib is torch else minitrain.grad
        (gx,) = grad(y.sum(), x)
        return array(gx), x.grad is None

    assert_same(*both(torch, case))


def test_enable_grad_inside_no_grad_still_protects_a_leaf(torch):
    for lib in (minitrain, torch):
        w = lib.ones(3, requires_grad=True)
        with lib.no_grad():
            w.add_(1)  # allowed
            with lib.enable_grad(), pytest.raises(RuntimeError, match="leaf"):
                w.add_(1)  # minitrain's GraphError is a RuntimeError
        assert w._version == 1
        np.testing.assert_array_equal(array(w), 2.0)


def test_gradient_dtypes_when_the_operand_has_a_wider_dtype(torch):
    def case(lib):
        x = lib.ones(3, requires_grad=True)  # float32
        o = lib.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)  # float64
        y = x * 2
        y.add_(o * 3)
        y.mul_(o)
        (y * lib.tensor(WEIGHTS)).sum().backward()
        names = [str(t.dtype).removeprefix("torch.") for t in (y, x.grad, o.grad)]
        return names, array(x.grad), array(o.grad)

    mine, theirs = both(torch, case)
    assert mine[0] == theirs[0] == ["float32", "float32", "float64"]
    assert_same(mine[1:], theirs[1:])


def test_a_zero_d_target(torch):
    def case(lib):
        x = lib.tensor(2.0, requires_grad=True)
        y = x * 1
        y.mul_(y.detach() + 1)
        y.sub_(0.5)
        y.backward()
        return array(y), array(x.grad), y._version

    assert_same(*both(torch, case))


def test_numpy_scalars_as_operands(torch):
    def case(lib):
        x = lib.ones(3, requires_grad=True)
        y = x * 1
        y.mul_(np.float64(2.5))
        y.add_(np.int64(1))
        y.div_(np.float32(2.0))
        (y * lib.tensor(WEIGHTS)).sum().backward()
        return array(y), str(y.dtype).removeprefix("torch."), array(x.grad)

    mine, theirs = both(torch, case)
    assert mine[1] == theirs[1] == "float32"
    assert_same(mine, theirs)


def test_a_non_contiguous_target(torch):
    def case(lib):
        base = lib.tensor(np.arange(6.0).reshape(2, 3))
        target = base.t()
        target.add_(lib.tensor([1.0, 2.0]))
        target.mul_(2)
        target[0] = -1.0
        return array(base), array(target), base._version, target._version

    mine, theirs = both(torch, case)
    assert mine[2:] == theirs[2:] == (3, 3)
    assert_same(mine[:2], theirs[:2])


@pytest.mark.parametrize("method", ["abs_", "relu_", "sign_", "clamp_"])
def test_in_place_gradients_at_the_kinks(torch, method):
    """At 0 (abs, relu, sign) and at the bounds (clamp): the subgradients PyTorch picks."""

    def case(lib):
        x = lib.tensor(np.array([-1.0, 0.0, 1.0, 2.0, 3.0]), requires_grad=True)
        y = x * 1
        if method == "clamp_":
            y.clamp_(1.0, 2.0)
        else:
            getattr(y, method)()
        (y * lib.tensor(np.arange(1.0, 6.0))).sum().backward()
        return array(y), array(x.grad)

    assert_same(*both(torch, case))


def test_writing_into_a_flipped_copy_leaves_the_original(torch):
    """flip copies in PyTorch: its output is a tensor of its own."""
    for lib in (minitrain, torch):
        x = lib.tensor(np.arange(4.0))
        flipped = x.flip(0)
        flipped.mul_(10)
        np.testing.assert_array_equal(array(x), np.arange(4.0))
        assert x._version == 0
