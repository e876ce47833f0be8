"""Every layer of minitrain.nn on a CUDA device (the strict stand-in for CuPy, and a real GPU
where one is at hand): built in float64 on the CPU, copied and moved with Module.to, run forward
and backward on both in training and in eval mode, and compared: outputs, input gradients,
every parameter's gradient and every buffer (batch norm's running statistics), each of them on
the device. A layer of nn.__all__ missing from the table, and not excluded with a reason, fails
the coverage test. The table's machinery, and the cases of the layers beyond the common ones, are
in tests/nn_layer_cases.py; the layers that draw in training, in test_device_nn_draws.py."""

from __future__ import annotations

import copy
import inspect

import numpy as np
import pytest
from nn_layer_cases import EXTRA_CASES, Case, Const
from nn_layer_cases import causal as _causal
from nn_layer_cases import classes as _classes
from nn_layer_cases import decoder_layer as _decoder_layer
from nn_layer_cases import encoder_layer as _encoder_layer
from nn_layer_cases import log_probs as _log_probs
from nn_layer_cases import normal as _normal
from nn_layer_cases import pooled as _pooled

import minitrain as mt
from minitrain import backend, nn

CPU = mt.device("cpu")


CASES: dict[str, Case] = {
    # containers with a forward, and the plain layers
    "Sequential": Case(
        lambda: nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)), _normal(5, 4)
    ),
    "Identity": Case(lambda: nn.Identity(3, unused=True), _normal(2, 3)),
    "Linear": Case(lambda: nn.Linear(4, 3), _normal(2, 5, 4)),
    "Linear-no_bias": Case(lambda: nn.Linear(4, 3, bias=False), _normal(5, 4)),
    "Flatten": Case(lambda: nn.Flatten(), _normal(2, 3, 4, 2)),
    "Flatten-middle": Case(lambda: nn.Flatten(1, 2), _normal(2, 3, 4, 2)),
    # convolutions (the conv family's own device tests go further: tests/device/test_device_conv)
    "Conv1d": Case(lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), _normal(2, 4, 9)),
    "Conv1d-reflect": Case(lambda: nn.Conv1d(2, 3, 3, padding=2, padding_mode="reflect"),
                           _normal(2, 2, 7)),
    "Conv2d": Case(lambda: nn.Conv2d(3, 4, 3, padding=1, dilation=(1, 2)), _normal(2, 3, 6, 7)),
    "Conv2d-circular": Case(lambda: nn.Conv2d(2, 3, 3, padding=1, padding_mode="circular"),
                            _normal(2, 2, 5, 5)),
    "Conv2d-same": Case(lambda: nn.Conv2d(2, 3, 4, padding="same"), _normal(1, 2, 6, 5)),
    "Conv3d": Case(lambda: nn.Conv3d(2, 3, 2, stride=(1, 2, 1), padding=1),
                   _normal(2, 2, 4, 5, 3)),
    "ConvTranspose1d": Case(lambda: nn.ConvTranspose1d(4, 2, 3, stride=2, groups=2),
                            _normal(2, 4, 5)),
    "ConvTranspose2d": Case(
        lambda: nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
        _normal(2, 3, 4, 3),
    ),
    "ConvTranspose3d": Case(lambda: nn.ConvTranspose3d(2, 3, 2, stride=2, dilation=(1, 2, 1)),
                            _normal(1, 2, 3, 2, 3)),
    # normalization: batch norm's running statistics are buffers, compared after each forward
    "BatchNorm1d": Case(lambda: nn.BatchNorm1d(4), _normal(6, 4)),
    "BatchNorm1d-sequence": Case(lambda: nn.BatchNorm1d(3), _normal(4, 3, 5)),
    "BatchNorm1d-cumulative": Case(lambda: nn.BatchNorm1d(4, momentum=None), _normal(6, 4)),
    "BatchNorm2d": Case(lambda: nn.BatchNorm2d(3), _normal(4, 3, 5, 4)),
    # without a process group, a world of one: the statistics of the batch it is given
    "SyncBatchNorm": Case(lambda: nn.SyncBatchNorm(3), _normal(4, 3, 5, 4)),
    "BatchNorm2d-no_affine": Case(lambda: nn.BatchNorm2d(3, affine=False), _normal(2, 3, 3, 4)),
    "BatchNorm2d-no_running_stats": Case(
        lambda: nn.BatchNorm2d(3, track_running_stats=False), _normal(2, 3, 3, 4)
    ),
    "BatchNorm3d": Case(lambda: nn.BatchNorm3d(2), _normal(2, 2, 3, 4, 3)),
    "LayerNorm": Case(lambda: nn.LayerNorm((3, 4)), _normal(2, 5, 3, 4)),
    "LayerNorm-invertible": Case(lambda: nn.LayerNorm(6, invertible=True), _normal(4, 6)),
    "LayerNorm-no_bias": Case(lambda: nn.LayerNorm(6, bias=False), _normal(4, 6)),
    "RMSNorm": Case(lambda: nn.RMSNorm(6), _normal(3, 4, 6)),
    "RMSNorm-eps": Case(lambda: nn.RMSNorm((2, 3), eps=1e-3, elementwise_affine=False),
                        _normal(3, 2, 3)),
    "GroupNorm": Case(lambda: nn.GroupNorm(2, 6), _normal(3, 6, 4, 2)),
    "GroupNorm-no_affine": Case(lambda: nn.GroupNorm(3, 3, affine=False), _normal(2, 3, 5)),
    # pooling
    "MaxPool1d": Case(lambda: nn.MaxPool1d(3, stride=2, padding=1), _normal(2, 3, 9)),
    "MaxPool2d": Case(lambda: nn.MaxPool2d(2), _normal(2, 3, 6, 5)),
    "MaxPool2d-indices": Case(
        lambda: nn.MaxPool2d(3, stride=2, padding=1, dilation=1, return_indices=True,
                             ceil_mode=True),
        _normal(2, 2, 7, 6),
    ),
    "MaxPool3d": Case(lambda: nn.MaxPool3d(2, stride=(2, 1, 2)), _normal(1, 2, 4, 3, 4)),
    "AvgPool1d": Case(lambda: nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False),
                      _normal(2, 3, 8)),
    "AvgPool2d": Case(lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True),
                      _normal(2, 3, 7, 6)),
    "AvgPool2d-divisor": Case(lambda: nn.AvgPool2d(2, divisor_override=3), _normal(1, 2, 4, 4)),
    "AvgPool3d": Case(lambda: nn.AvgPool3d(2), _normal(1, 2, 4, 4, 2)),
    "AdaptiveAvgPool1d": Case(lambda: nn.AdaptiveAvgPool1d(3), _normal(2, 3, 7)),
    "AdaptiveAvgPool2d": Case(lambda: nn.AdaptiveAvgPool2d((3, None)), _normal(2, 3, 7, 5)),
    "AdaptiveAvgPool3d": Case(lambda: nn.AdaptiveAvgPool3d(2), _normal(1, 2, 5, 3, 4)),
    # embedding: the padding row gets no gradient
    "Embedding": Case(lambda: nn.Embedding(7, 4),
                      lambda rng: (rng.integers(0, 7, (3, 5)),)),
    "Embedding-padding_idx": Case(
        lambda: nn.Embedding(7, 4, padding_idx=2),
        lambda rng: (np.array([[2, 0, 2, 6], [1, 2, 3, 2]]),),
    ),
    "Embedding-pretrained": Case(
        lambda: nn.Embedding.from_pretrained(mt.randn(5, 3), freeze=False, padding_idx=-1),
        lambda rng: (np.array([4, 0, 4, 1]),),
    ),
    # dropout: eval mode here (the identity); training mode draws on the device, below
    "Dropout": Case(lambda: nn.Dropout(0.3), _normal(4, 5), modes=("eval",)),
    "Dropout-p0": Case(lambda: nn.Dropout(0.0), _normal(4, 5), modes=("train",)),
    # activations
    "ReLU": Case(lambda: nn.ReLU(), _normal(3, 5)),
    "LeakyReLU": Case(lambda: nn.LeakyReLU(0.2), _normal(3, 5)),
    "Sigmoid": Case(lambda: nn.Sigmoid(), _normal(3, 5)),
    "Tanh": Case(lambda: nn.Tanh(), _normal(3, 5)),
    "GELU": Case(lambda: nn.GELU(), _normal(3, 5)),
    "GELU-tanh": Case(lambda: nn.GELU(approximate="tanh"), _normal(3, 5)),
    "SiLU": Case(lambda: nn.SiLU(), _normal(3, 5)),
    "QuickGELU": Case(lambda: nn.QuickGELU(), _normal(3, 5)),
    "Softmax": Case(lambda: nn.Softmax(dim=1), _normal(3, 5, 2)),
    "LogSoftmax": Case(lambda: nn.LogSoftmax(dim=-1), _normal(3, 5)),
    "Softmin": Case(lambda: nn.Softmin(dim=0), _normal(3, 5)),
    "ReLU6": Case(lambda: nn.ReLU6(), lambda rng: (4 * rng.standard_normal((3, 5)),)),
    "Hardtanh": Case(lambda: nn.Hardtanh(-0.5, 0.7), _normal(3, 5)),
    "ELU": Case(lambda: nn.ELU(alpha=0.7), _normal(3, 5)),
    "SELU": Case(lambda: nn.SELU(), _normal(3, 5)),
    "CELU": Case(lambda: nn.CELU(alpha=1.5), _normal(3, 5)),
    "Softplus": Case(lambda: nn.Softplus(beta=2.0, threshold=1.0), _normal(3, 5)),
    "Mish": Case(lambda: nn.Mish(), _normal(3, 5)),
    "Hardswish": Case(lambda: nn.Hardswish(), lambda rng: (3 * rng.standard_normal((3, 5)),)),
    "Hardsigmoid": Case(lambda: nn.Hardsigmoid(), lambda rng: (3 * rng.standard_normal((3, 5)),)),
    "LogSigmoid": Case(lambda: nn.LogSigmoid(), _normal(3, 5)),
    "Softsign": Case(lambda: nn.Softsign(), _normal(3, 5)),
    "Tanhshrink": Case(lambda: nn.Tanhshrink(), _normal(3, 5)),
    "PReLU": Case(lambda: nn.PReLU(), _normal(3, 5)),
    "PReLU-channels": Case(lambda: nn.PReLU(3, init=0.1), _normal(2, 3, 4)),
    "GLU": Case(lambda: nn.GLU(dim=1), _normal(3, 6)),
    # losses
    "CrossEntropyLoss": Case(
        lambda: nn.CrossEntropyLoss(), lambda rng: (rng.standard_normal((6, 4)),
                                                    _classes(rng, 6, 4))
    ),
    "CrossEntropyLoss-weighted": Case(
        lambda: nn.CrossEntropyLoss(weight=mt.tensor([0.5, 2.0, 1.0, 1.5]), ignore_index=1,
                                    label_smoothing=0.1),
        lambda rng: (rng.standard_normal((3, 4, 5)), _classes(rng, (3, 5), 4, ignore=1)),
    ),
    "CrossEntropyLoss-probabilities": Case(
        lambda: nn.CrossEntropyLoss(reduction="sum"),
        lambda rng: (rng.standard_normal((5, 3)), Const(np.exp(_log_probs(rng, (5, 3))))),
    ),
    "NLLLoss": Case(
        lambda: nn.NLLLoss(weight=mt.tensor([1.0, 0.3, 2.0]), reduction="none"),
        lambda rng: (_log_probs(rng, (6, 3)), _classes(rng, 6, 3)),
    ),
    "NLLLoss-ignore_index": Case(
        lambda: nn.NLLLoss(ignore_index=0),
        lambda rng: (_log_probs(rng, (4, 3, 2)), _classes(rng, (4, 2), 3, ignore=0)),
    ),
    "MSELoss": Case(lambda: nn.MSELoss(), lambda rng: (rng.standard_normal((4, 3)),
                                                       rng.standard_normal((4, 3)))),
    "L1Loss": Case(lambda: nn.L1Loss(reduction="sum"),
                   lambda rng: (rng.standard_normal((4, 3)), Const(rng.standard_normal((4, 3))))),
    "SmoothL1Loss": Case(lambda: nn.SmoothL1Loss(beta=0.5),
                         lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal((4, 3)))),
    "HuberLoss": Case(lambda: nn.HuberLoss(reduction="none", delta=0.7),
                      lambda rng: (rng.standard_normal((4, 3)), rng.standard_normal((4, 3)))),
    "BCELoss": Case(
        lambda: nn.BCELoss(weight=mt.tensor([1.0, 0.5, 2.0])),
        lambda rng: (rng.uniform(0.05, 0.95, (4, 3)), Const(rng.uniform(0, 1, (4, 3)))),
    ),
    "BCEWithLogitsLoss": Case(
        lambda: nn.BCEWithLogitsLoss(pos_weight=mt.tensor([2.0, 0.5, 1.0])),
        lambda rng: (rng.standard_normal((4, 3)), Const(rng.uniform(0, 1, (4, 3)))),
    ),
    "KLDivLoss": Case(
        lambda: nn.KLDivLoss(reduction="batchmean"),
        lambda rng: (_log_probs(rng, (4, 5)), Const(np.exp(_log_probs(rng, (4, 5))))),
    ),
    "KLDivLoss-log_target": Case(
        lambda: nn.KLDivLoss(reduction="sum", log_target=True),
        lambda rng: (_log_probs(rng, (4, 5)), _log_probs(rng, (4, 5))),
    ),
    "CosineEmbeddingLoss": Case(
        lambda: nn.CosineEmbeddingLoss(margin=0.2),
        lambda rng: (rng.standard_normal((5, 4)), rng.standard_normal((5, 4)),
                     Const(np.array([1.0, -1.0, -1.0, 1.0, -1.0]))),
    ),
    "MarginRankingLoss": Case(
        lambda: nn.MarginRankingLoss(margin=0.3),
        lambda rng: (rng.standard_normal(6), rng.standard_normal(6),
                     Const(np.array([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]))),
    ),
    "TripletMarginLoss": Case(
        lambda: nn.TripletMarginLoss(margin=1.5, p=3, swap=True),
        lambda rng: tuple(rng.standard_normal((4, 5)) for _ in range(3)),
    ),
    # similarity
    "CosineSimilarity": Case(lambda: nn.CosineSimilarity(dim=-1),
                             lambda rng: (rng.standard_normal((3, 4)),
                                          rng.standard_normal((3, 4)))),
    "PairwiseDistance": Case(lambda: nn.PairwiseDistance(p=1.5, keepdim=True),
                             lambda rng: (rng.standard_normal((3, 4)),
                                          rng.standard_normal((3, 4)))),
    # resampling
    "Upsample": Case(lambda: nn.Upsample(scale_factor=2), _normal(1, 2, 3, 4)),
    "Upsample-linear": Case(lambda: nn.Upsample(size=7, mode="linear", align_corners=False),
                            _normal(2, 2, 4)),
    "Upsample-bicubic": Case(
        lambda: nn.Upsample(scale_factor=(2, 1.5), mode="bicubic", align_corners=True),
        _normal(1, 2, 3, 4),
    ),
    "Upsample-trilinear": Case(lambda: nn.Upsample(size=(3, 4, 2), mode="trilinear"),
                               _normal(1, 1, 2, 3, 3)),
    "UpsamplingNearest2d": Case(lambda: nn.UpsamplingNearest2d(size=(5, 3)), _normal(1, 2, 3, 2)),
    "UpsamplingBilinear2d": Case(lambda: nn.UpsamplingBilinear2d(scale_factor=2),
                                 _normal(1, 2, 3, 2)),
    "Unfold": Case(lambda: nn.Unfold(2, dilation=1, padding=1, stride=2), _normal(2, 3, 5, 4)),
    "Fold": Case(lambda: nn.Fold((4, 5), 2, padding=1, stride=(1, 2)), _normal(2, 8, 15)),
    "PixelShuffle": Case(lambda: nn.PixelShuffle(2), _normal(2, 8, 3, 2)),
    "PixelUnshuffle": Case(lambda: nn.PixelUnshuffle(2), _normal(2, 2, 4, 6)),
    "MaxUnpool1d": Case(
        lambda: nn.MaxUnpool1d(2),
        lambda rng: _pooled(rng, nn.MaxPool1d(2, return_indices=True), (2, 3, 8)),
    ),
    "MaxUnpool2d": Case(
        lambda: nn.MaxUnpool2d(3, stride=2, padding=1),
        lambda rng: _pooled(rng, nn.MaxPool2d(3, 2, 1, return_indices=True), (2, 2, 5, 6)),
        kwargs=lambda rng: {"output_size": (5, 6)},
    ),
    "MaxUnpool3d": Case(
        lambda: nn.MaxUnpool3d(2),
        lambda rng: _pooled(rng, nn.MaxPool3d(2, return_indices=True), (1, 2, 4, 4, 2)),
    ),
    # attention and the transformer stacks (light: tests/device has their ops' samples)
    "MultiheadAttention": Case(
        lambda: nn.MultiheadAttention(8, 2, batch_first=True),
        lambda rng: tuple(rng.standard_normal((2, 4, 8)) for _ in range(3)),
        kwargs=lambda rng: {"key_padding_mask": np.array([[False] * 4, [False] * 3 + [True]])},
    ),
    "MultiheadAttention-kv": Case(
        lambda: nn.MultiheadAttention(6, 3, kdim=4, vdim=5, add_bias_kv=True,
                                      add_zero_attn=True),
        lambda rng: (rng.standard_normal((3, 2, 6)), rng.standard_normal((4, 2, 4)),
                     rng.standard_normal((4, 2, 5))),
        kwargs=lambda rng: {"average_attn_weights": False},
    ),
    "MultiheadAttention-causal": Case(
        lambda: nn.MultiheadAttention(8, 2),
        lambda rng: tuple(rng.standard_normal((4, 2, 8)) for _ in range(3)),
        kwargs=lambda rng: {"attn_mask": _causal(4), "need_weights": False, "is_causal": True},
    ),
    "TransformerEncoderLayer": Case(
        lambda: _encoder_layer(batch_first=True), _normal(2, 5, 8),
        kwargs=lambda rng: {"src_mask": _causal(5)},
    ),
    "TransformerEncoderLayer-norm_first": Case(
        lambda: _encoder_layer(norm_first=True, activation="gelu"), _normal(5, 2, 8)
    ),
    "TransformerEncoder": Case(
        lambda: nn.TransformerEncoder(_encoder_layer(), 2, norm=nn.LayerNorm(8)),
        _normal(5, 2, 8),
        kwargs=lambda rng: {"src_key_padding_mask": np.array([[False] * 5, [False] * 4 + [True]])},
    ),
    "TransformerDecoderLayer": Case(
        lambda: _decoder_layer(batch_first=True),
        lambda rng: (rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 3, 8))),
        kwargs=lambda rng: {"tgt_mask": _causal(4), "tgt_is_causal": True},
    ),
    "TransformerDecoder": Case(
        lambda: nn.TransformerDecoder(_decoder_layer(norm_first=True), 2, norm=nn.LayerNorm(8)),
        lambda rng: (rng.standard_normal((4, 2, 8)), rng.standard_normal((3, 2, 8))),
        kwargs=lambda rng: {"tgt_mask": _causal(4)},
    ),
    # recurrent layers and cells (dropout between the layers would draw: 0)
    "RNN": Case(lambda: nn.RNN(4, 5, num_layers=2, nonlinearity="relu"), _normal(3, 2, 4)),
    "RNN-bidirectional": Case(
        lambda: nn.RNN(4, 5, bidirectional=True, batch_first=True),
        lambda rng: (rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 2, 5))),
    ),
    "LSTM": Case(
        lambda: nn.LSTM(4, 5, num_layers=2, bidirectional=True),
        lambda rng: (rng.standard_normal((3, 2, 4)),
                     (rng.standard_normal((4, 2, 5)), rng.standard_normal((4, 2, 5)))),
    ),
    "LSTM-batch_first": Case(lambda: nn.LSTM(4, 5, batch_first=True), _normal(2, 3, 4)),
    "LSTM-unbatched": Case(lambda: nn.LSTM(4, 5, bias=False), _normal(3, 4)),
    "GRU": Case(lambda: nn.GRU(4, 5, num_layers=2, batch_first=True), _normal(2, 3, 4)),
    "GRU-bidirectional": Case(
        lambda: nn.GRU(4, 5, bidirectional=True),
        lambda rng: (rng.standard_normal((3, 2, 4)), rng.standard_normal((2, 2, 5))),
    ),
    "RNNCell": Case(lambda: nn.RNNCell(4, 5, nonlinearity="tanh"),
                    lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal((3, 5)))),
    "LSTMCell": Case(
        lambda: nn.LSTMCell(4, 5),
        lambda rng: (rng.standard_normal((3, 4)),
                     (rng.standard_normal((3, 5)), rng.standard_normal((3, 5)))),
    ),
    "LSTMCell-no_state": Case(lambda: nn.LSTMCell(4, 5, bias=False), _normal(3, 4)),
    "GRUCell": Case(lambda: nn.GRUCell(4, 5),
                    lambda rng: (rng.standard_normal((3, 4)), rng.standard_normal((3, 5)))),
    "GRUCell-unbatched": Case(lambda: nn.GRUCell(4, 5), _normal(4)),
    **EXTRA_CASES,  # the layers beyond the common ones (nn_layer_cases.py)
}  # fmt: skip

