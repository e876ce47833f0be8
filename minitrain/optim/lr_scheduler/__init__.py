"""Learning-rate schedulers: each step sets every parameter group's 'lr' by a schedule, producing
exactly PyTorch's sequence of learning rates (`torch.optim.lr_scheduler`)."""

from .base import ChainedScheduler, LRScheduler, SequentialLR
from .cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from .decay import (
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    StepLR,
)
from .plateau import ReduceLROnPlateau

__all__ = [
    "LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
    "LinearLR", "ExponentialLR", "PolynomialLR", "CosineAnnealingLR", "SequentialLR",
    "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "OneCycleLR",
    "CosineAnnealingWarmRestarts",
]  # fmt: skip
