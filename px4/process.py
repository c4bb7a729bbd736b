"""Flight-controller processes (the built-in vehicle, PX4 SITL): started so they die with the
harness, stopped so none is ever left behind, and given loopback ports nobody else holds."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import subprocess

# How long a stopped process gets to exit by itself before it is killed.
STOP_GRACE_S = 3.0


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
