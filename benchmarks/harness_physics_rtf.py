"""Real-time factor of PX4 SITL flying on the harness's physics in lockstep, next to PX4's own SIH.

Both fly the same thing, commanded over pymavlink: arm and take off (PX4's own take-off to
MIS_TAKEOFF_ALT), during which and the hover that follows the real-time factor
(vehicle seconds per wall second) is measured the same way for both, from PX4's own clock:
the `time_boot_ms` of its ATTITUDE messages over `WINDOW_S` wall seconds.

- harness: airframe 10016 (none_iris) on the harness's physics, lockstep paced at 2x and 8x and as
  fast as the pair goes (also printed: the lockstep loop's own figure, vehicle time over wall time
  since PX4 first answered, the replies that came too late, and the vehicle time from lift-off to
  2 m, which lockstep keeps the same at every speed);
- SIH: airframe 10040 (sihsim_quadx) at several PX4_SIM_SPEED_FACTOR values; its best achieved
  factor is SIH's best on this machine.

Goals: harness >= 10x, and the harness's share of each step (its loop thread's CPU time building frames,
in the socket calls and parsing, over the loop's wall time: `LoopStats.harness_share`, with each part
per frame) <= 10 %. Beside it, as checks on what counts as whose: the whole harness process's CPU share
(every thread: the event loop draining the records too) and PX4's own CPU time per frame over the same
frames (all its threads, from /proc), against the loop's "PX4 and waits". The machine is shared (2 cores):
the load average is printed with the figures.

    PX4_DIR=../shared/px4/v1.16.1 python benchmarks/harness_physics_rtf.py [--sih-speeds 4,8,16,32]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from pymavlink import mavutil  # noqa: E402

from benchmarks.quick import parse_args  # noqa: E402
from bridges.vehicle import VehicleError  # noqa: E402
from px4.external_physics import SimulatorOptions, px4_on_harness_physics  # noqa: E402
from px4.external_physics.simulator import TRUTH_TABLE  # noqa: E402
from px4.sitl import SitlOptions, px4_sitl  # noqa: E402

WINDOW_S = 5.0  # wall seconds of hover measured
# PX4 disarms 10 vehicle seconds after arming without a take-off: under a second of wall time at 10x,
# less than a loaded machine may take between the arm and the take-off command.
PARAMS = {"COM_DISARM_PRFLT": 60.0}
GOAL = 10.0
# The harness's share of each lockstep step: its loop thread's CPU time (building frames, the socket calls,
# parsing) over the loop's wall time; the rest is PX4's step and the waits.
SHARE_GOAL = 0.10
# Harness runs: two paces and as fast as possible. Lift-off to CLIMB_M takes the same vehicle time in
# each (lockstep: PX4's behaviour depends on vehicle time only), whatever the wall clock did.
PACES = (2.0, 8.0, None)
CLIMB_M = 2.0
TAKEOFF_AFTER_MS = 2000  # vehicle time from arming to the take-off command


def _flight_rtf(port: int) -> float:
    """Arm PX4 and take off over pymavlink, then measure its clock against the wall over WINDOW_S.

    The same plain client for both targets, in a process of its own (`_client`), so both are
    measured alike and its Python parsing of PX4's telemetry does not compete with the harness's
    simulator thread for the interpreter; its only wall-clock waits are generous ones (MAVSDK's
    half-second command timeouts misfire on a machine loaded by others)."""
    link = mavutil.mavlink_connection(f"udpin:127.0.0.1:{port}", source_system=255)
    try:
        if link.wait_heartbeat(timeout=30) is None:
            raise VehicleError(f"no heartbeat from PX4 on UDP {port}")
        deadline = time.monotonic() + 120.0
        while not link.motors_armed():
            if time.monotonic() > deadline:
                raise VehicleError("PX4 did not arm within 120 s")
            link.mav.command_long_send(link.target_system, link.target_component,
                                       mavutil.mavlink.MAV_CMD_COMPONENT_ARM_DISARM, 0, 1, 0, 0, 0, 0, 0, 0)
            link.recv_match(type="HEARTBEAT", blocking=True, timeout=0.5)
        # The take-off goes out a fixed vehicle time after arming (PX4's clock, not the wall's), so
        # that every run gives PX4 the same input at the same vehicle time.
        armed_ms = link.recv_match(type="ATTITUDE", blocking=True, timeout=5.0).time_boot_ms
        while link.recv_match(type="ATTITUDE", blocking=True, timeout=5.0).time_boot_ms < armed_ms + TAKEOFF_AFTER_MS:
            pass
        nan = float("nan")
        link.mav.command_long_send(link.target_system, link.target_component, mavutil.mavlink.MAV_CMD_NAV_TAKEOFF,
                                   0, 0, 0, 0, nan, nan, nan, nan)
        first = last = None
        while first is None or last[0] - first[0] < WINDOW_S:
            msg = link.recv_match(type="ATTITUDE", blocking=True, timeout=5.0)
            if msg is None:
                raise VehicleError("PX4 stopped sending ATTITUDE")
            last = (time.monotonic(), msg.time_boot_ms)
            first = first or last
        return (last[1] - first[1]) / 1000.0 / (last[0] - first[0])
    finally:
        link.close()


async def _client(port: int) -> float:
    """`_flight_rtf` in a child process."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return await asyncio.get_running_loop().run_in_executor(pool, _flight_rtf, port)


