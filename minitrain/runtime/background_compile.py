"""Kernels compiled in the background: on a cold numba cache, an op runs its generic (numpy)
kernels while another process compiles numba's, as a tiered JIT does.

A numba kernel compiles on its first call for a signature (argument types): a fraction of a second
to two seconds each, and a model's first training step on a fresh machine used to wait for all of
them (about 7 s for the small GPT of the cold-start benchmark, against PyTorch's 3 s for its import
and first step). Every op has generic kernels beside its numba ones (the CuPy device runs them),
equal to float32 rounding. So a kernel called where its caller can fall back, for a signature
numba's on-disk cache does not hold, is sent to a compile process, and the call raises
`KernelNotReady` at once; the caller runs its generic kernels instead. The compile process writes
the kernel into numba's cache, and the first call after it has loads it from there. A signature
the cache holds loads at once, as before: with a warm cache nothing changes.

Why a process and not a thread: numba's compiler is mostly Python, so a compile thread holds the
GIL about half the time, and the training thread ran at a third of its speed beside it (the
cold-start benchmark's 20 steps took longer than compiling first). The process compiles on the
other core; the kernel it is asked for is named by where it was made (`kernel_address`: the module,
the factory function and the factory's arguments), so it builds the same function, whose cache
entry is the one this process looks up.

Where a caller can fall back is said by registering the function that catches `KernelNotReady`
(`falls_back`): `Op.apply` and its full path (the op's forward runs again with numba paused,
backend.numba_paused), `array_backward` (autograd/node.py: the op's generic backward, for the
walk and Node.run_backward alike), attention's forward (ops/sequence/attention.py, where its
dropout mask is not drawn again), Adam's fused update (numpy's update, the same to the bit), and
threads.side_by_side's pool threads for such a caller. The dispatcher looks for such a frame on
the stack only on a miss (a signature not compiled in this process), so a compiled kernel's call
costs nothing more. A kernel called anywhere else (a public array kernel called directly)
compiles at once, as a plain numba function.

Off (MINITRAIN_COMPILE_IN_BACKGROUND=0, or `minitrain.use_deterministic_algorithms(True)`), every
kernel compiles at its first call, so a run's first steps use the same kernels as the rest;
`hold` asks for nothing and treats every missing kernel as still compiling (the generic kernels run
wherever they can: tests compare them). Where numba caches nothing (no writable cache directory),
or a kernel's address is unknown, or the compile process failed or died, kernels compile at their
first call. The compile process ends with this one (terminated at exit, whatever it was doing),
so that nothing is left running or writing into the cache folders after a program ends; a short
program leaves the next run the kernels it did not get to. A kernel it was saving then may leave
a temporary file in numba's cache folder, or an index entry without its data, which counts as a
miss (`_cache_holds` looks for the data file too). A custom autograd.Function's forward and
backward are user code (`runs_user_code`): a kernel they call directly compiles at its call, since
running them again could repeat what else they do.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import inspect
import os
import pickle
import subprocess
import sys
import threading

import numpy as np

from . import blas

__all__ = [
    "KernelNotReady",
    "caller_falls_back",
    "compiles_in_background",
    "falls_back",
    "kernel_address",
    "new_dispatcher",
    "release_blas_when_done",
    "runs_user_code",
    "wait_for_kernels",
]


class KernelNotReady(Exception):  # noqa: N818 (a signal to the caller, not an error)
    """A numba kernel is being compiled in the background: run the generic kernels instead."""


def _mode_from_environment() -> str:
    value = os.environ.get("MINITRAIN_COMPILE_IN_BACKGROUND", "1").strip().lower()
    if value in ("0", "false", "no"):
        return "off"
    return "hold" if value == "hold" else "on"


_mode = _mode_from_environment()
_fallback_codes: set = set()  # the code of each function that catches KernelNotReady
_user_code_codes: set = set()  # the code of each function that calls user code (see runs_user_code)
_kernels: dict = {}  # (address, qualname) -> backend.jit's wrapper: what the compile process finds
fallbacks = 0  # the KernelNotReady raised in this process (a count for tests and benchmarks)
deterministic = False  # minitrain.use_deterministic_algorithms(True): every compile at once


def compiles_in_background() -> bool:
    """Whether kernels missing from numba's cache compile in the background (see the module)."""
    return _mode != "off" and not deterministic


