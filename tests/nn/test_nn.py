"""nn: Module registration, state dicts, modes, devices and hooks; the layers against PyTorch;
init, clipping and dropout."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import DeviceError, DTypeError, ShapeError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)
from minitrain.nn import init


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.second = nn.Linear(4, 2, bias=False)
        self.register_buffer("steps", mt.zeros(1))
        self.register_buffer("scratch", mt.zeros(2), persistent=False)

    def forward(self, x):
        return self.second(self.act(self.first(x)))


# Registration and traversal.
def test_assignment_registers_parameters_buffers_and_children_in_order():
    model = TwoLayer()
    assert [n for n, _ in model.named_parameters()] == [
        "first.weight",
        "first.bias",
        "second.weight",
    ]
    assert [n for n, _ in model.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in model.named_children()] == ["first", "act", "second"]
    assert [n for n, _ in model.named_modules()] == ["", "first", "act", "second"]
    assert model.second.bias is None
    assert all(p.requires_grad and p.is_leaf for p in model.parameters())


def test_shared_parameters_and_modules_are_listed_once():
    model = nn.Module()
    layer = nn.Linear(2, 2)
    model.a = layer
    model.b = layer
    model.extra = layer.weight
    assert len(list(model.parameters())) == 2
    assert len(list(model.modules())) == 2


def test_replacing_a_registered_name_keeps_the_tables_consistent():
    model = TwoLayer()
    model.first = None
    assert model.first is None and "first.weight" not in dict(model.named_parameters())
    with pytest.raises(DTypeError, match="a parameter can only be replaced"):
        model.second.weight = mt.zeros(2, 4)
    model.steps = mt.ones(1)
    assert model.state_dict()["steps"].item() == 1.0
    del model.act
    assert "act" not in dict(model.named_children())


def test_assignment_before_init_says_so():
    class Broken(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="super\\(\\).__init__\\(\\)"):
        Broken()


def test_missing_attribute_error_names_the_module():
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'weights'"):
        nn.Linear(1, 1).weights  # noqa: B018


# State dicts.
def test_state_dict_round_trip_into_a_fresh_model():
    mt.manual_seed(0)
    source = TwoLayer()
    mt.manual_seed(1)
    target = TwoLayer()
    state = source.state_dict()
    assert list(state) == ["steps", "first.weight", "first.bias", "second.weight"]  # as PyTorch
    missing, unexpected = target.load_state_dict(state)
    assert missing == [] and unexpected == []
    for (name, a), (_, b) in zip(
        source.state_dict().items(), target.state_dict().items(), strict=True
    ):
        np.testing.assert_array_equal(a.array, b.array, err_msg=name)
    # values are copied in place: the target's Parameter objects and arrays stay its own
    assert target.first.weight.array is not source.first.weight.array


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda s: s.pop("first.bias"), "missing keys: \\['first.bias'\\]"),
        (lambda s: s.__setitem__("extra", mt.zeros(1)), "unexpected keys: \\['extra'\\]"),
        (
            lambda s: s.__setitem__("second.weight", mt.zeros(4, 2)),
            "'second.weight': shape \\(4, 2\\) in the state dict, \\(2, 4\\) in the module",
        ),
    ],
)
def test_load_state_dict_errors_change_nothing(edit, message):
    model = TwoLayer()
    before = {k: v.array.copy() for k, v in model.state_dict().items()}
    state = {k: mt.tensor(v.array + 1.0) for k, v in model.state_dict().items()}
    edit(state)
    with pytest.raises(nn.StateDictError, match=message):
        model.load_state_dict(state)
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(value.array, before[key], err_msg=key)


def test_load_state_dict_not_strict_reports_and_loads_the_rest():
    model = TwoLayer()
    state = {"first.bias": np.full(4, 2.0), "unknown": np.zeros(1)}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert unexpected == ["unknown"]
    assert set(missing) == {"first.weight", "second.weight", "steps"}
    np.testing.assert_array_equal(model.first.bias.array, np.full(4, 2.0, np.float32))
    assert model.first.bias.dtype == np.float32


# Modes, grads, devices, dtypes.
def test_train_and_eval_reach_every_descendant():
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(0.5)))
    model.eval()
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    with pytest.raises(DTypeError, match="mode must be a bool"):
        model.train("no")


def test_zero_grad_to_none_or_to_zeros():
    model = TwoLayer()
    model(mt.randn(5, 3)).sum().backward()
    grad_array = model.first.weight.grad.array
    model.zero_grad(set_to_none=False)
    assert model.first.weight.grad.array is grad_array and not grad_array.any()
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_to_dtype_converts_in_place_and_keeps_the_parameter_objects():
    model = TwoLayer()
    weight = model.first.weight
    model.double()
    assert model.first.weight is weight and weight.dtype == np.float64
    assert model.steps.dtype == np.float64
    assert model(mt.randn(2, 3, dtype=mt.float64)).dtype == np.float64
    with pytest.raises(DTypeError, match="floating dtype"):
        model.to("int32")


def test_to_cpu_is_a_no_op_and_cuda_without_cupy_is_a_clear_error():
    pytest.importorskip("numpy")
    model = TwoLayer()
    array = model.first.weight.array
    model.to("cpu")
    assert model.first.weight.array is array
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(DeviceError, match="CuPy"):
            model.to("cuda")


def test_apply_visits_children_before_the_parent():
    model = TwoLayer()
    seen = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Linear", "ReLU", "Linear", "TwoLayer"]


def test_forward_hooks_can_replace_inputs_and_outputs_and_be_removed():
    layer = nn.Linear(2, 2)
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 0.0,))
    post = layer.register_forward_hook(lambda m, args, out: out + 1.0)
    out = layer(mt.ones(1, 2))
    np.testing.assert_allclose(out.array, layer.bias.array[None] + 1.0, rtol=1e-6)
    pre.remove()
    post.remove()
    x = mt.ones(1, 2)
    np.testing.assert_allclose(layer(x).array, F.linear(x, layer.weight, layer.bias).array)


def test_repr_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours = nn.Sequential(
        nn.Linear(4, 8), nn.GELU(), nn.Dropout(0.25), nn.Linear(8, 2, bias=False), nn.LeakyReLU()
    )
    theirs = torch.nn.Sequential(
        torch.nn.Linear(4, 8),
        torch.nn.GELU(),
        torch.nn.Dropout(0.25),
        torch.nn.Linear(8, 2, bias=False),
        torch.nn.LeakyReLU(),
    )
    assert repr(ours) == repr(theirs)


# Sequential and the other containers.
def test_sequential_indexing_slicing_names_and_append():
    model = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 3)), ("act", nn.Tanh())]))
    assert isinstance(model[0], nn.Linear) and model[-1] is model.act
    assert [n for n, _ in model.named_children()] == ["fc", "act"]
    head = model[:1]
    assert isinstance(head, nn.Sequential) and len(head) == 1 and head[0] is model.fc
    model.append(nn.Linear(3, 1))
    assert model(mt.randn(4, 2)).shape == (4, 1)
    with pytest.raises(IndexError, match="index 5 is out of range for 3 modules"):
        model[5]  # noqa: B018
    with pytest.raises(DTypeError, match="expected a Module, got function"):
        nn.Sequential(lambda x: x)


def test_module_list_and_dict_register_their_modules():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    layers.insert(0, nn.Identity())
    assert isinstance(layers[0], nn.Identity) and len(layers) == 4
    assert len(list(layers.parameters())) == 6
    table = nn.ModuleDict({"enc": nn.Linear(2, 3), "dec": nn.Linear(3, 2)})
    assert list(table) == ["enc", "dec"] and "enc" in table
    assert [n for n, _ in table.named_parameters()][:2] == ["enc.weight", "enc.bias"]


# Layers against PyTorch.
def _copy_parameters(ours: nn.Module, theirs) -> None:
    torch = pytest.importorskip("torch")
    with torch.no_grad():
        for (name, p), (_, q) in zip(
            ours.named_parameters(), theirs.named_parameters(), strict=True
        ):
            assert p.shape == tuple(q.shape), name
            q.copy_(torch.from_numpy(p.array))


@pytest.mark.parametrize(
    "make",
    [
        lambda nn_: nn_.Linear(5, 3),
        lambda nn_: nn_.Sequential(nn_.Linear(5, 4), nn_.SiLU(), nn_.Linear(4, 3)),
        lambda nn_: nn_.Sequential(nn_.Linear(5, 3, bias=False), nn_.Tanh()),
        lambda nn_: nn_.Sequential(nn_.Flatten(0), nn_.Sigmoid()),
        lambda nn_: nn_.Sequential(nn_.GELU("tanh"), nn_.LeakyReLU(0.2), nn_.Softmax(-1)),
        lambda nn_: nn_.LogSoftmax(1),
    ],
    ids=["linear", "mlp_silu", "no_bias_tanh", "flatten_sigmoid", "gelu_leaky_softmax", "logsm"],
)
def test_layers_forward_and_backward_match_torch(make):
    torch = pytest.importorskip("torch")
    ours, theirs = make(nn).double(), make(torch.nn).double()
    _copy_parameters(ours, theirs)
    x = np.random.default_rng(0).standard_normal((6, 5))
    xo, xt = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    np.testing.assert_allclose(yo.array, yt.detach().numpy(), rtol=1e-10, atol=1e-12)
    upstream = np.random.default_rng(1).standard_normal(yo.shape)
    yo.backward(upstream)
    yt.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(xo.grad.array, xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        np.testing.assert_allclose(
            p.grad.array, q.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name
        )


@pytest.mark.parametrize(
    "ours, theirs, target",
    [
        (lambda: nn.CrossEntropyLoss(label_smoothing=0.1),
         "CrossEntropyLoss(label_smoothing=0.1)", "labels"),
        (lambda: nn.CrossEntropyLoss(weight=np.arange(1.0, 5.0)),
         "CrossEntropyLoss(weight=w)", "labels"),
        (lambda: nn.NLLLoss(reduction="sum"), "NLLLoss(reduction='sum')", "labels"),
        (lambda: nn.MSELoss(), "MSELoss()", "values"),
        (lambda: nn.L1Loss(reduction="none"), "L1Loss(reduction='none')", "values"),
        (lambda: nn.SmoothL1Loss(beta=0.5), "SmoothL1Loss(beta=0.5)", "values"),
        (lambda: nn.HuberLoss(delta=0.5), "HuberLoss(delta=0.5)", "values"),
        (lambda: nn.BCEWithLogitsLoss(pos_weight=np.full(4, 2.0)),
         "BCEWithLogitsLoss(pos_weight=pw)", "probabilities"),
    ],
)  # fmt: skip
def test_loss_layers_match_torch(ours, theirs, target):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4))
    targets = {
        "labels": rng.integers(0, 4, 5),
        "values": rng.standard_normal((5, 4)),
        "probabilities": rng.uniform(0, 1, (5, 4)),
    }[target]
    namespace = {"w": torch.arange(1.0, 5.0, dtype=torch.float64), "pw": torch.full((4,), 2.0)}
    their_loss = eval("torch.nn." + theirs, {"torch": torch, **namespace})
    xo, xt = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    lo = ours()(xo, targets if target == "labels" else mt.tensor(targets))
    lt = their_loss(xt, torch.from_numpy(targets))
    np.testing.assert_allclose(lo.array, lt.detach().numpy(), rtol=1e-10)
    lo.sum().backward()
    lt.sum().backward()
    np.testing.assert_allclose(xo.grad.array, xt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_embedding_matches_torch_and_padding_gets_no_gradient():
    torch = pytest.importorskip("torch")
    ours = nn.Embedding(6, 3, padding_idx=-1).double()
    theirs = torch.nn.Embedding(6, 3, padding_idx=-1).double()
    assert ours.padding_idx == theirs.padding_idx == 5
    assert not ours.weight.array[5].any()
    _copy_parameters(ours, theirs)
    indices = np.array([[0, 5, 2], [5, 2, 2]])
    out_o, out_t = ours(indices), theirs(torch.from_numpy(indices))
    np.testing.assert_array_equal(out_o.array, out_t.detach().numpy())
    upstream = np.random.default_rng(0).standard_normal(out_o.shape)
    out_o.backward(upstream)
    out_t.backward(torch.from_numpy(upstream))
    np.testing.assert_allclose(ours.weight.grad.array, theirs.weight.grad.numpy(), rtol=1e-12)
    assert not ours.weight.grad.array[5].any()


def test_embedding_rejects_bad_indices():
    table = nn.Embedding(4, 2)
    with pytest.raises(IndexError, match="indices must lie in \\[0, 4\\).*from 0 to 4"):
        table(np.array([0, 4]))
    with pytest.raises(DTypeError, match="integer indices"):
        table(np.array([0.0, 1.0]))


# The Dropout layer in training and evaluation.
def test_dropout_drops_about_p_scales_the_rest_and_is_identity_in_eval():
    mt.manual_seed(0)
    layer = nn.Dropout(0.3)
    x = mt.ones(200_000)
    out = layer(x).array
    dropped = np.mean(out == 0)
    assert abs(dropped - 0.3) < 0.005
    np.testing.assert_allclose(out[out != 0], 1.0 / 0.7, rtol=1e-6)
    layer.eval()
    assert layer(x) is x


def test_dropout_gradient_uses_the_same_mask():
    mt.manual_seed(3)
    x = mt.randn(50, requires_grad=True)
    out = F.dropout(x, 0.5)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.array == 0, out.array == 0)


@pytest.mark.parametrize("p", [-0.1, 1.5, "half"])
def test_dropout_rejects_a_bad_probability(p):
    with pytest.raises(ValueError, match="p must be a probability in \\[0, 1\\]"):
        nn.Dropout(p)
    with pytest.raises(ValueError, match="dropout: p must be a probability"):
        F.dropout(mt.ones(2), p)


def test_dropout_p1_zeroes_everything():
    x = mt.ones(5, requires_grad=True)
    out = F.dropout(x, 1.0)
    assert not out.array.any()
    out.sum().backward()
    assert not x.grad.array.any()


# nn.init: the distributions' bounds and spreads.
@pytest.mark.parametrize(
    "name, kwargs, std",
    [
        # leaky_relu with a=0: gain sqrt(2), bound gain * sqrt(3 / fan_in), std bound / sqrt(3)
        ("kaiming_uniform_", {}, lambda fi, fo: math.sqrt(2 / fi)),
        ("kaiming_normal_", {"nonlinearity": "relu"}, lambda fi, fo: math.sqrt(2 / fi)),
        ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"},
         lambda fi, fo: math.sqrt(2 / fo)),
        ("xavier_uniform_", {}, lambda fi, fo: math.sqrt(2 / (fi + fo))),
        ("xavier_normal_", {"gain": 2.0}, lambda fi, fo: 2 * math.sqrt(2 / (fi + fo))),
    ],
)  # fmt: skip
def test_init_spreads_follow_their_formulas(name, kwargs, std):
    weight = mt.zeros(256, 64, 3, 3)  # fan_in 576, fan_out 2304
    getattr(init, name)(weight, generator=np.random.default_rng(0), **kwargs)
    assert weight.dtype == np.float32
    np.testing.assert_allclose(weight.array.std(), std(576, 2304), rtol=0.01)
    assert abs(weight.array.mean()) < 0.01 * std(576, 2304) * 10


def test_init_is_reproducible_from_a_generator_and_from_manual_seed():
    a, b = mt.zeros(4, 4), mt.zeros(4, 4)
    init.normal_(a, generator=np.random.default_rng(5))
    init.normal_(b, generator=np.random.default_rng(5))
    np.testing.assert_array_equal(a.array, b.array)
    mt.manual_seed(2)
    first = nn.Linear(3, 3).weight.array.copy()
    mt.manual_seed(2)
    np.testing.assert_array_equal(nn.Linear(3, 3).weight.array, first)


def test_linear_init_bounds_are_pytorchs():
    layer = nn.Linear(100, 300)
    bound = 1 / math.sqrt(100)
    assert np.abs(layer.weight.array).max() <= bound and np.abs(layer.bias.array).max() <= bound
    assert np.abs(layer.weight.array).max() > 0.95 * bound


def test_calculate_gain_matches_torch():
    torch = pytest.importorskip("torch")
    for name in ["linear", "sigmoid", "tanh", "relu", "conv2d", "selu"]:
        assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(
        torch.nn.init.calculate_gain("leaky_relu", 0.2)
    )
    with pytest.raises(ValueError, match="unknown nonlinearity 'swish'"):
        init.calculate_gain("swish")


def test_fan_of_a_vector_is_an_error():
    with pytest.raises(ShapeError, match="at least 2 dims, got shape \\(5,\\)"):
        init.xavier_uniform_(mt.zeros(5))


# nn.utils: gradient clipping and parameter vectors.
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    ours = [mt.zeros(*g.shape, dtype=mt.float64, requires_grad=True) for g in grads]
    theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for p, q, g in zip(ours, theirs, grads, strict=True):
        p.grad = mt.tensor(g.copy())
        q.grad = torch.from_numpy(g.copy())
    total_o = nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
    assert total_o.item() == pytest.approx(total_t.item(), rel=1e-12)
    for p, q in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad.array, q.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_nonfinite_raises_before_changing_anything():
    p = mt.zeros(2, dtype=mt.float64, requires_grad=True)
    p.grad = mt.tensor(np.array([np.inf, 1.0]))
    with pytest.raises(RuntimeError, match="total norm of order 2.0 of the gradients is inf"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(p.grad.array, [np.inf, 1.0])


def test_clip_grad_value_and_parameter_vectors():
    model = TwoLayer()
    model(mt.randn(8, 3) * 10.0).sum().backward()
    nn.utils.clip_grad_value_(model.parameters(), 0.1)
    assert all(np.abs(p.grad.array).max() <= 0.1 for p in model.parameters())
    vector = nn.utils.parameters_to_vector(model.parameters())
    assert vector.shape == (sum(p.numel() for p in model.parameters()),)
    nn.utils.vector_to_parameters(vector * 0.0, model.parameters())
    assert not any(p.array.any() for p in model.parameters())
    with pytest.raises(ShapeError, match="does not hold the 24 elements"):
        nn.utils.vector_to_parameters(mt.zeros(3), model.parameters())


# Convolution, normalization and pooling layers against PyTorch.
SPATIAL_LAYERS = [
    ("conv1d", lambda n: n.Conv1d(3, 4, 3, stride=2, padding=1), (2, 3, 9)),
    ("conv2d_groups", lambda n: n.Conv2d(4, 6, (3, 2), padding="same", groups=2), (2, 4, 5, 6)),
    ("conv2d_dilation", lambda n: n.Conv2d(2, 3, 3, dilation=2, bias=False), (2, 2, 7, 7)),
    ("conv3d", lambda n: n.Conv3d(2, 3, 2, stride=(1, 2, 1)), (1, 2, 4, 5, 3)),
    ("batchnorm1d_2d_input", lambda n: n.BatchNorm1d(5), (8, 5)),
    ("batchnorm1d", lambda n: n.BatchNorm1d(3, affine=False), (4, 3, 6)),
    ("batchnorm2d", lambda n: n.BatchNorm2d(3, momentum=None), (4, 3, 5, 5)),
    ("batchnorm3d", lambda n: n.BatchNorm3d(2, track_running_stats=False), (2, 2, 3, 3, 3)),
    ("layernorm", lambda n: n.LayerNorm(6), (3, 4, 6)),
    ("layernorm_two_dims_no_bias", lambda n: n.LayerNorm((4, 6), bias=False), (3, 4, 6)),
    ("rmsnorm", lambda n: n.RMSNorm(6), (3, 4, 6)),
    ("maxpool2d", lambda n: n.MaxPool2d(3, stride=2, padding=1), (2, 3, 7, 7)),
    ("avgpool1d", lambda n: n.AvgPool1d(2), (2, 3, 8)),
    ("adaptive_avgpool2d", lambda n: n.AdaptiveAvgPool2d(1), (2, 3, 5, 4)),
]


@pytest.mark.parametrize(
    "make, shape", [p[1:] for p in SPATIAL_LAYERS], ids=[p[0] for p in SPATIAL_LAYERS]
)
def test_spatial_layers_match_torch_in_train_and_eval(make, shape):
    torch = pytest.importorskip("torch")
    ours, theirs = make(nn).double(), make(torch.nn).double()
    _copy_parameters(ours, theirs)
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(0)
    for mode in ("train", "train", "eval"):  # twice in train: running statistics accumulate
        getattr(ours, mode)()
        getattr(theirs, mode)()
        x = rng.standard_normal(shape) * 2.0 + 0.5
        xo, xt = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        yo, yt = ours(xo), theirs(xt)
        np.testing.assert_allclose(yo.array, yt.detach().numpy(), rtol=1e-9, atol=1e-11)
        upstream = rng.standard_normal(yo.shape)
        yo.backward(upstream)
        yt.backward(torch.from_numpy(upstream))
        np.testing.assert_allclose(xo.grad.array, xt.grad.numpy(), rtol=1e-9, atol=1e-11)
        pairs = zip(ours.named_parameters(), theirs.named_parameters(), strict=True)
        for (name, p), (_, q) in pairs:
            np.testing.assert_allclose(
                p.grad.array, q.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=name
            )
            p.grad, q.grad = None, None
        for (name, b), (_, c) in zip(ours.named_buffers(), theirs.named_buffers(), strict=True):
            np.testing.assert_allclose(b.array, c.numpy(), rtol=1e-12, err_msg=name)


def test_batchnorm_rejects_a_wrong_rank_or_channel_count_without_counting_the_batch():
    layer = nn.BatchNorm2d(3)
    with pytest.raises(ShapeError, match="BatchNorm2d: expected input of rank 4"):
        layer(mt.zeros(2, 3, 4))
    with pytest.raises(ShapeError, match="input has 4 channels"):
        layer(mt.zeros(2, 4, 3, 3))
    assert int(layer.num_batches_tracked.array) == 0
