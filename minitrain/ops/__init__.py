"""Every op as a function, and the registry that lists them with their backward kernels."""

from .activation import (
    gelu,
    gelu_grad,
    leaky_relu,
    leaky_relu_grad,
    log_softmax,
    log_softmax_grad,
    quick_gelu,
    quick_gelu_grad,
    relu,
    relu_grad,
    sigmoid,
    sigmoid_grad,
    silu,
    softmax,
    softmax_grad,
    tanh,
    tanh_grad,
)
from .conv import col2im, conv, conv_grad, im2col
from .elementwise import (
    abs,
    add,
    cast,
    clip,
    div,
    equal,
    exp,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    mul,
    neg,
    not_equal,
    pow,
    sqrt,
    sub,
    to_device,
    where,
)
from .linalg import linear, matmul
from .loss import (
    binary_cross_entropy_with_logits,
    cross_entropy,
    huber_loss,
    l1_loss,
    mse_loss,
    nll_loss,
    smooth_l1_loss,
    softmax_cross_entropy_grad,
)
from .normalization import (
    batch_norm,
    batch_norm_composite,
    batch_norm_grad,
    invertible_layer_norm_grad,
    layer_norm,
    layer_norm_grad,
    rms_norm,
    simplified_layer_norm_grad,
)
from .pooling import (
    adaptive_avg_pool,
    adaptive_avg_pool_grad,
    avg_pool,
    avg_pool_grad,
    max_pool,
    max_pool_grad,
)
from .random import dropout, dropout_grad
from .reduction import all, any, argmax, argmin, logsumexp, max, mean, min, std, sum, var
from .registry import Ctx, Op, registry
from .shape import (
    broadcast_to,
    concat,
    flatten,
    getitem,
    pad,
    permute,
    reshape,
    stack,
    transpose,
)

__all__ = [
    "Ctx", "Op", "registry",
    "add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "abs", "maximum", "minimum",
    "where", "clip", "cast", "to_device",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "sum", "mean", "max", "min", "var", "std", "logsumexp", "argmax", "argmin", "all", "any",
    "reshape", "flatten", "transpose", "permute", "broadcast_to", "getitem", "concat", "stack",
    "pad",
    "matmul", "linear",
    "dropout", "dropout_grad",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "binary_cross_entropy_with_logits", "softmax_cross_entropy_grad",
    "relu", "leaky_relu", "sigmoid", "tanh", "quick_gelu", "silu", "gelu", "softmax", "log_softmax",
    "relu_grad", "leaky_relu_grad", "sigmoid_grad", "tanh_grad", "quick_gelu_grad", "gelu_grad",
    "softmax_grad", "log_softmax_grad",
    "batch_norm", "batch_norm_composite", "layer_norm", "rms_norm",
    "batch_norm_grad", "layer_norm_grad", "invertible_layer_norm_grad",
    "simplified_layer_norm_grad",
    "conv", "conv_grad", "im2col", "col2im",
    "max_pool", "avg_pool", "adaptive_avg_pool",
    "max_pool_grad", "avg_pool_grad", "adaptive_avg_pool_grad",
]  # fmt: skip
