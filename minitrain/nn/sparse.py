"""Embedding: a lookup table of vectors indexed by integers."""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
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
        *,
        _weight=None,
        _freeze: bool = False,
    ):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _padding_row(padding_idx, num_embeddings, "Embedding")
        if _weight is None:
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype))
            self.reset_parameters()
        else:  # from_pretrained: the given table as it is, sharing its array (as PyTorch)
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    @classmethod
    def from_pretrained(
        cls, embeddings, freeze: bool = True, padding_idx: int | None = None
    ) -> Embedding:
        """An Embedding over an existing (num_embeddings, embedding_dim) table, sharing its
        array; frozen (weight.requires_grad False) unless freeze=False. The padding row keeps
        its values and gets no gradient."""
        table = embeddings if isinstance(embeddings, Tensor) else Tensor(embeddings)
        if table.ndim != 2:
            raise ShapeError(
                f"Embedding.from_pretrained: embeddings must be 2-D (num_embeddings, "
                f"embedding_dim), got shape {tuple(table.shape)}"
            )
        rows, cols = table.shape
        return cls(rows, cols, padding_idx, table.dtype, _weight=table, _freeze=freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    def forward(self, indices) -> Tensor:
        return embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"
