"""`hil fly`: fly one mission on one target and keep a trial record of it.

The flight goes only through the `Vehicle` API, so it is the same on the built-in vehicle, PX4
SITL and hardware. Any mission file `missions.load` reads flies here (its route becomes a waypoint
plan, `BenchmarkMission.to_waypoint_mission()`), in one of two ways chosen by the mission's `mode`:
- `mission`: upload with the MAVLink mission protocol and let the autopilot fly it;
- `offboard`: take off, then stream position setpoints from here, waypoint by waypoint.

While it flies, the one judge (`hil.monitor.RouteJudge`) watches the mission's airspace (altitude band,
geofences, no-fly zones) and its scene's obstacles: leaving the one or touching the other ends the
flight as a failure naming the zone or the obstacle, and the vehicle lands. Stage labels
(`missions.templates`) are recorded as `stage_started` / `stage_ended` events as they are flown.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from aio.tasks import cancel_and_wait
from bridges.vehicle import GroundTruth, MissionWaypoint, Vehicle, VehicleError
from hil.monitor import RouteJudge, judged_on
from hil.navigation import apply_faults
from hil.param_journal import JournalRestoreRefused, ParamJournal, keep_journal
from hil.preflight import run_checklist
from hil.safety import SafetyLimits, UnexpectedVehicleState, require_on_ground, watch
from hil.session import TrialSession
from hil.stop import (
    RETURN_GRACE_S,
    FlightPhase,
    Interrupts,
    SafeEnd,
    dead_mans_switch,
    land_and_wait,
    make_safe,
)
from missions.geo import GeoOrigin
from missions.qgc import write_plan
from missions.schema import BenchmarkMission
from missions.waypoint import WaypointMission
from px4.external_physics.links import SimulatorLinkError
from px4.sitl import SitlError
from px4.ulog import keep_in_record
from records.atomic import write_file_atomically
from records.clock import clock_scale, telemetry_clock, vehicle_time
from records.record import TrialRecorder
from records.summary import MissionSummary, Point, Route, Stop, Summary
from targets import TargetOptions, TargetSpec

# Horizontal speed (m/s) under which an offboard flight counts as stopped over its landing point.
LAND_SETTLE_SPEED = 0.3
# Vehicle seconds a flight controller found flying after a harness run died on it gets to come down by its
# own failsafe (COM_DL_LOSS_T, the hold, a return) before the next run gives up restoring its journal.
JOURNAL_LANDING_WAIT_S = 300.0
# The share of MIS_TAKEOFF_ALT at which a mission's climb counts as done (PX4's own takeoff ends just short of it).
TAKEOFF_REACHED = 0.9


@dataclass(frozen=True)
class TrialResult:
    """What one flight came to; its figures are the record's to give (`reports`)."""

    outcome: str  # success | timeout | refused | aborted | error | ...
    reason: str
    record_dir: Path
    left: SafeEnd | None = None  # how the vehicle was left (hil.stop); None: never commanded