# Public Module classes with no entry in CASES, and why.
EXCLUDED = {
    "Module": "the base class: every entry above runs through its __call__, to and buffers",
    "ModuleList": "no forward: test_containers_without_a_forward_move_their_children",
    "ModuleDict": "no forward: test_containers_without_a_forward_move_their_children",
    "ParameterList": "no forward: test_parameter_containers_move_their_parameters",
    "ParameterDict": "no forward: test_parameter_containers_move_their_parameters",
}


def test_every_layer_has_a_case_or_a_reason():
    public = {
        name
        for name in nn.__all__
        if isinstance(getattr(nn, name), type) and issubclass(getattr(nn, name), nn.Module)
    }
    covered = {type(case.make()).__name__ for case in CASES.values()}
    missing = sorted(public - covered - EXCLUDED.keys())
    assert not missing, f"layers with no device case in CASES nor a reason in EXCLUDED: {missing}"
    assert not covered & EXCLUDED.keys(), "a layer both in CASES and in EXCLUDED"
    assert EXCLUDED.keys() <= public, "EXCLUDED names a class nn does not export"


def _is_device_array(array) -> bool:
    return backend.cupy is not None and type(array) is backend.cupy.ndarray


def _host(array) -> np.ndarray:
    return backend.to_device(array, CPU)


