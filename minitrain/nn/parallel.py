"""DistributedDataParallel: one replica of a module per process, its gradients averaged across the
processes in buckets while backward runs (PyTorch's torch.nn.parallel); DataParallel, PyTorch's
single-process wrapper, on minitrain's one device."""

from __future__ import annotations

import contextlib
import numbers
import weakref

import numpy as np

from .. import distributed
from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..autograd.hooks import queue_callback, register_gradient_ready_hook
from ..errors import ArgumentError, DeviceError, DistributedError, DTypeError
from ..tensor import Tensor
from .modules.module import Module

__all__ = ["DataParallel", "DistributedDataParallel"]

DEFAULT_BUCKET_CAP_MB = 25
# PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES: a small first bucket (the last parameters, whose
# gradients come first) starts communication early in backward
FIRST_BUCKET_BYTES = 1 << 20


class DataParallel(Module):
    """PyTorch's single-process data parallelism, which splits each batch across the GPUs in
    device_ids and gathers the outputs on output_device. minitrain computes on one device, so
    forward is `module` itself on the whole batch (the same result, without the split). The
    wrapped module is the child `module`, so state_dict keys read 'module.<name>' as PyTorch's
    do; device_ids, output_device and dim are kept as given."""

    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        if not isinstance(module, Module):
            raise DTypeError(f"DataParallel: module must be a Module, got {type(module).__name__}")
        self.module = module
        self.device_ids = [] if device_ids is None else list(device_ids)
        self.output_device, self.dim = output_device, dim

    def forward(self, *inputs, **kwargs):
        """module(*inputs, **kwargs): the whole batch on the one device."""
        return self.module(*inputs, **kwargs)


class _GradientBucket:
    """Parameters whose gradients are all-reduced together, in one flat buffer: `offsets[i]`
    to `offsets[i + 1]` is parameter i's slice. `filled[i]`: its gradient is in the buffer."""

    def __init__(self, params: list, dtype: np.dtype):
        self.params = params
        self.offsets = np.cumsum([0] + [p.array.size for p in params]).tolist()
        self.buffer = np.empty(self.offsets[-1], dtype)
        self.filled = [False] * len(params)
        self.ready = 0  # how many are filled
        self.work = None  # its all-reduce, once started
        self.first = 0  # the position of its first parameter among all buckets' parameters

    def slice(self, slot: int) -> np.ndarray:
        return self.buffer[self.offsets[slot] : self.offsets[slot + 1]]


