"""Layers, Module and Parameter, with PyTorch's names, signatures and defaults."""

from . import functional, init, modules, parallel, utils
from .modules import activation
from .modules.activation import *  # noqa: F403 (the layers ops declare, and the written ones)
from .modules.attention import MultiheadAttention
from .modules.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .modules.distance import CosineSimilarity, PairwiseDistance
from .modules.dropout import (
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from .modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .modules.linear import Bilinear, Flatten, Identity, Linear, Unflatten
from .modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    CrossEntropyLoss,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    MSELoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    NLLLoss,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .modules.module import Module, Parameter, StateDictError
from .modules.normalization import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    GroupNorm,
    LayerNorm,
    LocalResponseNorm,
    RMSNorm,
)
from .modules.padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)
from .modules.pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool2d,
    AvgPool3d,
    LPPool1d,
    LPPool2d,
    LPPool3d,
    MaxPool1d,
    MaxPool2d,
    MaxPool3d,
)
from .modules.resampling import (
    ChannelShuffle,
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
from .modules.sparse import Embedding, EmbeddingBag
from .modules.sync_batchnorm import SyncBatchNorm
from .modules.transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .parallel import DataParallel

__all__ = [
    "functional", "init", "modules", "parallel", "utils",
    "Module", "Parameter", "StateDictError", "DataParallel",
    "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm", "LayerNorm", "RMSNorm",
    "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm",
    "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
    "LPPool3d",
    "Identity", "Linear", "Bilinear", "Flatten", "Unflatten", "Embedding", "EmbeddingBag",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
    "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    *activation.__all__,
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss",
    "BCELoss", "BCEWithLogitsLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
    "HingeEmbeddingLoss", "PoissonNLLLoss", "GaussianNLLLoss", "MultiMarginLoss",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "Unfold", "Fold", "PixelShuffle",
    "PixelUnshuffle", "ChannelShuffle", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
    "CosineSimilarity", "PairwiseDistance", "KLDivLoss", "CosineEmbeddingLoss",
    "MarginRankingLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
    "MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
    "TransformerDecoderLayer", "TransformerDecoder", "Transformer",
    "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell",
]  # fmt: skip
