"""minitrain.autograd: the engine, a layer below Tensor (which imports it): grad_mode.py (the
grad modes, per thread, and anomaly mode, process-wide), versions.py (the in-place writes each
memory has seen and the rules on views), anomaly.py (anomaly mode's checks), deferred.py (sums
kept in pieces), node.py (Node), hooks.py, walk.py (the backward walk), api.py (backward and
grad), tape.py (the Tape), gradcheck.py (finite-difference checks), and boundary.py, through
which the engine's edges see the Tensor class; and, as `minitrain.autograd.functional`,
PyTorch's functional higher-order API (vjp, jvp, jacobian, hessian, hvp, vhp), which is built
from ops and so imported by the package once ops exist.

The grad modes are re-exported here as PyTorch has them: `minitrain.autograd.no_grad`, ..."""

from .api import backward, grad, root_grads
from .grad_mode import (
    detect_anomaly,
    enable_grad,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from .hooks import RemovableHandle
from .node import BackwardScope, Node, unbroadcast
from .tape import Tape, distinct_bytes
from .walk import graph_nodes, propagate, replay_backward

__all__ = [
    "BackwardScope",
    "Function",
    "Node",
    "RemovableHandle",
    "Tape",
    "backward",
    "detect_anomaly",
    "distinct_bytes",
    "enable_grad",
    "grad",
    "graph_nodes",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "propagate",
    "replay_backward",
    "root_grads",
    "set_detect_anomaly",
    "set_grad_enabled",
    "unbroadcast",
]


def __getattr__(name):
    """`Function` (PyTorch's custom op with its own backward), read from
    minitrain.autograd.function: built from Tensors and ops, it sits in their layer above the
    engine, and the package imports it once they exist (minitrain/__init__.py)."""
    if name == "Function":
        from .function import Function

        return Function
    raise AttributeError(f"module 'minitrain.autograd' has no attribute '{name}'")