class DistributedDataParallel(Module):
    """Data parallelism across processes, as PyTorch's: every process (rank) holds a replica of
    `module`, runs it on its share of the batch, and backward averages the gradients across
    ranks, so every replica takes the same optimizer step. With the loss a mean over each
    rank's batch of B / world_size samples, the parameters follow the run of one process on the
    global batch of B.

    At construction, the ranks check that they hold the same parameters and buffers (names,
    shapes, dtypes, requires_grad: a DistributedError names the first that differs), and rank
    0's values are broadcast to all (`init_sync`). During backward, gradients are averaged in
    buckets of about `bucket_cap_mb` MiB (the parameters in reverse order, the first bucket 1
    MiB), each bucket's non-blocking all-reduce started as soon as the last gradient in it is
    final, while backward goes on; the end of backward waits for them and writes the averages to
    `.grad`. Buffers (BatchNorm's running statistics) are broadcast from rank 0 before each
    forward that follows one that set up a synced backward (`broadcast_buffers`);
    `nn.SyncBatchNorm` instead computes the statistics over all ranks. `no_sync()` skips the
    averaging for gradient accumulation. A parameter that gets no gradient on a rank contributes
    its `.grad` (zeros if None); with `find_unused_parameters=True` a parameter that gets none
    on every rank, in this backward and the no_sync ones since the last sync, keeps its `.grad`
    as it was.
    """

    def __init__(
        self,
        module: Module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        init_sync: bool = True,
        process_group=None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
    ):
        caller = "DistributedDataParallel"
        if not isinstance(module, Module):
            raise DTypeError(f"{caller}: module must be an nn.Module, got {type(module).__name__}")
        if device_ids is not None or output_device is not None:
            raise ArgumentError(
                f"{caller}: device_ids={device_ids!r}, output_device={output_device!r}: each "
                f"process holds its replica on one device, where the module is; leave them None"
            )
        if process_group is not None:
            raise ArgumentError(f"{caller}: only the default process group exists; leave it None")
        if bucket_cap_mb is None:
            bucket_cap_mb = DEFAULT_BUCKET_CAP_MB
        if isinstance(bucket_cap_mb, bool) or not isinstance(bucket_cap_mb, numbers.Real):
            raise DTypeError(f"{caller}: bucket_cap_mb must be a number, got {bucket_cap_mb!r}")
        if not bucket_cap_mb > 0:
            raise ArgumentError(f"{caller}: bucket_cap_mb must be positive, got {bucket_cap_mb}")
        world_size = distributed.get_world_size()  # raises before init_process_group
        named = list(module.named_parameters())
        trained = [p for _, p in named if p.requires_grad]
        if not trained:
            raise ArgumentError(
                f"{caller}: the {type(module).__name__} has no parameters that require grad; "
                f"DistributedDataParallel averages gradients, and it has none"
            )
        buffers = [(name, b) for name, b in module.named_buffers() if b is not None]
        for name, tensor in named + buffers:
            if type(tensor.array) is not np.ndarray:
                raise DeviceError(
                    f"{caller}: '{name}' is on {tensor.device}; the MPI collectives take CPU "
                    f"tensors (GPU replicas are not supported yet)"
                )
            if tensor.dtype not in distributed.DTYPES:
                raise DTypeError(
                    f"{caller}: '{name}' has dtype {tensor.dtype}, which MPI does not reduce"
                )
        if world_size > 1:
            _check_same_replicas(named, buffers)
        super().__init__()
        self.module = module
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True
        self.world_size = world_size
        self.buffers_to_sync = [b for _, b in buffers]
        if init_sync and world_size > 1:
            _broadcast_from_rank0([p for _, p in named] + self.buffers_to_sync)
        self.buckets = _assign_buckets(trained, int(bucket_cap_mb * 2**20))
        self.bucket_of = {
            id(p): (bucket, slot) for bucket in self.buckets for slot, p in enumerate(bucket.params)
        }
        self.sync_this_backward = False  # set by forward: the backward of its output averages
        # PyTorch's name: the last forward set up a synced backward (or none ran yet), so the
        # next forward broadcasts the buffers
        self.require_forward_param_sync = True
        self.used_under_no_sync = set()  # ids of parameters that got gradients since the sync
        self.reducing = False  # a backward has filled a bucket and queued the finish
        self.next_bucket = 0  # the buckets before it have started their all-reduce
        ddp = weakref.ref(self)

        def gradient_ready(param, grad):
            replica = ddp()
            if replica is not None:
                replica.gradient_ready(param, grad)

        handles = [register_gradient_ready_hook(p, gradient_ready) for p in trained]
        weakref.finalize(self, _remove_hooks, handles)

    def forward(self, *inputs, **kwargs):
        """Run the wrapped module on the inputs. First, where the last forward set up a synced
        backward (or none ran yet), rank 0's buffers are broadcast (broadcast_buffers). The
        output's backward averages the gradients across ranks, unless this forward ran under
        no_sync() or with grad disabled."""
        if self.reducing:  # the last backward raised after its first gradient was bucketed
            self.abandon_backward()
        # as PyTorch's, buffers are broadcast before the forward that follows one that set up
        # a synced backward: the first evaluation forward after training runs on rank 0's
        # buffers, and the later ones (under no_grad, as many as each rank has batches) on them
        # without a collective
        if self.require_forward_param_sync and self.broadcast_buffers and self.world_size > 1:
            if self.buffers_to_sync:
                _broadcast_from_rank0(self.buffers_to_sync)
        self.sync_this_backward = self.require_backward_grad_sync and is_grad_enabled()
        self.require_forward_param_sync = self.sync_this_backward
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Within it, forward passes set up backwards that do not average gradients: they
        accumulate in each rank's `.grad`, and the first backward outside averages the sums."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def gradient_ready(self, param, grad: Tensor) -> None:
        """The engine's gradient-ready hook: copy the parameter's gradient (plus its `.grad` so
        far, accumulated under no_sync) into its bucket, and start the buckets that are full."""
        if not self.sync_this_backward:
            if self.find_unused_parameters:  # used in the no_sync session: not unused at sync
                self.used_under_no_sync.add(id(param))
            return
        if not self.reducing:
            self.reducing = True
            queue_callback(self.finish_backward)
        bucket, slot = self.bucket_of[id(param)]
        out = bucket.slice(slot)
        old = param.grad
        if old is not None and old.shape == param.shape:
            np.add(old.array.reshape(-1), grad.array.reshape(-1), out=out)
        else:
            out[...] = grad.array.reshape(-1)
        if not bucket.filled[slot]:
            bucket.filled[slot] = True
            bucket.ready += 1
        if bucket.ready == len(bucket.params):
            self.start_ready_buckets()
        else:
            for started in self.buckets[: self.next_bucket]:  # let MPI move them along
                if started.work is not None and not started.work.is_completed():
                    break

    def start_ready_buckets(self) -> None:
        """Start the all-reduce of every full bucket, in bucket order (all ranks start their
        collectives in one order)."""
        while self.next_bucket < len(self.buckets):
            bucket = self.buckets[self.next_bucket]
            if bucket.ready < len(bucket.params):
                return
            bucket.work = distributed.all_reduce_buffer(bucket.buffer)
            self.next_bucket += 1

    def finish_backward(self) -> None:
        """Queued by the first gradient of a backward, run once its walk is done: fill what
        got no gradient, start the rest, wait for every all-reduce, write the averages."""
        unused = [
            (bucket, slot)
            for bucket in self.buckets[self.next_bucket :]
            for slot, filled in enumerate(bucket.filled)
            if not filled
        ]
        for bucket, slot in unused:
            param = bucket.params[slot]
            old = param.grad
            if old is not None and old.shape == param.shape:
                bucket.slice(slot)[...] = old.array.reshape(-1)
            else:
                bucket.slice(slot)[...] = 0
            bucket.filled[slot] = True
            bucket.ready += 1
        self.start_ready_buckets()
        keep = set()
        if self.find_unused_parameters:  # which parameters no rank gave a gradient
            local = np.zeros(len(self.bucket_of), np.int32)
            for bucket, slot in unused:
                if id(bucket.params[slot]) not in self.used_under_no_sync:
                    local[bucket.first + slot] = 1
            self.used_under_no_sync.clear()
            distributed.all_reduce_buffer(local).wait()
            keep = {
                (id(bucket), slot)
                for bucket, slot in unused
                if local[bucket.first + slot] == self.world_size
            }
        for bucket in self.buckets:
            bucket.work.wait()
            if self.world_size > 1:
                np.divide(bucket.buffer, self.world_size, out=bucket.buffer)
            for slot, param in enumerate(bucket.params):
                if (id(bucket), slot) not in keep:
                    _write_grad(param, bucket.slice(slot))
        self.reset_buckets()

    def abandon_backward(self) -> None:
        """Forget a backward that raised: wait for the all-reduces it started (the other ranks
        started them too, if they failed alike) and empty the buckets; `.grad` stays as the
        failed backward left it, unchanged."""
        for bucket in self.buckets[: self.next_bucket]:
            bucket.work.wait()
        self.reset_buckets()

    def reset_buckets(self) -> None:
        """Empty every bucket and clear the backward's state, ready for the next one (the end of
        each synced backward calls it)."""
        for bucket in self.buckets:
            bucket.filled = [False] * len(bucket.params)
            bucket.ready = 0
            bucket.work = None
        self.next_bucket = 0
        self.reducing = False

    def extra_repr(self) -> str:
        sizes = ", ".join(str(len(b.params)) for b in self.buckets)
        return f"world_size={self.world_size}, buckets of {sizes} parameters"


