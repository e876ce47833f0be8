"""Layers, Module and Parameter, with PyTorch's names, signatures and defaults."""

from . import functional, init, modules, parallel, utils
from .modules import activation
from .modules.activation import *  # noqa: F403 (the layers ops declare, and the written ones)
from .modules.attention import MultiheadAttention
from .modules.container import ModuleDict, ModuleList, Sequential
from .modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .modules.distance import CosineSimilarity, PairwiseDistance
from .modules.dropout import Dropout
from .modules.linear import Flatten, Identity, Linear
from .modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
    TripletMarginLoss,
)
from .modules.module import Module, Parameter, StateDictError
from .modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    LayerNorm,
    RMSNorm,
)
from .modules.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from .modules.resampling import (
    Fold,
    MaxUnpool1d,
    MaxUnpool2d,
    MaxUnpool3d,
    PixelShuffle,
    PixelUnshuffle,
    Unfold,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from .modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .modules.sparse import Embedding
from .modules.sync_batchnorm import SyncBatchNorm
from .modules.transformer import (
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "functional", "init", "modules", "parallel", "utils",
    "Module", "Parameter", "StateDictError",
    "Sequential", "ModuleList", "ModuleDict",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LayerNorm", "RMSNorm",
    "GroupNorm",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "Identity", "Linear", "Flatten", "Embedding", "Dropout",
    *activation.__all__,
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
    "BCELoss", "BCEWithLogitsLoss",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "Unfold", "Fold", "PixelShuffle",
    "PixelUnshuffle", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "CosineSimilarity", "PairwiseDistance", "KLDivLoss", "CosineEmbeddingLoss",
    "MarginRankingLoss", "TripletMarginLoss",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
    "TransformerDecoderLayer", "TransformerDecoder",
    "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",
]  # fmt: skip
