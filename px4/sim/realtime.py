"""Run the built-in vehicle against the wall clock (times a speed factor) on real MAVLink links.

This is what `hil sim` runs and what `hil fly --target sim` starts in a child process: the same
Autopilot the lockstep vehicle steps, with its MAVLink server on UDP or serial ports, so a client
cannot tell it from PX4 SITL except by how fast it is ready.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from dataclasses import dataclass, field

from bridges.transport import open_transport
from profiles.vehicle import load_vehicle_profile
from px4.params import ParamStore
from px4.sim.autopilot import Autopilot
from px4.sim.mavlink_server import Link, MavlinkServer

log = logging.getLogger(__name__)

# PX4 SITL's offboard/onboard port is 14540 (+ instance); its GCS port is 14550.
ONBOARD_PORT = 14540
# Physics is stepped in chunks at this wall-clock period; 2 ms keeps setpoints and telemetry
# within a couple of milliseconds of where PX4 would have them.
TICK_S = 0.002
# Streams are serviced every this many physics steps inside a chunk (4 ms of vehicle time).
STEPS_PER_SERVICE = 2
# Falling further behind than this (a loaded machine) resets the pace instead of racing to catch up.
MAX_LAG_S = 0.25


@dataclass
class SimOptions:
    """What to simulate and where to speak MAVLink."""

    profile: str = "default"
    links: list[str] = field(default_factory=lambda: [f"udpout://127.0.0.1:{ONBOARD_PORT}"])
    speed: float = 1.0
    params: dict[str, float] = field(default_factory=dict)
    sysid: int = 1


def build_vehicle(options: SimOptions) -> tuple[Autopilot, MavlinkServer]:
    """The autopilot and its MAVLink server, not yet attached to any port."""
    profile = load_vehicle_profile(options.profile)
    autopilot = Autopilot(profile, ParamStore())
    for name, value in options.params.items():
        autopilot.params.set(name, value)
    autopilot.apply_params()
    return autopilot, MavlinkServer(autopilot, sysid=options.sysid)


async def attach_links(server: MavlinkServer, urls: list[str]) -> list[Link]:
    """Open every connection string and bind it to the server."""
    links = []
    for url in urls:
        link = server.add_link(None)
        link.transport = await open_transport(url, lambda data, link=link: server.receive(link, data))
        links.append(link)
    return links


async def run_realtime(autopilot: Autopilot, server: MavlinkServer, speed: float, stop: asyncio.Event) -> int:
    """Step the vehicle in pace with the wall clock until `stop` is set; returns how often it fell behind."""
    if speed <= 0:
        raise ValueError(f"speed factor must be > 0, got {speed}")
    loop = asyncio.get_running_loop()
    start_wall, start_sim = loop.time(), autopilot.time_s
    half_step = autopilot.dt * 0.5
    resets = 0
    while not stop.is_set():
        target = start_sim + (loop.time() - start_wall) * speed
        if target - autopilot.time_s > MAX_LAG_S * speed:
            resets += 1
            start_wall, start_sim = loop.time(), autopilot.time_s
            target = autopilot.time_s
        steps = 0
        while autopilot.time_s + half_step < target:
            autopilot.step()
            steps += 1
            if steps % STEPS_PER_SERVICE == 0:
                server.tick()
        server.tick()
        await asyncio.sleep(TICK_S)
    return resets


async def serve(options: SimOptions, on_ready=None) -> None:
    """Run a vehicle until SIGINT/SIGTERM; `on_ready(links)` is called once its ports are open."""
    autopilot, server = build_vehicle(options)
    links = await attach_links(server, options.links)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if on_ready is not None:
        on_ready(links)
    try:
        resets = await run_realtime(autopilot, server, options.speed, stop)
        if resets:
            # The simulation was not real time (x speed) throughout: say so rather than let it pass.
            log.warning("fell behind real time %d times (machine overloaded for speed %g); vehicle time was "
                        "held back each time", resets, options.speed)
    finally:
        for link in links:
            link.transport.close()
        server.close()
