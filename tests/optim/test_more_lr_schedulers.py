"""ReduceLROnPlateau, OneCycleLR, CyclicLR, CosineAnnealingWarmRestarts, SequentialLR,
ChainedScheduler, MultiplicativeLR, ConstantLR and PolynomialLR: lr (and momentum) sequences
equal to PyTorch's over every phase, hand-computed values, state dicts and argument errors."""

import math
import warnings

import numpy as np
import pytest

import minitrain
from minitrain import optim
from minitrain.optim import lr_scheduler

LRS = [0.1, 0.02]  # two parameter groups with their own lr


def _torch():
    return pytest.importorskip("torch")


def _optimizer(lib, kind="SGD", lrs=LRS):
    if lib is optim:
        groups = [
            {"params": [minitrain.tensor(np.zeros(2), requires_grad=True)], "lr": lr} for lr in lrs
        ]
    else:
        torch = _torch()
        groups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    if kind == "Adam":
        return lib.Adam(groups, lr=1.0)
    return lib.SGD(groups, lr=1.0, momentum=0.9)


def _momentum(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def _sequence(lib, make, steps, kind="SGD", arguments=None):
    """Per step: each group's lr and momentum, and get_last_lr(); the first row is after
    construction. `arguments`, if given, are passed to each step (metrics, epochs)."""
    optimizer = _optimizer(lib, kind)
    scheduler = make(lib.lr_scheduler, optimizer)

    def row():
        groups = optimizer.param_groups
        return (
            [g["lr"] for g in groups]
            + [_momentum(g) for g in groups]
            + [float(lr) for lr in scheduler.get_last_lr()]
        )

    rows = [row()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # step(epoch) is deprecated in PyTorch too
        for index in range(steps):
            optimizer.step()
            if arguments is None:
                scheduler.step()
            else:
                scheduler.step(arguments[index])
            rows.append(row())
    return np.array(rows, dtype=float)


PLATEAU_METRICS = list(np.r_[np.linspace(1, 0.5, 6), np.ones(24)])
FLOAT_EPOCHS = [index * 0.7 for index in range(24)]

CASES = {
    "plateau_min_rel": (
        lambda s, o: s.ReduceLROnPlateau(o, patience=2, cooldown=1, factor=0.5, min_lr=[0.01, 0]),
        30, "SGD", PLATEAU_METRICS,
    ),
    "plateau_max_abs": (
        lambda s, o: s.ReduceLROnPlateau(
            o, mode="max", threshold_mode="abs", threshold=0.1, patience=1, eps=1e-3
        ),
        20, "SGD", [0, 0.5, 0.55, 0.56, 0.8] + [0.8] * 15,
    ),
    "onecycle_cos": (
        lambda s, o: s.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=20), 20, "SGD", None
    ),
    "onecycle_three_phase_linear": (
        lambda s, o: s.OneCycleLR(
            o, max_lr=1.0, epochs=4, steps_per_epoch=5, three_phase=True,
            anneal_strategy="linear", pct_start=0.25, div_factor=10.0, final_div_factor=100.0,
        ),
        20, "SGD", None,
    ),
    "onecycle_adam_beta1": (
        lambda s, o: s.OneCycleLR(o, max_lr=1.0, total_steps=15, base_momentum=[0.8, 0.7]),
        15, "Adam", None,
    ),
    "onecycle_no_momentum": (
        lambda s, o: s.OneCycleLR(o, max_lr=0.3, total_steps=10, cycle_momentum=False),
        10, "SGD", None,
    ),
    "warm_restarts_mult2": (
        lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
        30, "SGD", None,
    ),
    "warm_restarts_mult1": (
        lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=4), 12, "SGD", None
    ),
    "warm_restarts_float_epoch_mult2": (
        lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2), 24, "SGD", FLOAT_EPOCHS
    ),
    "warm_restarts_float_epoch_mult1": (
        lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=3, eta_min=0.005),
        24, "SGD", FLOAT_EPOCHS,
    ),
    "sequential_three": (
        lambda s, o: s.SequentialLR(
            o,
            [s.LinearLR(o, start_factor=0.1, total_iters=4), s.ExponentialLR(o, gamma=0.9),
             s.StepLR(o, 2, 0.5)],
            milestones=[5, 9],
        ),
        16, "SGD", None,
    ),
    "sequential_constant_cosine": (
        lambda s, o: s.SequentialLR(
            o, [s.ConstantLR(o, factor=0.5, total_iters=2), s.CosineAnnealingLR(o, T_max=5)],
            milestones=[3],
        ),
        12, "SGD", None,
    ),
    "sequential_multistep_polynomial": (
        lambda s, o: s.SequentialLR(
            o, [s.MultiStepLR(o, [1, 2]), s.PolynomialLR(o, total_iters=4)], milestones=[4]
        ),
        10, "SGD", None,
    ),
    "chained": (
        lambda s, o: s.ChainedScheduler(
            [s.ConstantLR(o, factor=0.1, total_iters=3), s.ExponentialLR(o, gamma=0.9)]
        ),
        10, "SGD", None,
    ),
    "multiplicative": (
        lambda s, o: s.MultiplicativeLR(o, [lambda e: 0.95, lambda e: 1 - 0.01 * e]),
        10, "SGD", None,
    ),
    "constant": (lambda s, o: s.ConstantLR(o, factor=0.5, total_iters=3), 8, "SGD", None),
    "polynomial": (
        lambda s, o: s.PolynomialLR(o, total_iters=6, power=2.0), 10, "SGD", None
    ),
    "cyclic_triangular": (
        lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.2], step_size_up=3,
                                step_size_down=5),
        25, "SGD", None,
    ),
    "cyclic_triangular2": (
        lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2"),
        25, "SGD", None,
    ),
    "cyclic_exp_range": (
        lambda s, o: s.CyclicLR(
            o, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="exp_range", gamma=0.9
        ),
        25, "SGD", None,
    ),
    "cyclic_scale_fn": (
        lambda s, o: s.CyclicLR(
            o, base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=lambda x: 0.5**x,
            scale_mode="iterations",
        ),
        25, "SGD", None,
    ),
    "cyclic_adam_beta1": (
        lambda s, o: s.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3), 12, "Adam", None
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_sequence_matches_torch(name):
    torch = _torch()
    make, steps, kind, arguments = CASES[name]
    ours = _sequence(optim, make, steps, kind, arguments)
    theirs = _sequence(torch.optim, make, steps, kind, arguments)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
    assert len(np.unique(ours[:, 0])) >= 2  # the schedule changed the lr


