"""The one stop policy: however a flight ends, the vehicle ends landed or returning, and the person is told.

`make_safe` is what every way out of a flight calls once the harness stops flying its mission: the
normal end, a verdict, an exception, Ctrl-C, SIGTERM or SIGHUP at any phase. A land command that is
accepted proves little: a command still in flight (a mission start that MAVSDK is retrying, a
takeoff) can switch the vehicle out of Land a moment later, and a flight controller busy with a mode
change may refuse it. So the policy watches what the vehicle does, not what it answers:

1. land, and expect to see the vehicle in Land and coming down (or disarmed) within LAND_ACCEPT_S;
   while it lands, a mode other than Land or Return (a late command won) gets Land again;
2. after LAND_TRIES such tries, return to launch, and expect to see Return within RETURN_ACCEPT_S;
3. if that fails too, Hold, and say so in the last line: the vehicle is armed in the air and a
   person must take over.

A pilot who takes over (a mode only a pilot selects) ends the policy at once: not one more command. So does
a vehicle that is lost (`bridges.vehicle.VehicleLost`: its clock stood still for the bound, or its process
died): nothing it is told can be seen to take, and a simulator's teardown stops its process next.
Durations are vehicle time. `Interrupts` turns the signals that end a process into the cancellation
that starts this policy, and keeps a second Ctrl-C from letting go of a vehicle still in the air.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from enum import Enum

from aio.tasks import cancel_and_wait
from bridges.vehicle import Vehicle, VehicleError, VehicleLost, VehicleState
from hil.monitor import LANDING_MODES
from hil.safety import PILOT_MODES
from records.record import TrialRecorder

# Vehicle seconds for a land command to show: the vehicle in Land and lower than when it was
# commanded, or on the ground. PX4 reports the mode at 1 Hz (HEARTBEAT) and starts down within 1 s.
LAND_ACCEPT_S = 5.0
DESCENT_M = 0.3  # how much lower counts as coming down (a hover wanders a few centimetres)
LAND_TRIES = 2
RETURN_ACCEPT_S = 5.0
# Vehicle seconds from a land that was seen to start to the disarm: PX4 descends at MPC_LAND_SPEED
# (0.7 m/s) below MPC_LAND_ALT2, so 60 s lands from about 40 m; a return first flies home.
LANDING_GRACE_S = 60.0
RETURN_GRACE_S = 180.0
# PX4's NAV_DLL_ACT values the dead-man's switch may set.
LINK_LOSS_ACTIONS = {"return": 2, "land": 3}


class SafeEnd(str, Enum):
    """How the vehicle was left."""

    LANDED = "landed"  # disarmed on the ground
    RETURNING = "returning"  # in Return, on its way home: its own navigator lands it
    PILOT = "pilot"  # a pilot took over: the harness sends nothing more
    HOLDING = "holding"  # armed, holding in the air: neither Land nor Return took
    LET_GO = "let_go"  # the operator insisted (a third interrupt) before the vehicle was down
    LOST = "lost"  # the vehicle is lost (VehicleLost): a simulator is stopped next, a real one's own failsafe is in charge

    @property
    def safe(self) -> bool:
        """Whether someone or something is in charge of bringing the vehicle down."""
        return self in (SafeEnd.LANDED, SafeEnd.RETURNING, SafeEnd.PILOT)


@dataclass(frozen=True)
class StopResult:
    end: SafeEnd
    detail: str


async def make_safe(vehicle: Vehicle, say: Callable[[str], None] = lambda text: None,
                    event: Callable[..., None] = lambda kind, **fields: None) -> StopResult:
    """Bring the vehicle down by the stop policy (module docstring); never raises for the vehicle's sake.

    `say` gets the lines a person must read; `event(kind, **fields)` records what was commanded
    ("landing", "land_reissued", "return_commanded", "hold_commanded", "landed"). Neither failing (a
    closed terminal, a full disk under the record) stops the policy.
    """
    event, say = _never_raising(event), _never_raising(say)
    try:
        return await _land_or_return(vehicle, say, event)
    except VehicleLost as lost:
        say(f"{lost}: nothing more can be commanded")
        return StopResult(SafeEnd.LOST, str(lost))


async def _land_or_return(vehicle: Vehicle, say: Callable[[str], None], event: Callable[..., None]) -> StopResult:
    if vehicle.lost is not None:
        raise VehicleLost(vehicle.lost)
    state = vehicle.state
    if not state.armed:
        return StopResult(SafeEnd.LANDED, "disarmed")
    if state.flight_mode in PILOT_MODES:
        return StopResult(SafeEnd.PILOT, f"a pilot is flying ({state.flight_mode}); the harness sent nothing")
    await _quietly(vehicle.release())  # no setpoint stream may outlive the harness's decision to stop
    for attempt in range(LAND_TRIES):
        refusal = await _quietly(vehicle.land())
        event("landing" if attempt == 0 else "land_reissued", refused=refusal)
        result = await _follow_down(vehicle, ("LAND",), LANDING_GRACE_S)
        if result is not None:
            return result
        say(f"the land command did not take (mode {vehicle.state.flight_mode}"
            f"{', ' + refusal if refusal else ''}); " + ("commanding it again" if attempt + 1 < LAND_TRIES
                                                         else "commanding return to launch"))
    refusal = await _quietly(vehicle.return_to_launch())
    event("return_commanded", refused=refusal)
    result = await _follow_down(vehicle, LANDING_MODES, RETURN_GRACE_S, accept_s=RETURN_ACCEPT_S, returning=True)
    if result is not None:
        return result
    refusal = await _quietly(vehicle.hold())
    event("hold_commanded", refused=refusal)
    s = vehicle.state
    detail = (f"could not make the vehicle land or return: it is ARMED in the air, holding at {s.altitude:.1f} m "
              f"in mode {s.flight_mode}. Take over with the remote control or a ground station now")
    say(detail)
    return StopResult(SafeEnd.HOLDING, detail)


async def land_and_wait(vehicle: Vehicle, recorder: TrialRecorder | None = None) -> None:
    """The end of a flight that went as planned: land and wait for the disarm by the stop policy (`make_safe`:
    land again, then return, if the land does not take); VehicleError saying where the vehicle was left if it
    did not land. Events go to `recorder` if given."""
    event = recorder.event if recorder is not None else lambda kind, **fields: None
    stopped = await make_safe(vehicle, event=event)
    if stopped.end is not SafeEnd.LANDED:
        raise VehicleError(stopped.detail)
    event("landed")


async def _follow_down(vehicle: Vehicle, modes: tuple[str, ...], grace_s: float, accept_s: float = LAND_ACCEPT_S,
                       returning: bool = False) -> StopResult | None:
    """Watch the vehicle come down in one of `modes` until it disarms: the result, or None when the command
    did not take (not seen within `accept_s`, or the vehicle left `modes` for a mode nobody asked for).
    A return that is under way when `grace_s` runs out is left to the vehicle (RETURNING)."""
    start = vehicle.state
    started = False

    def verdict(s: VehicleState) -> bool:
        nonlocal started
        if not s.armed or s.flight_mode in PILOT_MODES:
            return True
        if s.flight_mode in modes:
            started = started or returning or not s.in_air or s.altitude < start.altitude - DESCENT_M
        elif started:
            return True  # it was coming down and something switched it away: command again
        return False

    try:
        async with vehicle.deadline(accept_s):
            await vehicle.each_snapshot(lambda s: verdict(s) or started)
    except TimeoutError:
        return None
    try:
        s = await vehicle.wait_until(verdict, grace_s, "the landing")
    except VehicleLost:
        raise
    except VehicleError:
        s = vehicle.state
        if returning and s.flight_mode in LANDING_MODES:
            return StopResult(SafeEnd.RETURNING, f"returning to launch at {s.altitude:.1f} m; its own Return lands it")
        return None
    if not s.armed:
        return StopResult(SafeEnd.LANDED, "returned and landed" if returning else "landed")
    if s.flight_mode in PILOT_MODES:
        return StopResult(SafeEnd.PILOT, f"a pilot took over ({s.flight_mode}) while it came down")
    return None


def _never_raising(tell: Callable[..., None]) -> Callable[..., None]:
    def told(*args, **fields) -> None:
        try:
            tell(*args, **fields)
        except Exception:  # noqa: BLE001 - a record or a terminal failing must never keep the vehicle in the air
            pass
    return told


async def _quietly(command) -> str:
    """Await a command; a refusal or a lost link is '' or its reason, never raised (the policy judges by telemetry)."""
    try:
        await command
    except VehicleError as exc:
        return str(exc)
    return ""


class Interrupts:
    """SIGINT, SIGTERM and SIGHUP (and an abort key) to a verb that flies, as one stop request.

    The first cancels `task`, which makes the vehicle safe (`make_safe`) before it ends. A second, while
    the vehicle is still airborne, only warns; a third lets go (the vehicle's own failsafe is then in
    charge, and the verb says so and exits 4).
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, task: asyncio.Task, say: Callable[[str], None]) -> None:
        self.task = task
        self.say = say
        self.airborne: Callable[[], str | None] = lambda: None
        self.received: list[str] = []

    def watch(self, vehicle: Vehicle) -> None:
        """From now on, whether `vehicle` is airborne decides what a second request does."""
        def airborne() -> str | None:
            s = vehicle.state
            return f"ARMED at {s.altitude:.1f} m in {s.flight_mode}" if s.armed and s.in_air else None
        self.airborne = airborne

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in self.SIGNALS:
            loop.add_signal_handler(sig, self.request, sig.name)

    def request(self, name: str) -> None:
        """A stop request called `name` (a signal's name, "abort key")."""
        self.received.append(name)
        where = self.airborne()
        if len(self.received) == 1:
            self.say(f"{name}: stopping; the vehicle is made safe first" + (f" ({where})" if where else ""))
            self.task.cancel(name)
        elif where is not None and len(self.received) == 2:
            self.say(f"{name}: the vehicle is still airborne ({where}) and being brought down. Once more and the "
                     "harness lets go: the vehicle's own failsafe is then in charge")
        elif len(self.received) <= 3 or where is None:
            self.say(f"{name}: letting go")
            self._cancel_after_the_first(name)

    def _cancel_after_the_first(self, name: str) -> None:
        # A cancellation requested before the task has taken the one before is merged into it (one
        # CancelledError, without its message), and the flight takes that as the first request, to land: requests
        # handled in one turn of a busy loop would never let go. This one waits until the first has been taken.
        if self.task.done():
            return
        if self.task.cancelling():
            asyncio.get_running_loop().call_later(0.01, self._cancel_after_the_first, name)
        else:
            self.task.cancel(name)


