"""Files written atomically: in full to a temporary file beside the target, then renamed."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from typing import IO

__all__ = ["write_atomically"]


def write_atomically(path: str, write: Callable[[IO[bytes]], None], caller: str = "save") -> None:
    """Write a file through a temporary one in the same directory, then rename it onto `path`.
    An OSError on the way (a full disk, a failing fsync or rename) leaves any previous file as
    it was and no temporary, and is raised again naming `path`, its errno kept, chained."""
    if not path or path.endswith(("/", os.sep)) or os.path.isdir(path):
        raise IsADirectoryError(
            errno.EISDIR, f"{caller}: the path names a directory, not a file", path
        )
    target = os.path.realpath(path)  # through a symbolic link: replace the file it points to
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise FileNotFoundError(errno.ENOENT, f"{caller}: the directory does not exist", directory)
    if os.path.exists(target) and not os.access(target, os.W_OK):
        # a rename would replace a file that writing it in place may not: leave it as it is
        raise PermissionError(errno.EACCES, f"{caller}: the file is read-only", path)
    try:
        _write_then_rename(directory, target, write)
    except OSError as exc:
        # the OSError of a write or an fsync names no file, the one of a rename the temporary
        raise _naming_the_file(exc, path, caller) from exc
    _fsync_directory(directory)


def _write_then_rename(directory: str, target: str, write: Callable[[IO[bytes]], None]) -> None:
    temp_path, descriptor = _create_temporary(directory, os.path.basename(target))
    try:
        with os.fdopen(descriptor, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileNotFoundError):
            # keep the permissions of the file being replaced, as writing it in place would
            os.chmod(temp_path, stat.S_IMODE(os.stat(target).st_mode))
        os.replace(temp_path, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_path)
        raise


def _naming_the_file(exc: OSError, path: str, caller: str) -> OSError:
    """`exc` again, naming the file that could not be written (OSError picks the subclass
    of its errno: ENOSPC stays an OSError, EACCES a PermissionError)."""
    message = (
        f"{caller}: could not write the file ({exc.strerror or exc}); a file already there is "
        f"left as it was"
    )
    if exc.errno is None:
        return OSError(f"{message}: {path!r}")
    return OSError(exc.errno, message, path)


def _create_temporary(directory: str, name: str) -> tuple[str, int]:
    # os.open with mode 0o666 gives the permissions of an ordinary new file (the umask applies);
    # tempfile.mkstemp would make it private (0o600).
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while len(os.fsencode(name)) > 200:  # file names are limited to 255 bytes, not characters
        name = name[:-1]
    while True:
        temp_path = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return temp_path, os.open(temp_path, flags, 0o666)
        except FileExistsError:
            continue


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable. Windows cannot open a directory, and some file systems
    refuse to fsync one: the rename has happened either way."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
