"""Checks of the exercises of 04_higher_order_gradients: a Hessian-vector product over several
parameter tensors, the derivatives of a quadratic form, a Newton step for logistic regression,
and Newton against Gauss-Newton on a tiny least squares."""

from __future__ import annotations

import numpy as np

import minitrain as mt
from exercises import exercise
from minitrain.autograd.functional import hessian
from minitrain.errors import GraphError


def _array(value) -> np.ndarray:
    """A learner's answer, a Tensor or an array, as a float64 numpy array."""
    if isinstance(value, mt.Tensor):
        value = value.detach().numpy()
    return np.asarray(value, dtype=np.float64)


def _pair(result, what: str) -> tuple[np.ndarray, np.ndarray]:
    assert isinstance(result, (tuple, list)) and len(result) == 2, (
        f"return two values, {what}; got {type(result).__name__}"
    )
    return _array(result[0]), _array(result[1])


@exercise
def check_hvp_of_params(hvp_of_params):
    rng = np.random.default_rng(0)
    X = mt.tensor(rng.standard_normal((5, 3)))
    target = mt.tensor(rng.standard_normal((5, 1)))
    readout = mt.tensor(rng.standard_normal((2, 1)))

    def loss_fn(W, b):
        return ((((X @ W + b).tanh()) @ readout - target) ** 2).mean()

    W = mt.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    b = mt.tensor(rng.standard_normal(2), requires_grad=True)
    vs = [mt.tensor(rng.standard_normal((3, 2))), mt.tensor(rng.standard_normal(2))]
    try:
        got = hvp_of_params(loss_fn, [W, b], vs)
    except GraphError as error:
        raise AssertionError(
            f"GraphError: {error}. The first mt.grad needs create_graph=True: without it the "
            f"gradient is plain numbers, with no graph for the second call to walk"
        ) from None
    assert isinstance(got, (list, tuple)) and len(got) == 2, (
        f"for params [W, b], return a list of two products, (H v)_W and (H v)_b; got "
        f"{type(got).__name__}{f' of length {len(got)}' if hasattr(got, '__len__') else ''}"
    )
    got = [_array(block) for block in got]
    for name, block, param in zip(("W", "b"), got, (W, b), strict=True):
        assert block.shape == param.shape, (
            f"(H v)_{name} must have {name}'s shape {param.shape}, got {block.shape}"
        )

    blocks = hessian(loss_fn, (W.detach(), b.detach()))  # blocks[k][j]: d2L / dparam_k dparam_j
    expected = [
        sum(np.tensordot(blocks[k][j].numpy(), vs[j].numpy(), axes=vs[j].ndim) for j in range(2))
        for k in range(2)
    ]
    only_own_block = [
        np.tensordot(blocks[k][k].numpy(), vs[k].numpy(), axes=vs[k].ndim) for k in range(2)
    ]
    if all(np.allclose(g, e) for g, e in zip(got, only_own_block, strict=True)):
        raise AssertionError(
            "each (H v)_k holds only H_kk v_k: the product must mix the parameters, (H v)_W = "
            "H_WW v_W + H_Wb v_b. Take the gradient of ONE scalar, sum_k sum(v_k * g_k), with "
            "respect to all the parameters at once"
        )
    for name, g, e in zip(("W", "b"), got, expected, strict=True):
        assert np.allclose(g, e, rtol=1e-6, atol=1e-9), (
            f"(H v)_{name} is wrong: expected {np.round(e, 5).tolist()}, got "
            f"{np.round(g, 5).tolist()}"
        )
    assert W.grad is None and b.grad is None, (
        "the parameters' .grad changed: take both derivatives with mt.grad, which returns "
        "them, rather than .backward(), which accumulates into .grad"
    )


@exercise
def check_quadratic_form_derivatives(quadratic_form_derivatives):
    rng = np.random.default_rng(1)
    for symmetric in (False, True):
        matrix = rng.standard_normal((4, 4))
        if symmetric:
            matrix = matrix + matrix.T
        b, x = rng.standard_normal(4), rng.standard_normal(4)
        gradient, hess = _pair(
            quadratic_form_derivatives(matrix.copy(), b.copy(), x.copy()), "(gradient, hessian)"
        )
        assert gradient.shape == (4,) and hess.shape == (4, 4), (
            f"for n = 4 the gradient has shape (4,) and the Hessian (4, 4); got "
            f"{gradient.shape} and {hess.shape}"
        )

        matrix_t, b_t = mt.tensor(matrix), mt.tensor(b)

        def f(t, matrix_t=matrix_t, b_t=b_t):
            return t @ (matrix_t @ t) + b_t @ t

        point = mt.tensor(x, requires_grad=True)
        (expected_gradient,) = mt.grad(f(point), point)
        expected_gradient = expected_gradient.numpy()
        expected_hessian = hessian(f, mt.tensor(x)).numpy()
        kind = "symmetric" if symmetric else "non-symmetric"
        if not symmetric and np.allclose(hess, 2 * matrix):
            raise AssertionError(
                "your Hessian is 2A, right only when A is symmetric. In x^T A x = "
                "sum_ij A_ij x_i x_j, x_k appears as x_i (row k of A) and as x_j (column k)"
            )
        assert np.allclose(hess, expected_hessian), (
            f"for a {kind} A the Hessian should be {np.round(expected_hessian, 3).tolist()}, "
            f"got {np.round(hess, 3).tolist()}"
        )
        if not symmetric and np.allclose(gradient, 2 * matrix @ x + b):
            raise AssertionError(
                "your gradient is 2 A x + b, right only when A is symmetric: x_k appears in "
                "row k and in column k of the sum"
            )
        assert np.allclose(gradient, expected_gradient), (
            f"for a {kind} A the gradient should be {np.round(expected_gradient, 4).tolist()}, "
            f"got {np.round(gradient, 4).tolist()}"
        )


