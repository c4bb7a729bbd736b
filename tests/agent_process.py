"""An onboard agent (`hil agent`) as a real process on loopback, for the agent tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "test-token-5f2c"


def agent_env() -> dict[str, str]:
    return {**os.environ, "HIL_ONBOARD_TOKEN": TOKEN}


def start_agent(port: int = 0, offset_ms: float = 0.0) -> tuple[subprocess.Popen, int]:
    """Start `hil agent` on 127.0.0.1:port; returns the process and the port it listens on."""
    proc = subprocess.Popen([sys.executable, "-m", "hil", "agent", "--listen", f"127.0.0.1:{port}",
                             "--clock-offset-ms", repr(offset_ms)], cwd=ROOT, env=agent_env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = proc.stdout.readline()  # "agent listening on 127.0.0.1:PORT", or nothing if it died
    if not line.startswith("agent listening on"):
        proc.kill()
        raise RuntimeError(f"hil agent did not start: {line!r} {proc.stderr.read()}")
    return proc, int(line.rsplit(":", 1)[1])


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def running_agent(port: int = 0, offset_ms: float = 0.0) -> Iterator[tuple[subprocess.Popen, int]]:
    proc, port = start_agent(port, offset_ms)
    try:
        yield proc, port
    finally:
        stop(proc)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.02)
