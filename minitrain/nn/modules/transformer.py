"""The transformer layers, PyTorch's: TransformerEncoderLayer, TransformerEncoder,
TransformerDecoderLayer, TransformerDecoder, and Transformer, the encoder-decoder built of them."""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np

from ... import backend, ops
from ...creation import full
from ...errors import ArgumentError, DTypeError, ShapeError
from ...ops.core.checks import check_eps
from ...ops.core.op import array_of, as_tensor, shape_of
from ...ops.random.dropout import check_probability
from ...tensor import Tensor
from .. import functional as F  # noqa: N812 (PyTorch's idiom)
from .. import init
from ..torch_args import check_positive_int
from .attention import (
    MultiheadAttention,
    check_heads,
    check_masks,
    sequence_dims,
)
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear, layer_dtype
from .module import Module
from .normalization import LayerNorm


def activation_function(activation, caller: str) -> Callable:
    """The feed-forward block's activation: 'relu' and 'gelu' as F.relu and F.gelu, a callable
    (a function or a Module) as it is."""
    if isinstance(activation, str):
        if activation in ("relu", "gelu"):
            return F.relu if activation == "relu" else F.gelu
        raise ArgumentError(
            f"{caller}: activation must be 'relu', 'gelu' or a callable, got {activation!r}"
        )
    if not callable(activation):
        raise DTypeError(
            f"{caller}: activation must be 'relu', 'gelu' or a callable, got "
            f"{type(activation).__name__}"
        )
    return activation


