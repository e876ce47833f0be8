"""Views and in-place writes where minitrain would otherwise be silently wrong: each case either
matches torch (values and gradients) or is refused with a GraphError, never a stale gradient.
Found by a review of the in-place change; each test failed (or gave a wrong value) before."""

from __future__ import annotations

import copy
import pickle
import threading

import numpy as np
import pytest

import minitrain as mt
from minitrain import autograd
from minitrain.errors import GraphError
from minitrain.nn import functional as F  # noqa: N812 (PyTorch's idiom)


def test_a_stale_view_as_the_root_of_backward_is_refused(torch):
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = tx * 2
    tv = ty[0]
    ty.mul_(3)
    tv.backward()
    assert tx.grad.tolist() == [6.0, 0.0]  # torch rebases the view; minitrain refuses
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    v = y[0]
    y.mul_(3)
    with pytest.raises(GraphError, match="view was taken .* before that tensor changed"):
        v.backward()


def test_a_stale_view_whose_base_is_gone_is_refused():
    x = mt.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)

    def first_row():
        y = x * 2
        view = y[:1]
        y.mul_(3)
        return view  # y itself is gone

    with pytest.raises(GraphError, match="view"):
        (first_row() * 1).sum()


def test_a_view_read_before_its_base_changed_keeps_its_gradient_and_no_grad_use_is_free(torch):
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    v = y[0]
    loss = v * 3  # read before the write: its values were the old ones
    y.mul_(3)
    loss.backward()
    assert x.grad.tolist() == [6.0, 0.0]
    with mt.no_grad():
        assert (v * 1).item() == 6.0  # no graph, no stale gradient: as torch


@pytest.mark.parametrize(
    "alias",
    [
        lambda t: t.cpu(),
        lambda t: t.to("cpu"),
        lambda t: t.float(),
    ],
    ids=["cpu", "to_cpu", "float"],
)
def test_a_no_op_move_or_cast_is_the_tensor_itself_as_in_torch(torch, alias):
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    assert alias(tx) is tx and alias(x) is x
    with pytest.raises(RuntimeError):
        alias(tx).add_(1)
    with pytest.raises(GraphError):
        alias(x).add_(1)  # the leaf rule holds: no silent write to x


def test_ops_never_return_their_inputs_array():
    ints, flags = mt.tensor([1, 2]), mt.tensor([True, False])
    ints.floor().add_(1)
    ints.trunc().add_(1)
    flags.sign().zero_()
    assert ints.tolist() == [1, 2] and flags.tolist() == [True, False]
    x = mt.tensor([1.0, 2.0])
    mt.ops.to_device(x, "cpu").add_(1)
    assert x.tolist() == [1.0, 2.0]


def test_one_element_is_a_view_as_in_torch(torch):
    for lib in (torch, mt):
        a = lib.tensor([[0.0, 0.0], [0.0, 0.0]])
        a[1, 1].fill_(7.0)
        b = lib.tensor([0.0, 0.0, 0.0])
        b[1].add_(1.0)
        c = lib.tensor([1.0, 2.0])
        v = c[0]
        c.mul_(2)
        assert a.tolist() == [[0.0, 0.0], [0.0, 7.0]] and b.tolist() == [0.0, 1.0, 0.0]
        assert v.item() == 2.0 and v._version == c._version == 1


def test_setitem_on_a_0d_tensor_in_the_graph(torch):
    grads = []
    for lib in (torch, mt):
        x = lib.tensor(3.0, requires_grad=True)
        y = x * 2
        y[()] = 5.0
        (y * x).backward()
        grads.append(x.grad.item())
    assert grads == [5.0, 5.0]


def test_an_index_tensor_changed_after_use_leaves_the_gradient_of_what_was_computed():
    # torch raises here (it saves the index); minitrain copies the index, so the gradient is the
    # one of the values it computed: never a gradient for another index
    x = mt.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    idx = mt.tensor([0, 1])
    y = x[idx]
    idx[0] = 3
    (y * mt.tensor([10.0, 20.0])).sum().backward()
    assert x.grad.tolist() == [10.0, 20.0, 0.0, 0.0]