def _check_same_replicas(named: list, buffers: list) -> None:
    """Raise on every rank where the ranks' parameters or buffers differ, naming the first.
    requires_grad counts: the gradient buckets hold the parameters that require grad, and
    ranks whose buckets differ would all-reduce buffers of different lengths."""
    mine = [("parameter", name, tuple(p.shape), str(p.dtype), p.requires_grad) for name, p in named]
    mine += [("buffer", name, tuple(b.shape), str(b.dtype), False) for name, b in buffers]
    everyone = [None] * distributed.get_world_size()
    distributed.all_gather_object(everyone, mine)
    reference = everyone[0]
    for rank, theirs in enumerate(everyone[1:], start=1):
        for position, (ours, other) in enumerate(zip(reference, theirs, strict=False)):
            if ours == other:
                continue
            if ours[:2] == other[:2]:
                what = f"{ours[0]} '{ours[1]}' is {_describe_entry(other)} on rank {rank}"
            else:
                what = f"{ours[0]} {position} is {other[0]} '{other[1]}' on rank {rank}"
            raise DistributedError(
                f"DistributedDataParallel: the ranks hold different models: {what}, but "
                f"{ours[0]} '{ours[1]}', {_describe_entry(ours)}, on rank 0; every rank "
                f"must build the same model"
            )
        if len(theirs) != len(reference):
            longer, rank_longer = (theirs, rank) if len(theirs) > len(reference) else (reference, 0)
            first = longer[min(len(theirs), len(reference))]
            raise DistributedError(
                f"DistributedDataParallel: the ranks hold different models: rank {rank} has "
                f"{len(theirs)} parameters and buffers, rank 0 has {len(reference)}; the first "
                f"only rank {rank_longer} has is {first[0]} '{first[1]}' of shape {first[2]}"
            )