# The phase a flight is in, from the trial record's own events (what an interrupted record names): the phase
# each event begins. An offboard flight takes off, then starts its setpoints; a mission flight is
# uploaded before it is armed, started, and then climbs in PX4's own takeoff.
_PHASE_AFTER = {"connected": "checklist", "preflight": "arming", "armed": "takeoff",
                "takeoff_complete": "mission start", "at_start": "mission start", "offboard_started": "mid-mission",
                "navigation_started": "mid-mission", "waypoint_reached": "mid-mission", "landing": "landing",
                "landed": "landed"}
_MISSION_PHASE_AFTER = {**_PHASE_AFTER, "armed": "mission start", "mission_started": "takeoff",
                        "takeoff_complete": "mid-mission", "mission_item_reached": "mid-mission"}


class FlightPhase:
    """A trial recorder listener (TrialRecorder.listeners): `current` is the phase the flight is in."""

    def __init__(self) -> None:
        self.current = "connecting"
        self._after = _PHASE_AFTER

    def __call__(self, kind: str, fields: dict) -> None:
        if kind == "mission_uploaded":
            self._after = _MISSION_PHASE_AFTER
        self.current = self._after.get(kind, self.current)


@contextlib.asynccontextmanager
async def dead_mans_switch(vehicle: Vehicle, event: Callable[..., None], action: str = "return",
                           timeout_s: float | None = None) -> AsyncIterator[None]:
    """For a flight on a flight controller the harness did not start: its own data-link-loss failsafe armed
    (NAV_DLL_ACT `action`, COM_DL_LOSS_T `timeout_s` if given; through `params_changed`, so journaled and
    restored), with the harness beating as a ground station, for as long as the block runs.

    kill -9 of the harness, a dead laptop or a cut cable cannot be handled by the harness: the vehicle must
    bring itself down when the harness goes quiet. The vehicle hears the harness as a ground station before
    the failsafe is armed (PX4 refuses to arm without one once NAV_DLL_ACT is set) and until it is restored;
    use it outside the stop policy, so that it is still armed while the vehicle comes down.
    """
    changes = {"NAV_DLL_ACT": float(LINK_LOSS_ACTIONS[action]),
               **({"COM_DL_LOSS_T": timeout_s} if timeout_s is not None else {})}
    heartbeats = asyncio.create_task(vehicle.ground_station_heartbeats())
    try:
        async with vehicle.params_changed(changes) as originals:
            event("dead_mans_switch", params=changes, originals=originals)
            yield
    finally:
        await cancel_and_wait(heartbeats)
