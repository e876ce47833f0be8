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
from ..autograd.hooks import queue_callback, register_gradient_ready_hook, running_backward
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
        # per parameter, (.grad, its array) as they were before this backward, to put back if
        # another rank's backward raised
        self.grads_before: list = [None] * len(params)

    def slice(self, slot: int) -> np.ndarray:
        return self.buffer[self.offsets[slot] : self.offsets[slot + 1]]


class DistributedDataParallel(Module):
    """Data parallelism across processes, as PyTorch's: every process (rank) holds a replica of
    `module`, runs it on its share of the batch, and backward averages the gradients across
    ranks, so every replica takes the same optimizer step. With the loss a mean over each
    rank's batch of B / world_size samples, the parameters follow the run of one process on the
    global batch of B.

    At construction, the ranks check that they hold the same parameters and buffers (names,
    shapes, dtypes, requires_grad) and pass the same options, and rank 0's values are broadcast
    to all (`init_sync`); what is wrong on any rank (a bad argument too) raises on every rank,
    naming the ranks at fault. During backward, gradients are averaged in buckets of about
    `bucket_cap_mb` MiB (the parameters in reverse order, the first bucket 1 MiB), each
    bucket's non-blocking all-reduce started as soon as the last gradient in it is final, while
    backward goes on; the end of backward waits for them and writes the averages to `.grad`.
    backward(inputs=...) averages the gradients of the parameters among the inputs alike, and
    leaves every other parameter's `.grad` as it was, as a plain backward(inputs=...) does.
    Buffers (BatchNorm's running statistics) are broadcast from rank 0 before each forward that
    follows one that set up a synced backward (`broadcast_buffers`); `nn.SyncBatchNorm` instead
    computes the statistics over all ranks. `no_sync()` skips the averaging for gradient
    accumulation. A parameter that gets no gradient on a rank (unused) contributes its `.grad`
    (zeros if None); with `find_unused_parameters=True` a parameter that gets none on every
    rank, in this backward and the no_sync ones since the last sync, keeps its `.grad` as it
    was.

    A backward that raises changes no `.grad` (the engine's rule). Each synced forward (grad
    enabled, outside no_sync) owes the collectives that end its backward, the same on every
    rank whether the backward finished or not: where it raised (before or after its first
    gradient) or never ran, this rank runs them at its next forward, or at its next backward
    if the failed one had bucketed gradients. A rank whose backward finished then raises a
    DistributedError naming the ranks that failed, and puts its `.grad` back as it was, so that
    every rank holds the same; where every rank skipped the backward, nothing raises (a
    forward whose output gets no backward costs the next forward a backward's collectives:
    evaluate under no_grad). A second backward without a forward, after one that raised on
    every rank, averages as the first would have; after one that raised on some ranks only, it
    raises on every rank: run a forward first. The collectives that end a backward also compare
    the ranks' counts of synced forwards: ranks out of step (one ran a forward or a backward
    the others did not) all raise a DistributedError naming the counts.
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
        if bucket_cap_mb is None:
            bucket_cap_mb = DEFAULT_BUCKET_CAP_MB
        options = {
            "broadcast_buffers": bool(broadcast_buffers),
            "init_sync": bool(init_sync),
            "bucket_cap_mb": bucket_cap_mb,
            "find_unused_parameters": bool(find_unused_parameters),
        }
        world_size = distributed.get_world_size()  # raises before init_process_group
        try:  # every rank must hear of a refusal on any rank, or it would wait for the others
            named, buffers = _check_replica(module, device_ids, output_device, process_group)
            _check_bucket_cap(bucket_cap_mb)
            problem = None
        except Exception as error:  # any error: a bug in a user's module too
            named, buffers, problem = [], [], error
        if world_size > 1:
            _check_same_replicas(named, buffers, options, problem)
        elif problem is not None:
            raise problem
        super().__init__()
        self.module = module
        self.broadcast_buffers = options["broadcast_buffers"]
        self.find_unused_parameters = options["find_unused_parameters"]
        self.bucket_cap_mb = bucket_cap_mb
        self.require_backward_grad_sync = True
        self.world_size = world_size
        self.buffers_to_sync = [b for _, b in buffers]
        if init_sync and world_size > 1:
            _broadcast_from_rank0([p for _, p in named] + self.buffers_to_sync)
        trained = [p for _, p in named if p.requires_grad]
        self.buckets = _assign_buckets(trained, int(bucket_cap_mb * 2**20))
        self.bucket_of = {
            id(p): (bucket, slot) for bucket in self.buckets for slot, p in enumerate(bucket.params)
        }
        self.sync_this_backward = False  # set by forward: the backward of its output averages
        # PyTorch's name: the last forward set up a synced backward (or none ran yet), so the
        # next forward broadcasts the buffers
        self.require_forward_param_sync = True
        self.used_under_no_sync = set()  # ids of parameters that got gradients since the sync
        # the synced forwards so far, which the status all-reduce compares across ranks
        self.synced_forwards = 0
        # this rank owes the collectives that end a synced backward: from a synced forward (or
        # a backward's first gradient) until a backward ran them, or the next forward or
        # backward ends one that raised or never ran (end_failed_backward)
        self.owed = False
        # the backward (running_backward()) that has filled buckets and queued finish_backward;
        # still set after it raised, until the next forward or backward ends it
        self.reducing = None
        # ids of the parameters outside this backward's `inputs`: their .grad stays as it is
        self.left_alone: set = set()
        # a synced backward raised on some ranks and finished on others: a backward before the
        # next forward would run its collectives on some ranks only, so it raises on every rank
        self.needs_forward = False
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
        if self.owed:  # the last synced forward's backward raised here, or none ran
            self.end_failed_backward(then="forward")
        self.needs_forward = False
        # as PyTorch's, buffers are broadcast before the forward that follows one that set up
        # a synced backward: the first evaluation forward after training runs on rank 0's
        # buffers, and the later ones (under no_grad, as many as each rank has batches) on them
        # without a collective
        if self.require_forward_param_sync and self.broadcast_buffers and self.world_size > 1:
            if self.buffers_to_sync:
                _broadcast_from_rank0(self.buffers_to_sync)
        self.sync_this_backward = self.require_backward_grad_sync and is_grad_enabled()
        self.require_forward_param_sync = self.sync_this_backward
        if self.sync_this_backward:
            self.synced_forwards += 1
            self.owed = True
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
        backward = running_backward()
        if self.reducing is not backward:  # the first gradient of this backward
            if self.reducing is not None:  # a backward that raised left its buckets
                self.end_failed_backward(then="backward")
            elif self.needs_forward:
                raise DistributedError(
                    "DistributedDataParallel: backward: the last backward raised on some ranks "
                    "and finished on others, so this one cannot be averaged with theirs. Run "
                    "the next forward on every rank"
                )
            self.reducing, self.owed = backward, True
            self.left_alone = set()
            if backward.inputs is not None:  # backward(inputs=...): the others keep their .grad
                self.left_alone = set(self.bucket_of) - {id(t) for t in backward.inputs}
            queue_callback(self.finish_backward)
        bucket, slot = self.bucket_of[id(param)]
        out = bucket.slice(slot)
        old = param.grad
        bucket.grads_before[slot] = (old, None if old is None else old.array)
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
        got no gradient, start the rest, learn which ranks' backward raised and which
        parameters no rank used, wait for every all-reduce, write the averages (not to the
        parameters outside backward's `inputs`)."""
        unused = []
        for bucket in self.buckets[self.next_bucket :]:
            for slot, filled in enumerate(bucket.filled):
                if filled:
                    continue
                param, values = bucket.params[slot], bucket.slice(slot)
                old = param.grad
                if id(param) in self.left_alone:
                    values[...] = 0
                elif old is not None and old.shape == param.shape:
                    values[...] = old.array.reshape(-1)
                    unused.append((bucket, slot))
                else:
                    values[...] = 0
                    unused.append((bucket, slot))
                bucket.filled[slot] = True
                bucket.ready += 1
        self.start_ready_buckets()
        unused_positions = None
        if self.find_unused_parameters:  # which parameters no rank gave a gradient
            unused_positions = [
                bucket.first + slot
                for bucket, slot in unused
                if id(bucket.params[slot]) not in self.used_under_no_sync
            ]
            self.used_under_no_sync.clear()
        status, work = self.start_status(failed=False, unused=unused_positions)
        failed = self.ranks_that_failed(status, work)
        out_of_step = self.forwards_out_of_step(status)
        if failed or out_of_step:  # every rank must hold the same: .grad as before backward
            self.put_back_grads()
            self.reset_buckets()
            self.needs_forward = True
            raise DistributedError(
                out_of_step
                or f"DistributedDataParallel: the backward raised on rank(s) "
                f"{', '.join(map(str, failed))} (or none ran there after the forward) before "
                f"the gradients were averaged; this rank's .grad is put back as it was before "
                f"this backward, as there. Run the next forward on every rank"
            )
        keep = self.left_alone
        if self.find_unused_parameters:
            unused_counts = status[2 * self.world_size :]
            keep = keep | {
                id(bucket.params[slot])
                for bucket, slot in unused
                if unused_counts[bucket.first + slot] == self.world_size
            }
        for bucket in self.buckets:
            bucket.work.wait()
            if self.world_size > 1:
                np.divide(bucket.buffer, self.world_size, out=bucket.buffer)
            for slot, param in enumerate(bucket.params):
                if id(param) not in keep:
                    _write_grad(param, bucket.slice(slot))
        self.reset_buckets()

    def end_failed_backward(self, then: str) -> None:
        """End the backward this rank owes (the last synced forward's, or one that filled a
        bucket) where it raised or never ran, before the forward or backward `then` goes on:
        start the all-reduces it did not (what they carry is dropped), so that every rank runs
        the same collectives, and tell the other ranks that it failed. `.grad` stays as the
        failed backward left it: unchanged. Where every rank skipped the backward, nothing
        raises. If some rank's backward finished (it raised, naming this one), a second
        backward here would run alone: it raises."""
        remaining = self.buckets[self.next_bucket :]
        for bucket in remaining:
            bucket.work = distributed.all_reduce_buffer(bucket.buffer)
        self.next_bucket = len(self.buckets)
        status, work = self.start_status(failed=True)
        failed = self.ranks_that_failed(status, work)
        for bucket in self.buckets:
            bucket.work.wait()
        self.reset_buckets()
        out_of_step = self.forwards_out_of_step(status)
        if out_of_step:
            self.needs_forward = then == "backward"
            raise DistributedError(out_of_step)
        finished = sorted(set(range(self.world_size)) - set(failed))
        if finished and then == "backward":
            self.needs_forward = True
            raise DistributedError(
                f"DistributedDataParallel: backward: the last backward raised here but "
                f"finished on rank(s) {', '.join(map(str, finished))}, which went on without "
                f"this rank; this backward cannot be averaged with them. Run the next forward "
                f"on every rank"
            )

    def start_status(self, failed: bool, unused: list | None = None) -> tuple:
        """Start the all-reduce (a sum) that ends each synced backward on every rank: entry r
        is 1 where rank r's backward raised (or none ran), entry world_size + r is rank r's
        count of synced forwards, and with find_unused_parameters, entry 2 * world_size + i
        counts the ranks on which parameter i (in bucket order) got no gradient (`unused`, its
        positions here). Returns the array and the all-reduce's Work."""
        size, rank = self.world_size, distributed.get_rank()
        status = np.zeros(2 * size + len(self.bucket_of), np.int64)
        status[rank] = failed
        status[size + rank] = self.synced_forwards
        if unused:
            status[[2 * size + position for position in unused]] = 1
        return status, distributed.all_reduce_buffer(status)

    def ranks_that_failed(self, status: np.ndarray, work) -> list[int]:
        """The ranks whose backward raised, once the status all-reduce is done."""
        work.wait()
        return np.flatnonzero(status[: self.world_size]).tolist()

    def forwards_out_of_step(self, status: np.ndarray) -> str:
        """Where the ranks ended the backwards of different synced forwards (a rank ran a
        forward or a backward the others did not), what to raise, having set every rank's
        count to the largest, so that the next forward on every rank is in step again; else
        ''."""
        counts = status[self.world_size : 2 * self.world_size].tolist()
        if min(counts) == max(counts):
            return ""
        self.synced_forwards = max(counts)
        ranks = ", ".join(f"rank {rank}: {count}" for rank, count in enumerate(counts))
        return (
            f"DistributedDataParallel: the ranks' collectives are out of step: they ended the "
            f"backwards of different synced forwards (counted since construction, {ranks}): a "
            f"rank ran a forward or a backward the others did not. This rank's .grad is as it "
            f"was before this backward. Every rank must run the same forwards and backwards; "
            f"run the next forward on every rank"
        )

    def put_back_grads(self) -> None:
        """Undo what the engine did to `.grad` in this backward (it adds a new array to
        `.grad`, so the old one is as it was)."""
        for bucket in self.buckets:
            for slot, before in enumerate(bucket.grads_before):
                if before is None:  # got no gradient: the engine left its .grad alone
                    continue
                grad, array = before
                if grad is not None:
                    grad.array = array
                bucket.params[slot].grad = grad

    def reset_buckets(self) -> None:
        """Empty every bucket and clear the backward's state, ready for the next one (the end of
        each synced backward calls it)."""
        for bucket in self.buckets:
            bucket.filled = [False] * len(bucket.params)
            bucket.grads_before = [None] * len(bucket.params)
            bucket.ready = 0
            bucket.work = None
        self.next_bucket = 0
        self.reducing, self.owed = None, False
        self.left_alone = set()

    def extra_repr(self) -> str:
        sizes = ", ".join(str(len(b.params)) for b in self.buckets)
        return f"world_size={self.world_size}, buckets of {sizes} parameters"


