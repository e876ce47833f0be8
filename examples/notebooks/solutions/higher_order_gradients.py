"""Solutions to the exercises of 04_higher_order_gradients."""

from __future__ import annotations

import numpy as np

import minitrain as mt
from minitrain.autograd.functional import hessian, jacobian


def hvp_of_params(loss_fn, params, vs):
    """H v over several parameter tensors, by two backward calls: the gradient with
    create_graph (a function of the parameters), then the gradient of the one scalar v^T g.
    mt.grad returns the derivatives and leaves every .grad alone."""
    grads = mt.grad(loss_fn(*params), params, create_graph=True)
    v_dot_g = sum((v * g).sum() for v, g in zip(vs, grads, strict=True))
    return [product.numpy() for product in mt.grad(v_dot_g, params)]


def quadratic_form_derivatives(A, b, x):  # noqa: N803 (the A of x^T A x)
    """f(x) = x^T A x + b^T x = sum_ij A_ij x_i x_j + b^T x. In d/dx_k, x_k is an x_i (row k:
    sum_j A_kj x_j = (A x)_k) and an x_j (column k: sum_i A_ik x_i = (A^T x)_k), so the gradient
    is (A + A^T) x + b, and its derivative, the Hessian, is A + A^T, whatever x is."""
    return (A + A.T) @ x + b, A + A.T


def newton_step_logistic(w, X, y, l2):
    """One Newton step w - H^{-1} g, with g and H from autograd: mt.grad for the gradient,
    hessian() for the matrix (d x d, small here). The loss is the mean of
    softplus(z) - y z = log(1 + e^z) - y z, z = X w, plus (l2 / 2) |w|^2."""
    inputs, labels = mt.tensor(X), mt.tensor(y)

    def loss(weights):
        z = inputs @ weights
        penalty = l2 / 2 * (weights * weights).sum()
        return (mt.nn.functional.softplus(z) - labels * z).mean() + penalty

    point = mt.tensor(w, requires_grad=True)
    (gradient,) = mt.grad(loss(point), point)
    hess = hessian(loss, mt.tensor(w))
    return w - np.linalg.solve(hess.numpy(), gradient.numpy())


def least_squares_steps(residuals, theta):
    """(Newton step, Gauss-Newton step) for f = 0.5 |r(theta)|^2. Both share the gradient
    J^T r; Newton divides by the whole Hessian J^T J + sum_i r_i Hessian(r_i), Gauss-Newton by
    J^T J alone. The dropped term vanishes where the residuals are linear in theta (their
    Hessians are 0) or zero (an exact fit), and there the two steps agree."""
    point = mt.tensor(theta)
    r = residuals(point).numpy()
    jac = jacobian(residuals, point).numpy()
    gradient = jac.T @ r
    full = hessian(lambda t: 0.5 * (residuals(t) ** 2).sum(), point).numpy()
    newton = theta - np.linalg.solve(full, gradient)
    gauss_newton = theta - np.linalg.solve(jac.T @ jac, gradient)
    return newton, gauss_newton