def test_copies_made_by_indexing_change_in_place_as_in_torch(torch):
    weights = np.random.default_rng(0).normal(size=(5, 3))
    results = []
    for lib in (torch, mt):
        w = lib.tensor(weights.copy(), requires_grad=True)
        emb = (
            lib.nn.functional.embedding(lib.tensor([0, 2]), w)
            if lib is torch
            else F.embedding(mt.tensor([0, 2]), w)
        )
        emb.mul_(2)  # an advanced index copies: not a view, so allowed in the graph
        y = w * 1
        y[lib.tensor([0, 2])] *= 3
        (emb.sum() + y.sum()).backward()
        results.append(np.asarray(w.grad.tolist()))
    np.testing.assert_allclose(results[1], results[0])


def test_an_op_output_with_a_numpy_base_is_not_a_view(torch):
    for lib in (torch, mt):
        w = lib.tensor([1.0, 1.0], requires_grad=True)
        s = lib.tensor([1.0, 2.0]).softmax(0)
        s.add_(w)
        s.sum().backward()
        assert w.grad.tolist() == [1.0, 1.0]


def test_a_plain_view_after_its_tensor_joined_the_graph_is_refused(torch):
    ta = torch.tensor([[0.0, 0.0]])
    tv = ta[0]
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    ta.add_(tw)
    ((tv * tw).sum() + ta.sum()).backward()
    assert tw.grad.tolist() == [3.0, 5.0]  # torch rebases the view; minitrain refuses
    a = mt.tensor([[0.0, 0.0]])
    v = a[0]
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    a.add_(w)
    with pytest.raises(GraphError, match="view taken when its tensor was outside the graph"):
        v * w


def test_a_view_made_under_no_grad_of_a_leaf_cannot_change_in_place_with_grad_on(torch):
    for lib, error in ((torch, RuntimeError), (mt, GraphError)):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        with lib.no_grad():
            v = x[0]
        with pytest.raises(error):
            v.mul_(10)
        assert x.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_anomaly_mode_lets_a_masks_minus_infinity_through(torch):
    scores = np.random.default_rng(1).normal(size=(2, 3)).astype(np.float32)
    mask = np.array([[False, True, False], [False, False, True]])
    with autograd.detect_anomaly():
        s = mt.tensor(scores, requires_grad=True)
        s.masked_fill(mask, float("-inf")).softmax(-1).sum().backward()
    ts = torch.tensor(scores, requires_grad=True)
    with torch.autograd.detect_anomaly():
        ts.masked_fill(torch.tensor(mask), float("-inf")).softmax(-1).sum().backward()
    np.testing.assert_allclose(s.grad.numpy(), ts.grad.numpy(), atol=1e-7)


def test_a_plain_views_record_goes_with_the_view_not_with_its_copies():
    """The view taken outside the graph remembers its tensor on itself: the view is refused
    after an in-place op put that tensor in the graph, from any thread; a deep copy or a pickle
    of it owns its memory and views nothing, and is not."""
    a = mt.tensor([[0.0, 0.0]])
    v = a[0]
    copied, pickled = copy.deepcopy(v), pickle.loads(pickle.dumps(v))
    w = mt.tensor([1.0, 2.0], requires_grad=True)
    a.add_(w)
    errors = []

    def use():
        try:
            v * w
        except GraphError as error:
            errors.append(str(error))

    thread = threading.Thread(target=use)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "view taken when its tensor was outside the graph" in errors[0]
    for fresh in (copied, pickled):
        (fresh * w).sum().backward()
        assert fresh.tolist() == [0.0, 0.0]
    assert w.grad.tolist() == [0.0, 0.0]
