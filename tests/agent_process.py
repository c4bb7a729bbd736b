"""An onboard agent (`hil agent`) as a real process on loopback, for the agent tests."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "test-token-5f2c"


def agent_env() -> dict[str, str]:
    return {**os.environ, "HIL_ONBOARD_TOKEN": TOKEN}


def start_agent(port: int = 0, offset_ms: float = 0.0, options: tuple[str, ...] = (),
                env: dict[str, str] | None = None) -> tuple[subprocess.Popen, int]:
    """Start `hil agent` on 127.0.0.1:port with more `options`; returns the process and the port it listens on.
    Its log goes to a file, not a pipe: an agent refusing a flood logs a line per connection, and a pipe
    nobody reads would fill and stop it."""
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.Popen([sys.executable, "-m", "hil", "agent", "--listen", f"127.0.0.1:{port}",
                                 "--clock-offset-ms", repr(offset_ms), *options], cwd=ROOT, env=env or agent_env(),
                                text=True, stdout=subprocess.PIPE, stderr=log)
        line = proc.stdout.readline()  # "agent listening on 127.0.0.1:PORT", or nothing if it died
        if not line.startswith("agent listening on"):
            proc.kill()
            proc.wait()
            log.seek(0)
            raise RuntimeError(f"hil agent did not start: {line!r} {log.read()}")
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
def running_agent(port: int = 0, offset_ms: float = 0.0, options: tuple[str, ...] = (),
                  env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen, int]]:
    proc, port = start_agent(port, offset_ms, options, env)
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


def exchange(port: int, *lines: bytes, source: str = "127.0.0.1") -> list[dict]:
    """Send raw lines to the agent from address `source` (loopback answers to all of 127/8: other machines);
    every answer until it closes or goes quiet."""
    with socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0)) as connection:
        for line in lines:
            connection.sendall(line)
        connection.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
    return [json.loads(line) for line in data.splitlines()]


def hello(token: str = TOKEN) -> bytes:
    return json.dumps({"op": "hello", "token": token, "version": 1}).encode() + b"\n"
