"""Learning-rate schedulers: lr sequences equal to PyTorch's, chaining, resuming, state dicts,
argument errors, and the lr reaching the optimizer's updates."""

import warnings

import numpy as np
import pytest

import minitrain
from minitrain import optim
from minitrain.optim import lr_scheduler

LRS = [0.1, 0.02]  # two parameter groups with their own lr


def _torch():
    return pytest.importorskip("torch")


def _minitrain_optimizer(lrs=LRS):
    groups = [
        {"params": [minitrain.tensor(np.zeros(2), requires_grad=True)], "lr": lr} for lr in lrs
    ]
    return optim.SGD(groups, lr=1.0, momentum=0.9)


def _torch_optimizer(lrs=LRS):
    torch = _torch()
    groups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    return torch.optim.SGD(groups, lr=1.0, momentum=0.9)


def _lr_sequence(optimizer, make_schedulers, steps):
    """The groups' lrs after construction and after each of `steps` epochs."""
    schedulers = make_schedulers(optimizer)
    sequence = [[group["lr"] for group in optimizer.param_groups]]
    for _ in range(steps):
        optimizer.step()
        for scheduler in schedulers:
            scheduler.step()
        sequence.append(schedulers[-1].get_last_lr())
        assert sequence[-1] == [group["lr"] for group in optimizer.param_groups]
    return sequence


