"""Embedding: a lookup table of vectors indexed by integers."""

from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from . import init
from .functional import _padding_row, embedding
from .module import Module, Parameter


class Embedding(Module):
    """weight[indices], weight (num_embeddings, embedding_dim) initialised from N(0, 1). The row
    at `padding_idx` starts at zero and gets no gradient."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        dtype=np.float32,
    ):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _padding_row(padding_idx, num_embeddings, "Embedding")
        self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, indices) -> Tensor:
        return embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"