def _process_cpu_s(pid: int) -> float:
    """A process's CPU time so far, every thread's, user and system (/proc/<pid>/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


async def _px4_cpu_from_first_reply(run) -> tuple[float, int]:
    """PX4's CPU time and the loop's frame count once PX4 first answered, where the loop's own counts start."""
    while not run.loop.stats.replies:
        await asyncio.sleep(0.02)
    return _process_cpu_s(run.sitl.proc.pid), run.loop.stats.frames


async def harness(pace: float | None) -> tuple[float, float, float, float, float, str]:
    """(real-time factor, vehicle seconds from lift-off to 2 m, the harness's share of each step, its CPU time
    per frame (us) and its part of its and PX4's CPU time, details) of one run at ``pace``."""
    truth: list[dict] = []
    options = SimulatorOptions(speed=pace, record_rate_hz=250.0)
    sink = lambda table, row: truth.append(row) if table == TRUTH_TABLE else None  # noqa: E731
    async with px4_on_harness_physics(options, SitlOptions(airframe="none_iris", params=PARAMS), sink=sink) as run:
        px4_from = asyncio.create_task(_px4_cpu_from_first_reply(run))
        rtf = await _client(run.sitl.ports.offboard_remote)
        px4_cpu, px4_frames = await px4_from
        px4_us = (_process_cpu_s(run.sitl.proc.pid) - px4_cpu) / max(run.loop.stats.frames - px4_frames, 1) * 1e6
        s = run.loop.stats
        parts_us = s.step_parts_us()
        parts = ", ".join(f"{name} {us:.0f}" for name, us in parts_us.items())
        harness_us = sum(parts_us.values()) - parts_us["PX4 and waits"]
        # The share grows smaller as a loaded machine makes PX4's step and the waits longer; the two CPU times
        # per frame are much less sensitive to the load.
        cpu_split = harness_us / (harness_us + px4_us)
        detail = (f"loop {s.real_time_factor:.1f}x over the whole run; harness's share of each step "
                  f"{s.harness_share:.0%} (goal <= {SHARE_GOAL:.0%}; us per frame: {parts}; the whole harness "
                  f"process's share {s.process_share:.0%}; PX4's own CPU {px4_us:.0f} us per frame, the harness's "
                  f"{cpu_split:.0%} of both); {s.frames} frames, {s.missed_replies} replies missed")
    liftoff = next(r["time_us"] for r in truth if not r["on_ground"])
    climbed = next(r["time_us"] for r in truth if -r["down"] >= CLIMB_M)
    return rtf, (climbed - liftoff) * 1e-6, s.harness_share, harness_us, cpu_split, detail


async def sih(speed: float) -> float:
    async with px4_sitl(SitlOptions(speed=speed, params=PARAMS)) as sitl:
        return await _client(sitl.ports.offboard_remote)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sih-speeds", default="4,8,16,32", help="PX4_SIM_SPEED_FACTOR values to try for SIH")
    args = parse_args(parser, {'sih_speeds': '4,16'})
    rtf = share = harness_us = cpu_split = unpaced_load = 0.0
    for pace in PACES:
        load = os.getloadavg()[0]
        achieved, climb_s, step_share, step_us, step_split, detail = asyncio.run(harness(pace))
        name = "unpaced" if pace is None else f"paced {pace:g}x"
        print(f"harness physics (lockstep, {name:>10}): {achieved:5.1f}x   lift-off to {CLIMB_M:g} m in "
              f"{climb_s:.3f} vehicle s   ({detail}; load {load:.1f})")
        if pace is None:
            rtf, share, harness_us, cpu_split, unpaced_load = achieved, step_share, step_us, step_split, load
    best = 0.0
    for speed in (float(s) for s in args.sih_speeds.split(",")):
        load = os.getloadavg()[0]
        try:
            achieved = asyncio.run(sih(speed))
        except VehicleError as exc:  # PX4 too far behind its speed factor for MAVSDK's wall-clock timeouts
            print(f"SIH at speed factor {speed:4g}:         failed ({exc}; load {load:.1f})")
            continue
        best = max(best, achieved)
        print(f"SIH at speed factor {speed:4g}:         {achieved:5.1f}x   (load {load:.1f})")
    print(f"harness {rtf:.1f}x unpaced, its share of each step {share:.0%} (goal <= {SHARE_GOAL:.0%}: "
          f"{'met' if share <= SHARE_GOAL else 'NOT met'} at load {unpaced_load:.1f}, where a loaded machine "
          f"lengthens PX4's part; the harness's CPU {harness_us:.0f} us a frame, {cpu_split:.0%} of its and PX4's), "
          f"vs SIH's best {best:.1f}x; goal: harness >= {GOAL:g}x ({'met' if rtf >= GOAL else 'NOT met'} on this "
          f"machine now)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
