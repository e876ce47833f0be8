"""nn.functional and the nn layers against PyTorch's signatures: every PyTorch parameter taken,
in PyTorch's order, kind and default; PyTorch arguments minitrain cannot honour refused by name
unless they hold their default; and the arguments added for parity against PyTorch's results."""

from __future__ import annotations

import ast
import inspect
import typing
import warnings

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, GraphError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)

torch = pytest.importorskip("torch")
TF = torch.nn.functional

# minitrain's names that PyTorch does not have
BEYOND_TORCH = {"quick_gelu", "QuickGELU"}
# minitrain's keyword-only parameters beyond PyTorch's, each a documented feature (docs/kernels.md)
EXTRA_KEYWORDS = {
    "layer_norm": {"invertible"},  # saves the output instead of the input for backward
    "LayerNorm": {"invertible"},
}
CONTAINERS = {"Module", "Parameter", "StateDictError", "Sequential", "ModuleList", "ModuleDict"}

FUNCTIONS = sorted(
    name
    for name, value in vars(F).items()
    if not name.startswith("_")
    and inspect.isfunction(value)
    and value.__module__.startswith(F.__name__)  # its modules: nn/functional/*.py
    and name not in BEYOND_TORCH
)
SUBMODULES = {"functional", "init", "modules", "parallel", "utils"}
LAYERS = sorted(set(nn.__all__) - CONTAINERS - BEYOND_TORCH - SUBMODULES)


def _from_docstring(function) -> list[inspect.Parameter]:
    """The parameters of a builtin PyTorch function, from its docstring's head (which may span
    lines): 'conv1d(input, weight, bias=None, stride=1, ...) -> Tensor'."""
    head = " ".join(function.__doc__.strip().split(" -> ")[0].split())  # may span lines
    arguments = ast.parse(f"def {head}: pass").body[0].args
    missing = [inspect.Parameter.empty] * (len(arguments.args) - len(arguments.defaults))
    defaults = missing + [ast.literal_eval(d) for d in arguments.defaults]
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return [
        inspect.Parameter(a.arg, kind, default=d)
        for a, d in zip(arguments.args, defaults, strict=True)
    ]


def _torch_parameters(name: str) -> list[inspect.Parameter]:
    # a dispatcher on return_indices; the _with_indices form takes them all
    if name.startswith(("max_pool", "adaptive_max_pool")) and not name.endswith("_with_indices"):
        return list(inspect.signature(getattr(TF, f"{name}_with_indices")).parameters.values())
    function = getattr(TF, name)
    try:
        return list(inspect.signature(function).parameters.values())
    except ValueError:  # a builtin
        return _from_docstring(function)


def _default(value):
    """A function as a default (the transformer layers' activation=F.relu) by its name: PyTorch's
    F.relu and minitrain's are different objects for the same function."""
    return f"<function {value.__name__}>" if inspect.isfunction(value) else value


def _described(parameters, extra=()) -> list[tuple]:
    return [(p.name, p.kind.name, _default(p.default)) for p in parameters if p.name not in extra]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functional_takes_torchs_parameters_in_order_with_its_defaults(name):
    assert hasattr(TF, name), f"F.{name}: not in PyTorch; add it to BEYOND_TORCH"
    ours = inspect.signature(getattr(F, name)).parameters.values()
    extra = EXTRA_KEYWORDS.get(name, set())
    assert all(p.kind is p.KEYWORD_ONLY for p in ours if p.name in extra)
    assert _described(ours, extra) == _described(_torch_parameters(name))


@pytest.mark.parametrize("name", LAYERS)
def test_layer_takes_torchs_constructor_parameters_in_order_with_its_defaults(name):
    init = getattr(torch.nn, name).__init__
    # RNN, LSTM, GRU: (*args, **kwargs) and typing overloads (readable from Python 3.11 on)
    overloads = getattr(typing, "get_overloads", lambda function: [])(init)
    theirs = list(inspect.signature(overloads[0] if overloads else init).parameters.values())[1:]
    if all(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in theirs):
        theirs = []  # Module's own __init__: the layer takes no arguments
    ours = list(inspect.signature(getattr(nn, name).__init__).parameters.values())[1:]
    extra = EXTRA_KEYWORDS.get(name, set())
    assert all(p.kind is p.KEYWORD_ONLY for p in ours if p.name in extra)
    if name == "Identity":  # takes and ignores anything, as PyTorch's
        assert [p.kind.name for p in ours] == ["VAR_POSITIONAL", "VAR_KEYWORD"]
        return
    assert _described(ours, extra) == _described(theirs)