def falls_back(function):
    """Register `function` as one that catches KernelNotReady and runs generic kernels instead,
    or passes it on to a caller that does (a plain function, or a classmethod's `__func__`);
    returns it."""
    _fallback_codes.add(function.__code__)
    return function


def runs_user_code(function):
    """Register `function` as one that calls user code (a custom autograd.Function's forward or
    backward): a kernel missing below it compiles at its call, whatever falls back above it,
    since running user code again could repeat what it does besides computing. Returns it."""
    _user_code_codes.add(function.__code__)
    return function


def caller_falls_back() -> bool:
    """Whether a function registered with `falls_back` is on this thread's stack with no
    `runs_user_code` one above it (looked for on a miss only, and by threads.side_by_side,
    which relays the answer to its pool threads)."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code in _fallback_codes:
            return True
        if code in _user_code_codes:
            return False
        frame = frame.f_back
    return False


def kernel_address(frame) -> tuple | None:
    """Where a kernel backend.jit decorates is made, from `frame`, the decorating code's:
    (module, None, ()) for a module's own function, (module, factory, arguments) for one a
    module-level factory function makes; None where the compile process could not make it again
    so (a program's __main__, a factory nested in another or taking keyword-only or variadic
    arguments, arguments that do not hash or pickle)."""
    code, module = frame.f_code, frame.f_globals.get("__name__")
    if module is None or module == "__main__":  # the compile process would run the program
        return None
    if code.co_name == "<module>":
        return (module, None, ())
    factory = inspect.unwrap(frame.f_globals.get(code.co_name, None) or _no_factory)
    if getattr(factory, "__code__", None) is not code or code.co_kwonlyargcount:
        return None  # not a module-level function, or arguments the address would not carry
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return None
    # the arguments as the factory holds them when it decorates: a factory that rebinds one
    # before (none does) would be called with the new value, and make another kernel, which the
    # caller then compiles itself (its cache entry is not the one asked for)
    arguments = tuple(frame.f_locals[name] for name in code.co_varnames[: code.co_argcount])
    try:
        hash(arguments)
        pickle.dumps(arguments)
    except Exception:  # noqa: BLE001 (any value hash or pickle refuses)
        return None
    return (module, code.co_name, arguments)


def _no_factory():
    pass


def register_kernel(address, wrapper) -> None:
    """Record backend.jit's `wrapper` under `address` (kernel_address's), for the compile
    process to find."""
    _kernels[(address, wrapper.py_func.__qualname__)] = wrapper


# Whether BLAS is held to one thread while kernels compile: OpenBLAS's idle threads spin for
# about 0.1 s after each GEMM, on every core, and a compile process at the lowest priority (as it
# runs: compile_process.py) got no time beside them (no kernel compiled in 9 s of training on 2
# cores); held, it compiled the small GPT's kernels in about 6 s while the steps took the same
# time as before. Taken and given back by the main thread only (blas.py says why): given back,
# once nothing is pending, at its next numba choice (backend.numba_takes), backward, kernel miss
# or wait_for_kernels.
holding_blas = False


def release_blas_when_done() -> None:
    """Give BLAS its threads back if nothing is pending and this is the main thread."""
    global holding_blas
    if holding_blas and not _compiler.pending and _main_thread():
        holding_blas = False
        blas.release_one_thread()


def _hold_blas() -> None:
    global holding_blas
    if not holding_blas and _main_thread():
        holding_blas = blas.hold_one_thread()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


class _Compiler:
    """The compile process, started on the first kernel sent, and what it was sent: `pending`,
    (dispatcher id, signature) pairs asked for and not answered; `answered`, those it has
    compiled or failed (a call loads them from the cache, or compiles them itself)."""

    def __init__(self):
        self.pending: set = set()
        self.answered: set = set()
        self.lock = threading.Condition()
        self.process = None
        self.broken = False  # the process failed to start or died: compile in the caller

    def submit(self, dispatcher, signature, key) -> bool:
        """Send a kernel to compile; False where it cannot be (the caller compiles)."""
        address = getattr(dispatcher, "minitrain_address", None)
        if address is None:
            return False
        with self.lock:
            if key in self.pending or _mode == "hold":  # (hold: nothing compiles, none sent)
                self.pending.add(key)
                return True
            if self.broken:
                return False
            try:
                if self.process is None:
                    self.process = _start_process()
                    threading.Thread(
                        target=self.read_answers,
                        args=(self.process,),
                        name="minitrain-compile-answers",
                        daemon=True,
                    ).start()
                job = (key, address, dispatcher.py_func.__qualname__, signature)
                pickle.dump(job, self.process.stdin)
                self.process.stdin.flush()
            except Exception:  # noqa: BLE001 (no process, a pipe gone, a job pickle refuses)
                self.broken = True
                return False
            self.pending.add(key)
        _hold_blas()
        return True

    def read_answers(self, process) -> None:
        """Move each answered kernel from `pending` to `answered`; where the process ends, all."""
        try:
            while True:
                key = pickle.load(process.stdout)
                with self.lock:
                    self.pending.discard(key)
                    self.answered.add(key)
                    self.lock.notify_all()
        except Exception:  # noqa: BLE001 (end of the stream: the process is gone)
            with self.lock:
                self.broken = True
                self.answered |= self.pending
                self.pending.clear()
                self.lock.notify_all()


# The compile process's program: this process's minitrain first on its path (a checkout that
# is not installed, or another minitrain in the working directory, would otherwise give the child
# other kernels), in this process's working directory and environment.
_COMPILE_PROCESS = (
    "import sys; root = {root!r}; root in sys.path or sys.path.insert(0, root); "
    "from minitrain.runtime.compile_process import main; main()"
)


def _start_process():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    environment = dict(os.environ, MINITRAIN_COMPILE_IN_BACKGROUND="0")
    numba_config = sys.modules["numba"].config
    if getattr(numba_config, "CACHE_DIR", ""):  # the same cache, wherever the child resolves it
        environment["NUMBA_CACHE_DIR"] = os.path.abspath(numba_config.CACHE_DIR)
    return subprocess.Popen(
        [sys.executable, "-c", _COMPILE_PROCESS.format(root=root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=environment,
    )


_compiler = _Compiler()


def wait_for_kernels(timeout: float | None = None) -> bool:
    """Block until every kernel sent to the compile process is answered (at once in `hold`
    mode, which sends none); False if `timeout` seconds passed first."""
    if _mode != "hold":
        with _compiler.lock:
            if not _compiler.lock.wait_for(lambda: not _compiler.pending, timeout):
                return False
    release_blas_when_done()
    return True


@atexit.register
def _end_compile_process() -> None:
    process = _compiler.process
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()


def _after_fork_in_child() -> None:
    global _compiler, holding_blas
    # the parent's compile process answers the parent only (its pipes stay open in the child,
    # unused: closing them could wait forever on a lock the parent's answer reader held)
    _compiler = _Compiler()
    holding_blas = False  # blas.py gave the child BLAS's count back


os.register_at_fork(after_in_child=_after_fork_in_child)


def _cache_holds(dispatcher, signature) -> bool:
    """Whether numba's on-disk cache holds the kernel for `signature` (read from its index,
    without loading it). numba's caching module has no public question for this; where its
    internals differ from numba 0.68's, True: the kernel compiles at once, as before."""
    cache = dispatcher._cache
    try:
        key = cache._index_key(signature, dispatcher.targetctx.codegen())
        data_name = cache._cache_file._load_index().get(key)
        # the data file too: a save stopped between the index and the data leaves the first
        return data_name is not None and os.path.exists(os.path.join(cache._cache_path, data_name))
    except Exception:  # noqa: BLE001 (see the docstring)
        return True


