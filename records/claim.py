"""Claiming a directory for one writer: a campaign directory for one `hil run`, a record directory for one
trial. Two writers in one directory would interleave their files into a corrupt whole, and each would
report success.

The claim is an flock on DIR/.lock, not a marker file: the kernel drops it when its holder dies, however
it dies, so a claim never outlives its process. The lock file says who holds it, for the refusal.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_FILE = ".lock"


class DirectoryTaken(FileExistsError):
    """The directory is another writer's; the message names it and, when known, who holds it."""


@contextlib.contextmanager
def claim_directory(directory: Path, holder: str) -> Iterator[None]:
    """Hold `directory` (created if missing) for the `with` block; DirectoryTaken if another process holds
    it. `holder` says who this is ("hil run"), with the process id, host and time added."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            who = handle.read(200).strip() or "another process"
            raise DirectoryTaken(f"{directory} is taken by {who}") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{holder} (pid {os.getpid()} on {socket.gethostname()}, since "
                     f"{time.strftime('%Y-%m-%d %H:%M:%S')})")
        handle.flush()
        yield
