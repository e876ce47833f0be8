"""`minitrain.Generator`, PyTorch's torch.Generator: a random stream of its own, apart from the
global one `minitrain.manual_seed` seeds. It holds a numpy `np.random.Generator` (PCG64), which
`randn`, `rand`, `randint`, `randperm`, `Tensor.normal_` and `Tensor.uniform_` draw from when
given `generator=`; `numpy_generator()` hands it to code drawing with numpy itself (samplers).
Its numbers are minitrain's, not PyTorch's: the same seed gives the same stream in minitrain,
not the values torch.Generator gives."""

from __future__ import annotations

import numpy as np

from .. import backend
from ..errors import DeviceError, DTypeError

__all__ = ["Generator", "numpy_source"]


class Generator:
    """A random generator of its own (a numpy Generator, PCG64) on the CPU, as torch.Generator:
    `Generator().manual_seed(0)` makes one whose draws depend on nothing else."""

    def __init__(self, device="cpu"):
        self.device = backend.device(device)
        if self.device.type != "cpu":
            raise DeviceError(
                f"Generator: minitrain's generators live on the CPU, got device '{self.device}'"
            )
        self._initial_seed = int(np.random.SeedSequence().entropy % 2**63)
        self._numpy = np.random.default_rng(self._initial_seed)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from `seed` (a non-negative int); returns the generator itself."""
        self._numpy = backend.seeded_generator(seed, "Generator.manual_seed")
        self._initial_seed = int(seed)
        return self

    def seed(self) -> int:
        """Reseed from fresh entropy, as torch.Generator.seed; returns the new seed."""
        self._initial_seed = int(np.random.SeedSequence().entropy % 2**63)
        self._numpy = np.random.default_rng(self._initial_seed)
        return self._initial_seed

    def initial_seed(self) -> int:
        """The seed the stream last started from."""
        return self._initial_seed

    def get_state(self) -> dict:
        """A copy of the stream's state (numpy's bit-generator state, a dict), for set_state."""
        return {"seed": self._initial_seed, "bit_generator": self._numpy.bit_generator.state}

    def set_state(self, state: dict) -> Generator:
        """Put the stream back where `get_state` read it; returns the generator itself."""
        self._numpy.bit_generator.state = state["bit_generator"]
        self._initial_seed = state["seed"]
        return self

    def numpy_generator(self) -> np.random.Generator:
        """The numpy Generator this one draws from (shared, not a copy: drawing from it moves
        this generator's stream), for code that draws with numpy itself, such as samplers."""
        return self._numpy

    def __repr__(self) -> str:
        return f"minitrain.Generator(device='{self.device}', initial_seed={self._initial_seed})"


def numpy_source(generator, caller: str) -> np.random.Generator | None:
    """The numpy Generator to draw from for `generator=` (None: the global stream); a
    DTypeError naming `caller` for anything but a minitrain.Generator."""
    if generator is None:
        return None
    backend.note_draw(caller)
    if not isinstance(generator, Generator):
        raise DTypeError(
            f"{caller}: generator must be a minitrain.Generator, got {type(generator).__name__}"
        )
    return generator.numpy_generator()
