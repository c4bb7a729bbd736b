"""Flights as MAVSDK's examples and a ground station fly them: orbit, offboard velocity, Position mode from
the ground with the sticks and their loss, follow-me, and a burst of 1e30 offboard setpoints (issue 35).

Each case watches the flight on the vehicle's clock (MavsdkVehicle.sleep, or LOCAL_POSITION_NED's
time_boot_ms) and reports rounded figures; a case's tolerance is PX4 v1.16.1's spread over runs at 4x
(`benchmarks/conformance.py` reruns them), so the built-in vehicle passes where it flies within it."""

from __future__ import annotations

import contextlib
import math
import re
import statistics
from typing import AsyncIterator

from mavsdk.asyncio.plugins.action import ActionAsync
from mavsdk.asyncio.plugins.follow_me import FollowMeAsync
from mavsdk.asyncio.plugins.manual_control import ManualControlAsync
from mavsdk.asyncio.plugins.offboard import OffboardAsync
from mavsdk.plugins.action import OrbitYawBehavior
from mavsdk.plugins.follow_me import Config, TargetLocation
from mavsdk.plugins.offboard import VelocityNedYaw

from bridges.mavsdk_vehicle import MavsdkVehicle, connect
from px4.modes import FlightMode

from ..mavlink_client import Client
from .mavsdk_cases import result_of
from .suite import DOES_NOT_APPLY, PX4, Target, blocking, case

# Flights take tens of vehicle seconds: at 4x a case is over in 10-20 s of wall time.
FLIGHT_SPEED = 4.0
METRES_PER_DEGREE = 111_195.0  # latitude; a few hundred metres around home need no better


@contextlib.asynccontextmanager
async def vehicle(target: Target) -> AsyncIterator[MavsdkVehicle]:
    v = await connect(target.api_url, timeout=30.0, speed_factor=target.speed)
    try:
        await v.wait_armable(60.0)
        yield v
    finally:
        await v.close()


async def _outcome(call) -> str:
    """ok, or the error's result name (TIMEOUT when the call never came back)."""
    result = await result_of(call)
    return "ok" if result is None else str(result)


async def _sample(v: MavsdkVehicle, seconds: float, every: float = 0.5) -> list:
    states = []
    for _ in range(round(seconds / every)):
        await v.sleep(every)
        states.append(v.state)
    return states


def _texts(v: MavsdkVehicle) -> list[str]:
    """What the vehicle said (STATUSTEXT and events), PX4's trailing tab and the figures left out."""
    return [re.sub(r"[-\d.]+", "#", text.strip()) for _, text in v._status_texts]


ORBIT_CENTRE = (47.398036222362471, 8.5450146439425509)  # the do_orbit example's


@case("action: do_orbit at home + 10 m AMSL (do_orbit example)", "MAVSDK", speed=FLIGHT_SPEED,
      tolerance={"altitude above home, orbiting (m)": 1.0, "radius flown (m)": 1.0, "speed on the circle (m/s)": 0.4,
                 "highest altitude (m)": 1.0})
async def do_orbit(target: Target) -> dict:
    async with vehicle(target) as v:
        action = ActionAsync(v.system)
        amsl = v.state.alt_amsl
        await action.arm()
        await action.takeoff()
        await v.sleep(10.0)
        result = await _outcome(action.do_orbit(10.0, 2.0, OrbitYawBehavior.HOLD_FRONT_TO_CIRCLE_CENTER,
                                                *ORBIT_CENTRE, amsl + 10.0))
        approach = await _sample(v, 25.0)
        circling = await _sample(v, 10.0)
        east_scale = METRES_PER_DEGREE * math.cos(math.radians(ORBIT_CENTRE[0]))
        radii = [math.hypot((s.lat - ORBIT_CENTRE[0]) * METRES_PER_DEGREE, (s.lon - ORBIT_CENTRE[1]) * east_scale)
                 for s in circling]
        return {"do_orbit": result, "mode": circling[-1].flight_mode,
                "altitude above home, orbiting (m)": round(statistics.fmean(s.altitude for s in circling), 2),
                "highest altitude (m)": round(max(s.altitude for s in approach + circling), 2),
                "radius flown (m)": round(statistics.fmean(radii), 2),
                "speed on the circle (m/s)": round(statistics.fmean(math.hypot(s.vn, s.ve) for s in circling), 2)}


