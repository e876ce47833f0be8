"""The Module API side by side with torch.nn: registration order, traversal with shared modules,
state dicts, train/eval, containers, reprs, gradient clipping and Embedding.from_pretrained."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest
from reference import torch

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError, ShapeError
from minitrain.nn import init

LIBRARIES = [(nn, mt.tensor), (torch.nn, torch.tensor)]


def _both(build):
    """build(lib, make_tensor) run with minitrain.nn and with torch.nn."""
    return [build(lib, make) for lib, make in LIBRARIES]


def _names(pairs) -> list[str]:
    return [name for name, _ in pairs]


def _kinds(modules) -> list[str]:
    return [type(module).__name__ for module in modules]


# Registration.
def test_replacing_a_registered_entry_keeps_its_place_like_torch():
    def build(lib, make):
        linear = lib.Linear(2, 2)
        linear.weight = lib.Parameter(make(np.ones((2, 2), np.float32)))
        seq = lib.Sequential(lib.Linear(1, 1), lib.ReLU())
        setattr(seq, "0", lib.Linear(1, 1))
        norm = lib.BatchNorm1d(2)
        norm.register_buffer("running_mean", make(np.zeros(2, np.float32)))
        table = lib.ModuleDict({"b": lib.ReLU(), "a": lib.Tanh()})
        table["b"] = lib.Sigmoid()
        return [
            list(linear.state_dict()),
            _names(seq.named_children()),
            list(norm.state_dict()),
            list(table),
            _kinds(table.values()),
        ]

    ours, theirs = _both(build)
    assert ours == theirs


def test_register_refuses_a_name_taken_by_another_kind_and_changes_nothing():
    for lib, make in LIBRARIES:
        linear = lib.Linear(2, 2)
        weight = linear.weight
        with pytest.raises(KeyError, match="attribute 'weight' already exists"):
            linear.register_buffer("weight", make(np.zeros((2, 2), np.float32)))
        with pytest.raises(KeyError, match="attribute 'bias' already exists"):
            linear.add_module("bias", lib.ReLU())
        assert linear.weight is weight
        assert _names(linear.named_parameters()) == ["weight", "bias"]
        assert list(linear.named_buffers()) == [] and list(linear.named_children()) == []
    with pytest.raises(DTypeError, match="register_buffer: name must be a string, got int"):
        nn.Module().register_buffer(1, None)


def test_train_calls_each_childs_own_train_like_torch():
    def build(lib, make):
        class FrozenNorm(lib.Module):
            def __init__(self):
                super().__init__()
                self.norm = lib.BatchNorm1d(2)

            def train(self, mode=True):
                super().train(mode)
                self.norm.eval()  # a common pattern: keep batch norm statistics frozen
                return self

        model = lib.Sequential(lib.Linear(2, 2), FrozenNorm())
        returned = model.train()
        return [returned is model, [m.training for m in model.modules()]]

    ours, theirs = _both(build)
    assert ours == theirs


def test_to_takes_pytorchs_keyword_form():
    def build(lib, make):
        float64 = np.float64 if lib is nn else torch.float64
        model = lib.Sequential(lib.Linear(2, 2), lib.BatchNorm1d(2))
        returned = model.to(device="cpu", dtype=float64)
        return [
            returned is model,
            [np.dtype(str(p.dtype).removeprefix("torch.")).name for p in model.parameters()],
            str(model[1].num_batches_tracked.dtype).removeprefix("torch."),
        ]

    ours, theirs = _both(build)
    assert ours == theirs
    with pytest.raises(ArgumentError, match="Module.to: dtype given twice"):
        nn.Linear(1, 1).to(np.float64, dtype=np.float32)


# Traversal and state dicts with shared modules.
def _shared_model(lib, make):
    class Net(lib.Module):
        def __init__(self):
            super().__init__()
            self.shared = lib.Linear(2, 2)
            self.body = lib.Sequential(self.shared, lib.ReLU(), lib.Linear(2, 3))
            self.alias = self.shared
            self.register_buffer("steps", make(np.zeros(2, np.float32)))
            self.scale = lib.Parameter(make(np.ones(3, np.float32)))
            self.tied = self.scale
            self.norm = lib.BatchNorm1d(3)

    return Net()


def test_shared_modules_are_in_the_state_dict_under_every_path_like_torch():
    ours, theirs = _both(lambda lib, make: list(_shared_model(lib, make).state_dict()))
    assert ours == theirs
    prefixed = _both(lambda lib, make: list(_shared_model(lib, make).state_dict(prefix="m.")))
    assert prefixed[0] == prefixed[1]


def test_a_torch_state_dict_of_a_model_with_shared_modules_loads_strictly():
    model = _shared_model(nn, mt.tensor)
    reference = _shared_model(torch.nn, torch.tensor)
    state = {key: value.numpy() for key, value in reference.state_dict().items()}
    result = model.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    np.testing.assert_array_equal(model.shared.weight.array, state["alias.weight"])


@pytest.mark.parametrize("method", ["named_modules", "named_parameters", "named_buffers"])
@pytest.mark.parametrize("remove_duplicate", [True, False])
def test_named_members_with_and_without_duplicates_like_torch(method, remove_duplicate):
    ours, theirs = _both(
        lambda lib, make: _names(
            getattr(_shared_model(lib, make), method)(remove_duplicate=remove_duplicate)
        )
    )
    assert ours == theirs


def test_a_module_that_contains_itself_still_has_a_finite_state_dict():
    model = nn.Sequential(nn.Linear(1, 1))
    model[0].owner = model
    assert list(model.state_dict()) == ["0.weight", "0.bias"]
    assert _names(model.named_modules(remove_duplicate=False)) == ["", "0"]


def test_state_dict_keep_vars_gives_the_parameters_themselves_like_torch():
    for lib, _ in LIBRARIES:
        linear = lib.Linear(2, 2)
        assert linear.state_dict(keep_vars=True)["weight"] is linear.weight
        assert linear.state_dict()["weight"] is not linear.weight
        assert not linear.state_dict()["weight"].requires_grad


def test_load_state_dict_reports_missing_and_unexpected_keys_like_torch():
    def build(lib, make):
        model = lib.Sequential(lib.Linear(1, 1), lib.Sequential(lib.Linear(1, 1)))
        filler = make(np.zeros(1, np.float32))
        state = OrderedDict(
            [
                ("1.0.extra", filler),
                ("zzz", filler),
                ("0.extra", filler),
                ("1.bogus", filler),
                ("0.weight", make(np.ones((1, 1), np.float32))),
                ("5.weight", filler),
            ]
        )
        result = model.load_state_dict(state, strict=False)
        missing, unexpected = result  # still a pair
        return [result.missing_keys, result.unexpected_keys, missing, unexpected]

    ours, theirs = _both(build)
    assert ours == theirs


def test_load_state_dict_result_reads_like_torchs():
    ours = nn.Linear(1, 1)
    theirs = torch.nn.Linear(1, 1)
    assert repr(ours.load_state_dict(ours.state_dict())) == repr(
        theirs.load_state_dict(theirs.state_dict())
    )
    partial = ours.load_state_dict({"weight": np.ones((1, 1))}, strict=False)
    reference = theirs.load_state_dict({"weight": torch.ones(1, 1)}, strict=False)
    assert repr(partial) == repr(reference)


def test_load_state_dict_of_a_non_mapping_is_a_dtype_error():
    linear = nn.Linear(1, 1)
    with pytest.raises(TypeError):
        torch.nn.Linear(1, 1).load_state_dict([("weight", torch.ones(1, 1))])
    with pytest.raises(DTypeError, match="load_state_dict for Linear: expected a mapping"):
        linear.load_state_dict([("weight", np.ones((1, 1)))])


# Sequential, ModuleList and ModuleDict.
def _sequential(lib):
    return lib.Sequential(lib.Linear(1, 1), lib.ReLU(), lib.Tanh())


@pytest.mark.parametrize(
    "edit",
    [
        lambda lib, s: s.__setitem__(0, lib.Sigmoid()),
        lambda lib, s: s.__setitem__(-1, lib.Identity()),
        lambda lib, s: s.__delitem__(0),
        lambda lib, s: s.__delitem__(slice(0, 2)),
        lambda lib, s: s.__delitem__(-1),
        lambda lib, s: s.extend([lib.Sigmoid(), lib.ReLU()]),
        lambda lib, s: s.insert(1, lib.Sigmoid()),
        lambda lib, s: s.insert(-1, lib.Sigmoid()),
        lambda lib, s: s.insert(3, lib.Sigmoid()),
        lambda lib, s: s.pop(1),
        lambda lib, s: s.__iadd__(lib.Sequential(lib.Sigmoid())),
    ],
    ids=[
        "set_first",
        "set_last",
        "del_first",
        "del_slice",
        "del_last",
        "extend",
        "insert",
        "insert_negative",
        "insert_at_end",
        "pop",
        "iadd",
    ],
)
def test_sequential_edits_like_torch(edit):
    def build(lib, make):
        seq = _sequential(lib)
        returned = edit(lib, seq)
        kind = "self" if returned is seq else type(returned).__name__
        return [kind, _names(seq.named_children()), _kinds(seq)]

    ours, theirs = _both(build)
    assert ours == theirs


def test_sequential_deletion_renumbers_and_the_state_dict_follows_like_torch():
    def build(lib, make):
        seq = lib.Sequential(
            OrderedDict([("fc", lib.Linear(1, 1)), ("act", lib.ReLU()), ("out", lib.Linear(1, 1))])
        )
        del seq[1]
        joined = seq + _sequential(lib)
        return [list(seq.state_dict()), _names(joined.named_children()), _kinds(joined)]

    ours, theirs = _both(build)
    assert ours == theirs


def test_sequential_insert_out_of_range_changes_nothing():
    seq = _sequential(nn)
    with pytest.raises(IndexError, match="Sequential.insert: index 4 is out of range"):
        seq.insert(4, nn.ReLU())
    assert _kinds(seq) == ["Linear", "ReLU", "Tanh"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda lib, m: m.__delitem__(0),
        lambda lib, m: m.__delitem__(slice(1, None)),
        lambda lib, m: m.pop(0),
        lambda lib, m: m.pop(-1),
        lambda lib, m: m.__iadd__([lib.Sigmoid()]),
    ],
    ids=["del", "del_slice", "pop_first", "pop_last", "iadd"],
)
def test_module_list_edits_like_torch(edit):
    def build(lib, make):
        layers = lib.ModuleList([lib.Linear(1, 1), lib.ReLU(), lib.Tanh()])
        returned = edit(lib, layers)
        kind = "self" if returned is layers else type(returned).__name__
        joined = layers + [lib.Identity()]
        return [kind, _names(layers.named_children()), _kinds(layers), _kinds(joined)]

    ours, theirs = _both(build)
    assert ours == theirs


def test_module_dict_pop_clear_and_update_from_a_module_dict_like_torch():
    def build(lib, make):
        table = lib.ModuleDict({"b": lib.ReLU(), "a": lib.Tanh()})
        popped = table.pop("b")
        table.update(lib.ModuleDict({"c": lib.Sigmoid(), "d": lib.Identity()}))
        table.update([("e", lib.ReLU())])
        keys = list(table)
        table.clear()
        return [type(popped).__name__, keys, len(table)]

    ours, theirs = _both(build)
    assert ours == theirs


def test_containers_take_numpy_integer_indices_like_torch():
    def build(lib, make):
        seq = _sequential(lib)
        layers = lib.ModuleList(list(_sequential(lib)))
        return [type(seq[np.int64(1)]).__name__, type(layers[np.int32(-1)]).__name__]

    ours, theirs = _both(build)
    assert ours == theirs
    with pytest.raises(DTypeError, match="Sequential: index must be an int or a slice, got str"):
        _sequential(nn)["0"]  # noqa: B018


# A container's repr folds repeated modules, like PyTorch's.
def test_module_list_repr_folds_repeated_modules_like_torch():
    def build(lib, make):
        blocks = lib.ModuleList([lib.Linear(2, 2) for _ in range(4)] + [lib.ReLU(), lib.ReLU()])
        blocks.append(lib.Linear(2, 2))
        mixed = lib.ModuleList([lib.ReLU(), lib.Tanh(), lib.ReLU()])
        return [repr(lib.Sequential(blocks, lib.ModuleList())), repr(mixed)]

    ours, theirs = _both(build)
    assert ours == theirs


def test_a_multiline_extra_repr_is_laid_out_like_torch():
    def build(lib, make):
        class Block(lib.Module):
            def __init__(self, with_child):
                super().__init__()
                if with_child:
                    self.inner = lib.ReLU()

            def extra_repr(self):
                return "first line\nsecond line"

        return [repr(Block(False)), repr(lib.Sequential(Block(True)))]

    ours, theirs = _both(build)
    assert ours == theirs


# Gradient clipping.
def _clip_both(grads, max_norm, **kwargs):
    """clip_grad_norm_ of minitrain and of torch on float32 copies of the same gradients:
    (their totals or errors, their clipped gradients)."""
    results = []
    for lib in (mt, torch):
        params = []
        for g in grads:
            if lib is mt:
                p = mt.zeros(*g.shape, requires_grad=True)
                p.grad = mt.tensor(g.copy())
            else:
                p = torch.zeros(g.shape, requires_grad=True)
                p.grad = torch.from_numpy(g.copy())
            params.append(p)
        clip = nn.utils.clip_grad_norm_ if lib is mt else torch.nn.utils.clip_grad_norm_
        try:
            total = float(clip(params, max_norm, **kwargs).item())
        except RuntimeError:
            total = "error"
        clipped = [np.asarray(p.grad.array if lib is mt else p.grad.numpy()) for p in params]
        results.append((total, clipped))
    return results


@pytest.mark.parametrize(
    "grads, kwargs",
    [
        ([[1.0, 2.0], [np.nan, 1.0]], {"norm_type": math.inf}),
        ([[1.0, 2.0], [np.nan, 1.0]], {"norm_type": math.inf, "error_if_nonfinite": True}),
        ([[1.0, 2.0], [np.nan, 1.0]], {}),
        ([[3.0, -4.0], [0.0, 2.0], [0.0, 0.0]], {"norm_type": 0}),
        ([[3.0, -4.0], [1.0, 2.0]], {"norm_type": -math.inf}),
        ([[3.0, -4.0], [1.0, 2.0]], {"norm_type": 0.5}),
    ],
    ids=["inf_nan_late", "inf_nan_error", "l2_nan", "zero_norm", "minus_inf", "half"],
)
def test_clip_grad_norm_edge_cases_like_torch(grads, kwargs):
    arrays = [np.array(g, np.float32) for g in grads]
    (total_o, grads_o), (total_t, grads_t) = _clip_both(arrays, 1.0, **kwargs)
    if isinstance(total_t, str):
        assert total_o == total_t
    else:
        assert total_o == pytest.approx(total_t, rel=1e-5, nan_ok=True)
    for ours, theirs in zip(grads_o, grads_t, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, equal_nan=True)


# Layers' constructors and arguments.
@pytest.mark.parametrize("freeze", [True, False])
def test_embedding_from_pretrained_like_torch(freeze):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ours = nn.Embedding.from_pretrained(mt.tensor(table), freeze=freeze, padding_idx=1)
    theirs = torch.nn.Embedding.from_pretrained(torch.tensor(table), freeze=freeze, padding_idx=1)
    assert repr(ours) == repr(theirs)
    assert ours.weight.requires_grad == theirs.weight.requires_grad
    np.testing.assert_array_equal(ours.weight.array, theirs.weight.detach().numpy())
    indices = np.array([[0, 1], [3, 1]])
    np.testing.assert_array_equal(
        ours(mt.tensor(indices)).array, theirs(torch.tensor(indices)).detach().numpy()
    )
    with pytest.raises(ShapeError, match="Embedding.from_pretrained: embeddings must be 2-D"):
        nn.Embedding.from_pretrained(mt.zeros(3))


def test_from_pretrained_does_not_draw_from_the_global_generator():
    mt.manual_seed(0)
    expected = mt.randn(3)
    mt.manual_seed(0)
    nn.Embedding.from_pretrained(mt.zeros(5, 2))
    np.testing.assert_array_equal(mt.randn(3).array, expected.array)


@pytest.mark.parametrize("name", ["conv_transpose1d", "conv_transpose2d", "conv_transpose3d"])
def test_calculate_gain_of_transposed_convolutions_like_torch(name):
    assert init.calculate_gain(name) == torch.nn.init.calculate_gain(name)


def test_a_state_dict_with_one_path_of_a_shared_module_loads_strictly():
    """State dicts saved before every path of a shared module was listed hold only its first
    path; each shared parameter is there once, so they load without a missing key."""
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    saved = {key: value.numpy() + 1.0 for key, value in model.state_dict().items()}
    first_path = {key: value for key, value in saved.items() if key.startswith("0.")}
    assert model.load_state_dict(first_path) == ([], [])
    np.testing.assert_array_equal(model[2].weight.numpy(), saved["0.weight"])


def test_module_list_insert_is_range_checked_like_sequential():
    for container in (nn.ModuleList([nn.ReLU()]), nn.Sequential(nn.ReLU())):
        with pytest.raises(IndexError, match="index 3 is out of range for inserting into 1"):
            container.insert(3, nn.Tanh())
        container.insert(-1, nn.Tanh())
        assert [type(m).__name__ for m in container] == ["Tanh", "ReLU"]
    with pytest.raises(DTypeError, match="ModuleDict.update: expected an iterable"):
        nn.ModuleDict().update(5)
