"""Embedding, a lookup table of vectors indexed by integers, and EmbeddingBag, the sums, means
or maxima of bags of its rows."""

from __future__ import annotations

import numpy as np

from ...errors import ArgumentError, ShapeError
from ...tensor import Tensor
from .. import init
from ..functional import embedding, embedding_bag
from ..torch_args import check_embedding_options, padding_row
from .linear import layer_dtype
from .module import Module, Parameter


class Embedding(Module):
    """weight[indices], weight (num_embeddings, embedding_dim) initialised from N(0, 1). The row
    at `padding_idx` starts at zero and gets no gradient. max_norm, scale_grad_by_freq and sparse
    take PyTorch's defaults only (see F.embedding)."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight=None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        check_embedding_options("Embedding", max_norm, scale_grad_by_freq, sparse)
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_row(padding_idx, num_embeddings, "Embedding")
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            dtype = layer_dtype(dtype, "Embedding")
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype))
            self.reset_parameters()
        else:  # from_pretrained: the given table as it is, sharing its array (as PyTorch)
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(
                    f"Embedding: _weight has shape {tuple(_weight.shape)}, not (num_embeddings, "
                    f"embedding_dim) = ({num_embeddings}, {embedding_dim})"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)
        if device is not None:
            self.to(device)

    @classmethod
    def from_pretrained(
        cls,
        embeddings,
        freeze: bool = True,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
    ) -> Embedding:
        """An Embedding over an existing (num_embeddings, embedding_dim) table, sharing its
        array; frozen (weight.requires_grad False) unless freeze=False. The padding row keeps
        its values and gets no gradient."""
        check_embedding_options("Embedding.from_pretrained", max_norm, scale_grad_by_freq, sparse)
        table = embeddings if isinstance(embeddings, Tensor) else Tensor(embeddings)
        if table.ndim != 2:
            raise ShapeError(
                f"Embedding.from_pretrained: embeddings must be 2-D (num_embeddings, "
                f"embedding_dim), got shape {tuple(table.shape)}"
            )
        rows, cols = table.shape
        return cls(rows, cols, padding_idx, _weight=table, _freeze=freeze)

    def reset_parameters(self) -> None:
        """Re-draw weight from N(0, 1), in place, the padding_idx row set to zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.array[self.padding_idx] = 0
            self.weight.bump_version()

    def forward(self, indices) -> Tensor:
        """Integer indices (a Tensor or numpy array) of any shape `(*)` -> `(*, embedding_dim)`, the
        rows of weight they pick. Negative indices count from the end (PyTorch refuses them); rows
        picked at padding_idx get no gradient."""
        return embedding(indices, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"


class EmbeddingBag(Module):
    """The sum, mean or max of bags of rows of weight (num_embeddings, embedding_dim),
    initialised from N(0, 1) with the padding_idx row at zero; see F.embedding_bag. max_norm,
    scale_grad_by_freq and sparse take PyTorch's defaults only."""

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        mode: str = "mean",
        sparse: bool = False,
        _weight=None,
        include_last_offset: bool = False,
        padding_idx: int | None = None,
        device=None,
        dtype=None,
    ):
        super().__init__()
        check_embedding_options("EmbeddingBag", max_norm, scale_grad_by_freq, sparse)
        if mode not in ("sum", "mean", "max"):
            raise ArgumentError(f"EmbeddingBag: mode must be 'sum', 'mean' or 'max', got {mode!r}")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_row(padding_idx, num_embeddings, "EmbeddingBag")
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.mode, self.include_last_offset = mode, include_last_offset
        if _weight is None:
            dtype = layer_dtype(dtype, "EmbeddingBag")
            self.weight = Parameter(np.empty((num_embeddings, embedding_dim), dtype))
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ShapeError(
                    f"EmbeddingBag: _weight has shape {tuple(_weight.shape)}, not "
                    f"(num_embeddings, embedding_dim) = ({num_embeddings}, {embedding_dim})"
                )
            self.weight = Parameter(_weight)
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        """Re-draw weight from N(0, 1), in place, the padding_idx row set to zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.array[self.padding_idx] = 0
            self.weight.bump_version()

    def forward(self, input, offsets=None, per_sample_weights=None) -> Tensor:  # noqa: A002
        """input (B, L) of B bags, or 1-D cut into bags at offsets -> (B, embedding_dim)."""
        return embedding_bag(
            input,
            self.weight,
            offsets,
            mode=self.mode,
            per_sample_weights=per_sample_weights,
            include_last_offset=self.include_last_offset,
            padding_idx=self.padding_idx,
        )

    def extra_repr(self) -> str:
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}{padding}"