# PX4 v1.16.1 SIH at 4x, five runs: 0.9-3.7 m up after the 4 s climb and 2.9-6.2 m flown of the 8 m commanded
# north and west; its height estimate sinks after a low climb, so some runs settle onto the ground and slide
# there. Those figures move with the machine's load on PX4 (MAVSDK drops telemetry callbacks at load 10), so
# the case compares what the issue was about: the vehicle climbs and flies the pattern in Offboard, armed.
@case("offboard: velocity NED from the ground (offboard_velocity_ned example)", "MAVSDK", speed=FLIGHT_SPEED,
      known={"each leg over 2 m of the 8 m commanded": "PX4's height estimate sinks after the low climb: in some runs "
                                                        "it settles onto the ground and slides less than 2 m on a leg"})
async def offboard_velocity_ned(target: Target) -> dict:
    async with vehicle(target) as v:
        action, offboard = ActionAsync(v.system), OffboardAsync(v.system)
        await action.arm()
        await offboard.set_velocity_ned(VelocityNedYaw(0.0, 0.0, 0.0, 0.0))
        await offboard.start()
        # The motors spool up for COM_SPOOLUP_TIME after arming, and only then does a climb start the takeoff
        # ramp: waiting it out keeps a loaded machine's delays out of the climb.
        await v.sleep(1.5)
        obs, moved = {}, []
        for name, setpoint in (("up", (0.0, 0.0, -2.0, 0.0)), ("north", (2.0, 0.0, 0.0, 90.0)),
                               ("south", (-2.0, 0.0, 0.0, 270.0)), ("west", (0.0, -2.0, 0.0, 90.0)),
                               ("east", (0.0, 2.0, 0.0, 0.0))):
            start = v.state
            await offboard.set_velocity_ned(VelocityNedYaw(*setpoint))
            end = (await _sample(v, 4.0))[-1]
            if name == "up":
                obs["climbed over 0.5 m in 4 s up at 2 m/s"] = end.altitude - start.altitude > 0.5
            else:
                moved.append(math.hypot(end.north - start.north, end.east - start.east) > 2.0)
        obs["each leg over 2 m of the 8 m commanded"] = all(moved)
        obs["mode and armed before the descent"] = (v.state.flight_mode, v.state.armed)
        obs["landing detected before the descent"] = any("Landing detected" in t for t in _texts(v))
        await offboard.set_velocity_ned(VelocityNedYaw(0.0, 0.0, 1.0, 0.0))
        await v.sleep(4.0)
        obs["armed 4 s into the descent"] = v.state.armed
        return obs


@case("manual_control: Position mode from the ground, throttle up, then the inputs stop", "MAVSDK",
      speed=FLIGHT_SPEED,
      tolerance={"climb in Return (m)": 0.5},
      known={"texts": "PX4 v1.16.1 tells a MAVSDK client by events ('Manual control lost', 'Manual control loss: "
                      "switching to RTL in # seconds'; STATUSTEXT on the GCS link: 'Failsafe activated: entering Hold "
                      "for # seconds'); the built-in sends no events, and that STATUSTEXT, PX4's words, to both "
                      "links (compared with PX4's on the GCS link by probes.rc_loss_texts)"})