def test_reduce_lr_on_plateau_by_hand():
    optimizer = _optimizer(optim)
    scheduler = lr_scheduler.ReduceLROnPlateau(optimizer, patience=2, factor=0.5, min_lr=0.03)
    lrs = []
    for metric in [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]:
        scheduler.step(minitrain.tensor(np.array(metric)))  # a one-element tensor will do
        lrs.append(scheduler.get_last_lr())
    # best 0.9 at step 2; bad epochs 3, 4, 5 -> reduce at step 5 (the third bad one); again at 8
    assert [lr[0] for lr in lrs] == [0.1] * 4 + [0.05] * 3 + [0.03] * 3
    assert [lr[1] for lr in lrs] == [0.02] * 10  # already under min_lr: left alone
    assert scheduler.best == 0.9 and scheduler.num_bad_epochs == 2


def test_one_cycle_by_hand():
    optimizer = _optimizer(optim, lrs=[0.1])
    scheduler = lr_scheduler.OneCycleLR(optimizer, max_lr=1.0, total_steps=10, pct_start=0.3)
    lrs, momenta = [optimizer.param_groups[0]["lr"]], [optimizer.param_groups[0]["momentum"]]
    for _ in range(9):
        optimizer.step()
        scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
        momenta.append(optimizer.param_groups[0]["momentum"])
    assert lrs[0] == pytest.approx(1.0 / 25) and momenta[0] == pytest.approx(0.95)
    assert lrs[2] == pytest.approx(1.0) and momenta[2] == pytest.approx(0.85)  # the peak
    assert lrs[1] == pytest.approx(0.04 + (1.0 - 0.04) * (1 - math.cos(math.pi / 2)) / 2)
    assert lrs[9] == pytest.approx(0.04 / 1e4) and momenta[9] == pytest.approx(0.95)
    with pytest.raises(ValueError, match="total_steps is 10"):
        scheduler.step()  # step 10 is still allowed (PyTorch's bound); step 11 is not
        scheduler.step()
    assert scheduler.last_epoch == 10  # the refused step changed nothing


def test_cyclic_by_hand():
    optimizer = _optimizer(optim, lrs=[0.5])
    scheduler = lr_scheduler.CyclicLR(
        optimizer, base_lr=0.1, max_lr=0.5, step_size_up=2, mode="triangular2"
    )
    lrs = [optimizer.param_groups[0]["lr"]]
    for _ in range(8):
        optimizer.step()
        scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    # up 0.1 -> 0.5 in 2 steps and down in 2; the second cycle has half the amplitude
    np.testing.assert_allclose(lrs, [0.1, 0.3, 0.5, 0.3, 0.1, 0.2, 0.3, 0.2, 0.1], rtol=1e-12)
    assert optimizer.param_groups[0]["momentum"] == pytest.approx(0.9)  # at the bottom: max