def is_causal_mask(mask, is_causal: bool | None, size: int) -> bool:
    """PyTorch's reading of a stack's is_causal: the hint as given, or where it is None, whether
    `mask` is the (size, size) causal mask (True or -inf above the diagonal, False or 0 on and
    below it), so the layers can take the causal kernel path."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    data = array_of(mask)
    if data.shape != (size, size):
        return False
    xp = backend.array_module(data)
    upper = xp.triu(xp.ones((size, size), dtype=bool), 1)
    if data.dtype == np.bool_:
        return bool((data == upper).all())
    return bool((data[upper] == -np.inf).all() and (data[~upper] == 0).all())


class _TransformerLayer(Module):
    """What the encoder and decoder layers share: PyTorch's constructor and the checks of its
    arguments, one MultiheadAttention for each name in the class's `attentions`, the
    feed-forward block (linear1, the activation, dropout, linear2), and a LayerNorm and a
    Dropout for each of the len(attentions) + 1 blocks (norm1, norm2, ..., dropout1, dropout2,
    ...), registered in PyTorch's order, so that state dicts and printouts list them as its
    layers do."""

    attentions: tuple[str, ...] = ()

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        caller = type(self).__name__
        check_heads(caller, d_model, nhead, ("d_model", "nhead"))
        check_positive_int(caller, "dim_feedforward", dim_feedforward)
        check_probability(dropout, caller, "dropout")
        layer_norm_eps = check_eps(caller, layer_norm_eps, "layer_norm_eps")
        layer_dtype(dtype, caller)
        activation = activation_function(activation, caller)
        factory = {"device": device, "dtype": dtype}
        for name in self.attentions:
            attention = MultiheadAttention(
                d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **factory
            )
            setattr(self, name, attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        blocks = range(1, len(self.attentions) + 2)
        for i in blocks:
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        for i in blocks:
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = activation

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(
            x,
            x,
            x,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            need_weights=False,
            is_causal=is_causal,
        )[0]
        return self.dropout1(x)


class TransformerEncoderLayer(_TransformerLayer):
    """Self-attention then a feed-forward block (linear1, activation, linear2), each added to
    its input and layer-normalised: after the addition (post-norm, "Attention Is All You Need"),
    or with norm_first before the block (pre-norm). Parameters and arguments as PyTorch's, so a
    PyTorch state_dict loads. src (S, E) unbatched or (S, N, E) ((N, S, E) with batch_first);
    src_mask and src_key_padding_mask as MultiheadAttention's attn_mask and key_padding_mask."""

    attentions = ("self_attn",)

    def forward(
        self,
        src: Tensor,
        src_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
    ) -> Tensor:
        """src (S, E), (S, N, E) or with batch_first (N, S, E) -> the same shape. src_mask (S, S) or
        (N * nhead, S, S) and src_key_padding_mask (N, S) as MultiheadAttention's attn_mask and
        key_padding_mask; is_causal is the hint that src_mask is the causal mask."""
        caller, attention = "TransformerEncoderLayer", self.self_attn
        batch, length = sequence_dims(
            caller, "src", src, attention.embed_dim, attention.batch_first, "d_model"
        )
        names = ("src_mask", "src_key_padding_mask")
        check_masks(
            caller,
            batch,
            attention.num_heads,
            length,
            length,
            src_mask,
            src_key_padding_mask,
            names,
        )
        x = as_tensor(src)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _ff_block(self, x) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerDecoderLayer(_TransformerLayer):
    """Self-attention over the target, attention from the target to `memory` (the encoder's
    output), then a feed-forward block, each added to its input and layer-normalised after
    (post-norm) or, with norm_first, before the block. Parameters and arguments as PyTorch's.
    tgt (T, E) or (T, N, E), memory (S, E) or (S, N, E) ((N, T, E) and (N, S, E) with
    batch_first); tgt_mask (T, T), memory_mask (T, S) (or with N * nhead leading), padding
    masks (N, T) and (N, S)."""

    attentions = ("self_attn", "multihead_attn")

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """tgt (T, E), (T, N, E) or with batch_first (N, T, E), attending to memory (S, E), (S, N,
        E) or (N, S, E) -> tgt's shape. tgt_mask (T, T), memory_mask (T, S) (or with N * nhead
        leading), tgt_key_padding_mask (N, T), memory_key_padding_mask (N, S); tgt_is_causal and
        memory_is_causal are hints that tgt_mask and memory_mask are causal."""
        self._check(
            tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask
        )
        x = as_tensor(tgt)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(
                self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal
            )
            return x + self._ff_block(self.norm3(x))
        x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(
            x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal)
        )
        return self.norm3(x + self._ff_block(x))

    def _check(self, tgt, memory, tgt_mask, memory_mask, tgt_padding, memory_padding) -> None:
        caller, attention = "TransformerDecoderLayer", self.self_attn
        features, batch_first = attention.embed_dim, attention.batch_first
        batch, target_len = sequence_dims(caller, "tgt", tgt, features, batch_first, "d_model")
        memory_batch, source_len = sequence_dims(
            caller, "memory", memory, features, batch_first, "d_model"
        )
        if memory_batch != batch:
            raise ShapeError(
                f"{caller}: tgt and memory must both be batched, with one batch size, or both "
                f"unbatched, got tgt {shape_of(tgt)} and memory {shape_of(memory)}"
            )
        heads = attention.num_heads
        names = ("tgt_mask", "tgt_key_padding_mask")
        check_masks(caller, batch, heads, target_len, target_len, tgt_mask, tgt_padding, names)
        names = ("memory_mask", "memory_key_padding_mask")
        check_masks(
            caller, batch, heads, target_len, source_len, memory_mask, memory_padding, names
        )

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.multihead_attn(
            x,
            memory,
            memory,
            attn_mask=attn_mask,
            key_padding_mask=key_padding_mask,
            is_causal=is_causal,
            need_weights=False,
        )[0]
        return self.dropout2(x)

    def _ff_block(self, x) -> Tensor:
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _clones(caller: str, layer, num_layers) -> ModuleList:
    """num_layers independent copies of `layer` (each starts with its parameters' values)."""
    if not isinstance(layer, Module):
        raise DTypeError(f"{caller}: expected a layer Module, got {type(layer).__name__}")
    num_layers = check_positive_int(caller, "num_layers", num_layers)
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


def _sequence_length(x, batch_first: bool) -> int:
    shape = shape_of(x)
    return shape[1] if batch_first and len(shape) == 3 else shape[0]


