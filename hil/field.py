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

from bridges.vehicle import Vehicle, VehicleState
from missions.waypoint import WaypointMission
from records.clock import seconds_since
from records.record import TrialRecorder

ABORT_KEYS = {b"a", b"q", b"\x1b"}
STATUS_PERIOD_S = 0.5


def interactive() -> bool:
    """A person is watching and can press keys."""
    return sys.stdin.isatty() and sys.stdout.isatty()


class FlightProgress:
    """Where the flight is, from the trial's own events: a recorder listener (TrialRecorder.listeners)."""

    def __init__(self, mission: WaypointMission) -> None:
        self.budget_s = mission.time_budget
        self.total = len(mission.waypoints)
        self.reached = 0
        self.armed: VehicleState | None = None  # the snapshot at arming: the budget counts from there

    def __call__(self, kind: str, fields: dict) -> None:
        if kind == "waypoint_reached":
            self.reached = int(fields.get("index", self.reached)) + 1
        elif kind == "mission_item_reached":
            self.reached = min(self.total, self.reached + 1)


async def show_status(vehicle: Vehicle, recorder: TrialRecorder, mission: WaypointMission,
                      write: Callable[[str], None] = sys.stdout.write) -> None:
    """Rewrite one terminal line with the vehicle's state, the waypoint reached and the time used of
    the budget, until cancelled; silent until the vehicle is armed, so the checklist prints whole."""
    progress = FlightProgress(mission)
    recorder.listeners.append(progress)
    shown = False
    try:
        while True:
            s = vehicle.state
            if progress.armed is None and s.armed:
                progress.armed = s
            if progress.armed is not None:
                armed = progress.armed
                elapsed = seconds_since(armed.t_ns, armed.t_vehicle_s, s.t_ns, s.t_vehicle_s, vehicle.speed_factor)
                write(f"\r  {s.flight_mode:<16} {'ARMED' if s.armed else 'disarmed':<8} alt {s.altitude:5.1f} m  "
                      f"speed {s.speed:4.1f} m/s  {math.hypot(s.north, s.east):5.1f} m from home  "
                      f"waypoint {progress.reached}/{progress.total}  {elapsed:5.1f}/{progress.budget_s:g} s  "
                      f"battery {s.battery_pct:3.0f} %  [a: abort] ")
                sys.stdout.flush()
                shown = True
            await asyncio.sleep(STATUS_PERIOD_S)
    finally:
        recorder.listeners.remove(progress)
        if shown:
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