def _tensors(value) -> list:
    """The tensors in a layer's output (a tensor, or tuples of them), in order."""
    if isinstance(value, mt.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _tensors(item)]
    assert value is None, f"an output that is neither a tensor nor a tuple: {type(value)}"
    return []


def _inputs(values, device) -> tuple[tuple, list]:
    """The layer's inputs as tensors on `device` (nested tuples kept), and those that require
    grad."""
    leaves = []

    def build(value):
        if isinstance(value, tuple):
            return tuple(build(v) for v in value)
        if isinstance(value, Const):
            return mt.tensor(value.value, device=device)
        floating = value.dtype.kind == "f"
        tensor = mt.tensor(value, device=device, requires_grad=floating)
        if floating:
            leaves.append(tensor)
        return tensor

    return tuple(build(v) for v in values), leaves


def _keywords(values: dict, device) -> dict:
    return {
        k: mt.tensor(v, device=device) if isinstance(v, np.ndarray) else v
        for k, v in values.items()
    }


def _step(layer, case_inputs, device, upstream_seed: int):
    """Forward and backward of `layer` on `device`: (outputs, input gradients). The backward
    seeds every floating output that requires grad with a fixed random upstream."""
    args, kwargs = case_inputs
    inputs, leaves = _inputs(args, device)
    outputs = _tensors(layer(*inputs, **_keywords(kwargs, device)))
    rng = np.random.default_rng(upstream_seed)
    seeded = [t for t in outputs if t.requires_grad]
    assert seeded or not leaves or not mt.is_grad_enabled(), "no output carries a gradient"
    if seeded:
        upstream = [mt.tensor(rng.standard_normal(t.shape), device=device) for t in seeded]
        mt.autograd.backward(seeded, upstream)
    return outputs, [leaf.grad for leaf in leaves]