# PyTorch arguments minitrain cannot honour: the default taken, anything else refused.
sample = mt.tensor(np.arange(6.0).reshape(2, 3))
table = mt.tensor(np.ones((4, 2)))
indices = np.array([0, 3])
UNSUPPORTED = [
    ("embedding", "max_norm", lambda v: F.embedding(indices, table, None, v), None, 1.0),
    ("embedding", "scale_grad_by_freq",
     lambda v: F.embedding(indices, table, scale_grad_by_freq=v), False, True),
    ("embedding", "sparse", lambda v: F.embedding(indices, table, sparse=v), False, True),
    ("Embedding", "max_norm", lambda v: nn.Embedding(4, 2, max_norm=v), None, 2.0),
    ("Embedding", "sparse", lambda v: nn.Embedding(4, 2, sparse=v), False, True),
    ("Embedding.from_pretrained", "scale_grad_by_freq",
     lambda v: nn.Embedding.from_pretrained(table, scale_grad_by_freq=v), False, True),
    ("mse_loss", "weight", lambda v: F.mse_loss(sample, sample, weight=v), None, sample),
    ("l1_loss", "weight", lambda v: F.l1_loss(sample, sample, weight=v), None, sample),
    ("huber_loss", "weight", lambda v: F.huber_loss(sample, sample, weight=v), None, sample),
]  # fmt: skip


@pytest.mark.parametrize(
    "caller, name, call, default, other",
    UNSUPPORTED,
    ids=[f"{caller}-{name}" for caller, name, *_ in UNSUPPORTED],
)
def test_unsupported_argument_takes_its_default_and_refuses_anything_else(
    caller, name, call, default, other
):
    call(default)
    with pytest.raises(ArgumentError, match=rf"^{caller}: {name}=\S+ is not supported"):
        call(other)


def _takes_inplace(value) -> bool:
    return "inplace" in inspect.signature(value).parameters


def _inplace_call(library, name: str):
    """F.<name> or nn.<name> of `library` (minitrain or torch; built with its defaults, in eval
    mode: dropout's mask is the identity there) run with inplace set as asked."""
    functional, layers = (F, nn) if library is mt else (TF, torch.nn)
    # the arguments without defaults (threshold's), then dropout made the identity
    keywords = {"threshold": 0.1, "value": 20.0} if name.lower() == "threshold" else {}
    if name in FUNCTIONS:
        keywords.update({"training": False} if "dropout" in name else {})
        return lambda x, v: getattr(functional, name)(x, inplace=v, **keywords)
    return lambda x, v: getattr(layers, name)(inplace=v, **keywords).eval()(x)


# every function and layer that takes PyTorch's `inplace`, read from their signatures
IN_PLACE = [
    name
    for name in FUNCTIONS + LAYERS
    if _takes_inplace(getattr(F, name, None) or getattr(nn, name))
]
# where minitrain accepts inplace and computes out of place whatever it says (the flag only
# saves memory in PyTorch; dropout's mask is drawn apart from its input)
IGNORED = {
    "dropout", "Dropout", "dropout1d", "Dropout1d", "dropout2d", "Dropout2d", "dropout3d",
    "Dropout3d", "alpha_dropout", "AlphaDropout", "feature_alpha_dropout", "FeatureAlphaDropout",
}  # fmt: skip


@pytest.mark.parametrize("where", sorted(set(IN_PLACE) - IGNORED))
def test_inplace_writes_into_the_input_as_torch(where):
    """`nn.ReLU(inplace=True)` is everywhere in PyTorch code: the result is written into the
    input, which is returned, its gradient flowing as PyTorch's; a leaf that requires grad is
    refused, as PyTorch refuses it."""
    values = np.linspace(-2.0, 2.0, 6).reshape(2, 3)
    leaf, t_leaf = mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    x, tx = leaf * 1.0, t_leaf * 1.0  # tensors in the graph, which may change in place
    out, expected = _inplace_call(mt, where)(x, True), _inplace_call(torch, where)(tx, True)
    assert out is x and expected is tx
    np.testing.assert_allclose(x.numpy(), tx.detach().numpy(), rtol=1e-15)
    upstream = np.random.default_rng(2).standard_normal(values.shape)
    out.backward(upstream)
    expected.backward(torch.from_numpy(upstream))
    # (PyTorch's float64 hardsigmoid gradient is 1/6 rounded to float32)
    np.testing.assert_allclose(leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-7)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        _inplace_call(torch, where)(t_leaf, True)
    with pytest.raises(GraphError, match="a leaf tensor that requires grad cannot change"):
        _inplace_call(mt, where)(leaf, True)
    x = mt.tensor(values)
    np.testing.assert_array_equal(_inplace_call(mt, where)(x, False).numpy(), out.numpy())
    np.testing.assert_array_equal(x.numpy(), values)  # inplace=False leaves the input


