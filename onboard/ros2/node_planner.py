"""An external ROS 2 node as a trial's planner: the bridge runs for the navigation phase, the node does the rest.

The node may run anywhere on the endpoint's DDS domain (`onboard.ros2.topics.Ros2Endpoint`). It
reads odometry, the goal and the camera's depth image and point cloud, and sends setpoints; the
harness judges the flight from its own telemetry as for any planner. Its account of the run is a
`RuntimeResult` with what the bridge can see: setpoints received (`cycles`) and their header-stamp
ages (table "ros2"); the node's own stages are not visible, so there is no stage timing.

Only one vehicle may speak on an endpoint at a time (a node serves whatever odometry it hears), so a
trial claims its endpoint on this machine before it arms (`claim_endpoint`); trials of a campaign that
share an endpoint then take turns whatever the number of workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import hashlib
import math
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np

from onboard.ros2.bridge import Ros2Bridge, open_backend
from onboard.ros2.topics import Ros2Endpoint
from onboard.runtime import SPEED_MARGIN, RuntimeResult
from onboard.sensing import SceneSensor
from onboard.task import NavTask

CLAIM_POLL_S = 0.2  # a claim is retried this often (a blocking flock could not be cancelled)


@contextlib.asynccontextmanager
async def claim_endpoint(endpoint: Ros2Endpoint) -> AsyncIterator[None]:
    """Hold `endpoint` for this process until the block ends: waits while another trial on this machine holds it.

    A lock file per endpoint (domain and namespace) in the temporary folder; the operating system
    releases it when its holder exits, even after a crash."""
    key = hashlib.sha1(f"{endpoint.domain_id}{endpoint.namespace}".encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"quad-hil-ros2-{key}.lock"
    with open(path, "a") as lock:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(CLAIM_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


async def run_node_planner(vehicle, endpoint: Ros2Endpoint, task: NavTask, *, sensor: SceneSensor | None = None,
                           recorder=None, stop: asyncio.Event) -> RuntimeResult:
    """Bridge an airborne `vehicle` to the node on `endpoint` until `stop` is set (module docstring).

    `latency_mean_s` is the mean header-stamp age in vehicle time (wall age times the speed factor),
    as the onboard runtime's is; table "ros2" keeps the ages in wall seconds, as stamped."""
    if recorder is not None:
        recorder.event("onboard_started", task=task.name, ros2=endpoint.name,
                       topics=dataclasses.asdict(endpoint.resolved()))
    bridge = Ros2Bridge(vehicle, open_backend(endpoint.domain_id), sensor=sensor, recorder=recorder, goal=task.goal,
                        speed_limit=task.speed_cap * SPEED_MARGIN, topics=endpoint.resolved())
    async with bridge:
        await stop.wait()
    ages = [age for per_topic in bridge.latencies.values() for age in per_topic]
    speed = 1.0 if math.isinf(vehicle.speed_factor) else vehicle.speed_factor
    result = RuntimeResult(reason="stopped", cycles=bridge.received, overruns=0, timing={}, emulated={},
                           compute_profile=None, latency_mean_s=float(np.mean(ages)) * speed if ages else math.nan)
    if recorder is not None:
        recorder.event("onboard_finished", **result.summary(), rejected=sum(bridge.rejected.values()))
    return result

