"""ParameterList and ParameterDict: registration under PyTorch's names ('0', '1', ... and the
keys), state dicts that load from PyTorch's, list and dict behaviour, printouts and errors."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import minitrain as mt
from minitrain import nn
from minitrain.errors import ArgumentError, DTypeError


def _torch():
    return pytest.importorskip("torch")


def test_parameter_list_registers_numbered_parameters():
    params = nn.ParameterList([mt.zeros(2), nn.Parameter(mt.ones(3))])
    params.append(mt.ones(4))
    params.extend([mt.ones(1)])
    params += [nn.Parameter(mt.zeros(5))]
    assert len(params) == 5
    assert [name for name, _ in params.named_parameters()] == ["0", "1", "2", "3", "4"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in params)
    assert params[-1].shape == (5,) and params[1].shape == (3,)
    sliced = params[1:3]
    assert isinstance(sliced, nn.ParameterList) and [p.shape for p in sliced] == [(3,), (4,)]
    assert sliced[0] is params[1]
    params[0] = mt.ones(7)
    assert params[0].shape == (7,) and isinstance(params[0], nn.Parameter)
    with pytest.raises(IndexError, match="ParameterList"):
        params[5]


def test_parameter_list_keeps_non_tensors_as_they_are():
    params = nn.ParameterList([mt.zeros(2), "a note"])
    assert params[1] == "a note"
    assert [name for name, _ in params.named_parameters()] == ["0"]
    assert repr(params) == (
        "ParameterList(\n    (0): Parameter containing: [minitrain.float32 of size 2]\n"
        "    (1): str\n)"
    )


def test_parameters_in_containers_are_trained():
    model = nn.Module()
    model.params = nn.ParameterList([nn.Parameter(mt.tensor([1.0, 2.0]))])
    model.table = nn.ParameterDict({"b": nn.Parameter(mt.tensor([3.0]))})
    assert list(model.state_dict()) == ["params.0", "table.b"]
    optimizer = mt.optim.SGD(model.parameters(), lr=0.5)
    (model.params[0].sum() * 2 + model.table["b"].sum()).backward()
    optimizer.step()
    assert np.allclose(model.params[0].numpy(), [0.0, 1.0])
    assert np.allclose(model.table["b"].numpy(), [2.5])


def test_parameter_dict_behaves_as_a_dict():
    table = nn.ParameterDict({"b": mt.zeros(2), "a": nn.Parameter(mt.ones(1))})
    assert table.keys() == ["a", "b"]  # a plain dict's items sorted, as PyTorch's
    table.update(OrderedDict([("z", mt.ones(3)), ("c", mt.ones(4))]))
    assert list(table) == ["a", "b", "z", "c"]  # an OrderedDict's in order
    table.update([("d", mt.ones(1))])
    assert "d" in table and len(table) == 5
    assert isinstance(table["z"], nn.Parameter)
    assert table.get("missing") is None
    assert table.pop("d").shape == (1,) and "d" not in table
    assert table.setdefault("e", mt.zeros(2)).shape == (2,)
    del table["e"]
    key, value = table.popitem()
    assert key == "c" and value.shape == (4,)
    assert [name for name, _ in table.named_parameters()] == ["a", "b", "z"]
    merged = table | {"q": mt.ones(1)}
    assert list(merged) == ["a", "b", "z", "q"] and "q" not in table
    copied = table.copy()
    assert copied["a"] is table["a"]
    table.clear()
    assert len(table) == 0 and list(table.parameters()) == []
    with pytest.raises(KeyError):
        table["a"]


def test_parameter_dict_errors():
    table = nn.ParameterDict()
    with pytest.raises(DTypeError, match="keys must be strings"):
        table[1] = mt.zeros(1)
    with pytest.raises(KeyError, match="without '.'"):
        table["a.b"] = mt.zeros(1)
    with pytest.raises(ArgumentError, match="element #0"):
        table.update([("a", mt.zeros(1), "extra")])
    with pytest.raises(DTypeError, match="ParameterDict.update"):
        table.update(3)
    with pytest.raises(NotImplementedError):
        table()


def test_state_dicts_and_reprs_match_torch():
    torch = _torch()
    ours, theirs = nn.Module(), torch.nn.Module()
    ours.plist = nn.ParameterList([mt.zeros(2, 3), mt.zeros(4)])
    theirs.plist = torch.nn.ParameterList([torch.randn(2, 3), torch.randn(4)])
    ours.pdict = nn.ParameterDict({"w": mt.zeros(3), "b": mt.zeros(1)})
    theirs.pdict = torch.nn.ParameterDict({"w": torch.randn(3), "b": torch.randn(1)})
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict({k: v.numpy() for k, v in state.items()}, strict=True)
    assert np.array_equal(ours.plist[0].numpy(), theirs.plist[0].detach().numpy())
    assert np.array_equal(ours.pdict["b"].numpy(), theirs.pdict["b"].detach().numpy())
    # printouts: the same text but for the dtype's module name
    assert repr(ours.plist) == repr(theirs.plist).replace("torch.", "minitrain.")
    assert repr(ours.pdict) == repr(theirs.pdict).replace("torch.FloatTensor", "minitrain.float32")


def test_data_parallel_wraps_the_module_as_torch():
    torch = _torch()
    ours = nn.DataParallel(nn.Linear(3, 2, dtype=np.float64))
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2, dtype=torch.float64))
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state) == ["module.weight", "module.bias"]
    ours.load_state_dict({k: v.numpy() for k, v in state.items()}, strict=True)
    x = np.random.default_rng(0).standard_normal((4, 3))
    assert np.allclose(ours(mt.tensor(x)).numpy(), theirs(torch.tensor(x)).detach().numpy())
    assert repr(ours) == repr(theirs)


def test_data_parallel_forwards_and_trains_its_module():
    inner = nn.Linear(2, 1)
    model = nn.DataParallel(inner, device_ids=[0])
    assert model.module is inner and model.device_ids == [0] and model.dim == 0
    model(mt.ones(3, 2)).sum().backward()
    assert inner.weight.grad is not None
    assert [p is q for p, q in zip(model.parameters(), inner.parameters(), strict=True)] == [
        True,
        True,
    ]
    with pytest.raises(DTypeError, match="DataParallel: module must be a Module"):
        nn.DataParallel(lambda x: x)
