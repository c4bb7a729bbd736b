"""Publishing files and directories atomically: a reader, or a process killed at any instant, sees
the old version or the new one, never half of either."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Callable


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
    mix their bytes; the last rename wins whole."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    produce(temporary)
    with open(temporary, "rb") as file:
        os.fsync(file.fileno())
    os.replace(temporary, path)
    fsync_directory(path.parent)


def publish_directory(partial: Path, final: Path) -> None:
    """Rename a finished directory into place and make the rename durable."""
    final.parent.mkdir(parents=True, exist_ok=True)
    os.rename(partial, final)
    fsync_directory(final.parent)
