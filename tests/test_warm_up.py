"""The built-in vehicle builds its compiled kernels before it keeps the wall clock (px4.sim.realtime.warm_up): a
flight afterwards compiles nothing more, so no kernel is built mid-flight, where the vehicle would stand still
for seconds of CPU on a fresh clone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Runs in a process of its own: numba counts what it built per process, and this test's worker may have flown
# before.
FLIGHT = r"""
import asyncio, json, sys
from numba.core.dispatcher import Dispatcher
from bridges.lockstep_vehicle import LockstepVehicle
from bridges.vehicle import MissionWaypoint
from profiles.library import load_vehicle_profile
from px4.sim.autopilot import Autopilot
from px4.sim.realtime import SimOptions, warm_up

def built():
    return {f"{name}.{attr}": len(value.overloads) for name, module in list(sys.modules.items())
            if name.split(".")[0] in ("physics", "px4") for attr, value in list(vars(module).items())
            if isinstance(value, Dispatcher)}

async def flight():
    async with LockstepVehicle(Autopilot(load_vehicle_profile("default"))) as vehicle:
        await vehicle.wait_armable()
        await vehicle.upload_mission([MissionWaypoint(6.0, 0.0, -4.0), MissionWaypoint(6.0, 6.0, -4.0, hold_s=1.0),
                                      MissionWaypoint(0.0, 6.0, -3.0, yaw_deg=90.0)])
        await vehicle.arm()
        await vehicle.start_mission()
        await vehicle.wait_until(lambda s: s.north < 1.0 and s.east > 5.0, 120.0, "the last waypoint")
        await vehicle.start_offboard()
        await vehicle.set_velocity_ned(1.0, -1.0, 0.0)
        await vehicle.sleep(2.0)
        await vehicle.set_attitude(0.05, 0.0, 0.0, 0.6)
        await vehicle.sleep(1.0)
        await vehicle.stop_offboard()
        await vehicle.land()
        await vehicle.wait_until(lambda s: not s.armed, 120.0, "disarmed after landing")

warm_up(SimOptions())
warmed = built()
asyncio.run(flight())
print(json.dumps([warmed, built()]))
"""


def test_a_flight_after_the_warm_up_builds_no_kernel():
    result = subprocess.run([sys.executable, "-c", FLIGHT], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    warmed, flown = json.loads(result.stdout.splitlines()[-1])
    assert warmed.get("px4.sim.inner_loop.run_steps", 0) >= 1, warmed  # the warm-up built the compiled loop
    assert {name: count for name, count in flown.items() if count != warmed.get(name, 0)} == {}