class Halving:
    """A callable object for LambdaLR whose attributes the state dict saves."""

    def __init__(self, every):
        self.every = every

    def __call__(self, epoch):
        return 0.5 ** (epoch // self.every)


SCHEDULES = {
    "StepLR": lambda s, o: [s.StepLR(o, step_size=3, gamma=0.5)],
    "StepLR-default-gamma": lambda s, o: [s.StepLR(o, 4)],
    "MultiStepLR": lambda s, o: [s.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=0.5)],
    "ExponentialLR": lambda s, o: [s.ExponentialLR(o, gamma=0.9)],
    "LinearLR-default": lambda s, o: [s.LinearLR(o)],
    "LinearLR-warmup": lambda s, o: [s.LinearLR(o, start_factor=0.1, total_iters=8)],
    "LinearLR-decay": lambda s, o: [s.LinearLR(o, 1.0, 0.05, total_iters=12)],
    "LinearLR-partway": lambda s, o: [s.LinearLR(o, start_factor=0.5, end_factor=0.9)],
    "LinearLR-to-zero": lambda s, o: [s.LinearLR(o, end_factor=0.0)],  # ends at -1.5e-18
    "CosineAnnealingLR": lambda s, o: [s.CosineAnnealingLR(o, T_max=10)],
    "CosineAnnealingLR-eta_min": lambda s, o: [s.CosineAnnealingLR(o, T_max=7, eta_min=0.01)],
    "CosineAnnealingLR-T_max-1": lambda s, o: [s.CosineAnnealingLR(o, T_max=1, eta_min=1e-3)],
    "LambdaLR": lambda s, o: [s.LambdaLR(o, lambda epoch: 0.95**epoch)],
    "LambdaLR-per-group": lambda s, o: [s.LambdaLR(o, [lambda epoch: 1 / (epoch + 1), Halving(4)])],
    "LinearLR+CosineAnnealingLR": lambda s, o: [
        s.LinearLR(o, start_factor=0.2, total_iters=4),
        s.CosineAnnealingLR(o, T_max=12, eta_min=1e-3),
    ],
    "ExponentialLR+MultiStepLR": lambda s, o: [
        s.ExponentialLR(o, gamma=0.97),
        s.MultiStepLR(o, milestones=[5, 11]),
    ],
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_lr_sequence_equals_torchs(name):
    torch = _torch()
    make = SCHEDULES[name]
    ours = _lr_sequence(_minitrain_optimizer(), lambda o: make(lr_scheduler, o), 35)
    theirs = _lr_sequence(_torch_optimizer(), lambda o: make(torch.optim.lr_scheduler, o), 35)
    assert ours == theirs  # the same float arithmetic, so exactly equal
    assert len({tuple(lrs) for lrs in ours}) > 1


def test_cosine_annealing_follows_the_closed_form_past_t_max():
    optimizer = _minitrain_optimizer([0.1])
    sequence = _lr_sequence(optimizer, lambda o: [lr_scheduler.CosineAnnealingLR(o, 10, 0.01)], 45)
    closed_form = [0.01 + 0.09 * (1 + np.cos(np.pi * epoch / 10)) / 2 for epoch in range(46)]
    np.testing.assert_allclose([lrs[0] for lrs in sequence], closed_form, rtol=1e-12, atol=1e-15)
    assert sequence[10][0] == pytest.approx(0.01) and sequence[20][0] == pytest.approx(0.1)


def test_initial_lr_and_base_lrs():
    optimizer = _minitrain_optimizer()
    scheduler = lr_scheduler.StepLR(optimizer, step_size=2)
    assert [group["initial_lr"] for group in optimizer.param_groups] == LRS
    assert scheduler.base_lrs == LRS and scheduler.last_epoch == 0
    optimizer.step()
    scheduler.step()
    optimizer.step()
    scheduler.step()
    assert scheduler.last_epoch == 2
    assert scheduler.get_last_lr() == pytest.approx([0.01, 0.002])
    assert [group["initial_lr"] for group in optimizer.param_groups] == LRS
    scheduler.get_last_lr().append(1.0)  # a copy: the scheduler's record is not changed
    assert len(scheduler.get_last_lr()) == 2


def test_resuming_with_last_epoch_matches_torch():
    torch = _torch()

    def resumed(scheduler_module, optimizer):
        for group in optimizer.param_groups:
            group["initial_lr"] = group["lr"]
            group["lr"] = group["lr"] * 0.3  # as a loaded optimizer state would hold
        return [scheduler_module.CosineAnnealingLR(optimizer, T_max=10, last_epoch=4)]

    ours = _lr_sequence(_minitrain_optimizer(), lambda o: resumed(lr_scheduler, o), 20)
    theirs = _lr_sequence(_torch_optimizer(), lambda o: resumed(torch.optim.lr_scheduler, o), 20)
    assert ours == theirs


@pytest.mark.parametrize("name", SCHEDULES)
def test_state_dict_round_trip_continues_like_an_uninterrupted_run(name):
    make = SCHEDULES[name]
    whole = _lr_sequence(_minitrain_optimizer(), lambda o: make(lr_scheduler, o), 30)

    optimizer = _minitrain_optimizer()
    schedulers = make(lr_scheduler, optimizer)
    for _ in range(12):
        optimizer.step()
        for scheduler in schedulers:
            scheduler.step()
    saved_optimizer = optimizer.state_dict()
    saved = [scheduler.state_dict() for scheduler in schedulers]

    fresh = _minitrain_optimizer()
    fresh_schedulers = make(lr_scheduler, fresh)  # before loading: construction sets the lrs
    fresh.load_state_dict(saved_optimizer)
    for scheduler, state in zip(fresh_schedulers, saved, strict=True):
        scheduler.load_state_dict(state)
    assert fresh_schedulers[-1].get_last_lr() == whole[12]
    rest = _lr_sequence(fresh, lambda o: fresh_schedulers, 18)
    assert rest == whole[12:]


def test_checkpoint_after_linear_decay_to_zero_loads_and_resumes_like_torch(tmp_path):
    # LinearLR's chained formula ends a rounding below 0 (torch's too): the optimizer's own
    # state dict, holding that lr, must load back, through a checkpoint file as well
    torch = _torch()

    def decayed(scheduler_module, optimizer):
        return [scheduler_module.LinearLR(optimizer, 1 / 3, end_factor=0.0, total_iters=5)]

    whole = _lr_sequence(_minitrain_optimizer(), lambda o: decayed(lr_scheduler, o), 9)
    theirs = _lr_sequence(_torch_optimizer(), lambda o: decayed(torch.optim.lr_scheduler, o), 9)
    assert whole == theirs and min(whole[6]) < 0  # the case: a negative lr from rounding

    optimizer = _minitrain_optimizer()
    (scheduler,) = decayed(lr_scheduler, optimizer)
    _lr_sequence(optimizer, lambda o: [scheduler], 6)
    path = tmp_path / "checkpoint"
    minitrain.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, path)
    checkpoint = minitrain.load(path)

    fresh = _minitrain_optimizer()
    (fresh_scheduler,) = decayed(lr_scheduler, fresh)
    fresh.load_state_dict(checkpoint["optimizer"])
    fresh_scheduler.load_state_dict(checkpoint["scheduler"])
    assert [group["lr"] for group in fresh.param_groups] == whole[6]
    assert _lr_sequence(fresh, lambda o: [fresh_scheduler], 3) == whole[6:]


