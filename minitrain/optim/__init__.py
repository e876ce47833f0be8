"""Optimizers and learning-rate schedulers, with PyTorch's names, defaults and update rules."""

from . import lr_scheduler
from .adagrad import Adadelta, Adagrad
from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .asgd import ASGD
from .lbfgs import LBFGS
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adadelta", "Adagrad", "Adamax", "NAdam",
    "RAdam", "ASGD", "Rprop", "LBFGS", "lr_scheduler",
]  # fmt: skip