async def manual_control(target: Target) -> dict:
    async with vehicle(target) as v:
        action, sticks = ActionAsync(v.system), ManualControlAsync(v.system)

        async def hold_sticks(throttle: float, seconds: float) -> None:
            for _ in range(round(seconds / 0.1)):  # 10 Hz, as the example sends them
                await sticks.set_manual_control_input(0.0, 0.0, throttle, 0.0)
                await v.sleep(0.1)

        await sticks.set_manual_control_input(0.0, 0.0, 0.5, 0.0)
        await action.arm()
        await sticks.set_manual_control_input(0.0, 0.0, 0.5, 0.0)
        await sticks.start_position_control()
        await hold_sticks(0.5, 1.0)
        await hold_sticks(1.0, 3.0)
        await hold_sticks(0.5, 4.0)
        # PX4 2.0-2.2 m up (the built-in 1.2-2.2 m): the sticks' timing moves with the machine's load, so the
        # case asks what the issue was about, that the vehicle leaves the ground.
        obs = {"climbed over 0.5 m with 3 s of full throttle": v.state.altitude > 0.5}
        modes, rtl_start, highest = [], None, -math.inf
        for state in await _sample(v, 22.0, 0.25):  # the inputs stop: loss, Hold, Return, landed, disarmed
            if not modes or modes[-1] != state.flight_mode:
                modes.append(state.flight_mode)
            if state.flight_mode == "RETURN_TO_LAUNCH":
                rtl_start = state.altitude if rtl_start is None else rtl_start
                highest = max(highest, state.altitude)
        obs["modes after the inputs stop"] = modes[:3]  # then landed and disarmed, a second or two apart
        obs["climb in Return (m)"] = round(highest - rtl_start, 2) if rtl_start is not None else None
        obs["Return's texts"] = [t for t in _texts(v) if t.startswith("RTL")]
        obs["texts"] = [t for t in _texts(v) if "anual control" in t]
        return obs


@case("follow_me: a target 10 m north, still, then north at 1 m/s (follow_me example)", "MAVSDK",
      speed=FLIGHT_SPEED,
      # PX4 2.9-4.6 m behind (5 m asked) and 8.0-9.5 m high (its estimate) over six runs; the built-in 3.7-4.4 m, 8.0 m.
      tolerance={"distance behind the target (m)": 1.7, "altitude above home, following (m)": 1.5,
                 "sideways of the target's track (m)": 0.8})
async def follow_me(target: Target) -> dict:
    async with vehicle(target) as v:
        action, follow = ActionAsync(v.system), FollowMeAsync(v.system)
        # Configured before arming (the example does it after): six parameter writes on a loaded machine outlast
        # PX4's disarming of a vehicle armed on the ground (COM_DISARM_PRFLT, 10 s at 4x is 2.5 s of wall time).
        await follow.set_config(Config(8.0, 5.0, 0.1, Config.FollowAltitudeMode.CONSTANT, 8.0, 180.0))
        await action.arm()
        await action.takeoff()
        await v.sleep(8.0)
        lat0, lon0, home_amsl = v.state.lat, v.state.lon, v.state.alt_amsl - v.state.altitude
        start = await _outcome(follow.start())
        for _ in range(20):
            if v.state.flight_mode == "FOLLOW_ME":
                break
            await v.sleep(0.2)
        obs = {"follow_me.start": start, "mode": v.state.flight_mode}
        north = 10.0
        for step in range(50):  # 2 Hz, as a phone's GPS would
            north += 0.5 if step >= 10 else 0.0
            sent = await _outcome(follow.set_target_location(
                TargetLocation(lat0 + north / METRES_PER_DEGREE, lon0, home_amsl, 1.0 if step >= 10 else 0.0, 0.0, 0.0)))
            await v.sleep(0.5)
        s = v.state
        obs["last target sent"] = sent
        obs["distance behind the target (m)"] = round(north - (s.lat - lat0) * METRES_PER_DEGREE, 2)
        obs["sideways of the target's track (m)"] = round(
            (s.lon - lon0) * METRES_PER_DEGREE * math.cos(math.radians(lat0)), 2)
        obs["altitude above home, following (m)"] = round(s.altitude, 2)
        obs["follow_me.stop"] = await _outcome(follow.stop())
        await v.sleep(2.0)
        obs["mode after stop"] = v.state.flight_mode
        return obs


