"""Write a file atomically: a temporary file in the same folder, fsync, then rename.

The file ends up like any other file a tool writes: a new file gets ``0666 & ~umask``, an
overwritten file keeps its mode, and a symbolic link is written through (its target is
replaced, the link stays). :func:`check_target` says, before any work is done, whether a path
can be written, and names the user's path (never the temporary file) when it cannot.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from treedp import interrupts as _interrupts
from treedp.exceptions import InvalidParameterError

__all__ = ["atomic_write", "atomic_write_text", "check_target"]

_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask (read by setting and restoring it, under a lock)."""
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def check_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` lands in, or a one-line error naming ``path``.

    A symbolic link resolves to its target (written through). A path ending in a separator,
    an existing directory, a missing folder or a folder where a file cannot be created (an
    empty temporary file is created and removed to tell) is refused with
    :class:`~treedp.exceptions.InvalidParameterError`, before any data is read.
    """
    text = os.fspath(path)
    if not text:
        raise InvalidParameterError("The output path is empty: give a file name.")
    if text.endswith(("/", os.sep)):
        raise InvalidParameterError(
            f"The output path '{text}' ends with a separator: give a file name, not a folder."
        )
    target = Path(os.path.realpath(text))
    if target.is_dir():
        raise InvalidParameterError(
            f"The output path '{text}' is a folder: give a file name inside it."
        )
    if target.exists() and not target.is_file():
        raise InvalidParameterError(f"The output path '{text}' is not a regular file.")
    folder = target.parent
    if not folder.is_dir():
        shown = os.path.dirname(text) or "."  # as the user wrote it, not the absolute path
        if folder.exists():
            raise InvalidParameterError(
                f"Cannot write '{text}': '{shown}' is a file, not a folder."
            )
        raise InvalidParameterError(f"Cannot write '{text}': the folder '{shown}' does not exist.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InvalidParameterError(f"Cannot write '{text}': no permission to write in '{folder}'.")
    _probe(folder, text)
    return target


def _probe(folder: Path, text: str) -> None:
    """Create and remove an empty temporary file in ``folder``: ``os.access`` says yes where a
    write still fails (root on ``/proc``, a read-only mount, an ACL, an immutable folder),
    and a release was then charged before its output failed (an independent review)."""
    tmp: str | None = None
    try:
        with _interrupts.held():
            fd, tmp = tempfile.mkstemp(prefix=".treedp-probe.", suffix=".tmp", dir=folder)
            os.close(fd)
    except OSError as exc:
        raise InvalidParameterError(f"Cannot write '{text}': {exc.strerror or exc}.") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write`` on a binary file that replaces ``path`` only once it is complete.

    Readers see the old file or the whole new one. If anything fails (including Ctrl-C), the
    temporary file is removed and ``path`` is left untouched. The mode is the existing
    file's, or ``0666 & ~umask`` for a new one; a symbolic link is written through.
    """
    target = check_target(path)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    tmp: str | None = None
    handle: IO[bytes] | None = None
    try:
        with _interrupts.held():  # the cleanup below knows the file once it exists
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            handle = os.fdopen(fd, "wb")
        with handle:
            write(handle)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        _interrupts.check()  # a CLI signal whose exception was lost: the old file stays
        os.replace(tmp, target)
    except BaseException as exc:
        if handle is not None:
            handle.close()
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if isinstance(exc, OSError) and exc.errno is not None:
            raise _naming(exc, path) from None
        raise


def _naming(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """The same error, naming the user's path instead of the temporary file."""
    if exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, os.fspath(path))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically, as :func:`atomic_write`."""
    data = text.encode("utf-8")
    atomic_write(path, lambda handle: handle.write(data))
