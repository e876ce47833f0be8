"""The random generators the samplers, loaders and random_split draw from: what their
`generator=` argument may be, turned into a numpy Generator."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ... import backend
from ...errors import DTypeError

__all__ = ["numpy_generator"]


def numpy_generator(generator: Any, caller: str) -> np.random.Generator | None:
    """The numpy Generator `generator` stands for, or None for minitrain's global one.

    `generator` may be None (minitrain's global generator, seeded by `minitrain.manual_seed`,
    drawn from at each use), a non-negative int (a new generator seeded with it), a
    `numpy.random.Generator` (used as it is, its state advancing), or any object with a
    `numpy_generator()` method returning one (how a `minitrain.Generator` is taken)."""
    if generator is None:
        return None
    if isinstance(generator, np.random.Generator):
        return generator
    if callable(getattr(generator, "numpy_generator", None)):
        inner = generator.numpy_generator()
        if not isinstance(inner, np.random.Generator):
            raise generator_error(caller, generator)
        return inner
    if not isinstance(generator, (str, numbers.Number)):
        raise generator_error(caller, generator)
    return backend.seeded_generator(generator, caller)  # checks the seed, naming caller


def generator_error(caller: str, generator: Any) -> TypeError:
    """The error for a `generator=` that is none of the kinds numpy_generator takes."""
    return DTypeError(
        f"{caller}: generator must be None, an int seed, a numpy.random.Generator or an object "
        f"with a numpy_generator() method, got {type(generator).__name__}"
    )
