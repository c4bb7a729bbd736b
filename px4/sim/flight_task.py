"""Auto-mode setpoints from waypoint triplets: PX4's FlightTaskAuto for the built-in vehicle.

PX4's navigator publishes a triplet (previous, current and next waypoint, and what the current one
is: a position, a takeoff, a landing, a loiter); the flight task turns it into the trajectory
setpoint the position controller follows. What it decides, as PX4 does:

* the trajectory (px4.sim.navigator) and its constraints per leg: MPC_JERK_AUTO, MPC_ACC_HOR and
  the cruise speed horizontally; climbing MPC_ACC_UP_MAX and MPC_Z_V_AUTO_UP, or during a takeoff
  below MPC_LAND_ALT1 MPC_TKO_SPEED with the acceleration MPC_TKO_SPEED / MPC_TKO_RAMP_T and the
  trajectory's altitude pinned to the vehicle's (the thrust ramp is the controller's);
  descending MPC_ACC_DOWN_MAX and MPC_Z_V_AUTO_DN;
* the landing descent speed: MPC_Z_VEL_MAX_DN above MPC_LAND_ALT1, MPC_LAND_SPEED below
  MPC_LAND_ALT2, interpolated between, and MPC_LAND_CRWL for the last MPC_LAND_ALT3 (PX4 crawls
  when a range finder measures the height, as SIH's does in v1.16);
* where it steers: straight to the target, or back onto the leg when the vehicle is off the track
  by more than the acceptance radius, or to the previous waypoint when that is still ahead;
* the heading: the waypoint's yaw if it has one, else towards the target (MPC_YAW_MODE 0) while
  farther than the acceptance radius, and never turning faster than MPC_YAWRAUTO_MAX;
* whether the vehicle wants to take off (the trajectory climbs faster than 0.3 m/s), and the
  velocity caps it hands to the controller (1.2 times the auto climb and descent speeds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from px4.params import ParamStore
from px4.sim.control import TrajectorySetpoint
from px4.sim.navigator import Limits, PositionSmoothing

NAN = math.nan
Vec3 = tuple[float, float, float]
WANT_TAKEOFF_VZ = -0.3  # m/s: the trajectory climbs faster than this
YAWSPEED_FILTER_S = 0.2  # time constant of the yaw-rate feed-forward
CONTROLLER_SPEED_MARGIN = 1.2  # the controller's caps leave room above the trajectory's speeds
HOVER_YAWSPEED = 1e-4  # rad/s: a yaw-rate feed-forward this small is done (holding still)
GROUND_SINK_VZ = 0.7  # m/s down: the trajectory's velocity while the vehicle waits on the ground


class Kind(Enum):
    """What the current waypoint is (PX4's position_setpoint type)."""

    POSITION = 0
    LOITER = 1
    TAKEOFF = 2
    LAND = 3


@dataclass(frozen=True)
class Triplet:
    """The navigator's waypoints: `current` may have NaN components (a landing has no altitude)."""

    current: Vec3
    kind: Kind = Kind.POSITION
    previous: Vec3 | None = None
    next: Vec3 | None = None
    acceptance_radius: float = NAN  # NaN: NAV_ACC_RAD
    yaw: float = NAN  # NaN: heading towards the target
    cruise_speed: float = NAN  # NaN: MPC_XY_CRUISE


class TaskOutput(NamedTuple):
    """One cycle of the flight task."""

    setpoint: TrajectorySetpoint
    want_takeoff: bool
    speed_up: float  # velocity caps for the controller
    speed_down: float


# Bound once for the checks made every cycle: in Python 3.11 a member looked up on its Enum class goes
# through EnumType's __getattr__ hook (about 0.1 us, four times a plain attribute).
_LOITER, _TAKEOFF, _LAND = Kind.LOITER, Kind.TAKEOFF, Kind.LAND
_HOLDING = (Kind.POSITION, Kind.LOITER)


def _interpolate(x: float, x0: float, x1: float, y0: float, y1: float) -> float:
    if x <= x0:
        return y0
    if x >= x1:
        return y1
    return y0 + (x - x0) / (x1 - x0) * (y1 - y0)


class AutoFlightTask:
    """Triplets in, trajectory setpoints out; `activate` when auto flight (re)starts."""

    def __init__(self, params: ParamStore) -> None:
        self.params = params
        self._params_version = -1
        self._p: dict[str, float] = {}
        self.smooth = PositionSmoothing()
        self._unsmoothed_vz = 0.0
        self._yaw_sp = NAN
        self._yaw_prev = NAN
        self._yaw_locked = False
        self._yawspeed = 0.0
        self._land_xy: tuple[float, float] | None = None
        self._land_yaw = NAN
        self._triplet_seen: Triplet | None = None
        self._triplet_prev: Vec3 = (0.0, 0.0, 0.0)
        self._state = "none"
        self._closest: Vec3 = (0.0, 0.0, 0.0)
        self._internal: tuple[Vec3, Vec3, Vec3] = ((0.0, 0.0, 0.0),) * 3
        self._limits: dict[tuple, Limits] = {}
        self._caps = (0.0, 0.0)  # the controller's climb and descent caps, from the parameters
        self._hover: TaskOutput | None = None  # the output while holding still at `_hover_triplet`
        self._hover_triplet: Triplet | None = None

    def activate(self, last: TrajectorySetpoint | None, pos: Vec3, vel: Vec3, yaw: float) -> None:
        """Start from the last setpoint flown (its missing parts from the vehicle's state)."""
        if last is None:
            last = TrajectorySetpoint()
        p = tuple(last.position[i] if math.isfinite(last.position[i]) else pos[i] for i in range(3))
        v = tuple(last.velocity[i] if math.isfinite(last.velocity[i]) else vel[i] for i in range(3))
        a = tuple(last.acceleration[i] if math.isfinite(last.acceleration[i]) else 0.0 for i in range(3))
        self.smooth.reset(a, v, p)
        self._yaw_prev = last.yaw if math.isfinite(last.yaw) else yaw
        self._yaw_sp = self._yaw_prev
        self._yaw_locked = False
        self._yawspeed = 0.0
        self._unsmoothed_vz = 0.0
        self._land_xy = None
        self._triplet_seen = None
        self._hover = None

    def on_ground(self, pos: Vec3) -> None:
        """Before the takeoff ramp: start the trajectory afresh at the vehicle, already sinking.

        PX4's FlightModeManager re-activates the task every cycle until the takeoff ramp starts,
        and FlightTaskAuto::reActivate resets the trajectory to GROUND_SINK_VZ downwards there. The
        trajectory so begins the takeoff from a descent: the first ~1.5 s of the ramp bring it to a
        standstill, and the vehicle leaves the ground slowly (measured on PX4 v1.16.1 SIH: 0.4 m/s
        half a second after lift-off, against 0.85 m/s when the trajectory climbed from the arming).
        """
        self.smooth.reset((0.0, 0.0, 0.0), (0.0, 0.0, GROUND_SINK_VZ), pos)
        self._hover = None

    def _snapshot(self) -> dict[str, float]:
        # The parameters this task reads, re-read only when the store changed (50 Hz adds up).
        if self._params_version != self.params.version:
            self._params_version = self.params.version
            p = self._p = self.params.as_dict()
            self._limits.clear()
            self._caps = (max(p["MPC_Z_VEL_MAX_UP"], CONTROLLER_SPEED_MARGIN * p["MPC_Z_V_AUTO_UP"]),
                          max(p["MPC_Z_VEL_MAX_DN"], CONTROLLER_SPEED_MARGIN * p["MPC_Z_V_AUTO_DN"]))
        return self._p

    def _constraints(self, cruise: float, radius: float, climb: bool, takeoff_low: bool) -> Limits:
        # One Limits per leg and phase (the trajectory compares them every cycle).
        key = (cruise, radius, climb, takeoff_low)
        lim = self._limits.get(key)
        if lim is None:
            p = self._p
            lim = Limits(jerk=p["MPC_JERK_AUTO"], acc_xy=p["MPC_ACC_HOR"], vel_xy=p["MPC_XY_VEL_MAX"], cruise=cruise,
                         acc_z=p["MPC_ACC_DOWN_MAX"], vel_z=p["MPC_Z_V_AUTO_DN"], acceptance_radius=radius,
                         alt_acceptance=p["NAV_MC_ALT_RAD"], corner_gain=p["MPC_XY_TRAJ_P"],
                         max_lag=p["MPC_XY_ERR_MAX"])
            if climb:
                lim.acc_z, lim.vel_z = p["MPC_ACC_UP_MAX"], p["MPC_Z_V_AUTO_UP"]
                if takeoff_low:
                    lim.vel_z = p["MPC_TKO_SPEED"]
                    lim.acc_z = min(lim.acc_z, p["MPC_TKO_SPEED"] / p["MPC_TKO_RAMP_T"])
            self._limits[key] = lim
        return lim

    def update(self, t: Triplet, pos: Vec3, yaw: float, altitude: float, dt: float,
               distance_valid: bool = True) -> TaskOutput:
        """The setpoint for this cycle; `altitude` is the height above home (PX4's distance to ground),
        `distance_valid` whether the range finder measures it."""
        if t is self._hover_triplet and self._hover is not None and self._params_version == self.params.version:
            return self._hover  # holding still where the trajectory settled, heading reached
        self._hover = None
        p = self._snapshot()
        radius = t.acceptance_radius if math.isfinite(t.acceptance_radius) else p["NAV_ACC_RAD"]
        prev, target, nxt = self._waypoints(t, pos, radius)
        cruise = t.cruise_speed if math.isfinite(t.cruise_speed) and t.cruise_speed > 0 else p["MPC_XY_CRUISE"]
        cruise = min(cruise, p["MPC_XY_VEL_MAX"])

        feedforward: Vec3 = (NAN, NAN, NAN)
        kind = t.kind
        if kind is _LAND:
            if self._land_xy is None:
                self._land_xy = (target[0], target[1])
                self._land_yaw = self._yaw_prev if math.isfinite(self._yaw_prev) else yaw
            vz = _interpolate(altitude, p["MPC_LAND_ALT2"], max(p["MPC_LAND_ALT1"], p["MPC_LAND_ALT2"]),
                              p["MPC_LAND_SPEED"], p["MPC_Z_VEL_MAX_DN"])
            if altitude <= p["MPC_LAND_ALT3"] and distance_valid:
                # The last metre at crawl speed, as PX4 v1.16 SIH does with its range finder; once that
                # reads below its minimum at touchdown, MPC_LAND_SPEED again (measured in its ULog: the
                # setpoint goes from 0.3 to 0.7 m/s at touchdown, which brings the thrust down at once).
                vz = p["MPC_LAND_CRWL"]
            target = (self._land_xy[0], self._land_xy[1], NAN)
            feedforward = (NAN, NAN, vz)
        else:
            self._land_xy = None

        climb = self._unsmoothed_vz < 0.0
        takeoff_low = climb and kind is _TAKEOFF and altitude < p["MPC_LAND_ALT1"]
        if takeoff_low:
            # The thrust ramp starts below zero climb: keep the trajectory's altitude on the
            # vehicle's so it never runs into the ground meanwhile.
            self.smooth.force_position((NAN, NAN, pos[2]))
        self.smooth.configure(self._constraints(cruise, radius, climb, takeoff_low))
        out = self.smooth.update(pos, (prev, target, nxt), feedforward, dt)
        self._unsmoothed_vz = out.unsmoothed_velocity[2]

        yaw_sp, yawspeed = self._heading(t, target if kind is not _LAND else (target[0], target[1], 0.0),
                                         pos, yaw, radius, dt)
        position = (out.position[0], out.position[1], NAN if kind is _LAND else out.position[2])
        hover = (self.smooth.settled and kind in _HOLDING and yaw_sp == self._yaw_prev_in
                 and abs(yawspeed) < HOVER_YAWSPEED)
        if hover:
            yawspeed = self._yawspeed = 0.0
        sp = TrajectorySetpoint(position, out.velocity, out.acceleration, yaw_sp, yawspeed)
        result = TaskOutput(sp, out.unsmoothed_velocity[2] < WANT_TAKEOFF_VZ, *self._caps)
        if hover:
            self._hover, self._hover_triplet = result, t
        return result

    # --- where to steer ------------------------------------------------------------------------

    def _waypoints(self, t: Triplet, pos: Vec3, radius: float) -> tuple[Vec3, Vec3, Vec3]:
        """PX4's internal waypoints: back onto the leg when off track, to the previous one when it is ahead."""
        c = t.current
        target = (c[0] if c[0] == c[0] else pos[0], c[1] if c[1] == c[1] else pos[1],
                  c[2] if c[2] == c[2] else pos[2])  # NaN: where the vehicle is
        nxt = t.next if (t.next is not None and t.kind is not _LOITER) else target
        changed = t is not self._triplet_seen  # the navigator hands over a new triplet object per change
        if changed:
            self._triplet_seen = t
            self._triplet_prev = t.previous if t.previous is not None else pos
        prev = self._triplet_prev
        state = self._track_state(prev, target, pos, radius)
        if changed or state != self._state or state == "offtrack":
            self._state = state
            if state == "behind":
                self._internal = (pos, target, nxt)
            elif state == "previous_ahead":
                self._internal = (pos, prev, target)
            elif state == "offtrack":
                self._internal = (pos, self._closest, target)
            else:
                self._internal = (prev, target, nxt)
        return self._internal

    def _track_state(self, prev: Vec3, target: Vec3, pos: Vec3, radius: float) -> str:
        dn, de = target[0] - prev[0], target[1] - prev[1]
        length = math.hypot(dn, de)
        if length < 1e-6:
            return "none"
        un, ue = dn / length, de / length
        along = (pos[0] - prev[0]) * un + (pos[1] - prev[1]) * ue
        self._closest = (prev[0] + un * along, prev[1] + ue * along, target[2])
        if un * (target[0] - pos[0]) + ue * (target[1] - pos[1]) < 0.0:
            return "behind"
        if along < 0.0 and math.hypot(pos[0] - prev[0], pos[1] - prev[1]) > radius:
            return "previous_ahead"
        if math.hypot(pos[0] - self._closest[0], pos[1] - self._closest[1]) > radius:
            return "offtrack"
        return "none"

    # --- heading -------------------------------------------------------------------------------

    def _heading(self, t: Triplet, target: Vec3, pos: Vec3, yaw: float, radius: float, dt: float) -> tuple[float, float]:
        if t.kind is _LAND:
            want = self._land_yaw
        elif math.isfinite(t.yaw):
            want = t.yaw
        else:
            dn, de = target[0] - pos[0], target[1] - pos[1]
            if math.hypot(dn, de) > radius:
                self._yaw_sp = math.atan2(de, dn)
                self._yaw_locked = True
            if not self._yaw_locked:
                self._yaw_sp = yaw
                self._yaw_locked = True
            want = self._yaw_sp
        if not math.isfinite(self._yaw_prev):
            self._yaw_prev = yaw
        self._yaw_prev_in = self._yaw_prev
        # Rate limit (MPC_YAWRAUTO_MAX), with a filtered feed-forward of the resulting yaw rate.
        max_step = math.radians(self._p["MPC_YAWRAUTO_MAX"]) * dt  # `update` took the snapshot
        step = min(max(math.remainder(want - self._yaw_prev, math.tau), -max_step), max_step)
        yaw_sp = math.remainder(self._yaw_prev + step, math.tau)
        alpha = dt / (dt + YAWSPEED_FILTER_S)
        self._yawspeed += alpha * (step / dt - self._yawspeed)
        self._yaw_prev = yaw_sp
        return yaw_sp, self._yawspeed
