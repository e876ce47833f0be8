"""Layers, Module and Parameter, with PyTorch's names, signatures and defaults."""

from . import activation, functional, init, parallel, utils
from .activation import *  # noqa: F403 (the layers ops declare, and the written ones)
from .attention import MultiheadAttention
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .dropout import Dropout
from .linear import Flatten, Identity, Linear
from .loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from .module import Module, Parameter, StateDictError
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, LayerNorm, RMSNorm
from .pooling import (
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
from .recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from .resampling import (
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
from .similarity import (
    CosineEmbeddingLoss,
    CosineSimilarity,
    KLDivLoss,
    MarginRankingLoss,
    PairwiseDistance,
    Softmin,
    TripletMarginLoss,
)
from .sparse import Embedding
from .sync_batchnorm import SyncBatchNorm
from .transformer import (
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)

__all__ = [
    "functional", "init", "parallel", "utils",
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
    "CosineSimilarity", "PairwiseDistance", "Softmin", "KLDivLoss", "CosineEmbeddingLoss",
    "MarginRankingLoss", "TripletMarginLoss",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
    "TransformerDecoderLayer", "TransformerDecoder",
    "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",
]  # fmt: skip