class TransformerEncoder(Module):
    """num_layers copies of encoder_layer applied in turn, then `norm` if given. The layers are
    copies: each starts from encoder_layer's parameter values, as in PyTorch. is_causal=None
    reads a causal `mask` as such. enable_nested_tensor and mask_check are accepted and change
    nothing: in PyTorch they choose a faster path for padded batches in inference (which writes
    zeros at the padded positions, where minitrain computes them as usual)."""

    def __init__(
        self,
        encoder_layer: TransformerEncoderLayer,
        num_layers: int,
        norm: Module | None = None,
        enable_nested_tensor: bool = True,
        mask_check: bool = True,
    ) -> None:
        super().__init__()
        self.layers = _clones("TransformerEncoder", encoder_layer, num_layers)
        self.num_layers, self.norm = int(num_layers), norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(
        self,
        src: Tensor,
        mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        is_causal: bool | None = None,
    ) -> Tensor:
        """src through every layer, then norm -> src's shape. mask and src_key_padding_mask as the
        layer's src_mask and src_key_padding_mask; is_causal=None checks whether mask is the causal
        mask."""
        length = _sequence_length(src, self.layers[0].self_attn.batch_first)
        is_causal = is_causal_mask(mask, is_causal, length)
        out = src
        for layer in self.layers:
            out = layer(
                out, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask
            )
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Module):
    """num_layers copies of decoder_layer applied in turn over the target, each attending to
    `memory`, then `norm` if given. tgt_is_causal=None reads a causal tgt_mask as such."""

    def __init__(
        self,
        decoder_layer: TransformerDecoderLayer,
        num_layers: int,
        norm: Module | None = None,
    ) -> None:
        super().__init__()
        self.layers = _clones("TransformerDecoder", decoder_layer, num_layers)
        self.num_layers, self.norm = int(num_layers), norm

    def forward(
        self,
        tgt: Tensor,
        memory: Tensor,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """tgt through every layer, each attending to memory, then norm -> tgt's shape. Masks as the
        layer's; tgt_is_causal=None checks whether tgt_mask is the causal mask."""
        length = _sequence_length(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = is_causal_mask(tgt_mask, tgt_is_causal, length)
        out = tgt
        for layer in self.layers:
            out = layer(
                out,
                memory,
                tgt_mask=tgt_mask,
                memory_mask=memory_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
                memory_key_padding_mask=memory_key_padding_mask,
                tgt_is_causal=tgt_is_causal,
                memory_is_causal=memory_is_causal,
            )
        return out if self.norm is None else self.norm(out)


def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """The (sz, sz) causal mask: -inf above the diagonal (a position may not attend to later
    ones), 0 on and below it; dtype the default float dtype unless given."""
    sz = check_positive_int("generate_square_subsequent_mask", "sz", sz, least=0)
    return ops.triu(full((sz, sz), float("-inf"), dtype=dtype, device=device), 1)


class Transformer(Module):
    """The encoder-decoder transformer ("Attention Is All You Need"), PyTorch's: a
    TransformerEncoder of num_encoder_layers layers and a TransformerDecoder of
    num_decoder_layers layers, each stack ending in a LayerNorm, its matrices drawn by
    xavier_uniform_; custom_encoder / custom_decoder replace a stack. Parameter names as
    PyTorch's (encoder.layers.0.self_attn.in_proj_weight, ..., decoder.norm.bias), so a PyTorch
    state_dict loads."""

    def __init__(
        self,
        d_model: int = 512,
        nhead: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable = F.relu,
        custom_encoder: Module | None = None,
        custom_decoder: Module | None = None,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        layer_arguments = (
            d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
            norm_first, bias,
        )  # fmt: skip
        factory = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(*layer_arguments, **factory)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(*layer_arguments, **factory)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        for parameter in self.parameters():
            if parameter.ndim > 1:
                init.xavier_uniform_(parameter)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        src_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        memory_mask: Tensor | None = None,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        src_is_causal: bool | None = None,
        tgt_is_causal: bool | None = None,
        memory_is_causal: bool = False,
    ) -> Tensor:
        """src (S, E) or (S, N, E) through the encoder, then tgt (T, E) or (T, N, E) through the
        decoder attending to its output -> tgt's shape ((N, S, E) and (N, T, E) with
        batch_first). Masks as the encoder's and decoder's: src_mask (S, S), tgt_mask (T, T),
        memory_mask (T, S), the padding masks (N, S), (N, T), (N, S); a causal-mask hint of None
        checks the mask."""
        src_shape, tgt_shape = shape_of(src), shape_of(tgt)
        batch_dim = 0 if self.batch_first else 1
        if len(src_shape) == 3 and (
            len(tgt_shape) != 3 or src_shape[batch_dim] != tgt_shape[batch_dim]
        ):
            raise ShapeError(
                f"Transformer: the batch number of src and tgt must be equal, got src "
                f"{src_shape} and tgt {tgt_shape} (batch_first={self.batch_first})"
            )
        if src_shape[-1] != self.d_model or tgt_shape[-1] != self.d_model:
            raise ShapeError(
                f"Transformer: the feature number of src and tgt must be equal to d_model "
                f"({self.d_model}), got src {src_shape} and tgt {tgt_shape}"
            )
        memory = self.encoder(
            src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal
        )
        return self.decoder(
            tgt,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask,
            tgt_is_causal=tgt_is_causal,
            memory_is_causal=memory_is_causal,
        )
