"""Connecting the harness's Vehicle (MAVSDK 4) to a connection string."""

from __future__ import annotations

import asyncio

import pytest

from bridges.mavsdk_vehicle import connect
from bridges.vehicle import VehicleConnectionError
from px4.process import free_udp_port


async def test_unreachable_connection_fails_within_its_timeout_naming_it():
    url = f"udpin://127.0.0.1:{free_udp_port()}"
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(VehicleConnectionError) as failed:
        await connect(url, timeout=1.0)
    elapsed = loop.time() - start
    assert url in str(failed.value)
    assert elapsed < 3.0


@pytest.mark.parametrize("spelling", ["udpin://:{port}", "udp://:{port}"])
async def test_a_listening_address_without_a_host_binds_loopback_only(spelling):
    import psutil

    from targets.builtin import SimProcessOptions, builtin_vehicle

    from .conftest import SPEED

    port = free_udp_port()
    # The vehicle sends to 127.0.0.1:port; the harness listens there, and not on every interface.
    async with builtin_vehicle(SimProcessOptions(speed=SPEED, extra_links=[f"udpout://127.0.0.1:{port}"])):
        vehicle = await connect(spelling.format(port=port), timeout=10.0, speed_factor=SPEED)
        try:
            bound = [c.laddr.ip for c in psutil.Process().net_connections(kind="udp") if c.laddr.port == port]
        finally:
            await vehicle.close()
    assert bound == ["127.0.0.1"], bound