# PX4 v1.16.1 returns to the start after the burst in most runs, within 1.1 m. In some it flies off: from the
# first valid setpoint it heads south at about 10 m/s, away from the setpoint it holds, for the whole 10 s (92-94 m
# off; 3 of 20 runs beside two CPU burners, twice in a row on a loaded CI machine, 0 of 12 quiet; all three had
# fallen 0.4 m below the ground in their estimate, as 2 runs that did not fly off had too). The built-in vehicle
# flies the usual path; where PX4 flew off, its distance does not apply and the case names why (the built-in
# vehicle's distance is compared in every run).
FLEW_OFF_M = 20.0


@case("offboard: 5 s of 1e30 velocity and acceleration setpoints at 5 m, then a valid one", "pymavlink",
      speed=FLIGHT_SPEED,
      tolerance={"lowest altitude in the burst (m)": 0.8, "distance from the start 10 s after (m)": 1.0},
      known={"flew off after the burst": "PX4 v1.16.1 flies off south at about 10 m/s after the burst in some "
                                         "runs (3 of 20 beside two CPU burners, 0 of 12 quiet)"})
@blocking
def offboard_1e30_burst(target: Target) -> dict:
    client = Client(target.gcs_url)
    try:
        client.wait_armable(60.0)

        def stream(seconds: float, send) -> list:
            """LOCAL_POSITION_NED over `seconds` of the vehicle's clock, sending a setpoint before each wait."""
            out, end = [], None
            while True:
                send()
                msg = client.recv("LOCAL_POSITION_NED", 0.05)
                if msg is None:
                    continue
                end = end if end is not None else msg.time_boot_ms + seconds * 1000
                if msg.time_boot_ms >= end:
                    return out
                out.append(msg)

        def hold_5m() -> None:
            client.position_setpoint(0.0, 0.0, -5.0)

        def burst() -> None:  # ignore position and yaw rate: velocity and acceleration of 1e30
            client.conn.mav.set_position_target_local_ned_send(0, *client.target, 1, 0x807, 0, 0, 0,
                                                               1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 0, 0)

        stream(0.5, hold_5m)
        client.set_mode(FlightMode.OFFBOARD)
        client.command(400, 1)  # MAV_CMD_COMPONENT_ARM_DISARM
        start = stream(9.0, hold_5m)[-1]
        during = stream(5.0, burst)
        after = stream(10.0, hold_5m)
        heartbeat = client.recv("HEARTBEAT", 2.0, lambda m: m.get_srcComponent() == 1)
        texts = [t.strip() for t in client.texts]
        end = after[-1]
        drift = max(math.hypot(m.x - start.x, m.y - start.y) for m in during)
        distance = math.hypot(end.x - start.x, end.y - start.y)
        flew_off = distance > FLEW_OFF_M
        # Only PX4's flying off is its known path: the built-in vehicle's distance is always compared.
        excused = flew_off and target.kind == PX4
        # PX4 drifts 0.7-1.0 m as it drops (its estimate and attitude on the way down), the built-in not at all;
        # what matters is that neither follows the setpoint's direction.
        return {"drift during the burst under 2 m": drift < 2.0,
                "lowest altitude in the burst (m)": round(min(-m.z for m in during), 2),
                "armed after": bool(heartbeat.base_mode & 128),
                # Back up on valid setpoints, not the height reached: beside two CPU burners the built-in was at
                # 3.53 m 10 s after where PX4 was at 4.92 (a quiet machine: both 4.9-5.0), a pace to measure.
                "back above 3 m 10 s after": -end.z > 3.0,
                "flew off after the burst": flew_off,
                "distance from the start 10 s after (m)": DOES_NOT_APPLY if excused else round(distance, 2),
                "disarmed by landing": "Disarmed by landing" in texts}
    finally:
        client.close()


FLIGHT_RUNS = (do_orbit, offboard_velocity_ned, manual_control, follow_me, offboard_1e30_burst)
