"""Version counters compared with PyTorch: `_version` shared by the tensors viewing one memory,
one bump per write (in-place ops, optimizers, nn.init), and backward refusing a saved value
written since it was saved, in exactly the cases PyTorch refuses. Each case runs the same code on
`torch` and on `minitrain`, but the last, threads writing and walking back at once, minitrain's
own."""

import re
import sys
import threading

import numpy as np
import pytest
from op_samples import SAMPLES, minitrain_inputs, rng_for

import minitrain
from minitrain.errors import GraphError, ShapeError

rng = np.random.default_rng(21)
X = rng.uniform(0.3, 1.7, (2, 3))
W = rng.uniform(-1.0, 1.0, (2, 3))
LINEAR = rng.normal(size=(2, 3))
BASE = np.arange(24.0).reshape(2, 3, 4)
MODIFIED = r"modified by an in-?place operation"


def array(tensor):
    return np.array(tensor.detach().numpy())


def grads(*tensors):
    return tuple(None if t.grad is None else array(t.grad) for t in tensors)


def assert_same_grads(mine, theirs):
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# Which tensors view the memory of another: (id, the view of BASE as a tensor)
VIEWS = [
    ("reshape", lambda t: t.reshape(6, 4)),
    ("view", lambda t: t.view(6, 4)),
    ("view_as", lambda t: t.view_as(t)),
    ("flatten", lambda t: t.flatten()),
    ("transpose", lambda t: t.transpose(0, 2)),
    ("permute", lambda t: t.permute(2, 0, 1)),
    ("T_of_a_matrix", lambda t: t[0].T),
    ("unsqueeze", lambda t: t.unsqueeze(1)),
    ("squeeze", lambda t: t[:, :1].squeeze(1)),
    ("expand", lambda t: t[:, :1].expand(2, 5, 4)),
    ("broadcast_to", lambda t: t.broadcast_to((3, 2, 3, 4))),
    ("int", lambda t: t[1]),
    ("slices", lambda t: t[:, 1:, ::2]),
    ("none_ellipsis", lambda t: t[None, ..., 0]),
    ("detach", lambda t: t.detach()),
    ("split", lambda t: t.split(2, dim=2)[1]),
    ("chunk", lambda t: t.chunk(2, dim=0)[0]),
    ("unbind", lambda t: t.unbind(1)[2]),
]
COPIES = [
    ("int_array", lambda t: t[[0, 1]]),
    ("bool_mask", lambda t: t[t > 5]),
    ("clone", lambda t: t.clone()),
    ("reshape_of_a_transpose", lambda t: t.transpose(0, 2).reshape(-1)),
    ("float_cast", lambda t: t.float()),
    ("arithmetic", lambda t: t + 0),
    ("flip", lambda t: t.flip(0)),
]


def write_to_base(lib, make):
    """The view's version and values before and after an in-place write to its base."""
    base = lib.tensor(BASE.copy())
    made = make(base)
    before, values = made._version, array(made)
    base.add_(1)
    return made._version - before, not np.array_equal(values, array(made))


@pytest.mark.parametrize(("name", "make"), VIEWS + COPIES, ids=[c[0] for c in VIEWS + COPIES])
def test_views_share_the_version_and_copies_do_not(torch, name, make):
    shared = (name, make) in VIEWS
    mine, theirs = write_to_base(minitrain, make), write_to_base(torch, make)
    assert theirs == ((1, True) if shared else (0, False))
    assert mine == theirs  # the version moves exactly when the values do


@pytest.mark.parametrize(("name", "make"), VIEWS, ids=[c[0] for c in VIEWS])
def test_a_write_through_a_view_bumps_the_base(torch, name, make):
    results = []
    for lib in (minitrain, torch):
        base = lib.tensor(BASE.copy())
        view = make(base)
        if name in ("expand", "broadcast_to"):  # many elements share one memory location
            with pytest.raises(RuntimeError if lib is torch else ShapeError):
                view.mul_(2)
            assert base._version == view._version == 0
            continue
        view.mul_(2)
        results.append((base._version, view._version, array(base)))
    if results:
        assert results[0][:2] == results[1][:2] == (1, 1)
        np.testing.assert_array_equal(results[0][2], results[1][2])


