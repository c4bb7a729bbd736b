"""Publishing files and directories atomically: a reader, or a process killed at any instant, sees
the old version or the new one, never half of either.

A write the machine refuses (a full disk or quota, a read-only file system, a directory this process may
not write) is the infrastructure failing, not the trial or the harness: `writing` turns it into one
`WriteRefused` that says what was being written and where, which `hil` prints as one line (exit 4).
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, Callable

# EACCES also comes from sockets and signals, so it counts as a refused write only with a file to name.
_REFUSALS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES)


class WriteRefused(OSError):
    """The machine refused a write; the message is one line naming what was being written and where.
    Nothing finished is lost by it: every file is published whole or not at all."""


def refusal(error: BaseException, what: str | None = None, where: Path | None = None) -> WriteRefused | None:
    """`error` as a WriteRefused if it is the machine refusing a write of `what` (None if it is anything
    else); `where` stands in for the path when the error names none (a write to an open file)."""
    if isinstance(error, WriteRefused):
        return error
    if not isinstance(error, OSError) or error.errno not in _REFUSALS:
        return None
    path = error.filename2 or error.filename or where  # a copy names its destination second
    if path is None and error.errno == errno.EACCES:
        return None
    reason = os.strerror(error.errno).lower()
    if what is None:
        return WriteRefused(f"cannot write {os.fsdecode(path) if path is not None else 'a file'}: {reason}")
    return WriteRefused(f"cannot write {what}: {reason}" + (f" ({os.fsdecode(path)})" if path is not None else ""))


@contextlib.contextmanager
def writing(what: str, where: Path | None = None) -> Iterator[None]:
    """Raise a write the machine refuses inside as WriteRefused naming `what` (see `refusal`); the
    innermost `writing` names it."""
    try:
        yield
    except OSError as error:
        refused = refusal(error, what, where)
        if refused is None or refused is error:
            raise
        raise refused from error


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Write via a temporary file, fsync, rename; readers see the old file or the new, never half."""
    def produce(temporary: Path) -> None:
        with open(temporary, "wb") as file:
            write(file)
    write_file_atomically(path, produce)


def fsync_directory(directory: Path) -> None:
    """Make renames in `directory` durable: a rename lives in the directory, not in the file."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file_atomically(path: Path, produce: Callable[[Path], object]) -> None:
    """`produce(temporary)` writes the file; it is fsynced and renamed to `path` (for writers that want a
    path, such as pandas' to_parquet). The temporary name is per process, so two racing writers never
    mix their bytes; the last rename wins whole. A write that fails leaves no temporary behind (a full
    disk would otherwise fill up with them, one per retry), and its error names the file."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        produce(temporary)
        with open(temporary, "rb") as file:
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):  # on a read-only file system even a missing file cannot be unlinked
            temporary.unlink()
        if isinstance(error, OSError) and error.filename is None:  # pyarrow's writer names no file
            error.filename = str(path)
        raise
    fsync_directory(path.parent)


def publish_directory(partial: Path, final: Path) -> None:
    """Rename a finished directory into place and make the rename durable."""
    final.parent.mkdir(parents=True, exist_ok=True)
    os.rename(partial, final)
    fsync_directory(final.parent)