def test_warm_restarts_by_hand_with_a_float_epoch():
    optimizer = _optimizer(optim, lrs=[1.0])
    scheduler = lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=2, T_mult=2)
    scheduler.step(3.5)  # the second period runs from epoch 2 to 6: T_cur = 1.5, T_i = 4
    assert (scheduler.T_cur, scheduler.T_i, scheduler.last_epoch) == (1.5, 4, 3)
    expected = (1 + math.cos(math.pi * 1.5 / 4)) / 2
    assert scheduler.get_last_lr()[0] == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="epoch must be >= 0"):
        scheduler.step(-1)


def test_sequential_and_chained_by_hand():
    optimizer = _optimizer(optim, lrs=[1.0])
    warmup = lr_scheduler.ConstantLR(optimizer, factor=0.5, total_iters=10)
    decay = lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
    scheduler = lr_scheduler.SequentialLR(optimizer, [warmup, decay], milestones=[2])
    lrs = [scheduler.get_last_lr()[0]]
    for _ in range(4):
        optimizer.step()
        scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    assert lrs == [0.5, 0.5, 1.0, 0.5, 0.25]  # the decay restarts at 1.0 at the milestone

    optimizer = _optimizer(optim, lrs=[1.0])
    chained = lr_scheduler.ChainedScheduler(
        [
            lr_scheduler.ConstantLR(optimizer, factor=0.5, total_iters=2),
            lr_scheduler.ExponentialLR(optimizer, gamma=0.5),
        ]
    )
    lrs = [chained.get_last_lr()[0]]
    for _ in range(3):
        optimizer.step()
        chained.step()
        lrs.append(chained.get_last_lr()[0])
    assert lrs == [0.5, 0.25, 0.25, 0.125]  # both factors multiply in


def test_multiplicative_constant_polynomial_by_hand():
    def run(make, steps):
        optimizer = _optimizer(optim, lrs=[1.0])
        scheduler = make(optimizer)
        lrs = [scheduler.get_last_lr()[0]]
        for _ in range(steps):
            optimizer.step()
            scheduler.step()
            lrs.append(scheduler.get_last_lr()[0])
        return lrs

    np.testing.assert_allclose(
        run(lambda o: lr_scheduler.MultiplicativeLR(o, lambda e: 0.5), 3), [1, 0.5, 0.25, 0.125]
    )
    np.testing.assert_allclose(
        run(lambda o: lr_scheduler.ConstantLR(o, factor=0.25, total_iters=2), 3),
        [0.25, 0.25, 1, 1],
    )
    np.testing.assert_allclose(
        run(lambda o: lr_scheduler.PolynomialLR(o, total_iters=4, power=2.0), 5),
        [(1 - min(e, 4) / 4) ** 2 for e in range(6)],
        atol=1e-15,
    )


