"""`hil fly`: fly one waypoint mission on one target and keep a trial record of it.

The flight goes only through the `Vehicle` API, so it is the same on the built-in vehicle, PX4
SITL and hardware. Two ways to fly the waypoints, chosen by the mission's `mode`:
- `mission`: upload with the MAVLink mission protocol and let the autopilot fly it;
- `offboard`: take off, then stream position setpoints from here, waypoint by waypoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Awaitable, Callable

import pandas as pd

from bridges.vehicle import MissionWaypoint, Vehicle, VehicleError
from hil.param_journal import ParamJournal, restore_pending
from hil.record import TrialRecorder
from missions.waypoint import WaypointMission
from reports.trial_summary import TrialSummary, summarize_trial

# How long after the time budget the landing may still take before the trial is abandoned.
LANDING_GRACE_S = 60.0


@dataclass(frozen=True)
class TrialResult:
    """What one flight came to."""

    outcome: str  # success | timeout | refused | error
    reason: str
    record_dir: Path
    summary: TrialSummary | None


def default_record_dir(mission: WaypointMission, root: Path = Path("runs")) -> Path:
    """runs/<UTC time>-<mission name>, unique per call."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = root / f"{stamp}-{mission.name}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


async def fly_mission(vehicle: Vehicle, mission: WaypointMission, recorder: TrialRecorder) -> tuple[str, str]:
    """Arm, fly the mission, land; returns (outcome, reason). The budget is in vehicle time."""
    await vehicle.wait_armable(timeout=30.0)
    recorder.event("armable")
    try:
        async with vehicle.deadline(mission.time_budget):
            await vehicle.arm()
            recorder.event("armed")
            if mission.mode == "mission":
                await _fly_uploaded(vehicle, mission, recorder)
            else:
                await _fly_offboard(vehicle, mission, recorder)
    except TimeoutError:
        recorder.event("timeout", budget_s=mission.time_budget)
        await _land_and_wait(vehicle, recorder)
        return "timeout", f"mission not completed within its {mission.time_budget:g} s budget"
    if mission.land:
        await _land_and_wait(vehicle, recorder)
    return "success", ""


async def _fly_uploaded(vehicle: Vehicle, mission: WaypointMission, recorder: TrialRecorder) -> None:
    waypoints = [MissionWaypoint(w.north, w.east, w.down, speed=mission.speed,
                                 acceptance_radius=mission.acceptance_radius, hold_s=w.hold_s,
                                 yaw_deg=w.yaw_deg if w.yaw_deg is not None else math.nan)
                 for w in mission.waypoints]
    # The mission's own takeoff climbs to MIS_TAKEOFF_ALT: changed for this flight only, restored after.
    async with vehicle.params_changed({"MIS_TAKEOFF_ALT": mission.takeoff_altitude}):
        await vehicle.upload_mission(waypoints)
        recorder.event("mission_uploaded", items=len(waypoints))
        await _run_uploaded(vehicle, recorder)


async def _run_uploaded(vehicle: Vehicle, recorder: TrialRecorder) -> None:

    async def log_reached() -> None:
        async for seq in vehicle.mission_items_reached():
            recorder.event("mission_item_reached", seq=seq)

    reached_task = asyncio.create_task(log_reached())
    try:
        await vehicle.start_mission()
        recorder.event("mission_started")
        async for progress in vehicle.mission_progress():
            recorder.event("mission_progress", current=progress.current, total=progress.total)
            if progress.finished:
                break
    finally:
        reached_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reached_task


