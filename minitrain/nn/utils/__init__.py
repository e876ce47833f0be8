"""The utilities around a model's parameters and sequences, laid out as torch.nn.utils: their
gradients cleared (zero_grads) or clipped (clip_grad.py: clip_grad_norm_, clip_grad_value_,
get_total_norm, clip_grads_with_norm_), their values as one flat vector (convert_parameters.py:
parameters_to_vector, vector_to_parameters), and variable-length sequences packed for the
recurrent layers (`nn.utils.rnn`: PackedSequence, pack_padded_sequence, pad_packed_sequence,
pad_sequence, ...)."""

from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .zero_grad import zero_grads

__all__ = [
    "rnn", "zero_grads", "clip_grad_norm_", "clip_grad_value_", "get_total_norm",
    "clip_grads_with_norm_", "parameters_to_vector", "vector_to_parameters",
]  # fmt: skip
