"""Collectives across processes over MPI, with torch.distributed's names; one process started
without a launcher is a world of one.

`init_process_group()` takes the rank and the world size from the MPI launcher (`mpiexec -n 2
python train.py`, or with a hostfile across machines) through mpi4py. The collectives hand the
tensors' numpy buffers to mpi4py's buffer API (Iallreduce, Ibcast, Iallgather: nothing is
pickled) and write the result in place where PyTorch's do. Two things keep a rank from hanging:
every collective first all-gathers a small header (which collective, its op or root, the dtype
and the shape), so ranks that pass different shapes all raise a DistributedError naming them;
and every wait polls its requests against the group's timeout, so a rank whose partners never
arrive raises after `timeout` instead of waiting forever. A wait that lasts also looks, a few
times a second, whether the ranks on its own machine still run (their pids are exchanged at
init): one that exited or was killed is named at once, without waiting for the timeout. Without
mpi4py a world of one still works; more processes need `pip install 'minitrain[distributed]'`.

When a rank dies, MPICH's mpiexec kills every other process of the job at once (and prints the
dead one's pid and signal); with `mpiexec -disable-auto-cleanup` it sends the others SIGUSR1,
which ends a Python process unless the program handles it: a program that ignores it
(`signal.signal(signal.SIGUSR1, signal.SIG_IGN)`) has its waiting ranks raise the
DistributedError above, naming the dead rank. A rank that ends with an uncaught Python exception
blocks in MPI_Finalize, and the others wait out the timeout, unless the program was launched as
`mpiexec -n N python -m mpi4py train.py`: mpi4py then aborts the whole job.
"""

from __future__ import annotations

import atexit
import datetime
import enum
import importlib
import importlib.util
import numbers
import os
import pickle
import socket
import time
from collections.abc import Callable

import numpy as np

from .errors import ArgumentError, DeviceError, DistributedError, DTypeError, ShapeError
from .tensor import Tensor

__all__ = [
    "ReduceOp",
    "Work",
    "all_gather",
    "all_gather_object",
    "all_reduce",
    "all_reduce_buffer",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_backend",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
    "is_mpi_available",
]

INSTALL = "pip install 'minitrain[distributed]' (or pip install mpi4py mpich)"
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # PyTorch's default for its CPU backends
# Environment variables in which MPI launchers pass the world size: MPICH's Hydra (and Intel
# MPI, Slurm's PMI), Open MPI, MVAPICH. Read only to refuse a world of several without mpi4py.
LAUNCHER_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE")
# The dtypes MPI reduces natively (mpi4py maps each numpy type code to its MPI datatype).
DTYPES = tuple(
    np.dtype(name) for name in ("float32", "float64", "int8", "int16", "int32", "int64", "uint8")
)
# How often a wait that lasts looks whether the ranks on its machine still run, in s.
LIVENESS_INTERVAL = 0.25
# A header: collective, its op or root, dtype, ndim, then the shape (numpy's 64 dims at most).
_HEADER_SIZE = 4 + 64
_COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "barrier", "all_gather_object")


class ReduceOp(enum.Enum):
    """How all_reduce combines the ranks' values, elementwise (AVG: floating dtypes only)."""

    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


_OP_CODES = {op: code for code, op in enumerate(ReduceOp)}


class _World:
    """The default process group: mpi4py's MPI module and a duplicate of COMM_WORLD (None for
    a world of one without mpi4py), this process's rank, the world size, the timeout in s, and
    each rank's process as `_this_process()` gives it (empty until init has exchanged them)."""

    def __init__(self, mpi, comm, rank: int, size: int, timeout: float):
        self.mpi, self.comm, self.rank, self.size, self.timeout = mpi, comm, rank, size, timeout
        self.processes: list = []


_world: _World | None = None


def is_available() -> bool:
    """Whether minitrain.distributed works here: always (a world of one needs no MPI)."""
    return True


def is_mpi_available() -> bool:
    """Whether mpi4py is installed, which a world of more than one process needs."""
    return importlib.util.find_spec("mpi4py") is not None