@pytest.mark.parametrize("where", sorted(IGNORED))
def test_inplace_is_accepted_and_changes_nothing_where_ignored(where):
    x = mt.tensor(np.linspace(-2.0, 2.0, 6).reshape(2, 3), requires_grad=True)
    before = x.numpy().copy()
    call = _inplace_call(mt, where)
    np.testing.assert_array_equal(call(x, True).numpy(), call(x, False).numpy())
    np.testing.assert_array_equal(x.numpy(), before)


LEGACY = [(None, False), (False, None), (True, True), (False, False), (True, False)]


@pytest.mark.parametrize("size_average, reduce", LEGACY)
@pytest.mark.parametrize(
    "where, call",
    [
        ("cross_entropy", lambda s, r: F.cross_entropy(sample, np.array([0, 2]), None, s, -100, r)),
        ("nll_loss", lambda s, r: F.nll_loss(sample, np.array([0, 2]), size_average=s, reduce=r)),
        ("mse_loss", lambda s, r: F.mse_loss(sample, sample, s, r)),
        ("l1_loss", lambda s, r: F.l1_loss(sample, sample, s, r)),
        ("smooth_l1_loss", lambda s, r: F.smooth_l1_loss(sample, sample, s, r)),
        ("binary_cross_entropy_with_logits",
         lambda s, r: F.binary_cross_entropy_with_logits(sample, sample, None, s, r)),
        ("binary_cross_entropy",
         lambda s, r: F.binary_cross_entropy(sample / 5, sample / 5, None, s, r)),
        ("BCELoss", lambda s, r: nn.BCELoss(None, s, r)),
        ("CrossEntropyLoss", lambda s, r: nn.CrossEntropyLoss(None, s, -100, r)),
        ("NLLLoss", lambda s, r: nn.NLLLoss(size_average=s, reduce=r)),
        ("MSELoss", lambda s, r: nn.MSELoss(s, r)),
        ("L1Loss", lambda s, r: nn.L1Loss(s, r)),
        ("SmoothL1Loss", lambda s, r: nn.SmoothL1Loss(s, r)),
        ("BCEWithLogitsLoss", lambda s, r: nn.BCEWithLogitsLoss(None, s, r)),
    ],
)  # fmt: skip
def test_deprecated_size_average_and_reduce_mean_the_reduction_pytorch_reads(
    where, call, size_average, reduce
):
    meant = torch.nn._reduction.legacy_get_string(size_average, reduce, emit_warning=False)
    warning = rf"^{where}: size_average and reduce .* use reduction='{meant}' instead"
    with pytest.warns(UserWarning, match=warning):
        got = call(size_average, reduce)
    if isinstance(got, nn.Module):
        assert got.reduction == meant
        return
    with pytest.warns(UserWarning):
        each = call(None, False).numpy()  # reduction='none': one loss per element or sample
    expected = {"none": each, "sum": each.sum(), "mean": each.mean()}[meant]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_no_legacy_argument_keeps_reduction_and_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert F.mse_loss(sample, sample * 2, reduction="sum").item() == pytest.approx(
            float(((sample.numpy() - 2 * sample.numpy()) ** 2).sum())
        )
        assert nn.L1Loss(reduction="none").reduction == "none"


