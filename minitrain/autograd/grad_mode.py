"""Grad modes: whether ops are recorded (no_grad, enable_grad, set_grad_enabled: per thread)
and whether anomaly mode checks them (detect_anomaly, set_detect_anomaly: process-wide, as
PyTorch's), as context managers and decorators; and `recording`, the state the engine reads."""

from __future__ import annotations

import functools
import inspect
import threading

from ..errors import DTypeError


class RecordingState(threading.local):
    """What recording looks at, per thread: whether it is on, the open tapes, the innermost
    scope (any object: nn.Module opens one with itself around its forward) that each new Node
    remembers, so that whoever reads the graph can group its ops, and the capture of
    minitrain.compile, which every op, in-place write, value read and random draw reports to
    while it runs (minitrain/capture/recorder.py); and, the same for every thread, whether
    anomaly mode is on (`anomaly`)."""

    def __init__(self):
        self.enabled = True
        self.tapes: list = []  # the open autograd.Tapes
        self.scope = None
        self.capture = None  # minitrain.compile's Recorder while it captures (capture/)

    # Anomaly mode is process-wide, as PyTorch's (its AnomalyMode is one static flag): a program
    # that turns it on at the top checks the ops its other threads run too (a DataParallel-style
    # replica per thread, a training loop on a worker thread), and one thread's block turns it
    # off for all when it closes. A class attribute, set on the class (`_set_mode`): an
    # instance read falls through to it from every thread, as fast as a per-thread attribute
    # (a property cost twice that on every op).
    anomaly = False


def _set_mode(mode: str, on: bool) -> None:
    """Set `recording`'s field `mode`: "enabled" for this thread, "anomaly" for every thread."""
    if mode == "anomaly":
        RecordingState.anomaly = on
    else:
        setattr(recording, mode, on)


recording = RecordingState()


def is_grad_enabled() -> bool:
    """Whether ops on tensors that require grad are being recorded (per thread)."""
    return recording.enabled


def _in_mode(fn, make_mode):
    """`fn` run inside `make_mode()`; a generator function's body runs in it at every step (its
    caller's mode holds between steps), as PyTorch's decorators do."""
    if not inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with make_mode():
                return fn(*args, **kwargs)

        return wrapper

    @functools.wraps(fn)
    def generator_wrapper(*args, **kwargs):
        generator = fn(*args, **kwargs)
        try:
            with make_mode():
                response = generator.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with make_mode():
                        generator.close()
                    raise
                except BaseException as error:  # passed on into the generator
                    with make_mode():
                        response = generator.throw(error)
                else:
                    with make_mode():
                        response = generator.send(request)
        except StopIteration as stop:
            return stop.value

    return generator_wrapper


class _GradMode:
    """Context manager and decorator that sets grad recording for the current thread (or, as
    `mode = "anomaly"`, anomaly mode for every thread). Decorates with or without the call:
    `@no_grad()` and `@no_grad` alike, as PyTorch's."""

    enabled: bool
    mode = "enabled"  # the field of `recording` it sets

    def __new__(cls, fn=None):
        if fn is None:
            return super().__new__(cls)
        if not callable(fn):
            raise DTypeError(f"{cls.__name__}: takes no arguments, or a function to decorate")
        return cls()(fn)

    def __init__(self):
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(getattr(recording, self.mode))
        _set_mode(self.mode, self.enabled)
        return self

    def __exit__(self, *exc_info):
        _set_mode(self.mode, self._previous.pop())

    def __call__(self, fn):
        return _in_mode(fn, type(self))


class no_grad(_GradMode):  # noqa: N801 (PyTorch's name)
    """Record nothing and save nothing inside this block (or decorated function)."""

    enabled = False


class enable_grad(_GradMode):  # noqa: N801
    """Record again inside a no_grad block."""

    enabled = True


class set_grad_enabled(_GradMode):  # noqa: N801
    """Set recording on or off, as PyTorch's: takes effect when called
    (`set_grad_enabled(False)`), and as a context manager or decorator restores the previous
    mode afterwards (`with set_grad_enabled(training): ...`)."""

    def __new__(cls, mode: bool):
        return object.__new__(cls)

    def __init__(self, mode: bool):
        super().__init__()
        self.enabled = bool(mode)
        self._previous.append(getattr(recording, self.mode))
        _set_mode(self.mode, self.enabled)

    def __enter__(self):
        return self  # the mode was set in __init__

    def __call__(self, fn):
        _set_mode(self.mode, self._previous.pop())  # as a decorator, it sets nothing
        mode = self.enabled
        return _in_mode(fn, lambda: type(self)(mode))


class detect_anomaly(_GradMode):  # noqa: N801
    """Anomaly mode inside this block (or decorated function), as PyTorch's: every op's forward
    output and every gradient its backward sends are checked for nan and inf, and the first one
    raises a GraphError naming the op, the phase, statistics of what it read, and the line of
    user code that ran it (minitrain/autograd/anomaly.py). Slow; off by default and free when
    off. Process-wide, as PyTorch's: every thread checks while the block is open."""

    mode = "anomaly"
    enabled = True


class set_detect_anomaly(set_grad_enabled):  # noqa: N801
    """Anomaly mode on or off, as PyTorch's: takes effect when called, and as a context
    manager or decorator restores the previous setting afterwards."""

    mode = "anomaly"


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on (process-wide, as PyTorch's: the same in every thread)."""
    return recording.anomaly