def is_initialized() -> bool:
    """Whether init_process_group has run (and destroy_process_group has not since)."""
    return _world is not None


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
) -> None:
    """Join the default process group: every process started by the MPI launcher (`mpiexec -n
    N`), rank and world size read from MPI; a process started without one is a world of one.

    `backend` is 'mpi' (or None); `world_size` and `rank`, when given, must be what the launcher
    gave. `timeout` (a datetime.timedelta, 30 minutes by default) bounds every wait for the
    other ranks in a collective: past it, the collective raises a DistributedError.
    """
    global _world
    caller = "init_process_group"
    if _world is not None:
        raise DistributedError(
            f"{caller}: the default process group is already initialized (rank {_world.rank} "
            f"of {_world.size}); call destroy_process_group() first"
        )
    if backend is not None and str(backend).lower() != "mpi":
        raise ArgumentError(
            f"{caller}: backend {backend!r} is not available; minitrain's collectives run over "
            f"MPI: pass backend='mpi' (or leave it out) and start the processes with mpiexec"
        )
    if init_method not in (None, "env://") or store is not None:
        raise ArgumentError(
            f"{caller}: init_method={init_method!r}, store={store!r}: ranks and world size come "
            f"from the MPI launcher (mpiexec), so leave init_method and store out"
        )
    if not isinstance(group_name, str):
        raise DTypeError(f"{caller}: group_name must be a str, got {group_name!r}")
    seconds = _timeout_seconds(timeout, caller)
    world_size = _check_int(world_size, caller, "world_size", minimum=1)
    rank = _check_int(rank, caller, "rank", minimum=0)
    if world_size != -1 and rank >= world_size:
        raise ArgumentError(f"{caller}: rank {rank} is not below world_size {world_size}")
    mpi = _import_mpi()
    if mpi is None:
        launched = _launcher_size()
        wanted = max(world_size, launched)
        if wanted > 1:
            source = f"world_size={world_size}" if world_size > 1 else f"the launcher's {launched}"
            raise DistributedError(
                f"{caller}: a world of {wanted} processes ({source}) needs MPI, and mpi4py is "
                f"not installed: {INSTALL}"
            )
        size, my_rank = 1, 0
    else:
        size, my_rank = mpi.COMM_WORLD.Get_size(), mpi.COMM_WORLD.Get_rank()
    if world_size != -1 and world_size != size:
        raise DistributedError(
            f"{caller}: world_size={world_size}, but the MPI launcher started {size} "
            f"process(es); start them with mpiexec -n {world_size}, or leave world_size out"
        )
    if rank != -1 and rank != my_rank:
        raise DistributedError(
            f"{caller}: rank={rank}, but MPI gave this process rank {my_rank}; leave rank out"
        )
    world = _World(mpi, None, my_rank, size, seconds)
    if mpi is not None:
        # our own communicator, so that the user's mpi4py messages never meet ours
        world.comm, request = mpi.COMM_WORLD.Idup()
        _wait(_World(mpi, mpi.COMM_WORLD, my_rank, size, seconds), [request], caller)
        atexit.unregister(_free_at_exit)
        atexit.register(_free_at_exit)
        if size > 1:  # for the waits to tell a dead rank from a late one
            world.processes = _gather_objects(world, _this_process(), caller)
    _world = world


def destroy_process_group(group=None) -> None:
    """Leave the default process group; init_process_group may then run again."""
    global _world
    world = _world_for("destroy_process_group", group)
    _world = None
    if world.comm is not None:
        world.comm.Free()


def _free_at_exit() -> None:
    """Free the communicator before mpi4py finalizes MPI (MPICH warns about one left over);
    registered once mpi4py is imported, so that it runs first."""
    if _world is not None and _world.comm is not None:
        _world.comm.Free()


def get_rank(group=None) -> int:
    """This process's rank in the default group, 0 to world size - 1."""
    return _world_for("get_rank", group).rank


def get_world_size(group=None) -> int:
    """The number of processes in the default group."""
    return _world_for("get_world_size", group).size


def get_backend(group=None) -> str:
    """The backend of the default group: 'mpi'."""
    _world_for("get_backend", group)
    return "mpi"