async def _fly_offboard(vehicle: Vehicle, mission: WaypointMission, recorder: TrialRecorder) -> None:
    await vehicle.takeoff(mission.takeoff_altitude)
    recorder.event("takeoff_complete", altitude=vehicle.state.altitude)
    await vehicle.start_offboard(rate_hz=20.0)
    recorder.event("offboard_started")
    for index, wp in enumerate(mission.waypoints):
        yaw = math.radians(wp.yaw_deg) if wp.yaw_deg is not None else math.nan
        await vehicle.set_position_ned(wp.north, wp.east, wp.down, yaw)
        await vehicle.wait_until(lambda s: s.distance_to(wp.north, wp.east, wp.down) <= mission.acceptance_radius,
                                 timeout=mission.time_budget, what=f"waypoint {index}")
        recorder.event("waypoint_reached", index=index)
        if wp.hold_s > 0:
            await vehicle.sleep(wp.hold_s)
    await vehicle.stop_offboard()
    recorder.event("offboard_stopped")


async def _land_and_wait(vehicle: Vehicle, recorder: TrialRecorder) -> None:
    if vehicle.state.in_air:
        await vehicle.land()
        recorder.event("landing")
    await vehicle.wait_until(lambda s: not s.armed, timeout=LANDING_GRACE_S, what="landing and disarm")
    recorder.event("landed")


async def run_trial(open_vehicle: Callable[[], Awaitable[Vehicle]], mission: WaypointMission, record_dir: Path, *,
                    target_name: str, config: dict, vehicle_failure: Callable[[], str | None] | None = None,
                    journal_params: bool = False) -> TrialResult:
    """Connect (with `open_vehicle`), fly and record one trial; a flight that went wrong is reported, not raised.

    `journal_params` (for flight controllers that outlive the run: hardware, a SITL someone else
    started) journals every parameter change to disk and first restores what a crashed run left.
    """
    rows: list[dict] = []
    with TrialRecorder(record_dir, config=config, target=target_name) as recorder:
        try:
            vehicle = await open_vehicle()
        except VehicleError as exc:
            detail = vehicle_failure() if vehicle_failure is not None else None
            reason = f"{exc}" + (f"\n{detail}" if detail else "")
            recorder.finish("error", {"reason": reason})
            return TrialResult("error", reason, record_dir, None)
        recorder.event("connected", url=vehicle.url)
        if journal_params:
            vehicle.journal = ParamJournal.for_vehicle(await vehicle.identity())
            restored = await restore_pending(vehicle, vehicle.journal)
            if restored:
                recorder.event("params_restored_after_crash", params=restored, journal=str(vehicle.journal.path))

        async def record_telemetry() -> None:
            async for state in vehicle.telemetry():
                row = state.as_row()
                rows.append(row)
                recorder.append("telemetry", row)

        telemetry_task = asyncio.create_task(record_telemetry())
        try:
            outcome, reason = await fly_mission(vehicle, mission, recorder)
        except VehicleError as exc:
            outcome, reason = ("refused" if "refused" in str(exc) else "error"), str(exc)
            recorder.event("failed", reason=reason)
        finally:
            telemetry_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await telemetry_task
            await vehicle.close()
        summary = summarize_trial(vehicle_time(pd.DataFrame(rows), vehicle.speed_factor),
                                  mission.reference_path()) if rows else None
        recorder.finish(outcome, {"reason": reason, **(summary.as_dict() if summary else {})})
    return TrialResult(outcome, reason, record_dir, summary)


def vehicle_time(telemetry: pd.DataFrame, speed_factor: float) -> pd.DataFrame:
    """Telemetry with t_ns rescaled from the harness clock to vehicle time (a simulator's speed factor).

    Metrics (duration, mean speed) are about the flight, not about how fast it was simulated. A
    lockstep vehicle already stamps in simulated time (its speed factor is infinite).
    """
    if not math.isfinite(speed_factor) or speed_factor == 1.0 or telemetry.empty:
        return telemetry
    out = telemetry.copy()
    t0 = int(out["t_ns"].iloc[0])
    out["t_ns"] = t0 + ((out["t_ns"] - t0) * speed_factor).astype("int64")
    return out


def mission_config(mission: WaypointMission, **extra) -> dict:
    """The resolved configuration stored in the manifest."""
    return {"mission": {k: v for k, v in asdict(mission).items()}, **extra}