@functools.cache
def _dispatcher_class():
    """numba's CPU dispatcher with its first-call compile made tiered (numba imported here, on
    the first kernel's first call)."""
    registry = importlib.import_module("numba.core.registry")

    class TieredDispatcher(registry.CPUDispatcher):
        """A CPU dispatcher whose miss (no compiled signature for the arguments) sends the kernel
        to the compile process and raises KernelNotReady, where a caller can fall back and the
        cache does not hold the kernel."""

        def _compile_for_args(self, *args, **kws):
            if _mode == "off" or deterministic or kws or not caller_falls_back():
                return super()._compile_for_args(*args, **kws)
            release_blas_when_done()
            signature = self.signature_of(args)
            key = (id(self), signature)
            compiler = _compiler
            with compiler.lock:
                pending, answered = key in compiler.pending, key in compiler.answered
            if pending:
                raise _not_ready(self)
            if (
                answered
                or type(self._cache).__name__ == "NullCache"  # nothing to hand over
                or _cache_holds(self, signature)
                or not compiler.submit(self, signature, key)
            ):
                return super()._compile_for_args(*args, **kws)
            raise _not_ready(self)

        def signature_of(self, args) -> tuple:
            """numba's types of `args`, remembered by a cheaper key (typeof cost 0.2 ms a call,
            paid on every call while the kernel compiles: 7 ms of a 64 ms generic step)."""
            quick = _quick_key(args)
            known = self.__dict__.setdefault("minitrain_signatures", {})
            signature = None if quick is None else known.get(quick)
            if signature is None:
                signature = tuple(self.typeof_pyval(a) for a in args)
                if quick is not None:
                    known[quick] = signature
            return signature

    return TieredDispatcher