def _resume(make, kind, steps_before, steps_after, arguments=None):
    """Run `steps_before` steps, save the optimizer and scheduler, make new ones, load, and
    run `steps_after` more: the lrs and momenta after each of those."""
    arguments = arguments or [None] * (steps_before + steps_after)

    def step(optimizer, scheduler, argument):
        optimizer.step()
        if argument is None:
            scheduler.step()
        else:
            scheduler.step(argument)

    optimizer = _optimizer(optim, kind)
    scheduler = make(lr_scheduler, optimizer)
    for index in range(steps_before):
        step(optimizer, scheduler, arguments[index])
    saved_optimizer, saved_scheduler = optimizer.state_dict(), scheduler.state_dict()
    fresh_optimizer = _optimizer(optim, kind)
    fresh = make(lr_scheduler, fresh_optimizer)
    fresh_optimizer.load_state_dict(saved_optimizer)
    fresh.load_state_dict(saved_scheduler)
    rows = []
    for index in range(steps_before, steps_before + steps_after):
        step(fresh_optimizer, fresh, arguments[index])
        groups = fresh_optimizer.param_groups
        rows.append([g["lr"] for g in groups] + [_momentum(g) for g in groups])
    return np.array(rows)


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_round_trip_continues_uninterrupted(name):
    make, steps, kind, arguments = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        straight = _sequence(optim, make, steps, kind, arguments)
        resumed = _resume(make, kind, steps // 2, steps - steps // 2, arguments)
    groups = len(LRS)
    np.testing.assert_array_equal(resumed, straight[steps // 2 + 1 :, : 2 * groups])


def test_deprecated_step_epoch_takes_the_closed_form_as_torch():
    torch = _torch()

    def run(lib):
        optimizer = _optimizer(lib)
        scheduler = lib.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
        optimizer.step()
        with pytest.warns(UserWarning, match="deprecated"):
            scheduler.step(5)
        return scheduler.get_last_lr(), scheduler.last_epoch

    ours, theirs = run(optim), run(torch.optim)
    assert ours[1] == theirs[1] == 5
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-15)
    np.testing.assert_allclose(ours[0], [0.1 * 0.25, 0.02 * 0.25], rtol=1e-15)


BAD_ARGUMENTS = {
    "plateau_factor": (lambda o: lr_scheduler.ReduceLROnPlateau(o, factor=1.0), "factor"),
    "plateau_mode": (lambda o: lr_scheduler.ReduceLROnPlateau(o, mode="avg"), "mode"),
    "plateau_threshold_mode": (
        lambda o: lr_scheduler.ReduceLROnPlateau(o, threshold_mode="pct"), "threshold_mode"
    ),
    "plateau_min_lrs": (
        lambda o: lr_scheduler.ReduceLROnPlateau(o, min_lr=[0.1, 0.2, 0.3]), "min_lrs"
    ),
    "onecycle_no_length": (lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0), "total_steps"),
    "onecycle_pct": (
        lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1.5),
        "pct_start",
    ),
    "onecycle_anneal": (
        lambda o: lr_scheduler.OneCycleLR(o, 1.0, 10, anneal_strategy="exp"), "anneal_strategy"
    ),
    "onecycle_max_lrs": (
        lambda o: lr_scheduler.OneCycleLR(o, max_lr=[1.0], total_steps=10), "max_lr"
    ),
    "cyclic_mode": (
        lambda o: lr_scheduler.CyclicLR(o, 0.1, 1.0, mode="sawtooth"), "mode"
    ),
    "cyclic_step_size": (
        lambda o: lr_scheduler.CyclicLR(o, 0.1, 1.0, step_size_up=0), "step_size_up"
    ),
    "warm_restarts_t0": (
        lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0), "T_0"
    ),
    "warm_restarts_tmult": (
        lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), "T_mult"
    ),
    "sequential_milestones": (
        lambda o: lr_scheduler.SequentialLR(
            o, [lr_scheduler.ConstantLR(o), lr_scheduler.ConstantLR(o)], milestones=[1, 2]
        ),
        "milestone",
    ),
    "sequential_empty": (lambda o: lr_scheduler.SequentialLR(o, [], milestones=[]), "at least"),
    "sequential_plateau": (
        lambda o: lr_scheduler.SequentialLR(
            o, [lr_scheduler.ReduceLROnPlateau(o), lr_scheduler.ConstantLR(o)], milestones=[2]
        ),
        "ReduceLROnPlateau",
    ),
    "chained_other_optimizer": (
        lambda o: lr_scheduler.ChainedScheduler(
            [lr_scheduler.ConstantLR(o), lr_scheduler.ConstantLR(_optimizer(optim))]
        ),
        "same one",
    ),
    "constant_factor": (lambda o: lr_scheduler.ConstantLR(o, factor=2.0), "factor"),
    "polynomial_total_iters": (
        lambda o: lr_scheduler.PolynomialLR(o, total_iters=0), "total_iters"
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_bad_arguments_raise_value_errors(name):
    make, word = BAD_ARGUMENTS[name]
    optimizer = _optimizer(optim)
    lrs = [group["lr"] for group in optimizer.param_groups]
    with pytest.raises(ValueError, match=word):
        make(optimizer)
    if not name.startswith(("sequential", "chained")):
        assert [group["lr"] for group in optimizer.param_groups] == lrs  # nothing changed


def test_cycling_momentum_needs_an_optimizer_with_momentum():
    params = [minitrain.tensor(np.zeros(2), requires_grad=True)]
    for scheduler in (
        lambda o: lr_scheduler.OneCycleLR(o, max_lr=1.0, total_steps=10),
        lambda o: lr_scheduler.CyclicLR(o, 0.1, 1.0),
    ):
        with pytest.raises(ValueError, match="'momentum' or 'betas'"):
            scheduler(optim.Adagrad(params))
    # without cycle_momentum any optimizer will do
    optimizer = optim.Adagrad(params)
    lr_scheduler.CyclicLR(optimizer, 0.1, 1.0, cycle_momentum=False)
    assert optimizer.param_groups[0]["lr"] == 0.1


def test_plateau_metric_must_be_a_number():
    scheduler = lr_scheduler.ReduceLROnPlateau(_optimizer(optim))
    with pytest.raises(TypeError, match="metrics"):
        scheduler.step("low")
    assert scheduler.last_epoch == 0
