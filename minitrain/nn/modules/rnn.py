"""Recurrent layers: RNN, LSTM and GRU over a sequence, and their one-step cells RNNCell,
LSTMCell and GRUCell, with PyTorch's arguments, parameter names and shapes.

Per layer and direction, one linear computes the input's part of the gates for every time step;
then an LSTM or a GRU runs the whole sequence as one op (ops.lstm_sequence, ops.gru_sequence: the
steps loop inside it, on the cells' kernels), and an Elman RNN one linear and its nonlinearity per
step. A PackedSequence input runs a loop of its own (_packed_direction), each step one cell op
(ops.lstm_cell, ops.gru_cell) on the sequences still running, an LSTM's state as one
(2, batch, hidden_size) tensor, h over c.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ... import creation, ops
from ...errors import ArgumentError, DTypeError, ShapeError
from ...ops.core.op import as_tensor
from ...tensor import Tensor
from .. import init
from ..torch_args import check_default, check_positive_int
from ..utils.rnn import PackedSequence
from .linear import layer_dtype
from .module import Module, Parameter

# gates stacked in each weight, per mode
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}
_NONLINEARITIES = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}


def _nonlinearity(caller: str, nonlinearity: str) -> str:
    if nonlinearity not in _NONLINEARITIES:
        raise ArgumentError(
            f"{caller}: unknown nonlinearity {nonlinearity!r}; select 'tanh' or 'relu'"
        )
    return nonlinearity


def _reset(layer: Module) -> None:
    """PyTorch's initialisation of every recurrent weight and bias: U(-1/sqrt(hidden_size),
    1/sqrt(hidden_size))."""
    bound = 1.0 / math.sqrt(layer.hidden_size)
    for weight in layer.parameters():
        init.uniform_(weight, -bound, bound)


def _check_dtype(caller: str, name: str, value: Tensor, dtype) -> None:
    if value.dtype != dtype:
        raise DTypeError(
            f"{caller}: {name} is {value.dtype} but the layer's parameters are {dtype} (cast "
            f"one, e.g. with .to(dtype))"
        )


class _RNNBase(Module):
    """RNN, LSTM and GRU: the parameters of every layer and direction, by PyTorch's names, and
    the loop over layers, directions and time steps."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        caller = "RNN" if mode.startswith("RNN") else mode
        check_default(caller, "proj_size", proj_size, 0, "LSTM projections are not supported")
        if (
            isinstance(dropout, bool)
            or not isinstance(dropout, numbers.Real)
            or not 0 <= dropout <= 1
        ):
            raise ArgumentError(
                f"{caller}: dropout must be a probability in [0, 1] (of zeroing an element "
                f"between layers), got {dropout!r}"
            )
        dtype = layer_dtype(dtype, caller)
        self.mode = mode
        self.input_size = check_positive_int(caller, "input_size", input_size, least=0)
        self.hidden_size = check_positive_int(caller, "hidden_size", hidden_size)
        self.num_layers = check_positive_int(caller, "num_layers", num_layers)
        self.bias, self.batch_first = bool(bias), bool(batch_first)
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bool(bidirectional), 0
        if dropout > 0 and num_layers == 1:
            warnings.warn(
                f"{caller}: dropout={dropout} acts between layers, so with num_layers=1 it does "
                f"nothing",
                UserWarning,
                stacklevel=3,
            )
        gates = _GATES[mode] * self.hidden_size
        directions = 2 if self.bidirectional else 1
        self._flat_weights_names = []
        for layer in range(self.num_layers):
            inputs = self.input_size if layer == 0 else self.hidden_size * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = {"weight_ih": (gates, inputs), "weight_hh": (gates, self.hidden_size)}
                if self.bias:
                    shapes.update(bias_ih=(gates,), bias_hh=(gates,))
                for name, shape in shapes.items():
                    setattr(self, name + suffix, Parameter(np.empty(shape, dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        """Re-draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in
        place, as the constructor does."""
        _reset(self)

    def flatten_parameters(self) -> None:
        """Nothing to do: PyTorch packs the weights for cuDNN here; minitrain never needs to."""

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters per layer and direction, [w_ih, w_hh, b_ih, b_hh] (no biases without
        bias), as PyTorch's."""
        per = 4 if self.bias else 2
        flat = [getattr(self, name) for name in self._flat_weights_names]
        return [flat[start : start + per] for start in range(0, len(flat), per)]

    def forward(self, input, hx=None):  # noqa: A002
        """output (seq_len, batch, directions * hidden_size), (batch, seq_len, ...) with
        batch_first, or (seq_len, directions * hidden_size) for an unbatched input; and the last
        hidden state (num_layers * directions, batch, hidden_size), (h_n, c_n) for an LSTM.
        A PackedSequence input gives a PackedSequence output (batch_first aside), and each
        sequence's last state at its own length."""
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        x = as_tensor(input)
        batched = self._check_input(x)
        batch = (x.shape[0] if self.batch_first else x.shape[1]) if batched else 1
        states = self._initial_states(hx, x, batch, batched)
        x = x.unsqueeze(1) if not batched else x.transpose(0, 1) if self.batch_first else x
        outputs, finals = self._layers(x, states)
        if self.batch_first and batched:
            outputs = outputs.transpose(0, 1)
        final = ops.stack(finals)
        if self.mode == "LSTM":
            h_n, c_n = final[:, 0], final[:, 1]
            if not batched:
                return outputs.squeeze(1), (h_n.squeeze(1), c_n.squeeze(1))
            return outputs, (h_n, c_n)
        return (outputs, final) if batched else (outputs.squeeze(1), final.squeeze(1))

    def _check_input(self, x: Tensor) -> bool:
        """Check the input's rank, size and dtype; whether it is batched (3-D)."""
        name = type(self).__name__
        if x.ndim not in (2, 3):
            order = "batch, seq_len" if self.batch_first else "seq_len, batch"
            raise ShapeError(
                f"{name}: input must be 3-D ({order}, input_size) or 2-D (seq_len, input_size) "
                f"unbatched, got shape {x.shape}"
            )
        if x.shape[-1] != self.input_size:
            raise ShapeError(
                f"{name}: input {x.shape} has {x.shape[-1]} features in its last dim, the layer "
                f"was built for input_size={self.input_size}"
            )
        time_axis = 1 if self.batch_first and x.ndim == 3 else 0
        if x.shape[time_axis] == 0:
            raise ShapeError(f"{name}: input {x.shape} has no time steps (seq_len 0)")
        _check_dtype(name, "input", x, self.weight_hh_l0.dtype)
        return x.ndim == 3

    def _initial_states(self, hx, x: Tensor, batch: int, batched: bool) -> list:
        """The initial state of each layer and direction, in order, for the input x as given
        (of `batch` sequences): h (batch, hidden_size), or for an LSTM h over c (2, batch,
        hidden_size); zeros where hx is None."""
        name = type(self).__name__
        directions = 2 if self.bidirectional else 1
        count = self.num_layers * directions
        lstm = self.mode == "LSTM"
        if hx is None:
            zeros = creation.zeros(
                (2,) * lstm + (batch, self.hidden_size), dtype=x.dtype, device=x.device
            )
            return [zeros] * count
        if lstm and not (isinstance(hx, (tuple, list)) and len(hx) == 2):
            raise DTypeError(f"{name}: hx must be a pair (h_0, c_0), got {type(hx).__name__}")
        parts = [as_tensor(h) for h in (hx if lstm else (hx,))]
        expected = (count, batch, self.hidden_size) if batched else (count, self.hidden_size)
        layout = "num_layers * num_directions, " + ("batch, " if batched else "")
        for part, part_name in zip(parts, ("h_0", "c_0"), strict=False):
            if part.shape != expected:
                raise ShapeError(
                    f"{name}: {part_name if lstm else 'hx'} {part.shape} must have shape "
                    f"{expected} ({layout}hidden_size) for input {x.shape}"
                )
            _check_dtype(name, part_name if lstm else "hx", part, x.dtype)
        if not batched:
            parts = [part.unsqueeze(1) for part in parts]
        joined = ops.stack(parts, axis=1) if lstm else parts[0]  # (count, 2, batch, hidden)
        return [joined[k] for k in range(count)]

    def _layers(self, x: Tensor, states: list) -> tuple[Tensor, list]:
        """Run every layer over the sequence x (seq_len, batch, features): the last layer's
        output (seq_len, batch, directions * hidden_size) and each layer's and direction's last
        state."""
        directions = 2 if self.bidirectional else 1
        weights = self.all_weights
        sequence, finals = x, []
        for layer in range(self.num_layers):
            hiddens = []
            for direction in range(directions):
                k = layer * directions + direction
                hidden, final = self._direction(sequence, states[k], weights[k], bool(direction))
                hiddens.append(hidden)
                finals.append(final)
            sequence = hiddens[0] if directions == 1 else ops.concat(hiddens, axis=2)
            if layer + 1 < self.num_layers and self.training and self.dropout > 0:
                sequence = ops.dropout(sequence, self.dropout, True)
        return sequence, finals

    def _direction(self, sequence: Tensor, state, weights, reverse: bool) -> tuple:
        """One layer's direction over the sequence: its h at every time step (seq_len, batch,
        hidden_size) and its last state (the one after step 0 in reverse).

        The input's part of every step's gates, x_t @ w_ih^T + b_ih, comes from one product for
        the whole sequence (seq_len * batch rows: BLAS at full speed, where a step's batch rows
        alone are not); an LSTM or a GRU runs its steps in one sequence op, an Elman RNN one
        linear per step on its slice (whose gradients the engine adds up into one array,
        autograd/deferred.py)."""
        w_ih, w_hh = weights[0], weights[1]
        b_ih, b_hh = (weights[2], weights[3]) if self.bias else (None, None)
        input_gates = ops.linear(sequence, w_ih, b_ih)  # (seq_len, batch, gates * hidden_size)
        last = 0 if reverse else -1
        if self.mode == "LSTM":
            states = ops.lstm_sequence(input_gates, state, w_hh, b_hh, reverse=reverse)
            return states[:, 0], states[last]
        if self.mode == "GRU":
            hidden = ops.gru_sequence(input_gates, state, w_hh, b_hh, reverse=reverse)
            # a copy: the op saved `hidden` for its backward, and PyTorch's GRU output may be
            # changed in place before backward (its LSTM's may not, as here: states[:, 0])
            return hidden.clone(), hidden[last]
        steps = len(sequence)
        run = [None] * steps
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            state = self._step(input_gates[t], state, w_hh, b_hh)
            run[t] = state
        return ops.stack(run), run[last]

    def _forward_packed(self, packed: PackedSequence, hx) -> tuple:
        """forward of a PackedSequence: (PackedSequence output, h_n or (h_n, c_n)), the states
        of the batch in its order before packing, as PyTorch's (hx is read in that order too)."""
        name = type(self).__name__
        data = as_tensor(packed.data)
        batch_sizes = [int(size) for size in packed.batch_sizes.cpu().array]
        if data.shape != (sum(batch_sizes), self.input_size):
            raise ShapeError(
                f"{name}: a packed input's data must be (sum of batch_sizes={sum(batch_sizes)}, "
                f"input_size={self.input_size}), got shape {data.shape}"
            )
        _check_dtype(name, "input", data, self.weight_hh_l0.dtype)
        states = self._initial_states(hx, data, batch_sizes[0], True)
        if hx is not None and packed.sorted_indices is not None:  # hx in the sorted order
            states = [ops.index_select(s, s.ndim - 2, packed.sorted_indices) for s in states]
        directions = 2 if self.bidirectional else 1
        weights = self.all_weights
        sequence, finals = data, []
        for layer in range(self.num_layers):
            runs = []
            for direction in range(directions):
                k = layer * directions + direction
                reverse = bool(direction)
                run = self._packed_direction(sequence, batch_sizes, states[k], weights[k], reverse)
                runs.append(run[0])
                finals.append(run[1])
            sequence = runs[0] if directions == 1 else ops.concat(runs, axis=1)
            if layer + 1 < self.num_layers and self.training and self.dropout > 0:
                sequence = ops.dropout(sequence, self.dropout, True)
        final = ops.stack(finals)
        if packed.unsorted_indices is not None:
            final = ops.index_select(final, final.ndim - 2, packed.unsorted_indices)
        output = PackedSequence(sequence, *packed[1:])
        return (output, (final[:, 0], final[:, 1])) if self.mode == "LSTM" else (output, final)

    def _packed_direction(self, data, batch_sizes: list, state, weights, reverse: bool) -> tuple:
        """One layer's direction over packed data (sum of lengths, features): its h for every
        row of data, in data's order, and each sequence's last state (batch, ...).

        Step t runs the first batch_sizes[t] sequences, those still running (the batch is
        sorted longest first). Forwards, the sequences that end leave the state's last rows,
        which are kept as their final states; in reverse, each sequence joins at its own last
        step, from its initial state, and the state after step 0 is every sequence's last."""
        w_hh = weights[1]
        b_ih, b_hh = (weights[2], weights[3]) if self.bias else (None, None)
        input_gates = ops.linear(data, weights[0], b_ih)  # (rows, gates * hidden_size)
        starts = np.concatenate([[0], np.cumsum(batch_sizes)]).tolist()
        lstm = self.mode == "LSTM"

        def rows(value, first, last):  # a state's batch rows first..last-1
            return value[:, first:last] if lstm else value[first:last]

        initial, hidden, ended = state, [None] * len(batch_sizes), []
        order = range(len(batch_sizes) - 1, -1, -1) if reverse else range(len(batch_sizes))
        state, running = (None, 0) if reverse else (state, batch_sizes[0])
        for t in order:
            size = batch_sizes[t]
            if size > running:  # in reverse: the sequences whose last step is t join
                joining = rows(initial, running, size)
                state = joining if state is None else ops.concat([state, joining], axis=int(lstm))
            elif size < running:  # forwards: those that ended at t - 1 keep their state
                ended.append(rows(state, size, running))
                state = rows(state, 0, size)
            state = self._step(input_gates[starts[t] : starts[t + 1]], state, w_hh, b_hh)
            hidden[t], running = self._hidden(state), size
        final = ops.concat([state, *reversed(ended)], axis=int(lstm)) if ended else state
        return ops.concat(hidden), final

    def _step(self, input_gates, state, w_hh, b_hh) -> Tensor:
        if self.mode == "LSTM":
            return ops.lstm_cell(input_gates, state, None, w_hh, None, b_hh)
        if self.mode == "GRU":
            return ops.gru_cell(input_gates, state, None, w_hh, None, b_hh)
        pre = input_gates + ops.linear(state, w_hh, b_hh)
        return ops.tanh(pre) if self.mode == "RNN_TANH" else ops.relu(pre)

    def _hidden(self, state: Tensor) -> Tensor:
        """h of a state: an LSTM's first slice, the state itself otherwise."""
        return state[0] if self.mode == "LSTM" else state

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if not self.bias:
            text += ", bias=False"
        if self.batch_first:
            text += ", batch_first=True"
        if self.dropout:
            text += f", dropout={self.dropout}"
        if self.bidirectional:
            text += ", bidirectional=True"
        return text


def _rnn_step(mode: str, x, h, w_ih, w_hh, b_ih, b_hh) -> Tensor:
    """An Elman RNN step, composed: act(x @ w_ih^T + b_ih + h @ w_hh^T + b_hh)."""
    pre = ops.linear(x, w_ih, b_ih) + ops.linear(h, w_hh, b_hh)
    return ops.tanh(pre) if mode == "RNN_TANH" else ops.relu(pre)


class RNN(_RNNBase):
    """An Elman RNN, h_t = tanh (or relu) of x_t @ w_ih^T + b_ih + h_(t-1) @ w_hh^T + b_hh,
    per layer and direction; PyTorch's arguments, parameter names and shapes."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
    ):
        mode = _NONLINEARITIES[_nonlinearity("RNN", nonlinearity)]
        super().__init__(
            mode, input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, 0, device, dtype,
        )  # fmt: skip
        self.nonlinearity = nonlinearity  # not in the repr, as in PyTorch's


class LSTM(_RNNBase):
    """A long short-term memory RNN, PyTorch's: per layer and direction, one lstm_sequence op
    (one fused lstm_cell op per time step for a PackedSequence). forward(input, (h_0, c_0))
    returns (output, (h_n, c_n)). proj_size other than 0 is refused."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ):
        super().__init__(
            "LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, proj_size, device, dtype,
        )  # fmt: skip


class GRU(_RNNBase):
    """A gated recurrent unit RNN, PyTorch's: per layer and direction, one gru_sequence op (one
    fused gru_cell op per time step for a PackedSequence)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__(
            "GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
            bidirectional, 0, device, dtype,
        )  # fmt: skip


class _RNNCellBase(Module):
    """The cells: weight_ih (gates * hidden_size, input_size), weight_hh (gates * hidden_size,
    hidden_size), bias_ih and bias_hh (gates * hidden_size,), and the checks of one step's
    input and hidden state."""

    def __init__(self, input_size, hidden_size, bias, gates, device, dtype):
        super().__init__()
        caller = type(self).__name__
        dtype = layer_dtype(dtype, caller)
        self.input_size = check_positive_int(caller, "input_size", input_size, least=0)
        self.hidden_size = check_positive_int(caller, "hidden_size", hidden_size)
        self.bias = bool(bias)
        size = gates * self.hidden_size
        self.weight_ih = Parameter(np.empty((size, self.input_size), dtype))
        self.weight_hh = Parameter(np.empty((size, self.hidden_size), dtype))
        if self.bias:
            self.bias_ih = Parameter(np.empty(size, dtype))
            self.bias_hh = Parameter(np.empty(size, dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()
        if device is not None:
            self.to(device)

    def reset_parameters(self) -> None:
        """Re-draw every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), in
        place, as the constructor does."""
        _reset(self)

    def _input(self, input) -> tuple[Tensor, bool]:  # noqa: A002
        """The step's input as a (batch, input_size) Tensor, and whether it came batched."""
        name = type(self).__name__
        x = as_tensor(input)
        if x.ndim not in (1, 2) or x.shape[-1] != self.input_size:
            raise ShapeError(
                f"{name}: input must be (batch, input_size) or (input_size,) with input_size="
                f"{self.input_size}, got shape {x.shape}"
            )
        _check_dtype(name, "input", x, self.weight_ih.dtype)
        return (x, True) if x.ndim == 2 else (x.unsqueeze(0), False)

    def _state_part(self, value, part: str, x: Tensor, batched: bool) -> Tensor:
        """A given hidden state (h or c) as (batch, hidden_size), checked against the input."""
        name = type(self).__name__
        h = as_tensor(value)
        expected = (x.shape[0], self.hidden_size) if batched else (self.hidden_size,)
        if h.shape != expected:
            shown = x.shape if batched else x.shape[1:]
            raise ShapeError(
                f"{name}: {part} {h.shape} must have shape {expected} "
                f"({'batch, ' if batched else ''}hidden_size) for input {shown}"
            )
        _check_dtype(name, part, h, x.dtype)
        return h if batched else h.unsqueeze(0)

    def _zeros(self, x: Tensor, *lead: int) -> Tensor:
        return creation.zeros(lead + (x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        return text if self.bias else text + ", bias=False"


class RNNCell(_RNNCellBase):
    """One Elman RNN step: h' = tanh (or relu) of x @ w_ih^T + b_ih + h @ w_hh^T + b_hh."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ):
        _nonlinearity("RNNCell", nonlinearity)
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None) -> Tensor:  # noqa: A002
        """input (N, input_size) or (input_size,), hx (N, hidden_size) or (hidden_size,), zeros when
        None -> the next hidden state, (N, hidden_size) or (hidden_size,)."""
        x, batched = self._input(input)
        h = self._zeros(x) if hx is None else self._state_part(hx, "hx", x, batched)
        mode = _NONLINEARITIES[self.nonlinearity]
        out = _rnn_step(mode, x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)

    def extra_repr(self) -> str:
        text = super().extra_repr()
        shown = "" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity}"
        return text + shown


class LSTMCell(_RNNCellBase):
    """One LSTM step, the fused lstm_cell op: forward(input, (h, c)) returns (h', c')."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None) -> tuple[Tensor, Tensor]:  # noqa: A002
        """input (N, input_size) or (input_size,), hx the pair (h, c), each (N, hidden_size) or
        (hidden_size,), zeros when None -> the next pair (h', c')."""
        x, batched = self._input(input)
        if hx is None:
            state = self._zeros(x, 2)
        else:
            if not (isinstance(hx, (tuple, list)) and len(hx) == 2):
                raise DTypeError(f"LSTMCell: hx must be a pair (h, c), got {type(hx).__name__}")
            h, c = (self._state_part(v, part, x, batched) for v, part in zip(hx, "hc", strict=True))
            state = ops.stack([h, c])
        out = ops.lstm_cell(x, state, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return (out[0], out[1]) if batched else (out[0, 0], out[1, 0])


class GRUCell(_RNNCellBase):
    """One GRU step, the fused gru_cell op: forward(input, h) returns h'."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None) -> Tensor:  # noqa: A002
        """input (N, input_size) or (input_size,), hx (N, hidden_size) or (hidden_size,), zeros when
        None -> the next hidden state, (N, hidden_size) or (hidden_size,)."""
        x, batched = self._input(input)
        h = self._zeros(x) if hx is None else self._state_part(hx, "hx", x, batched)
        out = ops.gru_cell(x, h, self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh)
        return out if batched else out.squeeze(0)