def default_record_dir(mission: BenchmarkMission | WaypointMission, root: Path = Path("runs")) -> Path:
    """runs/<UTC time>-<mission name>, unique per call."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = root / f"{stamp}-{mission.name}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


class StageLog:
    """Records when each stage of a route starts and ends (HUGE-Bench's sub-tasks, for TCR per stage)."""

    def __init__(self, recorder: TrialRecorder) -> None:
        self.recorder = recorder
        self.current: str | None = None

    def enter(self, stage: str) -> None:
        """The flight is now working on `stage` (a finished previous one ends here)."""
        if stage and stage != self.current:
            self.close(completed=True)
            self.current = stage
            self.recorder.event("stage_started", stage=stage)

    def close(self, completed: bool) -> None:
        """The current stage ends: done, or cut short (`completed` False)."""
        if self.current is not None:
            self.recorder.event("stage_ended", stage=self.current, completed=completed)
            self.current = None


async def fly_mission(vehicle: Vehicle, mission: BenchmarkMission, recorder: TrialRecorder,
                      vehicle_radius: float = 0.0, inject_faults: bool = True, simulator=None) -> tuple[str, str]:
    """Arm, fly the mission's route, land; returns (outcome, reason). The budget is in vehicle time.

    The judge runs beside the flight: an airspace breach or a collision with the scene (the vehicle's
    sphere of `vehicle_radius` m) ends it as `breach` or `collision`, and the vehicle lands; with the
    mission's `termination` saying not to stop on one, the flight goes on and still ends as that
    failure. The mission's fault schedule is applied as its triggers fire when `inject_faults` (the
    caller decides whether the target may be faulted), in `simulator` when the harness's physics drives the target
    (`hil.navigation.apply_faults`).
    """
    stages = StageLog(recorder)
    judge = RouteJudge(mission, vehicle_radius, recorder, vehicle.speed_factor, truth=vehicle.truth)
    flight = asyncio.create_task(_fly_plan(vehicle, mission.to_waypoint_mission(), recorder, stages))
    watching = asyncio.create_task(judge.watch(vehicle))
    faults = asyncio.create_task(apply_faults(vehicle, mission.faults if inject_faults else (), judge, recorder,
                                              simulator))
    try:
        await asyncio.wait({flight, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:  # cancelled from outside (Ctrl-C): all stop, the caller lands
        for task in (flight, watching, faults):
            task.cancel()
        await asyncio.gather(flight, watching, faults, return_exceptions=True)
    if not flight.cancelled():  # the flight ended first: its outcome (or its error), unless it was judged
        outcome, reason = flight.result()
        return judge.carried_on or (outcome, reason)
    verdict = watching.result()
    outcome, reason = str(verdict.outcome), verdict.reason
    stages.close(completed=False)
    # Where the judge saw it: the vehicle flies on while the flight task unwinds (on a loaded machine
    # at --speed 4, metres).
    at = judge.judged_at
    recorder.event(outcome, reason=reason, north=at.north, east=at.east, altitude=at.altitude, stopped=True)
    await vehicle.release()
    await land_and_wait(vehicle, recorder)
    return outcome, reason


async def _fly_plan(vehicle: Vehicle, plan: WaypointMission, recorder: TrialRecorder,
                    stages: StageLog) -> tuple[str, str]:
    try:
        async with vehicle.deadline(plan.time_budget):
            if plan.mode == "mission":
                # The mission's own takeoff climbs to MIS_TAKEOFF_ALT: changed for this flight only, restored after.
                async with vehicle.params_changed({"MIS_TAKEOFF_ALT": plan.takeoff_altitude}):
                    await _fly_uploaded(vehicle, plan, recorder, stages)
            else:
                # Held from before arming (Vehicle.takeoff_params): PX4 disarms a vehicle left armed on the ground
                # (COM_DISARM_PRFLT, 10 s, which at 8x is 1.25 s of wall time, less than a loaded machine's
                # parameter round trips can take).
                async with vehicle.params_changed(vehicle.takeoff_params(plan.takeoff_altitude)):
                    await _arm(vehicle, recorder)
                    await _fly_offboard(vehicle, plan, recorder, stages)
    except TimeoutError:
        stages.close(completed=False)
        recorder.event("timeout", budget_s=plan.time_budget)
        await land_and_wait(vehicle, recorder)
        return "timeout", f"mission not completed within its {plan.time_budget:g} s budget"
    if plan.land:
        stages.enter("land")
        await land_and_wait(vehicle, recorder)
    stages.close(completed=True)
    return "success", ""


async def _fly_uploaded(vehicle: Vehicle, mission: WaypointMission, recorder: TrialRecorder, stages: StageLog) -> None:
    waypoints = _mission_waypoints(mission)
    # Uploaded before arming, as QGroundControl does: an upload a loaded machine or link makes slow must not
    # outlast PX4's disarming of a vehicle left armed on the ground (COM_DISARM_PRFLT, 10 s).
    await vehicle.upload_mission(waypoints)
    recorder.event("mission_uploaded", items=len(waypoints))
    await _arm(vehicle, recorder)
    await _run_uploaded(vehicle, mission, recorder, stages)


async def _arm(vehicle: Vehicle, recorder: TrialRecorder) -> None:
    await vehicle.arm()
    recorder.event("armed")


async def _run_uploaded(vehicle: Vehicle, mission: WaypointMission, recorder: TrialRecorder, stages: StageLog) -> None:
    async def log_reached() -> None:
        async for seq in vehicle.mission_items_reached():
            recorder.event("mission_item_reached", seq=seq)

    async def log_climbed() -> None:
        # The mission's takeoff is PX4's own: the climb is over when the vehicle is near MIS_TAKEOFF_ALT.
        with contextlib.suppress(VehicleError):  # it never got there: the flight's own end says why
            await vehicle.wait_until(lambda s: s.altitude >= TAKEOFF_REACHED * mission.takeoff_altitude,
                                     mission.time_budget, "the mission's takeoff")
            recorder.event("takeoff_complete", altitude=vehicle.state.altitude)

    watchers = [asyncio.create_task(log_reached())]
    try:
        await vehicle.start_mission()
        recorder.event("mission_started")
        watchers.append(asyncio.create_task(log_climbed()))
        async for progress in vehicle.mission_progress():
            recorder.event("mission_progress", current=progress.current, total=progress.total)
            if 0 <= progress.current < len(mission.waypoints):
                stages.enter(mission.waypoints[progress.current].stage)
            if progress.finished:
                break
    finally:
        for task in watchers:
            await cancel_and_wait(task)


async def _fly_offboard(vehicle: Vehicle, mission: WaypointMission, recorder: TrialRecorder, stages: StageLog) -> None:
    await vehicle.takeoff(mission.takeoff_altitude)
    recorder.event("takeoff_complete", altitude=vehicle.state.altitude)
    # Position setpoints are flown at PX4's MPC_XY_VEL_MAX: the mission's speed caps it for this flight.
    async with vehicle.params_changed({"MPC_XY_VEL_MAX": mission.speed, "MPC_XY_CRUISE": mission.speed}):
        await vehicle.start_offboard(rate_hz=20.0)
        recorder.event("offboard_started")
        for index, wp in enumerate(mission.waypoints):
            stages.enter(wp.stage)
            yaw = math.radians(wp.yaw_deg) if wp.yaw_deg is not None else math.nan
            await vehicle.set_position_ned(wp.north, wp.east, wp.down, yaw)
            await vehicle.wait_until(lambda s: s.distance_to(wp.north, wp.east, wp.down) <= mission.acceptance_radius,
                                     timeout=mission.time_budget, what=f"waypoint {index}")
            recorder.event("waypoint_reached", index=index)
            if wp.hold_s > 0:
                await vehicle.sleep(wp.hold_s)
        if mission.land:
            # PX4 lands a mission at its landing point: stop over it first, or the touchdown is wherever
            # the vehicle's speed carried it after entering the acceptance radius (1.9 m off, measured).
            await vehicle.wait_until(lambda s: math.hypot(s.vn, s.ve) < LAND_SETTLE_SPEED, timeout=mission.time_budget,
                                     what="stopping over the landing point")
        await vehicle.stop_offboard()
    recorder.event("offboard_stopped")


@dataclass(frozen=True)
class FlightOptions:
    """How carefully to fly: the harness's limits, and whether the target is a real aircraft."""

    limits: SafetyLimits
    hardware: bool = False  # every check required; parameter changes journaled to disk
    dry_run: bool = False  # everything but arming
    min_battery_pct: float = 50.0
    # Parameters set on the flight controller for this flight only (journaled and restored on hardware);
    # simulators take theirs at boot instead.
    params: Mapping[str, float] = field(default_factory=dict)
    vehicle_radius: float = 0.0  # m: the vehicle's collision sphere, for the judge in a mission's scene
    inject_faults: bool = False  # apply the mission's fault schedule (simulators, and the harness's physics of a bench)
    # The dead-man's switch on hardware (hil.stop.dead_mans_switch): what the flight controller does by itself
    # when the harness falls silent (NAV_DLL_ACT: "return" or "land"), and after how long (COM_DL_LOSS_T; None
    # keeps the vehicle's).
    link_loss_action: str = "return"
    link_loss_timeout_s: float | None = None


async def run_trial(target: str | TargetSpec, target_options: TargetOptions, mission: BenchmarkMission,
                    record_dir: Path, *, config: dict, options: FlightOptions,
                    say: Callable[[str], None] = lambda text: None,
                    show: Callable[[Vehicle, TrialRecorder], Awaitable[None]] | None = None,
                    interrupts: Interrupts | None = None) -> TrialResult:
    """Bring the target up, check, fly and record one trial. A flight that went wrong is reported, never raised.

    On a flight controller that outlives the run (hardware, a SITL someone else started) every
    parameter change is journaled and what a crashed run left changed is restored first, and the
    flight controller's own data-link-loss failsafe is armed for the flight (the dead-man's switch).
    The mission races the safety watch (hil.safety). Cancellation at any phase (Ctrl-C, SIGTERM, SIGHUP,
    the abort key: `interrupts`, which is told the vehicle once connected) ends the trial as `aborted`,
    naming the phase, once the vehicle is safe by the stop policy (hil.stop.make_safe); `TrialResult.left`
    says how it was left.
    `say` receives the lines a person at the field wants to read (the checklist, what happened);
    `show(vehicle, recorder)`, if given, runs for the whole flight (a live status line). PX4's console and
    ULogs (and the harness physics' truth) go into the record; ULogs are aligned with the telemetry.
    """
    spec = target if isinstance(target, TargetSpec) else TargetSpec.parse(target)
    with TrialSession(record_dir, config=config, target=spec.name, interrupts=interrupts) as session:
        recorder = session.recorder
        stop_fields: dict = {}
        left: SafeEnd | None = None
        truth: GroundTruth | None = None
        try:
            async with session.target(spec, target_options) as opened:
                vehicle = opened.vehicle
                truth = vehicle.truth
                status_task = asyncio.create_task(show(vehicle, recorder)) if show is not None else None
                try:
                    outcome, reason, left, stop_fields = await _checked_flight(vehicle, mission, recorder, options,
                                                                               say, session.phase, opened.simulator)
                    keep_plan(mission, vehicle, record_dir, recorder)
                    if options.hardware and not options.dry_run:
                        if outcome == "aborted":
                            # A stop request asks the process to end once the vehicle is safe: a ULog download
                            # takes from seconds to many minutes (a radio, a busy link), longer than systemd, docker
                            # or a CI runner waits before SIGKILL, which would leave the record unfinished.
                            recorder.event("ulog_unavailable", reason="not downloaded after a stop request")
                            say("the flight controller keeps its ULog of this flight (not downloaded after a stop)")
                        else:
                            await _keep_ulog(vehicle, record_dir, session.rows, recorder, say)
                except VehicleError as exc:
                    refused = isinstance(exc, JournalRestoreRefused) or "refused" in str(exc)
                    outcome, reason = ("refused" if refused else "error"), str(exc)
                    recorder.event("failed", reason=reason)
                except asyncio.CancelledError as stop:
                    # Stopped before the vehicle was the harness's to command (connected, not yet found on the
                    # ground), or a third interrupt let go of it while the stop policy was bringing it down.
                    _uncancel()
                    outcome = "aborted"
                    s = vehicle.state
                    left = SafeEnd.LET_GO if s.armed else None
                    reason = (f"stopped ({_stopped_by(stop)}) during {session.phase.current}; "
                              + (f"the harness let go of the vehicle ARMED at {s.altitude:.1f} m in {s.flight_mode}: "
                                 "its own failsafe is in charge" if s.armed else "nothing was armed"))
                    stop_fields = {"phase": session.phase.current, "stopped_by": _stopped_by(stop)}
                    recorder.event("aborted", reason=reason, **stop_fields)
                    say(f"aborted: {reason}")
                finally:
                    if status_task is not None:
                        await cancel_and_wait(status_task)
                    if left is None or left in (SafeEnd.PILOT, SafeEnd.LET_GO):
                        await vehicle.release()  # not ours to command, or no longer: not one more setpoint
        except (VehicleError, SitlError, SimulatorLinkError) as exc:
            if session.vehicle is not None:
                raise  # the flight's errors were handled above: this is the target failing to stop
            session.finish("error", Summary(outcome="error", reason=str(exc)))
            return TrialResult("error", str(exc), record_dir)
        except asyncio.CancelledError as stop:
            if session.vehicle is not None:
                raise
            _uncancel()
            reason = f"stopped ({_stopped_by(stop)}) while connecting; nothing was commanded"
            say(f"aborted: {reason}")
            session.finish("aborted", Summary(outcome="aborted", reason=reason,
                                              stop=Stop(session.phase.current, _stopped_by(stop))))
            return TrialResult("aborted", reason, record_dir)
        if not options.hardware:  # a simulator's logs arrived in the record as it stopped
            # At the speed the vehicle kept (its clock over the session), not the one it was asked for: a loaded
            # machine's built-in vehicle at 8x kept 3.2, and the fit finds an offset, never a scale.
            _align_ulogs(record_dir, session.rows, session.speed, recorder)
        stopped = Stop(**stop_fields, left=left.value if left is not None else "") if stop_fields else None
        session.finish(outcome, MissionSummary(outcome=outcome, reason=reason, stop=stopped, speed_factor=session.speed,
                                               route=mission_route(mission),
                                               **mission_time(mission, session.rows, session.speed),
                                               **mission_judged(mission, options.vehicle_radius, truth)))
    return TrialResult(outcome, reason, record_dir, left)


def _uncancel() -> None:
    """A stop request was handled here: the task runs on (to make the vehicle safe and finish the record),
    and a later timeout in it must not be taken for the request again."""
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


def _stopped_by(cancellation: asyncio.CancelledError) -> str:
    """What stopped the run: the cancellation's message (hil.stop.Interrupts names the signal)."""
    return str(cancellation.args[0]) if cancellation.args and cancellation.args[0] else "cancelled"


def keep_plan(mission: BenchmarkMission, vehicle: Vehicle, record_dir: Path, recorder: TrialRecorder) -> None:
    """The mission as a QGroundControl plan in the record (mission.plan), placed at the vehicle's home, so a
    flight planned in local metres opens in QGroundControl where it was flown."""

    try:
        home = vehicle.home
    except VehicleError:
        return  # the vehicle never said where it is: nothing to place the plan at
    below_start = mission.home_in_mission  # the vehicle's home is the mission frame's point below the start
    lat, lon, _ = home.to_global(-below_start[0], -below_start[1], 0.0)
    path = record_dir / "mission.plan"
    write_file_atomically(path, lambda temporary: write_plan(mission, temporary, GeoOrigin(lat, lon, home.alt_m)))
    recorder.event("plan_kept", path=str(path))


def mission_route(mission: BenchmarkMission) -> Route:
    """The route a flight of `mission` is judged against, as its record keeps it."""
    return Route(reference=_points(mission.reference_path()),
                 stages=tuple((stage, _points(path)) for stage, path in mission.stage_paths()),
                 success_radius_m=float(mission.success_radius), home=_points([mission.home_in_mission])[0])


def mission_judged(mission: BenchmarkMission, vehicle_radius: float, truth: GroundTruth | None) -> dict[str, Any]:
    """What the judge of a flight of `mission` watched beside its route (its positions, with the target's `truth`;
    the scene, the airspace, the vehicle's radius): the summary's fields, from which a reader takes the
    clearance and fence margins."""
    scene = None if mission.scene is None else {k: v for k, v in asdict(mission.scene).items() if v is not None}
    return {"judged_on": judged_on(truth), "scene": scene, "airspace": asdict(mission.airspace),
            "judged_radius_m": float(vehicle_radius)}


def mission_time(mission: BenchmarkMission, rows: list[dict], speed_factor: float) -> dict[str, float | str]:
    """A mission flight's budget and the time it used of it, its armed flight from the first armed snapshot to the
    last, on the vehicle's clock where its snapshots carry it (the clock it was measured on says which): the
    summary's fields, from which a reader takes the budget's margin."""
    telemetry = pd.DataFrame(rows)
    used = math.nan
    if "armed" in telemetry:
        flown = vehicle_time(telemetry, speed_factor)
        stamps = flown.loc[flown["armed"].astype(bool), "t_ns"]
        used = (int(stamps.iloc[-1]) - int(stamps.iloc[0])) / 1e9 if len(stamps) >= 2 else math.nan
    return {"time_budget_s": float(mission.time_budget), "time_used_s": used,
            "clock": telemetry_clock(telemetry, speed_factor)}


def _points(path: Iterable[Iterable[float]]) -> tuple[Point, ...]:
    return tuple(tuple(float(v) for v in point) for point in path)  # type: ignore[misc]


def _align_ulogs(record_dir: Path, rows: list[dict], speed_factor: float, recorder: TrialRecorder) -> None:
    """Each ULog the target left in the record, kept as tables on the harness clock (px4.ulog)."""
    # In lockstep the record's clock is the vehicle's: the log's time stamps need no fit.
    known = 0 if not math.isfinite(speed_factor) else None
    for log in sorted((record_dir / "ulog").glob("*.ulg")):
        try:
            alignment = keep_in_record(log, pd.DataFrame(rows), scale=clock_scale(speed_factor) ** -1, offset_ns=known)
            recorder.event("ulog_kept", path=str(log), offset_ns=alignment.offset_ns, method=alignment.method)
        except (KeyError, ValueError) as exc:
            recorder.event("ulog_kept", path=str(log), alignment_error=str(exc))


async def _checked_flight(vehicle: Vehicle, mission: BenchmarkMission, recorder: TrialRecorder, options: FlightOptions,
                          say: Callable[[str], None], phase: FlightPhase,
                          simulator=None) -> tuple[str, str, SafeEnd | None, dict]:
    """Journal, parameters, checklist, then the mission under the safety watch: (outcome, reason, how the vehicle
    was left, what an abort adds to the summary). A stop request (cancellation) from here on is met by the stop
    policy while the flight's parameters, the dead-man's switch among them, are still set."""
    try:
        await _found_on_ground(vehicle, options, say, recorder)
    except UnexpectedVehicleState as exc:
        recorder.event("refused", reason=str(exc))
        return "refused", str(exc), None, {}  # not ours: it must not be landed either
    if options.hardware:
        restored = await keep_journal(vehicle, recorder)
        if restored:
            say(f"restored parameters an interrupted run left changed: {restored}")
    # The dead-man's switch outside the parameters and the stop policy: it stays armed while the vehicle comes down.
    async with (dead_mans_switch(vehicle, recorder.event, options.link_loss_action, options.link_loss_timeout_s)
                if options.hardware and not options.dry_run else contextlib.nullcontext()):
        async with vehicle.params_changed(options.params) as originals:
            if options.params:
                recorder.event("params_set", params=dict(options.params), originals=originals)
            try:
                outcome, reason, left = await _checklist_and_flight(vehicle, mission, recorder, options, say, simulator)
                return outcome, reason, left, {}
            except asyncio.CancelledError as stop:
                _uncancel()
                at = phase.current
                fields = {"phase": at, "stopped_by": _stopped_by(stop)}
                recorder.event("aborted", **fields)
                ended = await make_safe(vehicle, say, recorder.event)
                if ended.end is SafeEnd.LANDED:
                    recorder.event("landed")
                reason = f"stopped ({fields['stopped_by']}) during {at}; {ended.detail}"
                say(f"aborted: {reason}")
                return "aborted", reason, ended.end, fields
            except Exception:
                # Whatever broke (a refused command, the disk the record is on, a bug of the harness's own), the
                # vehicle comes down before the error goes on.
                await make_safe(vehicle, say, recorder.event)
                raise


async def _found_on_ground(vehicle: Vehicle, options: FlightOptions, say: Callable[[str], None],
                           recorder: TrialRecorder) -> None:
    """`require_on_ground`, except for a flight controller still coming down after a harness run died on it
    (its journal lists parameters left changed): that one is waited for, never commanded, until it has landed
    and disarmed by its own failsafe, so that the journal can be restored."""
    try:
        await require_on_ground(vehicle)
        return
    except UnexpectedVehicleState as exc:
        if not (options.hardware and ParamJournal.for_vehicle(await vehicle.identity()).pending()):
            raise
        say(f"{exc}. A harness run that died left parameters changed on it: waiting (up to {JOURNAL_LANDING_WAIT_S:g} s) "
            "for it to land and disarm by its own failsafe, then restoring them")
        recorder.event("waiting_to_restore", reason=str(exc))
    try:
        await vehicle.wait_until(lambda s: not s.armed, JOURNAL_LANDING_WAIT_S, "the vehicle to land and disarm")
    except VehicleError as exc:
        raise UnexpectedVehicleState(f"refused: {exc}; its parameter journal is kept for the next run") from None
    await require_on_ground(vehicle)


async def _checklist_and_flight(vehicle: Vehicle, mission: BenchmarkMission, recorder: TrialRecorder,
                                options: FlightOptions, say: Callable[[str], None],
                                simulator=None) -> tuple[str, str, SafeEnd | None]:
    with contextlib.suppress(VehicleError):  # a vehicle that never gets armable fails the checklist below
        await vehicle.wait_armable(timeout=30.0)
    plan = mission.to_waypoint_mission()
    checklist = await run_checklist(vehicle, plan, options.limits, hardware=options.hardware,
                                    min_battery_pct=options.min_battery_pct)
    say(checklist.text())
    recorder.event("preflight", passed=checklist.passed, checks=[asdict(c) for c in checklist.checks])
    if not checklist.passed:
        return "preflight_failed", "; ".join(f"{c.name}: {c.detail}" for c in checklist.failures()), SafeEnd.LANDED
    if options.dry_run:
        if plan.mode == "mission":
            await vehicle.upload_mission(_mission_waypoints(plan))
            recorder.event("mission_uploaded", items=len(plan.waypoints))
        recorder.event("dry_run_complete")
        return "dry_run", "checks passed; nothing armed (--dry-run)", SafeEnd.LANDED

    flight = asyncio.create_task(fly_mission(vehicle, mission, recorder, options.vehicle_radius,
                                             options.inject_faults, simulator))
    guard = asyncio.create_task(watch(vehicle, options.limits))
    try:
        await asyncio.wait({flight, guard}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # a stop request: the caller makes the vehicle safe once these have stopped
        for task in (flight, guard):
            task.cancel()
        await asyncio.gather(flight, guard, return_exceptions=True)
        raise
    if flight.done():
        guard.cancel()
        await asyncio.gather(guard, return_exceptions=True)
        outcome, reason = flight.result()
        return outcome, reason, SafeEnd.LANDED
    stop = guard.result()
    flight.cancel()
    await asyncio.gather(flight, return_exceptions=True)
    say(stop.detail)
    recorder.event(stop.kind, detail=stop.detail, north=stop.state.north, east=stop.state.east,
                   altitude=stop.state.altitude, mode=stop.state.flight_mode)
    if stop.kind == "pilot_takeover":
        return "pilot_takeover", stop.detail, SafeEnd.PILOT  # not one more command: the pilot flies now
    if stop.kind == "link_lost":
        return "link_lost", stop.detail, None
    return "breach", stop.detail, await _after_breach(vehicle, options, say, recorder)


async def _after_breach(vehicle: Vehicle, options: FlightOptions, say: Callable[[str], None],
                        recorder: TrialRecorder) -> SafeEnd:
    """The harness's fence was left: land by the stop policy, or return as configured."""
    if options.limits.breach_action == "land":
        return (await make_safe(vehicle, say, recorder.event)).end
    await vehicle.release()
    await vehicle.return_to_launch()
    await vehicle.wait_until(lambda s: not s.armed, RETURN_GRACE_S, "landing after the breach")
    return SafeEnd.LANDED


async def _keep_ulog(vehicle: Vehicle, record_dir: Path, rows: list[dict], recorder: TrialRecorder,
                     say: Callable[[str], None]) -> None:
    """The flight controller's own log of the flight, in the record and aligned with the harness clock."""
    try:
        path = await vehicle.download_newest_log(record_dir / "ulog")
    except VehicleError as exc:  # the flight's outcome stands: only its log is missing
        recorder.event("ulog_unavailable", reason=str(exc))
        say(f"ULog not kept: {exc}")
        return
    if path is None:
        recorder.event("ulog_unavailable", reason="the flight controller offers no log")
        say("no ULog on the flight controller to keep")
        return
    recorder.flush()
    try:
        alignment = keep_in_record(path, pd.DataFrame(rows))
        recorder.event("ulog_kept", path=str(path), offset_ns=alignment.offset_ns, method=alignment.method)
    except (KeyError, ValueError) as exc:
        recorder.event("ulog_kept", path=str(path), alignment_error=str(exc))
    say(f"ULog kept: {path}")


def _mission_waypoints(mission: WaypointMission) -> list[MissionWaypoint]:
    return [MissionWaypoint(w.north, w.east, w.down, speed=mission.speed, acceptance_radius=mission.acceptance_radius,
                            hold_s=w.hold_s, yaw_deg=w.yaw_deg if w.yaw_deg is not None else math.nan)
            for w in mission.waypoints]


def mission_config(mission: BenchmarkMission, **extra) -> dict:
    """The resolved configuration stored in the manifest."""
    return {"mission": asdict(mission), **extra}
