"""Bringing a target up and handing back the connection string a `Vehicle` connects to.

A target is named as DESIGN.md says: `sim` (the built-in vehicle, started here as a child process
speaking MAVLink on loopback, exactly as PX4 SITL would be) or a MAVSDK connection string for a
flight controller that is already running (hardware, or a SITL someone else started).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import AsyncIterator

from bridges.transport import TransportError, parse_url
from px4.process import die_with_parent, free_udp_port, stop_process

SIM = "sim"
PX4_SITL = "px4-sitl"  # optionally with an instance number: px4-sitl:2 (px4/sitl.py)


@dataclass(frozen=True)
class TargetSpec:
    """What `--target` named and how to reach it."""

    name: str
    simulated: bool
    instance: int | None = None  # PX4 SITL instance (port offsets), px4-sitl only; None: the lowest free one

    @classmethod
    def parse(cls, text: str) -> "TargetSpec":
        if text == SIM:
            return cls(SIM, simulated=True)
        if text == PX4_SITL or text.startswith(PX4_SITL + ":"):
            number = text[len(PX4_SITL) + 1:]
            if text == PX4_SITL:
                return cls(PX4_SITL, simulated=True)
            if not number.isdigit() or int(number) > 9:
                raise ValueError(f"--target {text!r}: expected px4-sitl or px4-sitl:N with an instance N of 0-9")
            return cls(PX4_SITL, simulated=True, instance=int(number))
        try:
            parse_url(text)
        except TransportError as exc:
            raise ValueError(f"--target {text!r}: expected 'sim', 'px4-sitl[:N]' or a connection string ({exc})") from None
        return cls(text, simulated=False)


@dataclass
class SimProcessOptions:
    """How to start the built-in vehicle as a child process."""

    profile: str = "default"
    speed: float = 1.0
    params: dict[str, float] = field(default_factory=dict)
    extra_links: list[str] = field(default_factory=list)


def sim_command(port: int, options: SimProcessOptions) -> list[str]:
    """The command line of a built-in vehicle that sends to 127.0.0.1:port."""
    cmd = [sys.executable, "-m", "hil", "sim", "--link", f"udpout://127.0.0.1:{port}",
           "--profile", options.profile, "--speed", repr(options.speed)]
    for url in options.extra_links:
        cmd += ["--link", url]
    for name, value in options.params.items():
        cmd += ["--param", f"{name}={value}"]
    return cmd


@dataclass
class SimProcess:
    """A running built-in vehicle: where to connect, and what it said if it died."""

    url: str
    proc: subprocess.Popen
    log: object  # a temporary file holding the child's stderr

    def failure(self) -> str | None:
        """None while running; otherwise the exit code and the tail of its error output."""
        code = self.proc.poll()
        if code is None:
            return None
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip().splitlines()[-15:]
        return f"built-in vehicle exited with code {code}" + ("".join(f"\n  {line}" for line in tail) if tail else "")


@contextlib.asynccontextmanager
async def builtin_vehicle(options: SimProcessOptions | None = None) -> AsyncIterator[SimProcess]:
    """Run the built-in vehicle in a child process on loopback; stopped (never orphaned) after."""
    options = options or SimProcessOptions()
    port = free_udp_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(sim_command(port, options), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=log, preexec_fn=die_with_parent)
        try:
            yield SimProcess(f"udpin://127.0.0.1:{port}", proc, log)
        finally:
            await stop_process(proc)
