"""Connecting to a MAVLink target: MAVSDK on its connection string, through the impairment proxy when
the options name a link profile."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from bridges.link_proxy import LinkProxy
from bridges.mavsdk_vehicle import MavsdkVehicle, connect, connect_started
from bridges.transport import parse_url
from profiles.link import link_for_trial
from px4.process import ChildProcess, free_udp_port
from targets.spec import TargetOptions


@contextlib.asynccontextmanager
async def connected(url: str, options: TargetOptions, process: ChildProcess | None = None,
                    speed: float | None = None) -> AsyncIterator[tuple[MavsdkVehicle, LinkProxy | None]]:
    """(a Vehicle on `url`, the impairment proxy in front of it or None); both closed after.

    A link profile needs a UDP target; the proxy's frame rows go to ``options.sink("link", row)``. The
    vehicle of a `process` the harness started is waited for while that process is alive (connect_started);
    one already running (hardware, a SITL someone else started) for ``options.connect_timeout_s``. The vehicle
    is lost once its clock stands still for ``options.vehicle_lost_s`` wall seconds beyond the longest comms-loss
    window the trial cuts (a silence it asked for), or at once when `process` dies.
    """
    speed = options.speed if speed is None else speed
    async with contextlib.AsyncExitStack() as stack:
        proxy = None
        spec = link_for_trial(options.link, options.seed, options.outages, options.perturbation.link_jitter_ms)
        if spec is not None:
            if parse_url(url).scheme != "udpin":
                raise ValueError(f"a link profile or comms-loss window needs a UDP target the proxy can stand in "
                                 f"front of, not {url}")
            port = free_udp_port()
            sink = (lambda row: options.sink("link", row)) if options.sink else None
            proxy = await stack.enter_async_context(LinkProxy(url, f"udpout://127.0.0.1:{port}", spec, sink=sink,
                                                              speed=speed))
            url = f"udpin://127.0.0.1:{port}"
        shared = options.connection if proxy is None else None
        lost_after_s = options.vehicle_lost_s + max((end - start for start, end in options.outages), default=0.0) / speed
        if process is not None:
            vehicle = await connect_started(url, process, speed, lost_after_s)
        else:
            vehicle = await connect(url, options.connect_timeout_s, speed, connection=shared, lost_after_s=lost_after_s)
        try:
            yield vehicle, proxy
        finally:
            await vehicle.close()
