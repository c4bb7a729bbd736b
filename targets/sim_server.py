"""The built-in vehicle as a MAVLink server in real time (times a speed factor): what `hil sim` runs and
what the `sim` target starts in a child process, so a client cannot tell it from PX4 SITL except by
how fast it is ready."""

from __future__ import annotations

import asyncio
import logging
import signal

from pymavlink.dialects.v20 import common as mavlink

from bridges.transport import open_transport
from profiles.perturbation import Perturbation
from px4.sim.mavlink_server import Link, MavlinkServer
from px4.sim.perturbation import perturb
from px4.sim.realtime import SimOptions, build_vehicle, run_realtime, warm_up

log = logging.getLogger(__name__)

# What `hil sim` prints, one line per link, once its links are open: what a harness that started it waits for.
READY_LINE = "built-in vehicle on "


def behind_text(kept: float, speed: float) -> str:
    """What the vehicle says when it fell behind its speed factor: the factor it kept to two significant figures
    (said only below 0.9 of the factor, so a kept 0.6 at 4x reads 0.6x, never a whole 1x nor the factor itself);
    from 100x on, whole numbers, which the g format would write with an exponent."""
    figure = f"{kept:.2g}" if kept < 100 else f"{kept:.0f}"
    return f"Simulation falling behind: {figure}x kept of {speed:g}x"


async def attach_links(server: MavlinkServer, urls: list[str], gcs_urls: list[str] = ()) -> list[Link]:
    """Open every connection string and bind it to the server; `gcs_urls` as ground-station ports."""
    links = []
    for url, gcs in [(url, False) for url in urls] + [(url, True) for url in gcs_urls]:
        link = server.add_link(None, gcs)
        link.transport = await open_transport(url, lambda data, link=link: server.receive(link, data))
        links.append(link)
    return links


async def serve(options: SimOptions, on_ready=None, perturbation: Perturbation = Perturbation()) -> None:
    """Run a vehicle until SIGINT/SIGTERM, with `perturbation` (a campaign repeat's); `on_ready(links)` is
    called once its ports are open."""
    warm_up(options)
    autopilot, server = build_vehicle(options)
    perturb(autopilot, perturbation)
    links = await attach_links(server, options.links, options.gcs_links)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if on_ready is not None:
        on_ready(links)
    try:
        def behind(kept: float) -> None:
            # Told to the clients too (a STATUSTEXT warning, kept in a trial's events and telemetry log),
            # so a trial on an overloaded machine says it did not run at the speed it was given.
            text = behind_text(kept, options.speed)
            log.warning(text)
            autopilot.say(mavlink.MAV_SEVERITY_WARNING, text)

        resets = await run_realtime(autopilot, server, options.speed, stop, on_behind=behind,
                                    max_stream_hz=options.max_stream_hz)
        if resets:
            # The simulation was not real time (x speed) throughout: say so rather than let it pass.
            log.warning("fell behind real time %d times (machine overloaded for speed %g); vehicle time was "
                        "held back each time", resets, options.speed)
    finally:
        for link in links:
            link.transport.close()
        server.close()
