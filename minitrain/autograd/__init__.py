"""minitrain.autograd: the engine (engine.py: Node, the backward walk, grad, the Tape) and, as
`minitrain.autograd.functional`, PyTorch's functional higher-order API (vjp, jvp, jacobian,
hessian, hvp, vhp), which is built from ops and so imported by the package once ops exist.

The grad modes are re-exported here as PyTorch has them: `minitrain.autograd.no_grad`, ..."""

from .engine import (
    BackwardScope,
    Node,
    RemovableHandle,
    Tape,
    backward,
    distinct_bytes,
    grad,
    graph_nodes,
    propagate,
    replay_backward,
    root_grads,
    unbroadcast,
)
from .grad_mode import (
    detect_anomaly,
    enable_grad,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)

__all__ = [
    "BackwardScope",
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