def _logistic_derivatives(w, X, y, l2):
    """The gradient and Hessian of the L2-regularised mean logistic loss, in closed form."""
    p = 1 / (1 + np.exp(-(X @ w)))
    gradient = X.T @ (p - y) / len(y) + l2 * w
    hess = X.T @ (X * (p * (1 - p))[:, None]) / len(y) + l2 * np.eye(len(w))
    return gradient, hess


@exercise
def check_newton_step_logistic(newton_step_logistic):
    rng = np.random.default_rng(2)
    N, d, l2 = 40, 3, 0.1
    X = rng.standard_normal((N, d))
    y = (rng.uniform(size=N) < 1 / (1 + np.exp(-(X @ np.array([2.0, -1.0, 0.5]))))) * 1.0
    w = 0.5 * rng.standard_normal(d)

    got = _array(newton_step_logistic(w.copy(), X.copy(), y.copy(), l2))
    assert got.shape == (d,), f"return the new weights, shape ({d},); got {got.shape}"
    gradient, hess = _logistic_derivatives(w, X, y, l2)
    expected = w - np.linalg.solve(hess, gradient)
    if np.allclose(got, w - gradient):
        raise AssertionError(
            "that is a gradient step, w - g: Newton's step solves H d = g and moves by d"
        )
    if np.allclose(got, w + np.linalg.solve(hess, gradient)):
        raise AssertionError("the step has the wrong sign: w <- w - H^{-1} g")
    assert np.allclose(got, expected, rtol=1e-7, atol=1e-10), (
        f"from w = {np.round(w, 4).tolist()} Newton's step lands on "
        f"{np.round(expected, 6).tolist()}, got {np.round(got, 6).tolist()}"
    )

    w = np.zeros(d)
    norms = []
    for _ in range(6):
        w = _array(newton_step_logistic(w, X, y, l2))
        norms.append(float(np.linalg.norm(_logistic_derivatives(w, X, y, l2)[0])))
    assert norms[-1] < 1e-10, (
        f"six Newton steps from zero should bring |gradient| below 1e-10 (quadratic "
        f"convergence); the norms per step were {[f'{n:.1e}' for n in norms]}"
    )


def _exponential_fit(theta, t, y):
    """Residuals theta_0 exp(theta_1 t) - y, their Jacobian, and sum_i r_i * Hessian(r_i)."""
    e = np.exp(theta[1] * t)
    r = theta[0] * e - y
    jac = np.stack([e, theta[0] * t * e], axis=1)
    cross = np.sum(r * t * e)  # d2 r_i / d theta_0 d theta_1 = t_i e_i; d2 / d theta_0^2 = 0
    curvature = np.array([[0.0, cross], [cross, np.sum(r * theta[0] * t**2 * e)]])
    return r, jac, curvature


@exercise
def check_least_squares_steps(least_squares_steps):
    rng = np.random.default_rng(3)
    t = np.linspace(0, 1, 8)
    y = 2 * np.exp(-1.5 * t) + 0.05 * rng.standard_normal(8)
    t_t, y_t = mt.tensor(t), mt.tensor(y)

    def residuals(theta):
        return theta[0] * (theta[1] * t_t).exp() - y_t

    theta = np.array([1.0, -0.5])
    newton, gauss_newton = _pair(
        least_squares_steps(residuals, theta.copy()), "(newton_theta, gauss_newton_theta)"
    )
    assert newton.shape == (2,) and gauss_newton.shape == (2,), (
        f"theta has 2 entries, so does each step; got shapes {newton.shape}, {gauss_newton.shape}"
    )
    r, jac, curvature = _exponential_fit(theta, t, y)
    expected_gn = theta - np.linalg.solve(jac.T @ jac, jac.T @ r)
    expected_newton = theta - np.linalg.solve(jac.T @ jac + curvature, jac.T @ r)
    if np.allclose(newton, expected_gn) and np.allclose(gauss_newton, expected_newton):
        raise AssertionError("the two steps are swapped: return (newton, gauss_newton)")
    if np.allclose(newton, expected_gn):
        raise AssertionError(
            "your Newton step is the Gauss-Newton step: Newton's uses the whole Hessian of "
            "0.5 |r|^2, J^T J + sum_i r_i Hessian(r_i)"
        )
    assert np.allclose(gauss_newton, expected_gn, rtol=1e-7), (
        f"on the exponential fit from theta = {theta.tolist()}, Gauss-Newton lands on "
        f"{np.round(expected_gn, 6).tolist()}, got {np.round(gauss_newton, 6).tolist()}"
    )
    assert np.allclose(newton, expected_newton, rtol=1e-7), (
        f"on the exponential fit from theta = {theta.tolist()}, Newton lands on "
        f"{np.round(expected_newton, 6).tolist()}, got {np.round(newton, 6).tolist()}"
    )

    M = rng.standard_normal((8, 3))
    b = rng.standard_normal(8)
    design, targets = mt.tensor(M), mt.tensor(b)
    solution = np.linalg.lstsq(M, b, rcond=None)[0]
    newton, gauss_newton = _pair(
        least_squares_steps(lambda theta: design @ theta - targets, rng.standard_normal(3)),
        "(newton_theta, gauss_newton_theta)",
    )
    for name, step in (("Newton", newton), ("Gauss-Newton", gauss_newton)):
        assert np.allclose(step, solution), (
            f"for linear residuals M theta - b, one {name} step from anywhere lands on the "
            f"least-squares solution {np.round(solution, 5).tolist()}; got "
            f"{np.round(step, 5).tolist()}"
        )
