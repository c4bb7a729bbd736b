"""Building the built-in vehicle (its autopilot and MAVLink server) and stepping it against the wall
clock times a speed factor. targets/sim_server.py puts it on MAVLink links (`hil sim`); the lockstep
vehicle steps the same Autopilot in simulated time.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from profiles.library import load_vehicle_profile
from px4.modes import FlightMode
from px4.params import ParamStore, speed_scaled_timeouts
from px4.sim.autopilot import Autopilot
from px4.sim.control import TrajectorySetpoint
from px4.sim.mavlink_server import MavlinkServer

# PX4 SITL's offboard/onboard port is 14540 (+ instance); its GCS port is 14550.
ONBOARD_PORT = 14540
# Physics is stepped in chunks at this wall-clock period; 2 ms keeps setpoints and telemetry
# within a couple of milliseconds of where PX4 would have them.
TICK_S = 0.002
# Streams are serviced every this many physics steps inside a chunk (4 ms of vehicle time).
STEPS_PER_SERVICE = 2
# The vehicle's clock trails the wall clock times the speed factor by at most this many wall seconds. A
# stall shorter than that (the scheduler of a loaded machine gives a process a few ms in every few tens) is
# caught up; of a longer one (a starved or stopped process) the rest is never raced through: vehicle time
# goes on from where it stopped, step by whole step, as PX4 SIH's lockstep loop does when it is late.
MAX_LAG_S = 0.25
# Catching up runs in slices of this much wall time, each followed by a turn of the event loop that reads
# the sockets first: a command that came in meanwhile is answered within a slice, not after the backlog.
SLICE_S = 0.004
# The speed kept is judged over windows of this many wall seconds: below BEHIND_SHARE of the speed factor,
# with vehicle time held back in the window, the vehicle says so, once a flight, so a trial on an overloaded
# machine is not taken for real time. A stall that was caught up is not falling behind, even where its
# catch-up fell in the next window.
BEHIND_WINDOW_S = 1.0
BEHIND_SHARE = 0.9
# No stream goes out faster than this many messages per wall second. At 4x (the tests' speed) every
# PX4 rate is kept (the fastest, 100 Hz, is 400 a wall second); above it the fastest streams slow in
# vehicle time, as a link's bandwidth slows PX4's, rather than the whole vehicle falling behind: each
# message costs the simulator about as much as a tenth of a physics step's flight.
MAX_STREAM_HZ = 400.0


@dataclass
class SimOptions:
    """What to simulate and where to speak MAVLink."""

    profile: str = "default"
    links: list[str] = field(default_factory=lambda: [f"udpout://127.0.0.1:{ONBOARD_PORT}"])
    gcs_links: list[str] = field(default_factory=list)  # ground-station ports: PX4's streams there (normal mode)
    speed: float = 1.0
    params: dict[str, float] = field(default_factory=dict)
    max_stream_hz: float = MAX_STREAM_HZ  # messages per wall second per stream, at most
    sysid: int = 1
    root: Path | None = None  # the vehicle's own folder (logs, FTP); None: a temporary one


def build_vehicle(options: SimOptions) -> tuple[Autopilot, MavlinkServer]:
    """The autopilot and its MAVLink server, not yet attached to any port."""
    profile = load_vehicle_profile(options.profile)
    autopilot = Autopilot(profile, ParamStore())
    for name, value in speed_scaled_timeouts(options.speed).items():
        # PX4 sets these without range checks; above ~35x the RC timeout passes its metadata's maximum.
        autopilot.params.set(name, min(value, autopilot.params.spec(name).max))
    for name, value in options.params.items():  # after rcS's, as the harness's px4-rc.simulator runs after it
        autopilot.params.set(name, value)
    autopilot.apply_params()
    return autopilot, MavlinkServer(autopilot, sysid=options.sysid, root=options.root)


def warm_up(options: SimOptions) -> None:
    """Fly a throwaway copy of the vehicle in simulated time through what a flight asks of the compiled loop:
    take-off, a reposition, offboard velocity, return and landing.

    numba builds each kernel on its first call (or loads it from its cache beside the sources): on a fresh
    clone or after an edit, 10 CPU-s for the whole vehicle (a minute of wall time at a load of 8 on two cores). A
    vehicle that kept the wall clock meanwhile would stand still mid-flight (MAX_LAG_S), for longer than a
    client's time-outs (MAVSDK's command acknowledgement, the harness's link-lost bound). Done before the
    vehicle's links open, that wait is its start-up's; with the cache built it costs 0.3-0.4 CPU-s, most of it
    loading the cache, which the flight's first seconds would do otherwise.
    """
    autopilot, _ = build_vehicle(SimOptions(profile=options.profile, params=dict(options.params)))
    autopilot.params.set("MIS_TAKEOFF_ALT", 2.0)
    autopilot.params.set("RTL_RETURN_ALT", 3.0)
    autopilot.apply_params()
    for _ in range(200):  # its estimate ready to arm, as after PX4's boot
        if autopilot.arm().accepted:
            break
        autopilot.run(0.1)
    autopilot.takeoff(math.nan)
    autopilot.run(4.0)
    autopilot.reposition(2.0, 0.0, -2.0)
    autopilot.run(1.0)
    autopilot.offboard_setpoint(TrajectorySetpoint(velocity=(0.5, 0.0, 0.0)))
    autopilot.set_mode(FlightMode.OFFBOARD)
    autopilot.run(1.0)
    autopilot.return_to_launch()
    autopilot.run(30.0)


async def run_realtime(autopilot: Autopilot, server: MavlinkServer, speed: float, stop: asyncio.Event,
                       on_behind: Callable[[float], None] | None = None, max_stream_hz: float = MAX_STREAM_HZ) -> int:
    """Step the vehicle in pace with the wall clock until `stop` is set; returns how often vehicle time was
    held back (each time it trailed by more than MAX_LAG_S of wall time, after having caught up).

    `on_behind(kept)` is called once a flight (again only after the next arming) with the speed factor the
    vehicle kept over a window of BEHIND_WINDOW_S wall seconds when that was below BEHIND_SHARE of `speed`
    and vehicle time was held back in it.

    No stream is sent more often than `max_stream_hz` times a wall second: its interval in vehicle time
    follows the speed kept over the last window (the speed asked, to begin with), so a vehicle that falls
    behind still streams at that rate rather than less often.
    """
    if speed <= 0:
        raise ValueError(f"speed factor must be > 0, got {speed}")
    if not max_stream_hz > 0:
        raise ValueError(f"max stream rate must be > 0 messages a second, got {max_stream_hz}")
    server.min_stream_interval_s = speed / max_stream_hz
    loop = asyncio.get_running_loop()
    start_wall, start_sim = loop.time(), autopilot.time_s
    window_wall, window_sim, window_dropped = start_wall, start_sim, 0.0
    held_back, holding = 0, False
    said, was_armed = False, autopilot.armed
    max_lag = MAX_LAG_S * speed
    while not stop.is_set():
        now = loop.time()
        if autopilot.armed and not was_armed:
            said = False
        was_armed = autopilot.armed
        target = start_sim + (now - start_wall) * speed
        dropped = target - autopilot.time_s - max_lag
        if dropped > 0:
            held_back += not holding
            holding = True
            window_dropped += dropped
            start_sim -= dropped
            target -= dropped
        if now - window_wall >= BEHIND_WINDOW_S:
            kept = (autopilot.time_s - window_sim) / (now - window_wall)
            if kept < BEHIND_SHARE * speed and window_dropped > 0 and not said and on_behind is not None:
                on_behind(kept)
                said = True
            server.min_stream_interval_s = min(max(kept, 1.0), speed) / max_stream_hz
            window_wall, window_sim, window_dropped = now, autopilot.time_s, 0.0
        slice_end = now + SLICE_S
        while True:
            stepped = autopilot.advance(target, steps=STEPS_PER_SERVICE)
            server.tick()
            if stepped < STEPS_PER_SERVICE or loop.time() >= slice_end:
                break
        caught_up = stepped < STEPS_PER_SERVICE
        holding = holding and not caught_up
        if caught_up:
            await asyncio.sleep(TICK_S)
        else:
            # Two turns without sleeping (even a 1 us timer blocks the selector for a whole millisecond, and
            # a process that sleeps on a loaded machine waits its turn again): the first turn's poll queues
            # what the sockets hold behind this task, the second lets it run before the next slice.
            await asyncio.sleep(0)
            await asyncio.sleep(0)
    return held_back