def _check_replica(module, device_ids, output_device, process_group) -> tuple[list, list]:
    """This rank's (name, parameter) and (name, buffer) pairs, once its module and arguments
    pass; raises what is wrong with them."""
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
    named = list(module.named_parameters())
    if not any(p.requires_grad for _, p in named):
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
    return named, buffers


def _check_bucket_cap(bucket_cap_mb) -> None:
    caller = "DistributedDataParallel"
    if isinstance(bucket_cap_mb, bool) or not isinstance(bucket_cap_mb, numbers.Real):
        raise DTypeError(f"{caller}: bucket_cap_mb must be a number, got {bucket_cap_mb!r}")
    if not bucket_cap_mb > 0:
        raise ArgumentError(f"{caller}: bucket_cap_mb must be positive, got {bucket_cap_mb}")


def _check_same_replicas(named: list, buffers: list, options: dict, problem) -> None:
    """Raise on every rank where a rank refused its module or arguments (`problem`: that rank
    raises it, the others a DistributedError naming it), where the ranks passed different
    options, or where their parameters or buffers differ (naming the first). requires_grad
    counts: the gradient buckets hold the parameters that require grad, and ranks whose buckets
    differ would all-reduce buffers of different lengths."""
    mine = [("parameter", name, tuple(p.shape), str(p.dtype), p.requires_grad) for name, p in named]
    mine += [("buffer", name, tuple(b.shape), str(b.dtype), False) for name, b in buffers]
    refusal = None
    if problem is not None:  # the options may be what failed: they might not even pickle
        refusal, options = f"{type(problem).__name__}: {problem}", {}
    everyone = [None] * distributed.get_world_size()
    distributed.all_gather_object(everyone, (refusal, options, mine))
    refused = [(rank, text) for rank, (text, _, _) in enumerate(everyone) if text is not None]
    if problem is not None:
        raise problem
    if refused:
        raise DistributedError(
            "DistributedDataParallel: rank(s) "
            + ", ".join(str(rank) for rank, _ in refused)
            + " refused the module or its arguments; this rank's were fine. "
            + "; ".join(f"rank {rank}: {text}" for rank, text in refused)
        )
    for name in options:
        values = [theirs[name] for _, theirs, _ in everyone]
        if any(v != values[0] for v in values):
            ranks = ", ".join(f"rank {rank}: {v!r}" for rank, v in enumerate(values))
            raise DistributedError(
                f"DistributedDataParallel: the ranks passed different {name} ({ranks}); "
                f"every rank must pass the same"
            )
    reference = everyone[0][2]
    for rank, (_, _, theirs) in enumerate(everyone[1:], start=1):
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