def _describe_entry(entry: tuple) -> str:
    """A parameter or buffer as _check_same_replicas compares it, in words."""
    kind, _, shape, dtype, requires_grad = entry
    text = f"{dtype} of shape {shape}"
    return f"{text}, requires_grad={requires_grad}" if kind == "parameter" else text


def _broadcast_from_rank0(tensors: list) -> None:
    """Rank 0's values of `tensors` on every rank: one broadcast per dtype, of their
    concatenation."""
    by_dtype: dict = {}
    for tensor in tensors:
        by_dtype.setdefault(tensor.dtype, []).append(tensor)
    for group in by_dtype.values():
        flat = np.concatenate([t.array.reshape(-1) for t in group])
        distributed.broadcast(Tensor(flat), src=0)
        if distributed.get_rank() == 0:
            continue
        start = 0
        with no_grad():
            for tensor in group:
                size = tensor.array.size
                tensor.array[...] = flat[start : start + size].reshape(tensor.shape)
                tensor.bump_version()
                start += size


def _assign_buckets(params: list, cap_bytes: int) -> list[_GradientBucket]:
    """Buckets of the parameters in reverse order (their gradients are final about in that
    order), one dtype each, closed once they reach their limit: 1 MiB for the first, then
    `cap_bytes`, as PyTorch's compute_bucket_assignment_by_size."""
    buckets, open_buckets = [], {}  # dtype -> (params, bytes, limit)
    for param in reversed(params):
        members, size, limit = open_buckets.get(param.dtype, ([], 0, None))
        if limit is None:
            limit = min(FIRST_BUCKET_BYTES, cap_bytes) if not buckets else cap_bytes
        members.append(param)
        size += param.array.nbytes
        if size >= limit:
            buckets.append(_GradientBucket(members, param.dtype))
            open_buckets.pop(param.dtype, None)
        else:
            open_buckets[param.dtype] = (members, size, limit)
    buckets += [_GradientBucket(members, dtype) for dtype, (members, _, _) in open_buckets.items()]
    first = 0
    for bucket in buckets:
        bucket.first = first
        first += len(bucket.params)
    return buckets


def _write_grad(param, averaged: np.ndarray) -> None:
    """Put the averaged gradient in `param.grad`: into its array when that is a plain one of
    the parameter's shape and dtype, else as a new Tensor."""
    grad = param.grad
    values = averaged.reshape(param.shape)
    if (
        grad is not None
        and not grad.requires_grad
        and type(grad.array) is np.ndarray
        and grad.shape == param.shape
        and grad.dtype == param.dtype
        and grad.array.flags.writeable
    ):
        grad.array[...] = values
    else:
        param.grad = Tensor(values.copy())


def _remove_hooks(handles: list) -> None:
    for handle in handles:
        handle.remove()