def test_a_fresh_tensor_and_every_op_output_starts_at_version_0(torch):
    for lib in (minitrain, torch):
        x = lib.tensor(X.copy(), requires_grad=True)
        made = [lib.zeros(3), lib.ones(2, 2), lib.tensor([1, 2]), x, x * 2, x.exp(), x.sum()]
        assert [t._version for t in made] == [0] * len(made)


def test_each_write_bumps_the_version_once_as_in_torch(torch):
    """A sequence of writes and non-writes on one tensor: `_version` after each, as torch's."""
    steps = [
        lambda y, lib: y.add_(1),
        lambda y, lib: y.mul_(y.detach()),
        lambda y, lib: y * 3,  # out of place: no write
        lambda y, lib: y.clamp_(0.5, 3.0),
        lambda y, lib: y.__setitem__(0, 1.0),
        lambda y, lib: y.__setitem__(lib.tensor([[True, False, True], [False] * 3]), 0.0),
        lambda y, lib: y.requires_grad_(False),  # no write
        lambda y, lib: y.fill_(2.0).sub_(1),  # two writes
        lambda y, lib: y.clone().zero_(),  # a copy's write
        lambda y, lib: y.detach().zero_(),  # a view's write
        lambda y, lib: y[0].mul_(2),
        lambda y, lib: y.copy_(lib.ones(3)),
        lambda y, lib: y.uniform_(),
        lambda y, lib: y.normal_(),
        lambda y, lib: y.detach_(),  # no write
        lambda y, lib: y.exp_(),
    ]
    versions = []
    for lib in (minitrain, torch):
        y = lib.tensor(X.copy())
        seen = []
        for step in steps:
            step(y, lib)
            seen.append(y._version)
        versions.append(seen)
    assert versions[0] == versions[1] == [1, 2, 2, 3, 4, 5, 5, 7, 7, 8, 9, 10, 11, 12, 12, 13]


