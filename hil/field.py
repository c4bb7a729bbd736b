"""What a person at the field sees and can do while `hil fly` flies: a live status line and an abort key.

Both only exist when there is a person at a terminal (stdin/stdout are TTYs): in CI or a pipe they
stay out of the way. The abort key (a, q or Esc) cancels the flight, which `hil.fly` turns into
"land now"; Ctrl-C does the same. After landing, the flight controller's ULog is fetched into the
trial record where the target keeps logs (PX4 does; the built-in vehicle has none).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import sys
import termios
import tty
from collections.abc import Callable

from bridges.vehicle import Vehicle

ABORT_KEYS = {b"a", b"q", b"\x1b"}
STATUS_PERIOD_S = 0.5


def interactive() -> bool:
    """A person is watching and can press keys."""
    return sys.stdin.isatty() and sys.stdout.isatty()


async def show_status(vehicle: Vehicle, write: Callable[[str], None] = sys.stdout.write) -> None:
    """Rewrite one terminal line with the vehicle's state until cancelled."""
    try:
        while True:
            s = vehicle.state
            distance = math.hypot(s.north, s.east)
            write(f"\r  {s.flight_mode:<16} {'ARMED' if s.armed else 'disarmed':<8} alt {s.altitude:5.1f} m  "
                  f"speed {s.speed:4.1f} m/s  {distance:5.1f} m from home  battery {s.battery_pct:3.0f} %  "
                  "[a: abort] ")
            sys.stdout.flush()
            await asyncio.sleep(STATUS_PERIOD_S)
    finally:
        write("\n")


@contextlib.contextmanager
def abort_key(on_abort: Callable[[], None]):
    """While inside, a press of a/q/Esc on the terminal calls `on_abort` (once)."""
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    loop = asyncio.get_running_loop()
    fired = [False]

    def read_key() -> None:
        key = os.read(fd, 1)
        if key in ABORT_KEYS and not fired[0]:
            fired[0] = True
            on_abort()

    tty.setcbreak(fd)  # keys arrive one by one, without Enter; output processing stays as it was
    loop.add_reader(fd, read_key)
    try:
        yield
    finally:
        loop.remove_reader(fd)
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
