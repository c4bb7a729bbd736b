"""Flight-controller processes (the built-in vehicle, PX4 SITL): started so they die with the
harness, waited for while they start, stopped so none is ever left behind, and given loopback ports
nobody else holds.

A process the harness started is waited for on the process, not on a stopwatch: for as long as it is
alive, up to START_CAP_S, and not a moment longer once it has died. A fixed timeout of a few seconds
failed `make run` 3 times in 5 on a machine two CPU burners kept busy: the vehicle was alive and
still importing when the stopwatch ran out.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import re
import signal
import socket
import subprocess
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from aio.tasks import cancel_and_wait

T = TypeVar("T")

# How long a stopped process gets to exit by itself before it is killed.
STOP_GRACE_S = 3.0
# The longest a process the harness started may take to come up while it is alive. Only a process that
# hangs for good meets it: a cold start of the built-in vehicle beside two CPU burners on two cores
# takes seconds (its imports), PX4's under a minute; one stopped (SIGSTOP) or starved for minutes
# still makes it.
START_CAP_S = 300.0
# How often a wait checks that the process it waits on is still alive: how late its death is noticed.
ALIVE_POLL_S = 0.1
# A process that has just died may still have lines in the pipe: the console reader gets this long to
# take them in before they are quoted.
LAST_WORDS_S = 0.2


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """preexec_fn for child processes: send them `sig` if the harness dies, so a crash leaves no orphan.

    PX4 waiting for an external simulator ignores SIGTERM, so its launcher asks for SIGKILL.
    """
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(sig))  # PR_SET_PDEATHSIG


async def stop_process(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S, group: bool = False) -> None:
    """SIGTERM, up to `grace_s` to exit, then SIGKILL: never leave a simulator behind.

    `group`: the process leads its own process group (start_new_session) and the signals go to the
    whole group, so whatever it started (PX4's start-up shell, say) goes with it.
    """
    def signal_it(sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)

    if proc.poll() is None:
        signal_it(signal.SIGTERM)
        for _ in range(max(1, int(grace_s / 0.05))):
            if proc.poll() is not None:
                break
            await asyncio.sleep(0.05)
        else:
            signal_it(signal.SIGKILL)
    await asyncio.to_thread(proc.wait)
    if group:
        signal_it(signal.SIGKILL)  # anything of the group still alive after its leader went


def free_udp_port(host: str = "127.0.0.1") -> int:
    """A UDP port on `host` that nothing is bound to right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_is_free(port: int, kind: int = socket.SOCK_DGRAM, host: str = "0.0.0.0") -> bool:
    """Whether a socket of `kind` could bind `host:port` now (0.0.0.0 also catches loopback binds)."""
    with socket.socket(socket.AF_INET, kind) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


class Console:
    """A child process's console (its stdout, stderr joined to it), read on a thread so the pipe never
    fills: the recent lines in memory, every line in a file when given one."""

    def __init__(self, stream, log_path: Path | None = None, keep: int = 400):
        self.lines: deque[str] = deque(maxlen=keep)
        self.path = log_path
        self._seen: list[tuple[re.Pattern, Callable[[str], None]]] = []
        self._lock = threading.Lock()
        self._stream = stream
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True, name="console")
        self._thread.start()

    def _read(self, stream) -> None:
        with open(self.path, "w", encoding="utf-8") if self.path else contextlib.nullcontext() as log:
            for raw in iter(stream.readline, b""):
                # PX4 colours its console; the escapes are noise in a log file and in a message.
                line = re.sub(r"\x1b\[[0-9;]*m", "", raw.decode("utf-8", errors="replace")).rstrip()
                if log is not None:
                    log.write(line + "\n")
                    log.flush()
                with self._lock:
                    self.lines.append(line)
                    for pattern, seen in self._seen:
                        if pattern.search(line):
                            seen(line)

    async def first(self, pattern: str | re.Pattern) -> str:
        """The first line matching `pattern` (one already read counts), once it has come."""
        compiled = re.compile(pattern)
        loop = asyncio.get_running_loop()
        found: asyncio.Future[str] = loop.create_future()

        def seen(line: str) -> None:
            with contextlib.suppress(RuntimeError):  # a loop closed under an abandoned wait: nobody to tell
                loop.call_soon_threadsafe(lambda: found.done() or found.set_result(line))

        watcher = (compiled, seen)
        with self._lock:
            earlier = next((line for line in self.lines if compiled.search(line)), None)
            if earlier is not None:
                return earlier
            self._seen.append(watcher)
        try:
            return await found
        finally:
            with self._lock:
                self._seen.remove(watcher)

    def tail(self, n: int = 15) -> str:
        """The last `n` lines, each on a line of its own, indented: the end of an error message."""
        with self._lock:
            tail = list(self.lines)[-n:]
        return "".join(f"\n  {line}" for line in tail)

    def close(self, timeout: float = 2.0) -> None:
        """Wait for the end of the output (the process is gone), then close the stream."""
        self._thread.join(timeout)
        if not self._thread.is_alive():  # closing a stream another thread reads would block
            self._stream.close()


@dataclass
class ChildProcess:
    """A flight controller's process the harness started: its console, and what it said if it died."""

    name: str  # how messages call it: "built-in vehicle", "PX4 SITL instance 3"
    proc: subprocess.Popen
    console: Console

    def failure(self) -> str | None:
        """None while it runs; otherwise its exit code and its last console lines."""
        code = self.proc.poll()
        if code is None:
            return None
        return f"{self.name} exited with code {code}" + self.console.tail()

    async def while_alive(self, step: Awaitable[T], error: type[Exception], not_yet: str,
                          cap_s: float = START_CAP_S) -> T:
        """What `step` (something this process is to do: print its ready line, answer on MAVLink) returns,
        waited for as long as the process is alive, up to `cap_s` wall seconds.

        Raises `error` with `failure()` as soon as the process dies, and `error` saying it "had not
        `not_yet`" with its last console lines at the cap; `step` is cancelled then.
        """
        task = asyncio.ensure_future(step)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + cap_s
        try:
            while True:
                done, _ = await asyncio.wait([task], timeout=ALIVE_POLL_S)
                if done:
                    return task.result()
                if self.proc.poll() is not None:
                    await asyncio.sleep(LAST_WORDS_S)
                    raise error(self.failure())
                if loop.time() > deadline:
                    raise error(f"{self.name} is running but had not {not_yet} after {cap_s:g} s; its console "
                                f"ends:" + (self.console.tail() or " (nothing)"))
        finally:
            if not task.done():
                await cancel_and_wait(task)
