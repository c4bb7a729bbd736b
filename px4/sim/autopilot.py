"""The built-in vehicle's flight controller: PX4's commander and navigator behaviour over the physics.

It owns arming and pre-arm checks, flight modes, auto modes (takeoff, hold/goto, mission, land,
return), offboard with PX4's stream rules and failsafe, land detection, auto-disarm and a battery,
and turns all of that into setpoints for the controllers of `control.py`. It knows nothing of
MAVLink: `mavlink_server.py` translates messages into these calls, and the lockstep vehicle calls
them directly, so both clocks fly the very same logic.

This module is the commander (arming, modes, commands, the step loop). Its parts exchange data as
PX4's commander, navigator and flight-mode manager do over uORB: they read the state the commander
publishes (its public attributes) and hand back what they decided. The navigator (mission_navigator)
keeps the mission and the auto modes' progress and publishes the triplet the flight task
(flight_task) flies, returning texts and mode requests that the commander applies; the failsafe
checks (failsafe_checks) return actions that the commander applies. So are landing and auto-disarm
(landing), returning the land detector's verdict, and Orbit and Follow Target (auto_modes), returning
each cycle's setpoint. Still mixed in: the battery (battery); the types the parts share are in
autopilot_types.

Time is simulation time (`time_s`), advanced only by `step()`, `run()` and `advance()`.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
from pymavlink.dialects.v20 import common as mavlink

from missions.geo import GeoOrigin
from physics.dynamics import POS, QuadrotorDynamics
from physics.faults import VehicleFaults
from physics.sensors import SensorModel
from profiles.vehicle import VehicleProfile
from px4.modes import FlightMode
from px4.params import ParamStore
from px4.sih import physical_from_sih, physical_to_sih
from px4.sim import control_kernels as kern
from px4.sim.auto_modes import OrbitAndFollow, TaskStep
from px4.sim.autopilot_types import (
    ACCEPTED,
    AUTO_MODES,
    NOT_AFTER_DISARM,
    POSITION_MODES,
    SILENT_REFUSAL,
    AutoPhase,
    CommandResult,
    LandedState,
    OffboardInput,
    denied,
    rejected,
)
from px4.sim.battery import SitlBattery
from px4.sim.control import (
    AttitudeSetpoint,
    MulticopterController,
    TrajectorySetpoint,
    setpoint_array,
)
from px4.sim.failsafe_checks import Act, FailsafeAction, FailsafeChecks
from px4.sim.flight_task import AutoFlightTask, Kind, Triplet
from px4.sim.inner_loop import MOTORS_CONTROLLED, MOTORS_IDLE, MOTORS_OFF, run_steps
from px4.sim.landing import Landing
from px4.sim.manual import ManualControl, ground_slowdown
from px4.sim.mission_items import MissionItem
from px4.sim.mission_navigator import HoldAt, NavEvent, Navigator, Say
from px4.sim.orbit import Orbit
from px4.sim.takeoff import TakeoffHandling

NAN = float("nan")
GRAVITY = 9.80665

# Navigator and land detector run at 50 Hz, as PX4's navigator does; controllers run faster inside.
NAV_PERIOD_S = 0.02
# Sensors "calibrate" for this long after boot before pre-arm checks pass (PX4 SITL takes ~10 s;
# a harness wants trials to start at once, see benchmarks/startup_to_armable.py).
SENSOR_INIT_S = 0.2
# Position mode locks the position once the vehicle has braked below this speed (m/s), and the
# altitude once the climb rate is below this (m/s) with the throttle stick centred.
STICK_HOLD_SPEED = 0.3
ALTITUDE_LOCK_SPEED = 0.3
# While flying with ground contact PX4 commands no thrust but its minimum: a large downward
# acceleration setpoint that the thrust limits clip.
GROUND_CONTACT_SETPOINT = TrajectorySetpoint(acceleration=(0.0, 0.0, 100.0))
FORCE_ARM_MAGIC = 21196  # MAV_CMD_COMPONENT_ARM_DISARM param2 that skips checks, as in PX4
_UNLIMITED = 1 << 62  # steps: as many as `until` and `due` allow
_NO_SETPOINT = np.full(kern.SP_SIZE, NAN)
_ALL_WORKING = np.ones(4)
_NO_CAPS = (None, None, None)
# The modes the 50 Hz cycle tells apart, bound once: in Python 3.11 a member looked up on its Enum class
# goes through EnumType's __getattr__ hook (about 0.1 us, four times a plain attribute), and the cycle
# made a dozen such lookups.
_OFFBOARD, _ORBIT, _FOLLOW_TARGET, _LAND = FlightMode.OFFBOARD, FlightMode.ORBIT, FlightMode.FOLLOW_TARGET, FlightMode.LAND
_STICK_MODES = (FlightMode.POSCTL, FlightMode.ALTCTL)
_LAND_TRIPLET = Kind.LAND


class Autopilot(SitlBattery):
    """A PX4-like flight controller flying the rigid-body model. Drive it with `step()`."""

    def __init__(self, profile: VehicleProfile, params: ParamStore | None = None, dt: float = 0.002):
        self.profile = profile
        self.params = params if params is not None else ParamStore()
        self._snapshot_version = -1
        self._snapshot: dict[str, float] = {}
        for name, value in physical_to_sih(profile.physical()).items():
            self.params.set(name, value)
        self.dt = dt
        self.phys = profile.physical()
        self.dyn = QuadrotorDynamics(self.phys, dt=dt)
        self.faults = VehicleFaults(self.dyn.rotor_efficiency, self.dyn.wind_ned)
        self.sensors = SensorModel()  # what HIGHRES_IMU and ATTITUDE report: the state plus SIH's noise
        self.ctrl = MulticopterController(self.phys, self.params, ground_logic=True)
        self.origin = GeoOrigin(self.params["SIH_LOC_LAT0"], self.params["SIH_LOC_LON0"], self.params["SIH_LOC_H0"])
        self.time_s = 0.0
        self.armed = False
        self.armed_at: float | None = None  # vehicle seconds, while armed (FLIGHT_INFORMATION reports it)
        self.mode = FlightMode.HOLD
        self._mode_after_disarm = FlightMode.HOLD
        self.landed = True
        self.landed_state = LandedState.ON_GROUND
        self.battery_remaining = 1.0
        self.battery_discharged_mah = 0.0
        self.home: tuple[float, float, float] = (0.0, 0.0, 0.0)  # local NED; reset at every arming
        self.failsafe = False
        # Messages for the pilot and protocol events, drained by whoever speaks for the vehicle.
        self.statustexts: deque[tuple[int, str]] = deque(maxlen=64)
        self.offboard: OffboardInput | None = None
        self.manual = ManualControl()
        self._failsafe_checks = FailsafeChecks()
        self.gcs_heard_s: float | None = None  # the last ground-station HEARTBEAT; None: none ever
        self._stick_hold: tuple[float, float, float] | None = None
        self._altitude_hold: float | None = None
        self._navigator = Navigator()
        # Geofence and rally point lists are stored and returned (MAVLink mission types 1 and 2).
        self.extra_missions: dict[int, list[MissionItem]] = {}
        self._motors = np.zeros(4)
        self.current_setpoint: TrajectorySetpoint | AttitudeSetpoint | None = None
        # The compiled loop's form of the setpoint last flown, made again only for another setpoint object
        # (a hover's and a ground contact's last many cycles; snapshots split cycles into several runs).
        self._flown: tuple[TrajectorySetpoint | AttitudeSetpoint | None, int, np.ndarray] = (None, 0, _NO_SETPOINT)
        self._task = AutoFlightTask(self.params)
        self._auto_active = False  # the flight task runs (it starts afresh when auto flight begins)
        self._takeoff = TakeoffHandling()
        self._landing = Landing()
        self._idle = True  # motors at idle: armed but not taken off (or disarmed)
        self._tasks = OrbitAndFollow()
        # Counted in physics steps: comparing accumulated float time against "last + 20 ms" drifts to
        # 11 steps now and then, and the 50 Hz navigator would really run at ~46 Hz.
        self._nav_steps = max(1, round(NAV_PERIOD_S / dt))
        self._step_count = 0
        # Load the compiled loop now (or, in a fresh checkout, compile it): in the first step of a
        # real-time flight it would put the vehicle half a second behind its clock.
        dyn, ctrl = self.dyn, self.ctrl
        run_steps(dyn.state, dyn.model, dyn.rotor_efficiency, dyn.wind_ned, ctrl.state, ctrl.constants, ctrl.limits,
                  kern.NO_SETPOINT, _NO_SETPOINT, MOTORS_OFF, _ALL_WORKING, self._motors, 0.0, 0.0, 0.0, 0)

    # ------------------------------------------------------------------ state a client sees
    @property
    def position(self) -> tuple[float, float, float]:
        # The physics state's entries as floats, without the slice and copy of `dyn.pos` (read ~6 times a cycle).
        s = self.dyn.state
        return s.item(POS), s.item(POS + 1), s.item(POS + 2)

    @property
    def ready(self) -> bool:
        """Sensors initialised (the estimator would have converged)."""
        return self.time_s >= SENSOR_INIT_S

    def prearm_failure(self) -> str | None:
        """The first failing pre-arm check as PX4 would word it, or None when armable."""
        if not self.ready:
            return "Arming denied: sensors initializing"
        if not self.gps_fix and self.params["COM_ARM_WO_GPS"] == 0:
            return "Arming denied: Global position estimate required (no GPS fix, COM_ARM_WO_GPS 0)"
        if self.mode in (FlightMode.POSCTL, FlightMode.ALTCTL) and not self.rc_available:
            return "Arming denied: Resolve system health failures first"  # PX4 v1.16: no manual control input
        if self.mode == FlightMode.OFFBOARD and not self.offboard_signal:
            return SILENT_REFUSAL
        if self.battery_remaining < self.params["BAT_LOW_THR"]:
            return f"Arming denied: battery low ({self.battery_remaining:.0%})"
        if self.mode in (FlightMode.LAND, FlightMode.RTL):
            return f"Arming denied: not possible in {self.mode.name} mode"
        return None

    @property
    def gps_fix(self) -> bool:
        """A 3D fix needs six satellites."""
        # SENS_EN_GPSSIM 0: SIH's GPS simulator is off, so there is no GPS at all.
        return self.params["SENS_EN_GPSSIM"] != 0 and self.params["SIM_GPS_USED"] >= 6 and not self.faults.gps_fix_lost

    @property
    def global_position_ok(self) -> bool:
        return self.ready and self.gps_fix

    @property
    def position_valid(self) -> bool:
        """The estimator still has a horizontal position: GPS, or dead reckoning for EKF2_NOAID_TOUT."""
        return self._failsafe_checks.position_valid(self.time_s, self.params)

    @property
    def distance_valid(self) -> bool:
        """The estimator's distance to the ground is valid: no range finder in use (EKF2_RNG_CTRL 0), or
        SIH's reads at least its minimum, which it does not on the ground until the landing is detected
        (EKF2 then takes the ground's EKF2_MIN_RNG; PX4 v1.16.1's ULog, measured)."""
        p = self.param_snapshot()
        return p["EKF2_RNG_CTRL"] == 0 or self.landed or -self.dyn.pos[2] >= p["EKF2_MIN_RNG"]

    @property
    def triplet(self) -> Triplet | None:
        """The navigator's current waypoints (PX4's position_setpoint_triplet); None before any auto flight."""
        return self._navigator.triplet

    # The navigator's mission and its progress, as the mission protocol and MISSION_CURRENT report them.
    @property
    def mission(self) -> list[MissionItem]:
        return self._navigator.mission

    @property
    def mission_current(self) -> int:
        return self._navigator.mission_current

    @property
    def mission_finished(self) -> bool:
        return self._navigator.mission_finished

    @property
    def seq_reached(self) -> int:
        """PX4's mission_result.seq_reached: the last item reached, -1 for none yet."""
        return self._navigator.seq_reached

    @property
    def reached_items(self) -> deque[int]:
        """Items reached, for the MISSION_ITEM_REACHED messages, drained by whoever speaks for the vehicle."""
        return self._navigator.reached_items

    @property
    def auto_phase(self) -> AutoPhase:
        """The step of a multi-stage auto mode the navigator is at."""
        return self._navigator.phase

    @property
    def estimator_flags(self) -> int:
        """ESTIMATOR_STATUS_FLAGS of the estimate (PX4's estimator_status.solution_status_flags): attitude,
        velocity and relative position once the sensors are initialised, absolute position with a GPS fix."""
        if not self.ready:
            return 0
        flags = (mavlink.ESTIMATOR_ATTITUDE | mavlink.ESTIMATOR_VELOCITY_HORIZ | mavlink.ESTIMATOR_VELOCITY_VERT
                 | mavlink.ESTIMATOR_POS_HORIZ_REL | mavlink.ESTIMATOR_POS_VERT_ABS | mavlink.ESTIMATOR_PRED_POS_HORIZ_REL)
        if self.gps_fix:
            flags |= mavlink.ESTIMATOR_POS_HORIZ_ABS | mavlink.ESTIMATOR_PRED_POS_HORIZ_ABS
        return flags

    @property
    def mission_valid(self) -> bool:
        """Whether the navigator has found the mission flyable (checked one cycle after an upload)."""
        return self._navigator.mission_valid

    def apply_params(self) -> None:
        """Take up parameter changes: SIH_* rebuild the physics (controllers re-read the rest themselves)."""
        sih = {name: self.params[name] for name in physical_to_sih(self.phys)}
        if sih != physical_to_sih(self.phys):
            self.phys = physical_from_sih(sih, self.phys.layout)
            self.dyn.configure(self.phys)
            self.ctrl.configure(self.phys)

    def say(self, severity: int, text: str) -> None:
        """Queue a STATUSTEXT for the pilot."""
        self.statustexts.append((severity, text))

    # ------------------------------------------------------------------ commands
    def arm(self, force: bool = False) -> CommandResult:
        """MAV_CMD_COMPONENT_ARM_DISARM(1)."""
        if self.armed:
            return ACCEPTED
        # PX4 runs the pre-arm checks even for a forced arm from MAVLink (force only matters to disarm).
        reason = self.prearm_failure()
        if reason == SILENT_REFUSAL:
            return rejected("")
        if reason:
            self.say(mavlink.MAV_SEVERITY_CRITICAL, reason)
            return rejected(reason)
        self.armed = True
        self.armed_at = self.time_s
        self._landing.on_arm(self.time_s)
        self.home = self.position  # PX4 sets home where it arms
        self.failsafe = False
        self.ctrl.reset()
        self._auto_active = False
        self._enter_mode(self.mode)
        self.say(mavlink.MAV_SEVERITY_INFO, "Armed by external command")
        return ACCEPTED

    def disarm(self, force: bool = False) -> CommandResult:
        """MAV_CMD_COMPONENT_ARM_DISARM(0); refused in the air unless forced."""
        if not self.armed:
            return ACCEPTED
        if not self.landed and not force:
            reason = "Disarming denied: not landed"
            self.say(mavlink.MAV_SEVERITY_CRITICAL, reason)
            return rejected(reason)
        self._disarm("Disarmed by external command")
        return ACCEPTED

    @property
    def rc_available(self) -> bool:
        return not self.faults.rc_lost and self.manual.available(self.time_s, self.params["COM_RC_LOSS_T"])

    def gcs_heartbeat(self) -> None:
        """A ground station's HEARTBEAT arrived (MAV_TYPE_GCS): the data link is alive."""
        self.gcs_heard_s = self.time_s

    def manual_input(self, pitch: float, roll: float, throttle: float, yaw: float) -> None:
        """MANUAL_CONTROL arrived: the pilot's sticks (RC)."""
        self.manual.update(pitch, roll, throttle, yaw, self.time_s)

    def set_mode(self, mode: FlightMode) -> CommandResult:
        """DO_SET_MODE / SET_MODE with PX4's admission rules."""
        if mode in (FlightMode.MANUAL, FlightMode.ACRO, FlightMode.STABILIZED):
            reason = f"{mode.name} is not flown by the built-in vehicle"
            self.say(mavlink.MAV_SEVERITY_CRITICAL, reason)
            return rejected(reason)
        # PX4 takes any mode while disarmed (its arming checks then refuse what cannot be flown); in
        # the air v1.16 acknowledges a mode it cannot enter and stays, saying why.
        if mode in (FlightMode.ALTCTL, FlightMode.POSCTL) and not self.rc_available and self.armed:
            word = "Position" if mode == FlightMode.POSCTL else "Altitude"
            self.say(mavlink.MAV_SEVERITY_CRITICAL, f"Switching to {word} is currently not available")
            return ACCEPTED
        if mode in POSITION_MODES and self.armed and not self.position_valid:
            reason = f"{mode.name} not possible: no position estimate"
            self.say(mavlink.MAV_SEVERITY_CRITICAL, reason)
            return rejected(reason)
        if mode == FlightMode.OFFBOARD and not self.offboard_signal and self.armed:
            return ACCEPTED  # v1.16: acknowledged, not entered, no text
        if mode == FlightMode.MISSION and not self._navigator.mission_valid:
            reason = "Mission not possible: no valid mission"
            self.say(mavlink.MAV_SEVERITY_CRITICAL, reason)
            return rejected(reason)
        if mode == FlightMode.TAKEOFF:
            return self.takeoff(NAN)
        if mode != self.mode:
            self._user_mode(mode)
        return ACCEPTED

    def follow_target(self, position: tuple[float, float, float], velocity: tuple[float, float, float]) -> None:
        """A FOLLOW_TARGET arrived (local NED; velocity NaN where not given)."""
        self._tasks.follow_target(position, velocity, self.time_s, self.mode == FlightMode.FOLLOW_TARGET)

    def set_mission(self, items: list[MissionItem]) -> None:
        """A complete upload replaces the mission and restarts it from the first item; the navigator
        checks it on its next cycle."""
        self._navigator.load(items)
        if self.mode == FlightMode.MISSION:
            self._enter_mode(FlightMode.MISSION)

    def set_mission_current(self, seq: int) -> CommandResult:
        """MAV_CMD_DO_SET_MISSION_CURRENT / MISSION_SET_CURRENT."""
        result = self._navigator.set_current(seq)
        if result.accepted and self.mode == FlightMode.MISSION:
            self._apply_navigation(self._navigator.start_item(self))
        return result

    def start_mission(self, first: int = 0) -> CommandResult:
        """MAV_CMD_MISSION_START as PX4 v1.16 answers it: ACCEPTED, but without a valid mission the
        vehicle stays in its mode (PX4 plays its "negative" tune and says nothing)."""
        if first > 0:
            result = self.set_mission_current(first)
            if not result.accepted:
                return result
        if self._navigator.mission_valid and self.mode != FlightMode.MISSION:
            self._user_mode(FlightMode.MISSION)
        return ACCEPTED

    def takeoff(self, alt_amsl: float, lat: float = NAN, lon: float = NAN) -> CommandResult:
        """MAV_CMD_NAV_TAKEOFF: climb to param7 (AMSL), never below MIS_TAKEOFF_ALT above home, then hold.

        Like PX4 it is a mode switch, accepted while disarmed too: arming then starts the climb.
        """
        n, e, d = self.position
        if not (math.isnan(lat) or math.isnan(lon)):
            n, e, _ = self.origin.to_local(lat, lon, self.origin.alt_m)
        home_alt = self.origin.alt_m - self.home[2]
        minimum = self.params["MIS_TAKEOFF_ALT"]
        target_down = self.origin.alt_m - alt_amsl
        if target_down > d:
            # Below the vehicle, on the ground too (measured on v1.16.1: MAVProxy's `takeoff 5`, 5 m above sea
            # level): PX4 says so, goes to Takeoff and stays where it is.
            self.say(mavlink.MAV_SEVERITY_INFO, "Already higher than takeoff altitude")
            target_down = d
        elif math.isnan(alt_amsl):
            self.say(mavlink.MAV_SEVERITY_INFO, f"Using default takeoff altitude: {minimum:.1f} m")  # v1.16.1's words
            target_down = self.origin.alt_m - (home_alt + minimum)
        elif alt_amsl - home_alt < minimum:
            self.say(mavlink.MAV_SEVERITY_CRITICAL, f"Using minimum takeoff altitude: {minimum:.2f} m")
            target_down = self.origin.alt_m - (home_alt + minimum)
        self._user_mode(FlightMode.TAKEOFF, target=(n, e, target_down))
        return ACCEPTED

    def land(self) -> CommandResult:
        """MAV_CMD_NAV_LAND at the current position."""
        self.say(mavlink.MAV_SEVERITY_INFO, "Landing at current position")  # PX4 v1.16.1's words (measured)
        self._user_mode(FlightMode.LAND)
        return ACCEPTED

    def return_to_launch(self) -> CommandResult:
        """MAV_CMD_NAV_RETURN_TO_LAUNCH."""
        self._user_mode(FlightMode.RTL)
        return ACCEPTED

    def reposition(self, north: float, east: float, down: float, yaw: float = NAN, speed: float = -1.0) -> CommandResult:
        """MAV_CMD_DO_REPOSITION: go to a point and hold there (PX4 does it in Hold mode)."""
        if not self.armed:
            return denied("Reposition denied: vehicle is not armed")
        if self.params["GF_ACTION"] != 0 and \
                self._failsafe_checks.outside_fence((north, east, down), self.home, self.params):
            # PX4's navigator does not fly it and stays in its mode (the command is still ACCEPTED).
            self.say(mavlink.MAV_SEVERITY_CRITICAL, "Reposition is outside geofence")
            return ACCEPTED
        self._navigator.speed_override = speed if speed > 0 else None
        self._user_mode(FlightMode.HOLD, target=(north, east, down), yaw=yaw)
        return ACCEPTED

    def orbit(self, radius: float, speed: float, yaw_mode: float, lat: float = NAN, lon: float = NAN,
              alt_amsl: float = NAN) -> CommandResult:
        """MAV_CMD_DO_ORBIT (see px4.sim.orbit): circle a centre (default: here) at an altitude (default:
        this one); refused on the ground."""
        if not self.armed or self.landed:
            reason = "Orbit not possible: vehicle is not flying"
            self.say(mavlink.MAV_SEVERITY_CRITICAL, reason)
            return rejected(reason)
        n, e, d = self.position
        if math.isfinite(lat) and math.isfinite(lon):
            n, e, _ = self.origin.to_local(lat, lon, self.origin.alt_m)
        if math.isfinite(alt_amsl):
            d = self.origin.alt_m - alt_amsl
        p = self.params
        orbit = Orbit.from_command(radius, speed, yaw_mode, (n, e), d, self.dyn.yaw, p["MC_ORBIT_RAD_MAX"],
                                   p["MPC_ACC_HOR"], int(p["MC_ORBIT_YAW_MOD"]))
        self._tasks.start_orbit(orbit, self.dyn.yaw)
        self._user_mode(FlightMode.ORBIT)
        return ACCEPTED

    def change_speed(self, speed: float) -> CommandResult:
        """MAV_CMD_DO_CHANGE_SPEED (ground speed, m/s); <= 0 restores the default."""
        self._navigator.change_speed(speed if speed > 0 else None)
        return ACCEPTED

    def offboard_setpoint(self, setpoint: TrajectorySetpoint | AttitudeSetpoint) -> None:
        """A SET_POSITION_TARGET_* / SET_ATTITUDE_TARGET arrived."""
        self.offboard = OffboardInput(setpoint, self.time_s)
        self._flown = (None, 0, _NO_SETPOINT)  # the same object again may carry new values

    # ------------------------------------------------------------------ simulation
    def step(self) -> None:
        """Advance the whole vehicle by one physics step."""
        self.advance(math.inf, steps=1)

    def run(self, seconds: float) -> None:
        """Step for a span of simulation time."""
        self.advance(math.inf, steps=int(round(seconds / self.dt)))

    def advance(self, until: float, due: float = math.inf, steps: int | None = None) -> int:
        """Step while ``time_s + dt / 2 < until``, at most `steps` steps, and stop after the step that
        brings `time_s` to `due` or past it (a caller's next event). Returns the steps taken.

        The navigator runs every NAV_PERIOD_S; between its runs the controllers and the physics run
        as one compiled loop (`px4.sim.inner_loop`)."""
        # Called for every run of steps between two navigator cycles or snapshots (twice per cycle in lockstep):
        # what it reads more than once is read once, and the compiled loop is called here without a wrapper.
        dyn, ctrl, faults = self.dyn, self.ctrl, self.faults
        dt, nav_steps = self.dt, self._nav_steps
        half_step = 0.5 * dt
        left = steps if steps is not None else _UNLIMITED
        taken = 0
        while left > 0 and self.time_s + half_step < until:
            phase = self._step_count % nav_steps
            if phase == 0:
                self._navigate(nav_steps * dt)
            chunk = min(left, nav_steps - phase)
            if faults.gust > 0.0:
                # Gusts draw from the fault's random generator every step, in Python.
                chunk = 1
                faults.step(dt)
            sp = self.current_setpoint
            kind, sp_array = kern.NO_SETPOINT, _NO_SETPOINT
            if not self.armed:
                drive = MOTORS_OFF
            elif sp is None or self._idle:
                drive = MOTORS_IDLE
            else:
                drive = MOTORS_CONTROLLED
                flown, kind, sp_array = self._flown
                if sp is not flown:
                    kind, sp_array = setpoint_array(sp)
                    self._flown = (sp, kind, sp_array)
                ctrl.sync_params()
            working = _ALL_WORKING if not faults.motors_off else np.array(
                [0.0 if i in faults.motors_off else 1.0 for i in range(4)])
            done, self.time_s = run_steps(dyn.state, dyn.model, dyn.rotor_efficiency, dyn.wind_ned, ctrl.state,
                                          ctrl.constants, ctrl.limits, kind, sp_array, drive, working, self._motors,
                                          self.time_s, until, due, chunk)
            self._step_count += done
            taken += done
            left -= done
            if done < chunk:  # stopped at `until` or `due`
                break
        return taken

    @property
    def motor_commands(self) -> list[float]:
        """What the motors got in the last step (normalized thrust, PX4's motor order)."""
        return self._motors.tolist()

    # ------------------------------------------------------------------ internals
    @property
    def offboard_signal(self) -> bool:
        """Offboard setpoints are arriving (the last within COM_OF_LOSS_T), as PX4's offboardCheck says."""
        return self.offboard is not None and self.time_s - self.offboard.time_s <= self.params["COM_OF_LOSS_T"]

    def param_snapshot(self) -> dict[str, float]:
        """The parameters as a dict, copied again only after a change (read many times at 50 Hz)."""
        if self._snapshot_version != self.params.version:
            self._snapshot_version = self.params.version
            self._snapshot = self.params.as_dict()
        return self._snapshot

    def _disarm(self, why: str) -> None:
        self.armed = False
        self.armed_at = None
        self.current_setpoint = None
        self.say(mavlink.MAV_SEVERITY_INFO, why)
        # PX4 returns to the last mode the user chose that can be armed in (v1.14.0 and v1.16.1,
        # measured: Hold after a takeoff, a reposition or a mission; Offboard after Offboard then Land).
        if self.mode != self._mode_after_disarm:
            self._enter_mode(self._mode_after_disarm)

    def _user_mode(self, mode: FlightMode, target: tuple[float, float, float] | None = None,
                   yaw: float = NAN) -> None:
        """Enter a mode the user (or the end of a takeoff or mission) chose, as opposed to a failsafe's."""
        if mode not in NOT_AFTER_DISARM:
            self._mode_after_disarm = mode
        self._enter_mode(mode, target, yaw)

    def _enter_mode(self, mode: FlightMode, target: tuple[float, float, float] | None = None, yaw: float = NAN) -> None:
        previous = self.mode
        self.mode = mode
        self._stick_hold = None
        self._altitude_hold = None
        if not mode.is_auto:
            self._auto_active = False
        if mode == FlightMode.OFFBOARD:
            self.failsafe = False
        reposition = mode == FlightMode.HOLD and target is not None
        if mode == FlightMode.HOLD and target is None:
            target = self._braking_point()
        self._apply_navigation(self._navigator.activate(mode, self, previous, target, yaw, reposition))

    def _apply_navigation(self, events: tuple[NavEvent, ...]) -> None:
        """Do what the navigator asked, in order: say, hold where it says (as the user's mode), switch."""
        for event in events:
            if isinstance(event, Say):
                self.say(event.severity, event.text)
            elif isinstance(event, HoldAt):
                self._user_mode(FlightMode.HOLD)
                self._navigator.loiter_at(event.target, event.yaw)
            else:
                self._enter_mode(event.mode)

    def _braking_point(self) -> tuple[float, float, float]:
        """Where the vehicle can stop from its current velocity (PX4's Loiter brakes, then holds)."""
        p, v = self.position, self.dyn.vel
        if self.landed:
            return p[0], p[1], p[2]
        jerk = max(self.params["MPC_JERK_AUTO"], 0.1)
        acc_xy = max(self.params["MPC_ACC_HOR"], 0.1)
        speed = math.hypot(v[0], v[1])
        # Braking at MPC_ACC_HOR after the acceleration has built up at MPC_JERK_AUTO.
        dist = speed * speed / (2.0 * acc_xy) + speed * acc_xy / jerk
        scale = dist / speed if speed > 1e-6 else 0.0
        acc_z = max(self.params["MPC_ACC_UP_MAX"] if v[2] > 0 else self.params["MPC_ACC_DOWN_MAX"], 0.1)
        down = p[2] + v[2] * abs(v[2]) / (2.0 * acc_z)
        return p[0] + v[0] * scale, p[1] + v[1] * scale, down

    def _navigate(self, dt: float) -> None:
        """50 Hz: failsafes, mission checks, land detection, battery, mode progress, setpoints."""
        for action in self._failsafe_checks.decide(self):
            self._apply_failsafe(action)
        self._navigator.cycle()
        if not self.armed:
            self._takeoff.update(self.time_s, False, True, False, 0.0)
            self._idle = True
            self._detect_landing(NAN)
            return
        self._drain_battery(dt)
        want_takeoff = False
        caps: tuple[float | None, float | None, float | None] = _NO_CAPS
        if self._pilot_override():
            want_takeoff = self._climb_wanted(self.current_setpoint)
        elif (mode := self.mode) is _OFFBOARD:
            if self.offboard is not None:
                self.current_setpoint = self.offboard.setpoint
            want_takeoff = self._climb_wanted(self.current_setpoint)
        elif mode in _STICK_MODES:
            self._fly_sticks()
            want_takeoff = self._climb_wanted(self.current_setpoint)
        elif mode is _ORBIT and self._tasks.orbit is not None:
            caps = self._fly_task(self._tasks.orbit_step(self, dt), dt)
        elif mode is _FOLLOW_TARGET:
            caps = self._fly_task(self._tasks.follow_step(self, dt), dt)
        else:
            self._apply_navigation(self._navigator.update(mode, self))
            if self.mode is _LAND and not self.position_valid:
                # PX4's Descend: MPC_LAND_SPEED down, no horizontal control, the heading held.
                self._auto_active = False
                self.current_setpoint = TrajectorySetpoint(velocity=(NAN, NAN, self.params["MPC_LAND_SPEED"]),
                                                           acceleration=(0.0, 0.0, NAN))
            elif self.mode in AUTO_MODES:  # a failsafe or the mission may have changed it
                out = self._auto_setpoint(dt)
                want_takeoff = out.want_takeoff
                caps = (None, out.speed_up, out.speed_down)
        self._control_takeoff(want_takeoff, caps, dt)

    def _apply_failsafe(self, action: FailsafeAction) -> None:
        """Do what a failsafe check decided: tell the pilot, then switch mode or cut the motors."""
        self.say(action.severity, action.text)
        if action.act is Act.NONE:
            return
        self.failsafe = True
        if isinstance(action.act.value, FlightMode):
            self._enter_mode(action.act.value)
        else:  # disarm or terminate: PX4 cuts the motors
            self._disarm(f"Failsafe: {action.act.value}")

    def _fly_task(self, step: TaskStep, dt: float) -> tuple[float | None, float | None, float | None]:
        """Fly a cycle of Orbit or Follow Target: its setpoint, or the navigator's triplet by the auto flight
        task. Returns the controller's caps."""
        if step.triplet is not None:
            self._navigator.fly(step.triplet)
        if step.setpoint is None:
            if step.loiter_here and (self._navigator.triplet is None or self._navigator.triplet.kind != Kind.LOITER):
                self._navigator.fly(Triplet(self._braking_point(), Kind.LOITER))
            out = self._auto_setpoint(dt)
            return None, out.speed_up, out.speed_down
        if step.restart_auto:
            self._auto_active = False
        self.current_setpoint = step.setpoint
        return None, None, None

    def _detect_landing(self, vz_sp: float) -> None:
        """The land detector's verdict: the landed state, what to say, an auto-disarm."""
        verdict = self._landing.update(self, 0.0 if self._idle else self.ctrl.thrust_sp, vz_sp)
        self.landed = verdict.landed
        for text in verdict.said:
            self.say(mavlink.MAV_SEVERITY_INFO, text)
        if verdict.disarm:
            self._disarm(verdict.disarm)
        self.landed_state = self._landing.landed_state(self)

    def _climb_wanted(self, sp) -> bool:
        """PX4's want_takeoff outside auto modes: a setpoint above, or a climb or upward push."""
        if not isinstance(sp, TrajectorySetpoint):
            return isinstance(sp, AttitudeSetpoint)
        return ((math.isfinite(sp.position[2]) and sp.position[2] < self.dyn.pos[2])
                or (math.isfinite(sp.velocity[2]) and sp.velocity[2] < 0.0)
                or (math.isfinite(sp.acceleration[2]) and sp.acceleration[2] < 0.0))

    def _control_takeoff(self, want_takeoff: bool, caps: tuple[float | None, float | None, float | None],
                         dt: float) -> None:
        """mc_pos_control's share: the takeoff ramp, idle before it, no thrust on ground contact."""
        p = self.param_snapshot()
        sp = self.current_setpoint
        attitude = isinstance(sp, AttitudeSetpoint)
        takeoff = self._takeoff
        takeoff.update(self.time_s, True, self.landed, want_takeoff, p["COM_SPOOLUP_TIME"], skip=attitude)
        climb_max = p["MPC_Z_VEL_MAX_UP"]
        climb = caps[1] if caps[1] is not None else climb_max
        up = takeoff.upward_limit(dt, min(climb, climb_max), p["MPC_TKO_RAMP_T"], p["MPC_Z_VEL_P_ACC"])
        flying = takeoff.flying
        self.ctrl.set_flight_limits(caps[0], up, caps[2], flying=flying)
        self._idle = idle = not takeoff.taken_off
        if idle and self._auto_active:
            self._task.on_ground(self.position)
        vz_sp = sp.velocity[2] if isinstance(sp, TrajectorySetpoint) else NAN
        if idle or (flying and self._landing.ground_contact and not attitude):
            self.ctrl.reset_integral()
            if not idle:
                self.current_setpoint = GROUND_CONTACT_SETPOINT
        self._detect_landing(vz_sp)

    def _auto_setpoint(self, dt: float):
        """The flight task's setpoint for the current triplet (started afresh when auto flight begins)."""
        pos, yaw = self.position, self.dyn.yaw
        if not self._auto_active:
            last = self.current_setpoint if isinstance(self.current_setpoint, TrajectorySetpoint) else None
            # PX4 runs no flight task in offboard (FlightModeManager's task is None there), so a task
            # started after offboard begins from the vehicle's state, not from the offboard setpoint:
            # starting from a far-away offboard target made Land fly on towards it.
            if self.landed or (self.offboard is not None and last is self.offboard.setpoint):
                last = None
            vel = self.dyn.vel if not self.landed else (0.0, 0.0, 0.0)
            self._task.activate(last, pos, (vel[0], vel[1], vel[2]), yaw)
            self._auto_active = True
        altitude = self.home[2] - pos[2]
        triplet = self._navigator.triplet
        # Only a landing asks whether the range finder measures the height (read 50 times a second).
        out = self._task.update(triplet, pos, yaw, altitude, dt, triplet.kind is not _LAND_TRIPLET or self.distance_valid)
        self.current_setpoint = out.setpoint
        return out

    def _pilot_override(self) -> bool:
        """PX4's COM_RC_OVERRIDE: moving the sticks in an auto/offboard mode hands control to the pilot."""
        if self.manual.sticks is None:  # no RC ever: nothing to take over with
            return False
        bits = int(self.params["COM_RC_OVERRIDE"])
        eligible = (self.mode.is_auto and bits & 1) or (self.mode == FlightMode.OFFBOARD and bits & 2)
        if not (eligible and self.rc_available and not self.landed):
            return False
        if self.manual.sticks.deflection() * 100.0 < self.params["COM_RC_STICK_OV"]:
            return False
        self.say(mavlink.MAV_SEVERITY_WARNING, "Pilot took over using sticks")
        self._user_mode(FlightMode.POSCTL)
        self._fly_sticks()
        return True

    def _fly_sticks(self) -> None:
        """Position mode: sticks command velocity; a centred throttle holds the altitude, centred
        roll and pitch brake and then hold the position reached (PX4's FlightTaskManualAltitude and
        its position-mode successors)."""
        p = self.params
        yaw = self.dyn.yaw
        vn, ve, vd, yaw_rate = self.manual.velocity_setpoint(yaw, p["MPC_VEL_MANUAL"], p["MPC_Z_VEL_MAX_UP"],
                                                             p["MPC_Z_VEL_MAX_DN"])
        vd = ground_slowdown(vd, self.home[2] - self.dyn.pos[2], p)
        z_sp = NAN
        if vd == 0.0 and not self.landed:
            if self._altitude_hold is None and abs(self.dyn.vel[2]) < ALTITUDE_LOCK_SPEED:
                self._altitude_hold = self.dyn.pos[2]
            z_sp = self._altitude_hold if self._altitude_hold is not None else NAN
        else:
            self._altitude_hold = None
        # Heading: held while the yaw stick is centred (the controller integrates the yaw rate).
        yawspeed = yaw_rate * math.radians(p["MPC_MAN_Y_MAX"])
        if self.manual.horizontal_centred():
            if self._stick_hold is None:
                v = self.dyn.vel
                if math.hypot(v[0], v[1]) > STICK_HOLD_SPEED:
                    # Just centred: brake to a standstill first, as PX4 does, then lock the position.
                    self.current_setpoint = TrajectorySetpoint((NAN, NAN, z_sp), (0.0, 0.0, vd), (NAN, NAN, NAN),
                                                               NAN, yawspeed)
                    return
                self._stick_hold = self.position
            hold = self._stick_hold
            self.current_setpoint = TrajectorySetpoint((hold[0], hold[1], z_sp), (NAN, NAN, vd), (NAN, NAN, NAN),
                                                       NAN, yawspeed)
            return
        self._stick_hold = None
        self.current_setpoint = TrajectorySetpoint((NAN, NAN, z_sp), (vn, ve, vd), (NAN, NAN, NAN), NAN, yawspeed)