def test_checkpoint_with_a_negative_lr_from_chained_schedulers_resumes_like_torch():
    # Chained, ExponentialLR pushes the lr below CosineAnnealingLR's eta_min, and the cosine's
    # chained formula then takes it below 0 (-0.0016 at epoch 7), in torch too. The optimizer
    # steps with it, so its state dict must load back, as torch's does.
    torch = _torch()

    def chained(scheduler_module, optimizer):
        return [
            scheduler_module.ExponentialLR(optimizer, gamma=0.5),
            scheduler_module.CosineAnnealingLR(optimizer, T_max=5, eta_min=0.01),
        ]

    whole = _lr_sequence(_minitrain_optimizer(), lambda o: chained(lr_scheduler, o), 12)
    theirs = _lr_sequence(_torch_optimizer(), lambda o: chained(torch.optim.lr_scheduler, o), 12)
    assert whole == theirs and max(whole[7]) < 0

    optimizer = _minitrain_optimizer()
    schedulers = chained(lr_scheduler, optimizer)
    _lr_sequence(optimizer, lambda o: schedulers, 7)
    fresh = _minitrain_optimizer()
    fresh_schedulers = chained(lr_scheduler, fresh)
    fresh.load_state_dict(optimizer.state_dict())
    for scheduler, source in zip(fresh_schedulers, schedulers, strict=True):
        scheduler.load_state_dict(source.state_dict())
    assert [group["lr"] for group in fresh.param_groups] == whole[7]
    assert _lr_sequence(fresh, lambda o: fresh_schedulers, 5) == whole[7:]


def test_lambda_state_dict_saves_callable_objects_but_not_functions():
    optimizer = _minitrain_optimizer()
    scheduler = lr_scheduler.LambdaLR(optimizer, [lambda epoch: 1.0, Halving(4)])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [None, {"every": 4}]
    state["lr_lambdas"][1]["every"] = 2
    other = lr_scheduler.LambdaLR(_minitrain_optimizer(), [lambda epoch: 1.0, Halving(4)])
    other.load_state_dict(state)
    assert other.lr_lambdas[1].every == 2
    assert state["lr_lambdas"] == [None, {"every": 2}]  # loading did not consume the dict


def test_state_dict_is_a_copy():
    optimizer = _minitrain_optimizer()
    scheduler = lr_scheduler.MultiStepLR(optimizer, milestones=[2, 4])
    state = scheduler.state_dict()
    optimizer.step()
    scheduler.step()
    assert state["last_epoch"] == 0 and state["_last_lr"] == LRS
    state["milestones"][9] = 1
    assert 9 not in scheduler.milestones
    assert "optimizer" not in state


def test_schedule_reaches_the_optimizers_update():
    torch = _torch()
    ours_param = minitrain.tensor(np.ones(3), requires_grad=True)
    theirs_param = torch.ones(3, dtype=torch.float64, requires_grad=True)
    ours_opt = optim.SGD([ours_param], lr=0.5, momentum=0.5)
    theirs_opt = torch.optim.SGD([theirs_param], lr=0.5, momentum=0.5)
    ours_sched = lr_scheduler.StepLR(ours_opt, step_size=2, gamma=0.3)
    theirs_sched = torch.optim.lr_scheduler.StepLR(theirs_opt, step_size=2, gamma=0.3)
    for step in range(8):
        gradient = np.array([1.0, -2.0, 0.5]) * (step + 1)
        ours_param.grad = minitrain.Tensor(gradient.copy())
        theirs_param.grad = torch.tensor(gradient)
        ours_opt.step()
        theirs_opt.step()
        ours_sched.step()
        theirs_sched.step()
        np.testing.assert_allclose(ours_param.array, theirs_param.detach().numpy(), rtol=1e-13)