# softmax: PyTorch's implicit dim and dtype.
def _assert_same(ours, theirs, inputs) -> None:
    """ours and theirs (functions of tensors) agree in value and in every input's gradient."""
    tensors = [mt.tensor(a, requires_grad=True) for a in inputs]
    references = [torch.tensor(a, requires_grad=True) for a in inputs]
    out, expected = ours(*tensors), theirs(*references)
    assert out.dtype == np.dtype(str(expected.dtype).removeprefix("torch."))
    np.testing.assert_allclose(out.array, expected.detach().numpy(), rtol=1e-12, atol=1e-14)
    upstream = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(upstream.astype(out.dtype))
    expected.backward(torch.tensor(upstream, dtype=expected.dtype))
    for tensor, reference in zip(tensors, references, strict=True):
        np.testing.assert_allclose(
            tensor.grad.array, reference.grad.numpy(), rtol=1e-12, atol=1e-14
        )


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (2, 3, 4, 2)])
@pytest.mark.parametrize(
    "ours, theirs",
    [
        (F.softmax, TF.softmax),
        (F.log_softmax, TF.log_softmax),
        (lambda t: nn.Softmax()(t), lambda t: torch.nn.Softmax()(t)),
        (lambda t: nn.LogSoftmax()(t), lambda t: torch.nn.LogSoftmax()(t)),
    ],
    ids=["softmax", "log_softmax", "Softmax", "LogSoftmax"],
)
def test_softmax_without_dim_takes_torchs_implicit_dim_and_warns(ours, theirs, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    with pytest.warns(UserWarning, match="Implicit dimension choice") as warned:
        ours(mt.tensor(x))
    assert [w.filename for w in warned] == [__file__]  # the caller's line, not minitrain's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _assert_same(ours, theirs, [x])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_dtype_casts_the_input_first(name):
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    _assert_same(
        lambda t: getattr(F, name)(t, 1, dtype=np.float64),
        lambda t: getattr(TF, name)(t, 1, dtype=torch.float64),
        [x],
    )


# F.pad and the conv layers' padding_mode.
@pytest.mark.parametrize(
    "pad, mode, value",
    [
        ((1, 2), "constant", None),
        ((2, 0, 1, 3), "constant", -1.5),
        ((-1, 2, 0, -2), "constant", 0.5),
        ((1, 0, 0, 1, 2, 2, 1, 0), "constant", None),
        ((2, 1, 0, 3), "reflect", None),
        ((4, 4, 3, 3), "reflect", None),
        ((2, 1, 0, 3), "replicate", None),
        ((7, 6, 5, 0), "replicate", None),
        ((-2, 3, 1, -1), "reflect", None),  # negative pads crop, as in constant mode
        ((-3, -1, 2, -2), "replicate", None),
        ((2, 1, 0, 3), "circular", None),
        ((5, 5, 4, 1), "circular", None),
        # circular crops first, then wraps around what is left (at most once), as torch
        ((1, -2, -1, -1), "circular", None),
        ((-2, 1, 2, -2), "circular", None),
        ((3, -1, -3, 0), "circular", None),
        ((-4, 1, 0, 0), "circular", None),
        # pads that empty a dim
        ((-5, 0), "constant", None),
        ((0, -5, 0, 0), "circular", None),
    ],
)
def test_pad_matches_torch(pad, mode, value):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    _assert_same(lambda t: F.pad(t, pad, mode, value), lambda t: TF.pad(t, pad, mode, value), [x])


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda t: F.pad(t, (1, 1), "zeros"), ArgumentError, "pad: mode must be one of"),
        (lambda t: F.pad(t, (1, 1), "reflect", 0.0), ArgumentError, "'reflect' takes no value"),
        (lambda t: F.pad(t, (1, 0, 1)), ShapeError, "an even number of ints"),
        (lambda t: F.pad(t, 1), ShapeError, "an even number of ints.* got 1$"),
        (lambda t: F.pad(t, (1,) * 8), ShapeError, "two per padded dim of shape"),
        (lambda t: F.pad(t, (3, 0), "reflect"), ShapeError, r"pads from -3 to 2 for dim 2"),
        (lambda t: F.pad(t, (-2, -1), "reflect"), ShapeError, r"at least one element"),
        (lambda t: F.pad(t, (-1, 3), "circular"), ShapeError, r"keeps 2 elements.* from -3 to 2"),
        (lambda t: F.pad(t, (-3, 1), "circular"), ShapeError, r"keeps 0 elements"),
        (lambda t: F.pad(t, (4, 0), "circular"), ShapeError, r"wraps at most once"),
        (lambda t: F.pad(t, (-2, -2)), ShapeError, r"crop more than dim 2 of size 3"),
    ],
)
def test_pad_errors_name_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call(mt.zeros(2, 2, 3))