def _compare(got, want, what: str, device) -> None:
    """A tensor on the device that holds what the CPU's does (exactly, for integers)."""
    assert got is not None and want is not None or got is want, what
    if want is None:
        return
    assert got.device == device and _is_device_array(got.array), f"{what} is not on the device"
    assert got.dtype == want.dtype and got.shape == want.shape, what
    if want.dtype.kind == "f":
        np.testing.assert_allclose(
            _host(got.array), want.array, rtol=1e-9, atol=1e-12, err_msg=what
        )
    else:
        np.testing.assert_array_equal(_host(got.array), want.array, err_msg=what)


def _compare_layers(device_layer, cpu_layer, device) -> None:
    """Every parameter (value and gradient) and buffer of the two layers."""
    named = zip(device_layer.named_parameters(), cpu_layer.named_parameters(), strict=True)
    for (name, got), (_, want) in named:
        _compare(got, want, f"parameter {name}", device)
        _compare(got.grad, want.grad, f"gradient of {name}", device)
    named = zip(device_layer.named_buffers(), cpu_layer.named_buffers(), strict=True)
    for (name, got), (_, want) in named:
        _compare(got, want, f"buffer {name}", device)


@pytest.mark.parametrize(
    "name, mode", [(name, mode) for name in sorted(CASES) for mode in CASES[name].modes]
)
def test_a_layer_steps_on_the_device_as_on_the_cpu(cuda_device, name, mode):
    case = CASES[name]
    mt.manual_seed(0)
    cpu_layer = case.make().double()
    device_layer = copy.deepcopy(cpu_layer).to("cuda")
    rng = np.random.default_rng(1)
    case_inputs = (case.args(rng), case.kwargs(rng))
    if mode == "eval":
        # a training step first, so batch norm's running statistics are not the initial ones
        with mt.no_grad():
            _step(cpu_layer, case_inputs, CPU, 2)
            _step(device_layer, case_inputs, cuda_device, 2)
        cpu_layer.eval()
        device_layer.eval()
    cpu_out, cpu_grads = _step(cpu_layer, case_inputs, CPU, 3)
    device_out, device_grads = _step(device_layer, case_inputs, cuda_device, 3)
    assert len(device_out) == len(cpu_out)
    for index, (got, want) in enumerate(zip(device_out, cpu_out, strict=True)):
        _compare(got, want, f"output {index}", cuda_device)
    for index, (got, want) in enumerate(zip(device_grads, cpu_grads, strict=True)):
        _compare(got, want, f"gradient of input {index}", cuda_device)
    _compare_layers(device_layer, cpu_layer, cuda_device)