def _quick_key(args):
    """A key that determines numba's types of `args` (as typeof reads them: an array's dtype,
    dims, layout, writeability and alignment; a number's type), or None where one of them is
    of another kind (then typeof runs every time)."""
    key = []
    for a in args:
        kind = type(a)
        if kind is np.ndarray:
            flags = a.flags
            key.append(
                (
                    a.dtype,
                    a.ndim,
                    flags.c_contiguous,
                    flags.f_contiguous,
                    flags.writeable,
                    flags.aligned,
                )
            )  # fmt: skip (the dtype itself: records of one size differ in their fields)
        elif kind in (bool, float) or isinstance(a, np.generic) and a.dtype.kind in "biuf":
            key.append((kind, getattr(a, "dtype", None)))
        elif kind is int and -(2**63) <= a < 2**63:
            key.append(int)
        else:
            return None
    return tuple(key)


def _not_ready(dispatcher) -> KernelNotReady:
    global fallbacks
    fallbacks += 1
    return KernelNotReady(dispatcher.py_func.__qualname__)


def new_dispatcher(function, options: dict, address):
    """`numba.njit(cache=True, **options)(function)`, as a dispatcher whose first-call compiles
    may run in the background (the module's docstring); `address` is kernel_address's."""
    numba = importlib.import_module("numba")
    plain = numba.njit(cache=True, **options)(function)
    plain.__class__ = _dispatcher_class()  # the same object, its miss handled as above
    plain.minitrain_address = address
    return plain


def compile_for(address, qualname: str, signature) -> None:
    """What the compile process does for one job: make the kernel again where it was made
    (import its module, call its factory) and compile it for `signature` into numba's cache."""
    module_name, factory, arguments = address
    module = importlib.import_module(module_name)
    if factory is not None:
        getattr(module, factory)(*arguments)
    _kernels[(address, qualname)].dispatcher().compile(signature)