@pytest.mark.parametrize("padding_mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    "dims, options",
    [
        (1, {"padding": 2, "stride": 2}),
        (2, {"padding": (1, 2)}),
        (2, {"padding": "same", "dilation": 2}),
        (3, {"padding": 1, "groups": 2}),
    ],
)
def test_conv_padding_mode_matches_torch(padding_mode, dims, options):
    layer = f"Conv{dims}d"
    ours = getattr(nn, layer)(4, 2, 3, padding_mode=padding_mode, dtype=np.float64, **options)
    theirs = getattr(torch.nn, layer)(4, 2, 3, padding_mode=padding_mode, **options).double()
    assert repr(ours) == repr(theirs)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(ours.weight.array))
        theirs.bias.copy_(torch.from_numpy(ours.bias.array))
    x = np.random.default_rng(0).standard_normal((2, 4) + (6,) * dims)
    _assert_same(ours, theirs, [x])
    for name in ("weight", "bias"):
        np.testing.assert_allclose(
            getattr(ours, name).grad.array, getattr(theirs, name).grad.numpy(), rtol=1e-12
        )


# Device and dtype, as PyTorch's factory arguments.
FACTORIES = [
    ("Linear", lambda **kw: nn.Linear(3, 2, True, **kw)),
    ("Conv2d", lambda **kw: nn.Conv2d(2, 4, 3, 1, 0, 1, 1, True, "zeros", **kw)),
    ("ConvTranspose1d",
     lambda **kw: nn.ConvTranspose1d(2, 4, 3, 1, 0, 0, 1, True, 1, "zeros", **kw)),
    ("ConvTranspose2d",
     lambda **kw: nn.ConvTranspose2d(2, 4, 3, 1, 0, 0, 1, True, 1, "zeros", **kw)),
    ("ConvTranspose3d",
     lambda **kw: nn.ConvTranspose3d(2, 4, 3, 1, 0, 0, 1, True, 1, "zeros", **kw)),
    ("BatchNorm1d", lambda **kw: nn.BatchNorm1d(3, 1e-5, 0.1, True, True, **kw)),
    ("LayerNorm", lambda **kw: nn.LayerNorm(3, 1e-5, True, True, **kw)),
    ("RMSNorm", lambda **kw: nn.RMSNorm(3, None, True, **kw)),
    ("GroupNorm", lambda **kw: nn.GroupNorm(2, 4, 1e-5, True, **kw)),
    ("Embedding",
     lambda **kw: nn.Embedding(5, 3, None, None, 2.0, False, False, None, False, **kw)),
    ("PReLU", lambda **kw: nn.PReLU(3, 0.25, **kw)),
]  # fmt: skip


@pytest.mark.parametrize("name, make", FACTORIES, ids=[name for name, _ in FACTORIES])
def test_layers_take_device_and_dtype_as_torch(name, make):
    for layer, dtype in [
        (make(), np.float32),
        (make(device=None, dtype=None), np.float32),
        (make(device="cpu", dtype=np.float64), np.float64),
        (make(device=mt.device("cpu"), dtype="float16"), np.float16),
    ]:
        assert {p.dtype for p in layer.parameters()} == {np.dtype(dtype)}, name
        assert all(p.device == mt.device("cpu") for p in [*layer.parameters(), *layer.buffers()])
    with pytest.raises(DTypeError, match=f"{name}: dtype must be a floating numpy dtype"):
        make(dtype=np.int64)
    with pytest.raises(DTypeError, match=f"{name}: dtype must be .*, got torch.float64"):
        make(dtype=torch.float64)


def test_layer_norm_positional_device_is_not_invertible():
    layer = nn.LayerNorm(4, 1e-5, True, True, "cpu", np.float64)
    assert not layer.invertible and layer.weight.dtype == np.float64


def test_embedding_takes_torchs_positional_arguments_and_checks_its_weight():
    layer = nn.Embedding(6, 3, 2, None, 2.0, False, False)
    assert layer.padding_idx == 2 and layer.weight.dtype == np.float32
    assert (layer.max_norm, layer.norm_type, layer.scale_grad_by_freq, layer.sparse) == (
        None, 2.0, False, False,
    )  # fmt: skip
    with pytest.raises(ShapeError, match=r"Embedding: _weight has shape \(2, 3\)"):
        nn.Embedding(6, 3, _weight=mt.zeros(2, 3))