def test_batch_norm_updates_its_running_statistics_on_the_device(cuda_device):
    rng = np.random.default_rng(4)
    mt.manual_seed(0)
    cpu_layer = nn.BatchNorm2d(3).double()
    device_layer = copy.deepcopy(cpu_layer).to("cuda")
    for _ in range(3):
        x = rng.standard_normal((4, 3, 2, 5)) * 2 + 1
        cpu_layer(mt.tensor(x))
        device_layer(mt.tensor(x, device="cuda"))
    assert int(_host(device_layer.num_batches_tracked.array)) == 3
    assert not np.allclose(_host(device_layer.running_mean.array), 0)
    _compare_layers(device_layer, cpu_layer, cuda_device)
    cpu_layer.eval()
    device_layer.eval()
    x = rng.standard_normal((2, 3, 2, 2))
    want = cpu_layer(mt.tensor(x))
    got = device_layer(mt.tensor(x, device="cuda"))
    _compare(got, want, "eval output", cuda_device)
    assert int(_host(device_layer.num_batches_tracked.array)) == 3  # eval leaves them


def test_dropout_in_training_mode_draws_its_mask_on_the_device(cuda_device):
    layer = nn.Dropout(0.25).to("cuda")
    x = mt.tensor(np.linspace(1.0, 2.0, 4000).reshape(40, 100), device="cuda", requires_grad=True)
    y = layer(x)
    assert _is_device_array(y.array)
    values, inputs = _host(y.array), _host(x.array)
    kept = values != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(values[kept], inputs[kept] / 0.75, rtol=1e-6)
    upstream = np.cos(np.arange(4000.0)).reshape(40, 100)
    y.backward(mt.tensor(upstream, dtype=y.dtype, device="cuda"))
    assert _is_device_array(x.grad.array)
    np.testing.assert_allclose(
        _host(x.grad.array), np.where(kept, upstream / 0.75, 0), rtol=1e-6, atol=1e-7
    )
    layer.eval()
    np.testing.assert_array_equal(_host(layer(x).array), inputs)


