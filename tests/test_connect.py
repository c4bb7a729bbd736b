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