def test_stepping_the_scheduler_before_the_optimizer_warns_once():
    optimizer = _minitrain_optimizer()
    scheduler = lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
    with pytest.warns(UserWarning, match="before optimizer.step"):
        scheduler.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scheduler.step()
        in_order = lr_scheduler.ExponentialLR(_minitrain_optimizer(), gamma=0.5)
        in_order.optimizer.step()
        in_order.step()


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda o: lr_scheduler.StepLR(object(), 2), TypeError, "expected an Optimizer"),
        (lambda o: lr_scheduler.StepLR(o, 0), ValueError, "step_size must be a positive int"),
        (lambda o: lr_scheduler.StepLR(o, 2.5), ValueError, "step_size"),
        (lambda o: lr_scheduler.CosineAnnealingLR(o, 0), ValueError, "T_max"),
        (lambda o: lr_scheduler.MultiStepLR(o, [2, 3.5]), ValueError, "milestones must be ints"),
        (lambda o: lr_scheduler.LinearLR(o, start_factor=0), ValueError, "start_factor"),
        (lambda o: lr_scheduler.LinearLR(o, end_factor=1.5), ValueError, "end_factor"),
        (lambda o: lr_scheduler.LinearLR(o, total_iters=0), ValueError, "total_iters"),
        (lambda o: lr_scheduler.LambdaLR(o, [lambda e: 1.0]), ValueError, "1 lr_lambdas for 2"),
        (lambda o: lr_scheduler.LambdaLR(o, 0.5), TypeError, "must be callable"),
        (lambda o: lr_scheduler.StepLR(o, 2, last_epoch=3), KeyError, "initial_lr"),
    ],
)
def test_argument_errors(make, error, message):
    with pytest.raises(error, match=message):
        make(_minitrain_optimizer())


def test_numpy_integer_arguments_give_torchs_lr_sequence():
    # Counts computed with numpy (epochs * len(loader), np.arange milestones) are numpy ints
    torch = _torch()

    def schedule(scheduler_module, optimizer):
        return [
            scheduler_module.LinearLR(optimizer, start_factor=0.5, total_iters=np.int64(4)),
            scheduler_module.StepLR(optimizer, step_size=np.int64(3), gamma=0.5),
            scheduler_module.MultiStepLR(optimizer, milestones=np.arange(5, 20, 5), gamma=0.5),
            scheduler_module.CosineAnnealingLR(optimizer, T_max=np.int32(9)),
        ]

    ours = _lr_sequence(_minitrain_optimizer(), lambda o: schedule(lr_scheduler, o), 25)
    theirs = _lr_sequence(_torch_optimizer(), lambda o: schedule(torch.optim.lr_scheduler, o), 25)
    assert ours == theirs
    step = lr_scheduler.StepLR(_minitrain_optimizer(), step_size=np.int64(3))
    assert type(step.state_dict()["step_size"]) is int


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda o: lr_scheduler.StepLR(o, 2, gamma="0.5"), TypeError, "StepLR: gamma must be a"),
        (lambda o: lr_scheduler.StepLR(o, 2, gamma=-0.5), ValueError, "StepLR: gamma must be"),
        (lambda o: lr_scheduler.MultiStepLR(o, [2], gamma=None), TypeError, "MultiStepLR: gamma"),
        (lambda o: lr_scheduler.MultiStepLR(o, 5), TypeError, "MultiStepLR: milestones must"),
        (
            lambda o: lr_scheduler.ExponentialLR(o, float("nan")),
            ValueError,
            "ExponentialLR: gamma must be",
        ),
        (
            lambda o: lr_scheduler.CosineAnnealingLR(o, 10, eta_min="0"),
            TypeError,
            "CosineAnnealingLR: eta_min must be a real number",
        ),
        (
            lambda o: lr_scheduler.CosineAnnealingLR(o, 10, eta_min=-0.1),
            ValueError,
            "CosineAnnealingLR: eta_min must be >= 0",
        ),
        (lambda o: lr_scheduler.LinearLR(o, start_factor="0.1"), TypeError, "LinearLR: start"),
        (lambda o: lr_scheduler.LinearLR(o, end_factor=None), TypeError, "LinearLR: end_factor"),
    ],
)
def test_factor_errors_name_the_scheduler_and_come_before_the_optimizer_is_touched(
    make, error, message
):
    # torch takes these and fails with a bare TypeError at a later step (or runs with a negative
    # or NaN lr); a scheduler must not set 'initial_lr' in the groups before refusing.
    optimizer = _minitrain_optimizer()
    with pytest.raises(error, match=message):
        make(optimizer)
    assert [sorted(group) for group in optimizer.param_groups] == [
        sorted(group) for group in _minitrain_optimizer().param_groups
    ]
    assert [group["lr"] for group in optimizer.param_groups] == LRS


def test_loading_another_schedulers_state_is_an_error():
    optimizer = _minitrain_optimizer()
    step = lr_scheduler.StepLR(optimizer, 2)
    cosine = lr_scheduler.CosineAnnealingLR(_minitrain_optimizer(), 10)
    with pytest.raises(ValueError, match="missing: \\['T_max', 'eta_min'\\]"):
        cosine.load_state_dict(step.state_dict())
    assert cosine.T_max == 10 and not hasattr(cosine, "step_size")