def test_parameter_containers_move_their_parameters(cuda_device):
    mt.manual_seed(0)
    model = nn.Module()
    model.scales = nn.ParameterList([nn.Parameter(mt.randn(3)), mt.randn(2, 2)])
    model.table = nn.ParameterDict({"bias": nn.Parameter(mt.zeros(4)), "gain": mt.ones(1)})
    before = {name: t.array.copy() for name, t in model.state_dict().items()}
    assert len(before) == 4
    model.to("cuda")
    state = model.state_dict()
    assert state.keys() == before.keys()
    for name, tensor in state.items():
        assert _is_device_array(tensor.array), name
        np.testing.assert_array_equal(_host(tensor.array), before[name], err_msg=name)
    # the entries read back are the moved parameters, and a step through them runs there
    assert isinstance(model.scales[1], nn.Parameter) and model.scales[1].device == cuda_device
    x = mt.tensor(np.ones((2, 4)), dtype=np.float32, device="cuda")
    loss = (x * model.table["bias"] + model.table["gain"]).sum() * model.scales[0].sum()
    loss = loss + model.scales[1].sum()
    loss.backward()
    for name, parameter in model.named_parameters():
        assert _is_device_array(parameter.grad.array), name
    np.testing.assert_allclose(
        _host(model.table["bias"].grad.array), 2 * _host(model.scales[0].array).sum(), rtol=1e-6
    )