@pytest.mark.parametrize(
    ("name", "make", "kwargs"),
    [
        ("SGD", "SGD", {"lr": 0.1}),
        ("SGD_momentum_decay", "SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1}),
        ("Adam", "Adam", {"lr": 0.1}),
        ("RMSprop", "RMSprop", {"lr": 0.1}),
    ],
)
def test_an_optimizer_step_bumps_each_updated_parameter_once(torch, name, make, kwargs):
    versions = []
    for lib in (minitrain, torch):
        w = lib.nn.Parameter(lib.tensor(X.copy()))
        idle = lib.nn.Parameter(lib.tensor(X.copy()))  # no gradient: not updated, not bumped
        opt = getattr(lib.optim, make)([w, idle], **kwargs)
        seen = []
        for _ in range(3):
            opt.zero_grad()
            (w * w).sum().backward()
            opt.step()
            seen.append((w._version, idle._version))
        versions.append(seen)
    assert versions[0] == versions[1] == [(1, 0), (2, 0), (3, 0)]


def test_adamw_step_bumps_its_parameter():
    """PyTorch's AdamW writes twice a step (the decay, then the update); minitrain's once."""
    w = minitrain.nn.Parameter(minitrain.tensor(X.copy()))
    opt = minitrain.optim.AdamW([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert w._version == 1


def test_nn_init_bumps_the_version_once_per_call_as_in_torch(torch):
    names = ["normal_", "uniform_", "zeros_", "ones_", "xavier_uniform_", "kaiming_normal_"]
    versions = []
    for lib in (minitrain, torch):
        w = lib.nn.Parameter(lib.ones(3, 4))
        seen = []
        for name in names:
            getattr(lib.nn.init, name)(w)
            seen.append(w._version)
        lib.nn.init.constant_(w, 0.5)
        seen.append(w._version)
        versions.append(seen)
    assert versions[0] == versions[1] == [1, 2, 3, 4, 5, 6, 7]


def test_layers_are_built_with_the_writes_torch_makes(torch):
    """reset_parameters writes through nn.init (Embedding's padding row: a second write)."""
    layers = {
        "Linear": lambda nn: nn.Linear(3, 2),
        "Conv2d": lambda nn: nn.Conv2d(1, 2, 3),
        "Embedding": lambda nn: nn.Embedding(4, 3),
        "Embedding_padding": lambda nn: nn.Embedding(4, 3, padding_idx=1),
        "PReLU": lambda nn: nn.PReLU(),
    }
    for name, make in layers.items():
        mine = [p._version for p in make(minitrain.nn).parameters()]
        theirs = [p._version for p in make(torch.nn).parameters()]
        assert mine == theirs, name


def test_backward_names_the_kernel_the_saved_value_and_both_versions():
    x = minitrain.tensor(X.copy(), requires_grad=True)
    a = x * 1
    w = minitrain.tensor(W.copy(), requires_grad=True)
    loss = (a * w).sum()
    a.add_(1)
    a.mul_(2)
    with pytest.raises(GraphError) as error:
        loss.backward()
    message = str(error.value)
    assert message.startswith("MulGrad: 'a', a value mul saved")
    assert "modified by an in-place operation" in message
    assert "saved at version 0, now at version 2" in message
    assert x.grad is None and w.grad is None  # nothing accumulated

    # a value saved at a later version, then written once more
    b = x * 1
    b.add_(1)
    b.sub_(1)
    b.neg_()
    loss = (w * b).sum()
    b.abs_()
    with pytest.raises(GraphError, match=r"MulGrad: 'b'.*saved at version 3, now at version 4"):
        loss.backward()


@pytest.mark.parametrize(
    ("method", "kernel"), [("exp", "ExpGrad"), ("sigmoid", "SigmoidGrad"), ("tanh", "TanhGrad")]
)
def test_a_saved_output_written_in_place_is_named_out(method, kernel):
    x = minitrain.tensor(X.copy(), requires_grad=True)
    out = getattr(x * 1, method)()
    loss = out.sum()
    out.add_(1)
    with pytest.raises(GraphError, match=rf"^{kernel}: 'out'.*version 0, now at version 1"):
        loss.backward()


def test_the_error_comes_before_any_gradient_is_kept(torch):
    for lib, error in ((minitrain, GraphError), (torch, RuntimeError)):
        x = lib.tensor(X.copy(), requires_grad=True)
        w = lib.tensor(W.copy(), requires_grad=True)
        a = x * 1
        loss = (a * w).sum() + (x * 3).sum()
        a.add_(1)
        with pytest.raises(error, match=MODIFIED):
            loss.backward()
        assert x.grad is None and w.grad is None


def test_every_op_output_sharing_an_inputs_memory_shares_its_version():
    """Over the op sample table: an output whose array views an input's memory sees that
    input's in-place writes in its `_version` (as PyTorch's views share the counter)."""
    checked = 0
    for op_name, samples in SAMPLES.items():
        for sample in samples:
            inputs = minitrain_inputs(sample.make(rng_for(op_name, sample)), sample)
            out = sample.call(*inputs)
            outputs = out if isinstance(out, (tuple, list)) else (out,)
            tensors = [t for t in inputs if isinstance(t, minitrain.Tensor)]
            for output in [o for o in outputs if isinstance(o, minitrain.Tensor)]:
                for tensor in tensors:
                    if not np.shares_memory(output.array, tensor.array):
                        continue
                    before = output._version
                    with minitrain.no_grad():
                        tensor.copy_(tensor.detach().clone())
                    assert output._version == before + 1, f"{op_name}[{sample.name}]"
                    checked += 1
    assert checked >= 20  # the view ops' samples


# A view taken before its base was written in place: PyTorch rebuilds the view's graph on
# the base's new one; minitrain must give the same gradient or refuse (never a stale one).


def test_a_view_used_after_its_base_was_written_in_place(torch):
    outcomes = []
    for lib in (torch, minitrain):
        x = lib.tensor(X.copy(), requires_grad=True)
        y = x * 2
        view = y[0]
        y.mul_(3)
        try:
            (view * lib.tensor(W[0])).sum().backward()
        except GraphError:
            outcomes.append("refused")
            continue
        outcomes.append(array(x.grad))
    expected = np.zeros((2, 3))
    expected[0] = 6 * W[0]
    np.testing.assert_allclose(outcomes[0], expected)
    if not isinstance(outcomes[1], str):
        np.testing.assert_allclose(outcomes[1], expected)


def test_a_view_used_before_its_base_was_written_keeps_its_gradient(torch):
    for lib in (torch, minitrain):
        x = lib.tensor(X.copy(), requires_grad=True)
        y = x * 2
        loss = (y[0] * lib.tensor(W[0])).sum()
        y.mul_(3)
        loss.backward()  # slicing saves nothing: no error
        np.testing.assert_allclose(array(x.grad)[0], 2 * W[0])


def test_a_value_that_requires_grad_written_into_a_view_of_a_plain_tensor(torch):
    """torch: the base takes the write's graph (CopySlices); minitrain must do the same or
    refuse the write, never leave the base outside the graph it now holds values of."""
    outcomes = []
    for lib in (torch, minitrain):
        o = lib.tensor(X[0].copy(), requires_grad=True)
        base = lib.zeros(2, 3, dtype=lib.float64)
        try:
            base[0].copy_(o * 2)
        except GraphError:
            outcomes.append("refused")
            continue
        probe = lib.tensor(W.copy(), requires_grad=True)
        (base * probe).sum().backward()
        outcomes.append(grads(o, probe))
    assert_same_grads(outcomes[0], (2 * W[0], np.stack([2 * X[0], np.zeros(3)])))
    if not isinstance(outcomes[1], str):
        assert_same_grads(outcomes[1], outcomes[0])


# Threads: the writes per memory and the clock are shared by the whole process (two threads'
# tensors may view one array); each thread's graph and versions stay its own.


def in_threads(work, count: int) -> list:
    """work(i) for i < count, in threads started together that Python switches between as
    often as it can; their results, an exception raised in one re-raised here."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def run(i):
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as error:  # noqa: BLE001 (re-raised below, in the test's thread)
            results[i] = error

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results


def test_threads_writing_in_place_and_walking_back_keep_their_own_versions_and_errors():
    """Each thread records, writes in place and runs backward on its own tensors, at once:
    backward refuses exactly the saved values its own thread wrote since, never one another
    thread's write numbered later, and every gradient and version is the one-thread answer."""
    rounds = 60

    def work(i):
        values = np.random.default_rng(i).uniform(0.2, 0.8, 3)
        w = minitrain.tensor(values, requires_grad=True)
        scratch = minitrain.zeros(3, dtype=minitrain.float64)
        outcomes = []
        for r in range(rounds):
            w.grad = None
            y = (w * 2).exp()  # saves its output, y's own memory
            loss = y.sum()
            with minitrain.no_grad():
                if r % 3 == 0:
                    y.add_(1)  # the saved output written since: backward must refuse
                else:
                    scratch.add_(1)  # a later write, to other memory: backward must run
            try:
                loss.backward()
            except GraphError as error:
                outcomes.append(("refused", str(error), y._version))
                continue
            np.testing.assert_allclose(w.grad.numpy(), 2 * np.exp(2 * values), rtol=1e-12)
            outcomes.append(("ran", None, y._version))
        return outcomes, scratch._version, w._version

    for outcomes, scratch_version, w_version in in_threads(work, 4):
        assert [o[0] for o in outcomes] == [
            "refused" if r % 3 == 0 else "ran" for r in range(rounds)
        ]
        assert all(
            re.search(MODIFIED, message) and "version 0, now at version 1" in message
            for kind, message, _ in outcomes
            if kind == "refused"
        )
        assert [o[2] for o in outcomes] == [int(r % 3 == 0) for r in range(rounds)]
        assert scratch_version == sum(r % 3 != 0 for r in range(rounds))
        assert w_version == 0


def test_writes_from_threads_into_one_memory_are_each_counted_once():
    """Threads bumping the same tensors' versions at once (the first write to a memory makes
    its entry): no write is lost, none counted twice."""
    tensors = [minitrain.zeros(2) for _ in range(3000)]
    views = [t[1:] for t in tensors]  # writes through a view count on the same memory

    def work(i):
        for t in tensors if i % 2 else views:
            t.bump_version()

    in_threads(work, 4)
    assert [t._version for t in tensors] == [4] * len(tensors)
    assert [v._version for v in views] == [4] * len(views)