class Work:
    """A collective in flight, as async_op=True returns it (PyTorch's Work): `wait()` blocks
    until it is done, within the group's timeout (or the `timeout` given), and writes its
    result; `is_completed()` asks without blocking."""

    def __init__(self, world: _World | None, requests: list, finish: Callable | None, caller: str):
        self._world, self._requests, self._finish, self._caller = world, requests, finish, caller

    def is_completed(self) -> bool:
        """Whether the collective has finished, without blocking; when it has, its result is
        written."""
        if self._requests and not self._world.mpi.Request.Testall(self._requests):
            return False
        self._complete()
        return True

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Block until the collective is done, write its result and return True. Past `timeout`
        (default: the group's) it raises a DistributedError, and the group is unusable after."""
        if self._requests:
            seconds = None if timeout is None else _timeout_seconds(timeout, "Work.wait")
            _wait(self._world, self._requests, self._caller, seconds)
        self._complete()
        return True

    def _complete(self) -> None:
        self._requests = []
        finish, self._finish = self._finish, None
        if finish is not None:
            finish()


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Combine `tensor` across all ranks with `op`, in place: afterwards every rank holds the
    sum (or product, min, max, mean) of the ranks' values. Every rank must pass a tensor of the
    same shape and dtype (a DistributedError names them otherwise). Returns None, or a Work
    with async_op=True."""
    caller = "all_reduce"
    world = _world_for(caller, group)
    array = _cpu_array(tensor, caller, "tensor")
    if not isinstance(op, ReduceOp):
        raise DTypeError(f"{caller}: op must be a ReduceOp (ReduceOp.SUM, ...), got {op!r}")
    if op is ReduceOp.AVG and array.dtype.kind != "f":
        raise DTypeError(f"{caller}: ReduceOp.AVG needs a floating tensor, got {array.dtype}")
    _check_writeable(array, caller, "tensor")
    if world.size == 1:
        return _result(Work(None, [], None, caller), async_op)
    _agree(world, caller, _OP_CODES[op], array)
    buffer = array if array.flags.c_contiguous else np.ascontiguousarray(array)

    def write_back():
        if buffer is not array:
            array[...] = buffer
        tensor.bump_version()

    return _result(_start_all_reduce(world, buffer, op, caller, write_back), async_op)


def all_reduce_buffer(array: np.ndarray, op: ReduceOp = ReduceOp.SUM) -> Work:
    """Start a non-blocking all-reduce of a C-contiguous numpy array, in place, and return its
    Work, without all_reduce's check that the ranks agree on shape and dtype: for callers whose
    ranks agreed on them beforehand (DistributedDataParallel's gradient buckets), which cannot
    afford a round trip per call. Its wait still times out."""
    caller = "all_reduce_buffer"
    world = _world_for(caller, None)
    if type(array) is not np.ndarray or not array.flags.c_contiguous or array.dtype not in DTYPES:
        raise DTypeError(
            f"{caller}: needs a C-contiguous numpy array of one of "
            f"{', '.join(map(str, DTYPES))}, got {_describe_value(array)}"
        )
    if world.size == 1:
        return Work(None, [], None, caller)
    return _start_all_reduce(world, array, op, caller)


def _start_all_reduce(
    world: _World, buffer: np.ndarray, op: ReduceOp, caller: str, then: Callable | None = None
) -> Work:
    mpi = world.mpi
    mpi_op = {
        ReduceOp.SUM: mpi.SUM,
        ReduceOp.AVG: mpi.SUM,
        ReduceOp.PRODUCT: mpi.PROD,
        ReduceOp.MIN: mpi.MIN,
        ReduceOp.MAX: mpi.MAX,
    }[op]
    request = world.comm.Iallreduce(mpi.IN_PLACE, buffer, op=mpi_op)

    def finish():
        if op is ReduceOp.AVG:
            np.divide(buffer, world.size, out=buffer)
        if then is not None:
            then()

    return Work(world, [request], finish, caller)


def broadcast(tensor: Tensor, src: int, group=None, async_op: bool = False):
    """Copy rank `src`'s `tensor` into every other rank's `tensor`, in place. Every rank must
    pass the same src and a tensor of the same shape and dtype."""
    caller = "broadcast"
    world = _world_for(caller, group)
    array = _cpu_array(tensor, caller, "tensor")
    src = _check_int(src, caller, "src", minimum=0, unset=None)
    if src >= world.size:
        raise ArgumentError(f"{caller}: src {src} is not a rank of a world of {world.size}")
    if world.rank != src:
        _check_writeable(array, caller, "tensor")
    if world.size == 1:
        return _result(Work(None, [], None, caller), async_op)
    _agree(world, caller, src, array)
    buffer = array if array.flags.c_contiguous else np.ascontiguousarray(array)
    request = world.comm.Ibcast(buffer, root=src)

    def finish():
        if world.rank != src:
            if buffer is not array:
                array[...] = buffer
            tensor.bump_version()

    return _result(Work(world, [request], finish, caller), async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Gather every rank's `tensor` into `tensor_list` (one tensor per rank, in rank order, each
    of `tensor`'s shape and dtype), on every rank. Every rank must pass the same shape."""
    caller = "all_gather"
    world = _world_for(caller, group)
    array = _cpu_array(tensor, caller, "tensor")
    if not isinstance(tensor_list, list) or len(tensor_list) != world.size:
        raise ArgumentError(
            f"{caller}: tensor_list must be a list of {world.size} tensors (one per rank), got "
            f"{_describe_value(tensor_list)}"
        )
    targets = []
    for position, target in enumerate(tensor_list):
        name = f"tensor_list[{position}]"
        out = _cpu_array(target, caller, name)
        if out.shape != array.shape or out.dtype != array.dtype:
            raise ShapeError(
                f"{caller}: {name} is {out.dtype} {out.shape}, but tensor is {array.dtype} "
                f"{array.shape}: each must be like the tensor gathered"
            )
        _check_writeable(out, caller, name)
        targets.append(out)

    if world.size == 1:
        targets[0][...] = array
        tensor_list[0].bump_version()
        return _result(Work(None, [], None, caller), async_op)
    _agree(world, caller, 0, array)
    send = np.ascontiguousarray(array)
    received = np.empty((world.size, *array.shape), array.dtype)
    request = world.comm.Iallgather(send, received)

    def finish():
        for target, out, part in zip(tensor_list, targets, received, strict=True):
            out[...] = part
            target.bump_version()

    return _result(Work(world, [request], finish, caller), async_op)


def barrier(
    group=None, async_op: bool = False, device_ids=None, timeout: datetime.timedelta | None = None
):
    """Wait until every rank has reached this call, within `timeout` (default: the group's)."""
    caller = "barrier"
    world = _world_for(caller, group)
    if device_ids is not None:
        raise ArgumentError(f"{caller}: device_ids is for GPU backends; leave it None")
    seconds = None if timeout is None else _timeout_seconds(timeout, caller)
    if world.size > 1:
        _agree(world, caller, 0, None, seconds)  # an all-gather is a barrier too
    return _result(Work(None, [], None, caller), async_op)


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Gather every rank's picklable `obj` into `object_list` (one entry per rank, rank order).
    Objects travel pickled, as PyTorch's do: use it for small metadata, from trusted ranks."""
    caller = "all_gather_object"
    world = _world_for(caller, group)
    if not isinstance(object_list, list) or len(object_list) != world.size:
        raise ArgumentError(
            f"{caller}: object_list must be a list of {world.size} entries (one per rank), got "
            f"{_describe_value(object_list)}"
        )
    if world.size == 1:
        object_list[0] = pickle.loads(pickle.dumps(obj))
        return
    object_list[:] = _gather_objects(world, obj, caller)


def _gather_objects(world: _World, obj, caller: str) -> list:
    """Every rank's `obj`, pickled across, in rank order."""
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    headers = _agree(world, "all_gather_object", len(data), None)
    counts = [int(n) for n in headers[:, 1]]
    offsets = [0, *np.cumsum(counts)[:-1].tolist()]
    received = np.empty(sum(counts), np.uint8)
    mpi = world.mpi
    request = world.comm.Iallgatherv([data, mpi.BYTE], [received, (counts, offsets), mpi.BYTE])
    _wait(world, [request], caller)
    return [
        pickle.loads(received[start : start + count].tobytes())
        for start, count in zip(offsets, counts, strict=True)
    ]


def _agree(
    world: _World, caller: str, argument: int, array: np.ndarray | None, timeout=None
) -> np.ndarray:
    """All-gather a header of what this rank is about to do (the collective, its op or root,
    the dtype and shape of its tensor) and raise on every rank if the ranks disagree; returns
    the headers, one row per rank."""
    header = np.zeros(_HEADER_SIZE, np.int64)
    header[0] = _COLLECTIVES.index(caller)
    header[1] = argument
    if array is not None:
        header[2] = DTYPES.index(array.dtype) + 1
        header[3] = array.ndim
        header[4 : 4 + array.ndim] = array.shape
    headers = np.empty((world.size, _HEADER_SIZE), np.int64)
    _wait(world, [world.comm.Iallgather(header, headers)], caller, timeout)
    compared = 1 if caller == "all_gather_object" else _HEADER_SIZE  # objects differ in length
    for rank in range(1, world.size):
        if not np.array_equal(headers[rank, :compared], headers[0, :compared]):
            first, other = _describe(headers, 0, caller), _describe(headers, rank, caller)
            raise DistributedError(
                f"{caller}: the ranks disagree: rank 0 called {first}, rank {rank} called "
                f"{other}; every rank must call the same collective with tensors of the same "
                f"shape and dtype"
            )
    return headers


def _describe(headers: np.ndarray, rank: int, caller: str) -> str:
    """Rank `rank`'s header in words: `all_reduce(op=SUM) on a float32 tensor of shape (3, 4)`.
    What is no header (a rank's collective met another of another kind, which sent other data)
    raises."""
    header = headers[rank]
    kind, argument, dtype, ndim = (int(n) for n in header[:4])
    if not (
        0 <= kind < len(_COLLECTIVES)
        and 0 <= dtype <= len(DTYPES)
        and 0 <= ndim <= _HEADER_SIZE - 4
        and (_COLLECTIVES[kind] != "all_reduce" or 0 <= argument < len(ReduceOp))
    ):
        raise DistributedError(
            f"{caller}: the ranks' collectives are out of step: rank {rank} sent "
            f"{header[:8].tolist()}..., which is no collective's header, where this one waited "
            f"for headers: its collective met another one (all_reduce_buffer's, as "
            f"DistributedDataParallel's, send no header). Every rank must call the same "
            f"collectives in the same order; the process group cannot be used any more"
        )
    name = _COLLECTIVES[kind]
    if name == "all_reduce":
        text = f"{name}(op={list(ReduceOp)[header[1]].name})"
    elif name == "broadcast":
        text = f"{name}(src={header[1]})"
    else:
        text = name
    if header[2]:
        shape = tuple(int(n) for n in header[4 : 4 + header[3]])
        text += f" on a {DTYPES[header[2] - 1]} tensor of shape {shape}"
    return text


def _wait(world: _World, requests: list, caller: str, timeout: float | None = None) -> None:
    """Wait for MPI requests, polling (which also drives MPI's progress), until the timeout;
    raise at once if a rank on this machine no longer runs."""
    mpi = world.mpi
    if mpi.Request.Testall(requests):
        return
    limit = world.timeout if timeout is None else timeout
    now = time.monotonic()
    deadline, next_look = now + limit, now + LIVENESS_INTERVAL
    polls, pause = 0, 1e-5
    while not mpi.Request.Testall(requests):
        now = time.monotonic()
        if now > next_look:
            _raise_if_ranks_died(world, caller)
            next_look = now + LIVENESS_INTERVAL
        if now > deadline:
            raise DistributedError(
                f"{caller}: rank {world.rank} waited {limit:g} s for the other "
                f"{world.size - 1} rank(s) and timed out; every rank must call the same "
                f"collectives in the same order. The process group cannot be used any more: "
                f"end the processes (init_process_group's timeout sets this limit)"
            )
        polls += 1
        if polls > 1000:  # the partner is late, not just slow: stop spinning on its core
            time.sleep(pause)
            pause = min(2 * pause, 1e-3)


def _this_process() -> tuple:
    """What names this process to the other ranks: its machine's name, its kernel (the boot id:
    two machines may share a name) and pid namespace (ranks in separate containers of one
    machine see other pids; every machine's first namespace has the same number), its pid."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as boot_id:
            namespace = f"{boot_id.read().strip()} {os.readlink('/proc/self/ns/pid')}"
    except OSError:  # not Linux: one namespace
        namespace = ""
    return socket.gethostname(), namespace, os.getpid()


def _raise_if_ranks_died(world: _World, caller: str) -> None:
    """Raise a DistributedError naming the ranks of this machine (and pid namespace) whose
    process has ended: whatever this rank waits for from them will not come."""
    here = _this_process()[:2]
    dead = [
        (rank, process)
        for rank, process in enumerate(world.processes)
        if rank != world.rank and process[:2] == here and not _runs(process[2])
    ]
    if not dead:
        return
    names = ", ".join(f"rank {rank} (pid {pid} on {host})" for rank, (host, _, pid) in dead)
    raise DistributedError(
        f"{caller}: {names} no longer runs: it exited or was killed while rank {world.rank} "
        f"waited for it. The process group cannot be used any more: end the processes and "
        f"start again, from the last checkpoint"
    )


def _runs(pid: int) -> bool:
    """Whether the process `pid` runs (a zombie, dead but not yet reaped, does not)."""
    if os.path.isdir("/proc/self"):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().rpartition(")")[2].split()[0] not in ("Z", "X")
        except FileNotFoundError:
            return False
        except (OSError, IndexError):
            pass  # unreadable: ask the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


def _result(work: Work, async_op: bool):
    if async_op:
        return work
    work.wait()
    return None


def _world_for(caller: str, group) -> _World:
    if group is not None:
        raise ArgumentError(
            f"{caller}: only the default process group exists in minitrain; pass group=None"
        )
    if _world is None:
        raise DistributedError(
            f"{caller}: the default process group has not been initialized; call "
            f"minitrain.distributed.init_process_group() first"
        )
    return _world


def _import_mpi():
    """mpi4py's MPI module (importing it initializes MPI), or None without mpi4py."""
    try:
        return importlib.import_module("mpi4py.MPI")
    except ImportError:
        return None


def _launcher_size() -> int:
    """The world size an MPI launcher announced in the environment (1 without one)."""
    for variable in LAUNCHER_SIZE_VARIABLES:
        value = os.environ.get(variable, "")
        if value.isdigit():
            return int(value)
    return 1


def _timeout_seconds(timeout, caller: str) -> float:
    if timeout is None:
        return DEFAULT_TIMEOUT.total_seconds()
    if not isinstance(timeout, datetime.timedelta):
        raise DTypeError(
            f"{caller}: timeout must be a datetime.timedelta, got {_describe_value(timeout)}"
        )
    if timeout.total_seconds() <= 0:
        raise ArgumentError(f"{caller}: timeout must be positive, got {timeout}")
    return timeout.total_seconds()


def _check_int(value, caller: str, name: str, minimum: int, unset: int | None = -1) -> int:
    """`value` as an int of at least `minimum` (or `unset`, PyTorch's 'not given')."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise DTypeError(f"{caller}: {name} must be an int, got {value!r}")
    value = int(value)
    if value != unset and value < minimum:
        raise ArgumentError(f"{caller}: {name} must be at least {minimum}, got {value}")
    return value


def _cpu_array(tensor, caller: str, name: str) -> np.ndarray:
    if not isinstance(tensor, Tensor):
        raise DTypeError(f"{caller}: {name} must be a Tensor, got {_describe_value(tensor)}")
    array = tensor.array
    if type(array) is not np.ndarray:
        raise DeviceError(
            f"{caller}: {name} is on {tensor.device}; the MPI collectives take CPU tensors "
            f"(move it with .cpu() first)"
        )
    if array.dtype not in DTYPES:
        raise DTypeError(
            f"{caller}: {name} has dtype {array.dtype}; MPI reduces {', '.join(map(str, DTYPES))}"
        )
    return array


def _check_writeable(array: np.ndarray, caller: str, name: str) -> None:
    if not array.flags.writeable:
        raise ArgumentError(
            f"{caller}: {name}'s memory is read-only (a broadcast view?); the result is written "
            f"in place: pass a tensor that owns its memory (.clone())"
        )


def _describe_value(value) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array of shape {value.shape}"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return f"{type(value).__name__} {value!r}"[:80]