def test_containers_without_a_forward_move_their_children(cuda_device):
    mt.manual_seed(0)
    model = nn.ModuleDict(
        {"blocks": nn.ModuleList([nn.Linear(3, 3), nn.BatchNorm1d(3)]), "head": nn.Linear(3, 2)}
    )
    before = {name: t.array.copy() for name, t in model.state_dict().items()}
    model.to("cuda")
    state = model.state_dict()
    assert state.keys() == before.keys()
    for name, tensor in state.items():
        assert _is_device_array(tensor.array), name
        np.testing.assert_array_equal(_host(tensor.array), before[name], err_msg=name)
    x = mt.tensor(np.ones((4, 3)), dtype=np.float32, device="cuda")
    for block in model["blocks"]:
        x = block(x)
    assert model["head"](x).device == cuda_device


# Layers that take PyTorch's device= (and dtype=): built there, every parameter and buffer.
BUILT_ON_DEVICE = {
    "SyncBatchNorm": lambda **kw: nn.SyncBatchNorm(3, **kw),
    "Conv1d": lambda **kw: nn.Conv1d(2, 3, 3, **kw),
    "Conv2d": lambda **kw: nn.Conv2d(2, 3, 3, **kw),
    "Conv3d": lambda **kw: nn.Conv3d(2, 3, 2, bias=False, **kw),
    "ConvTranspose1d": lambda **kw: nn.ConvTranspose1d(2, 3, 3, **kw),
    "ConvTranspose2d": lambda **kw: nn.ConvTranspose2d(2, 3, 3, **kw),
    "ConvTranspose3d": lambda **kw: nn.ConvTranspose3d(2, 3, 2, **kw),
    "BatchNorm1d": lambda **kw: nn.BatchNorm1d(3, **kw),
    "BatchNorm2d": lambda **kw: nn.BatchNorm2d(3, **kw),
    "BatchNorm3d": lambda **kw: nn.BatchNorm3d(3, affine=False, **kw),
    "LayerNorm": lambda **kw: nn.LayerNorm(4, **kw),
    "RMSNorm": lambda **kw: nn.RMSNorm(4, **kw),
    "GroupNorm": lambda **kw: nn.GroupNorm(2, 4, **kw),
    "Linear": lambda **kw: nn.Linear(3, 2, **kw),
    "Embedding": lambda **kw: nn.Embedding(5, 3, padding_idx=0, **kw),
    "PReLU": lambda **kw: nn.PReLU(3, **kw),
    "MultiheadAttention": lambda **kw: nn.MultiheadAttention(4, 2, kdim=3, **kw),
    "TransformerEncoderLayer": lambda **kw: nn.TransformerEncoderLayer(4, 2, 8, **kw),
    "TransformerDecoderLayer": lambda **kw: nn.TransformerDecoderLayer(4, 2, 8, **kw),
    "RNN": lambda **kw: nn.RNN(3, 4, **kw),
    "LSTM": lambda **kw: nn.LSTM(3, 4, num_layers=2, **kw),
    "GRU": lambda **kw: nn.GRU(3, 4, bidirectional=True, **kw),
    "RNNCell": lambda **kw: nn.RNNCell(3, 4, **kw),
    "LSTMCell": lambda **kw: nn.LSTMCell(3, 4, **kw),
    "GRUCell": lambda **kw: nn.GRUCell(3, 4, **kw),
    "Transformer": lambda **kw: nn.Transformer(4, 2, 1, 1, 8, **kw),
    "InstanceNorm1d": lambda **kw: nn.InstanceNorm1d(3, affine=True, **kw),
    "InstanceNorm2d": lambda **kw: nn.InstanceNorm2d(3, track_running_stats=True, **kw),
    "InstanceNorm3d": lambda **kw: nn.InstanceNorm3d(
        3, affine=True, track_running_stats=True, **kw
    ),
    "EmbeddingBag": lambda **kw: nn.EmbeddingBag(5, 3, padding_idx=0, **kw),
    "Bilinear": lambda **kw: nn.Bilinear(3, 2, 4, **kw),
}


def test_every_layer_with_a_device_argument_has_a_case():
    takes_device = {
        name
        for name in nn.__all__
        if isinstance(getattr(nn, name), type)
        and "device" in inspect.signature(getattr(nn, name).__init__).parameters
    }
    assert takes_device == BUILT_ON_DEVICE.keys()


@pytest.mark.parametrize("name", sorted(BUILT_ON_DEVICE))
def test_a_layer_built_with_device_lives_there(cuda_device, name):
    layer = BUILT_ON_DEVICE[name](device="cuda", dtype=np.float64)
    tensors = [*layer.named_parameters(), *layer.named_buffers()]
    assert tensors
    for what, tensor in tensors:
        assert tensor.device == cuda_device and _is_device_array(tensor.array), what
        if tensor.dtype.kind == "f":
            assert tensor.dtype == np.float64, what
    if name in ("Embedding", "EmbeddingBag"):  # the padding row starts at zero there too
        assert not _host(layer.weight.array)[0].any()
