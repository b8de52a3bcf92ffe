"""Signals the command line records, so that one whose exception was lost still stops a run
before its commit points (a charge, a file replaced), and a commit and its report can be
finished together.

CPython drops a signal handler's exception raised while importlib compiles a module (an
independent review: 169 of 200 such exceptions; with ``PYTHONDONTWRITEBYTECODE=1`` a CLI
SIGTERM during start-up was lost 5 times in 40, and the run went on to charge and release).
The CLI's handlers (:func:`handler`) append the signal to :data:`RECEIVED` as well as raising;
:func:`check` raises again for a recorded signal, and the library calls it at its commit
points (:meth:`treedp.Accountant.charge`, the rename of an atomic write). Outside the CLI
nothing is ever recorded and :func:`check` does nothing. Inside :func:`deferred` (a stream
step's saved state and its printed answer) a signal is recorded only: the work is finished
and reported, not left committed but unreported (a retried step fed its records twice).
:func:`held` holds every Python handler of :data:`SIGNALS` for a few statements (an atomic
write naming its temporary file).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

__all__ = ["RECEIVED", "SIGNALS", "Terminated", "check", "deferred", "handler", "held"]

#: The signals a front end turns into exceptions (Ctrl-C, SIGTERM, SIGHUP), where they exist.
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))

#: Signals received while the CLI runs (cleared when it starts).
RECEIVED: list[int] = []
_DEFERRING: list[bool] = []


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised in the main thread so that every cleanup runs (as Ctrl-C)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_for(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def handler(signum: int, frame: object) -> None:
    """The CLI's handler of SIGINT, SIGTERM and SIGHUP: record, then raise (unless
    :func:`deferred`)."""
    RECEIVED.append(signum)
    if not _DEFERRING:
        _raise_for(signum)


def check() -> None:
    """Raise for a signal recorded earlier whose exception was lost (not inside
    :func:`deferred`)."""
    if RECEIVED and not _DEFERRING:
        _raise_for(RECEIVED[0])


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Record signals without raising while a commit and its report finish."""
    _DEFERRING.append(True)
    try:
        yield
    finally:
        _DEFERRING.pop()


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold :data:`SIGNALS` for a few statements; one arriving meanwhile is handled on exit.

    An interrupt inside :func:`tempfile.mkstemp`, after the file was created and before its
    name was returned, left an empty temporary file behind (an independent review: 267 in
    3,000 forced interrupts). Python runs signal handlers in the main thread only, and
    blocking the signal there is not enough (another thread takes it and the handler still
    runs in the main thread), so the Python handlers are swapped for one that records the
    signal; on exit they are restored and called for each recorded signal, in order (a
    raising one ends the rest, as it would have). Default and ignored dispositions are left
    as they are, and so is every thread but the main one (no handler runs there).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous: dict[int, Callable[[int, FrameType | None], object]] = {}
    for number in SIGNALS:
        handler = signal.getsignal(number)
        if callable(handler):
            previous[number] = handler
            signal.signal(number, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for number in received:
            previous[number](number, None)
