"""The built-in vehicle's parameter table: every parameter of PX4 v1.16.1 SITL, with PX4's types and values.

Everything a client may read or set over the MAVLink parameter protocol lives here, so that the
same name means the same thing on the built-in vehicle, on PX4 SITL and on a real PX4 flight
controller. The table is PX4 v1.16.1 SIH's as measured right after boot (px4/reference/): a
ground station sees the same ~900 names, types and values. The parameters the built-in vehicle
acts on are `SPECS` below, with their units, ranges and meaning; the rest are stored and echoed
like PX4 does, and mean nothing to the vehicle. Physical parameters use the names of PX4's SIH
simulator (SIH_*); they are filled from the vehicle profile when the vehicle is built.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from px4.crc32 import crc32part


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: PX4 name, MAVLink type, default, range and meaning."""

    name: str
    default: float
    is_int: bool = False
    min: float = -math.inf
    max: float = math.inf
    unit: str = ""
    doc: str = ""


def _f(name: str, default: float, lo: float = -math.inf, hi: float = math.inf, unit: str = "", doc: str = "") -> ParamSpec:
    return ParamSpec(name, float(default), False, lo, hi, unit, doc)


def _i(name: str, default: int, lo: float = -math.inf, hi: float = math.inf, unit: str = "", doc: str = "") -> ParamSpec:
    return ParamSpec(name, float(default), True, lo, hi, unit, doc)


# Grouped as PX4 groups them. Defaults are PX4 v1.16.1 SITL's after boot (px4/reference/; a test holds them to it).
SPECS: tuple[ParamSpec, ...] = (
    # --- multicopter position control (mc_pos_control) ---
    _f("MPC_XY_CRUISE", 5.0, 0.0, 20.0, "m/s", "horizontal speed in auto modes"),
    _f("MPC_XY_VEL_MAX", 12.0, 0.0, 20.0, "m/s", "maximum horizontal speed"),
    _f("MPC_Z_VEL_MAX_UP", 3.0, 0.5, 8.0, "m/s", "maximum climb rate"),
    _f("MPC_Z_VEL_MAX_DN", 1.5, 0.5, 4.0, "m/s", "maximum descent rate"),
    _f("MPC_Z_V_AUTO_UP", 3.0, 0.5, 8.0, "m/s", "climb rate in auto modes"),
    _f("MPC_Z_V_AUTO_DN", 1.5, 0.5, 4.0, "m/s", "descent rate in auto modes"),
    _f("MPC_ACC_HOR", 3.0, 2.0, 15.0, "m/s^2", "horizontal acceleration in auto modes"),
    _f("MPC_ACC_HOR_MAX", 5.0, 2.0, 15.0, "m/s^2", "maximum horizontal acceleration"),
    _f("MPC_ACC_UP_MAX", 4.0, 2.0, 15.0, "m/s^2", "maximum upward acceleration"),
    _f("MPC_ACC_DOWN_MAX", 3.0, 2.0, 15.0, "m/s^2", "maximum downward acceleration"),
    _f("MPC_TILTMAX_AIR", 45.0, 20.0, 89.0, "deg", "maximum tilt in air"),
    _f("MPC_THR_MAX", 1.0, 0.0, 1.0, "norm", "maximum collective thrust"),
    _f("MPC_THR_MIN", 0.12, 0.05, 0.5, "norm", "minimum collective thrust in air"),
    _f("MPC_THR_HOVER", 0.5, 0.1, 0.8, "norm", "hover thrust (the built-in vehicle sets it from its profile)"),
    _f("MPC_XY_P", 0.95, 0.0, 2.0, "1/s", "horizontal position gain"),
    _f("MPC_Z_P", 1.0, 0.0, 1.5, "1/s", "vertical position gain"),
    _f("MPC_XY_VEL_P_ACC", 1.8, 1.2, 5.0, "1/s", "horizontal velocity P gain"),
    _f("MPC_XY_VEL_I_ACC", 0.4, 0.0, 60.0, "1/s^2", "horizontal velocity I gain"),
    _f("MPC_XY_VEL_D_ACC", 0.2, 0.0, 2.0, "", "horizontal velocity D gain"),
    _f("MPC_Z_VEL_P_ACC", 4.0, 2.0, 15.0, "1/s", "vertical velocity P gain"),
    _f("MPC_Z_VEL_I_ACC", 2.0, 0.2, 3.0, "1/s^2", "vertical velocity I gain"),
    _f("MPC_Z_VEL_D_ACC", 0.0, 0.0, 2.0, "", "vertical velocity D gain"),
    _f("MPC_LAND_SPEED", 0.7, 0.6, 4.0, "m/s", "landing descent rate"),
    _f("MPC_TKO_SPEED", 1.5, 1.0, 5.0, "m/s", "takeoff climb rate"),
    # --- multicopter attitude and rate control (mc_att_control, mc_rate_control) ---
    _f("MC_ROLL_P", 6.5, 0.0, 12.0, "1/s", "roll angle gain"),
    _f("MC_PITCH_P", 6.5, 0.0, 12.0, "1/s", "pitch angle gain"),
    _f("MC_YAW_P", 2.8, 0.0, 5.0, "1/s", "yaw angle gain"),
    _f("MC_YAW_WEIGHT", 0.4, 0.0, 1.0, "", "yaw priority in the attitude error"),
    _f("MC_ROLLRATE_MAX", 220.0, 0.0, 1800.0, "deg/s", "maximum roll rate"),
    _f("MC_PITCHRATE_MAX", 220.0, 0.0, 1800.0, "deg/s", "maximum pitch rate"),
    _f("MC_YAWRATE_MAX", 200.0, 0.0, 1800.0, "deg/s", "maximum yaw rate"),
    # --- navigator, commander ---
    _f("MIS_TAKEOFF_ALT", 2.5, 0.0, 1000.0, "m", "default takeoff altitude above home"),
    _f("NAV_ACC_RAD", 2.0, 0.05, 200.0, "m", "acceptance radius when a mission item gives none"),
    _f("NAV_MC_ALT_RAD", 0.8, 0.05, 200.0, "m", "waypoint altitude acceptance"),
    _f("RTL_RETURN_ALT", 30.0, 0.0, 150.0, "m", "return altitude above home"),
    _f("RTL_DESCEND_ALT", 10.0, 2.0, 100.0, "m", "altitude to descend to before landing at home"),
    _i("RTL_CONE_ANG", 45, 0.0, 90.0, "deg", "return altitude cone: close to home the vehicle climbs less"),
    _f("COM_OF_LOSS_T", 1.0, 0.0, 60.0, "s", "offboard setpoint timeout before failsafe"),
    _i("COM_OBL_RC_ACT", 0, 0, 7, "", "offboard loss action: 0 position 1 altitude 2 manual (without RC these fall back to RTL) 3 RTL 4 land 5 hold 6 terminate 7 disarm"),
    _i("GF_ACTION", 2, 0, 5, "", "geofence breach action: 0 none 1 warning 2 hold 3 return 4 terminate 5 land"),
    _f("GF_MAX_HOR_DIST", 0.0, 0.0, 10000.0, "m", "geofence: maximum horizontal distance from home (0: off)"),
    _f("GF_MAX_VER_DIST", 0.0, 0.0, 10000.0, "m", "geofence: maximum altitude above home (0: off)"),
    _i("COM_RC_OVERRIDE", 1, 0, 3, "", "pilot takes over by moving the sticks: bit 0 in auto modes, bit 1 in offboard"),
    _f("COM_RC_STICK_OV", 30.0, 5.0, 80.0, "%", "stick deflection that counts as a pilot taking over"),
    _f("COM_RC_LOSS_T", 0.5, 0.0, 35.0, "s", "RC (MANUAL_CONTROL) silence after which RC is lost"),
    _i("NAV_RCL_ACT", 2, 0, 6, "", "RC loss action in a manual mode: 1 hold 2 return 3 land (others as 2)"),
    _f("MPC_VEL_MANUAL", 10.0, 3.0, 20.0, "m/s", "horizontal speed at full stick in Position mode"),
    _f("MPC_MAN_Y_MAX", 150.0, 0.0, 400.0, "deg/s", "yaw rate at full stick"),
    _f("COM_DISARM_LAND", 2.0, -1.0, 20.0, "s", "auto-disarm after landing (<0: off)"),
    _f("COM_DISARM_PRFLT", 10.0, -1.0, 20.0, "s", "auto-disarm when armed but not taking off (<0: off)"),
    _i("COM_ARM_WO_GPS", 1, 0, 1, "", "allow arming without a GPS fix"),
    _i("SYS_FAILURE_EN", 1, 0, 1, "", "accept MAV_CMD_INJECT_FAILURE (1 in SITL)"),
    _f("BAT_LOW_THR", 0.15, 0.12, 0.5, "norm", "battery low threshold"),
    _f("BAT_CRIT_THR", 0.07, 0.05, 0.5, "norm", "battery critical threshold"),
    # --- SITL simulation of sensors and battery (PX4's SIM_* names) ---
    _f("SIM_BAT_DRAIN", 60.0, 1.0, 86400.0, "s", "time to drain the simulated battery to SIM_BAT_MIN_PCT while armed"),
    _f("SIM_BAT_MIN_PCT", 50.0, 0.0, 100.0, "%", "simulated battery floor"),
    _i("SIM_GPS_USED", 10, 0, 50, "", "simulated GPS satellites used (fewer than 6: no 3D fix)"),
    # --- SIH physical model; filled from the vehicle profile ---
    _f("SIH_MASS", 1.0, 0.0, 100.0, "kg", "vehicle mass"),
    _f("SIH_IXX", 0.025, 0.0, 100.0, "kg m^2", "inertia about body x"),
    _f("SIH_IYY", 0.025, 0.0, 100.0, "kg m^2", "inertia about body y"),
    _f("SIH_IZZ", 0.03, 0.0, 100.0, "kg m^2", "inertia about body z"),
    _f("SIH_T_MAX", 5.0, 0.0, 1000.0, "N", "maximum thrust of one rotor"),
    _f("SIH_Q_MAX", 0.1, 0.0, 10.0, "N m", "maximum reaction torque of one rotor"),
    _f("SIH_L_ROLL", 0.2, 0.0, 10.0, "m", "rotor arm moment about body x"),
    _f("SIH_L_PITCH", 0.2, 0.0, 10.0, "m", "rotor arm moment about body y"),
    _f("SIH_T_TAU", 0.05, 0.0, 1.0, "s", "motor time constant"),
    _f("SIH_KDV", 1.0, 0.0, 10.0, "N/(m/s)", "linear drag"),
    _f("SIH_KDW", 0.025, 0.0, 10.0, "N m/(rad/s)", "angular damping"),
    _f("SIH_LOC_H0", 489.4, -420.0, 8848.0, "m", "home altitude AMSL"),
    _f("SIH_LOC_LAT0", 47.397742, -90.0, 90.0, "deg", "home latitude"),
    _f("SIH_LOC_LON0", 8.545594, -180.0, 180.0, "deg", "home longitude"),
    # === Flight behaviour as PX4 v1.16.1 (issue 18): takeoff, trajectories, landing. Defaults are ===
    # === v1.16.1's, as read from the shipped SITL build.                                             ===
    _f("MPC_TILTMAX_LND", 12.0, 10.0, 89.0, "deg", "maximum tilt until the takeoff ramp is over"),
    _f("MPC_THR_XY_MARG", 0.3, 0.0, 0.5, "norm", "horizontal thrust kept when the vertical thrust saturates"),
    _f("MPC_VELD_LP", 5.0, 0.0, 10.0, "Hz", "low-pass cutoff of the velocity derivative (D term)"),
    _f("COM_SPOOLUP_TIME", 1.0, 0.0, 5.0, "s", "motor spool-up after arming before a takeoff may start"),
    _f("MPC_TKO_RAMP_T", 3.0, 0.1, 10.0, "s", "takeoff ramp: thrust rises from zero over this time"),
    _f("MPC_JERK_AUTO", 4.0, 1.0, 80.0, "m/s^3", "jerk limit of auto-mode trajectories"),
    _f("MPC_XY_TRAJ_P", 0.5, 0.1, 1.0, "", "share of MPC_ACC_HOR an auto trajectory uses to turn at a waypoint"),
    _f("MPC_XY_ERR_MAX", 2.0, 0.1, 10.0, "m", "horizontal lag at which an auto trajectory stops to wait"),
    _f("MPC_LAND_ALT1", 10.0, 0.0, 122.0, "m", "landing: below this the descent slows towards MPC_LAND_SPEED"),
    _f("MPC_LAND_ALT2", 5.0, 0.0, 122.0, "m", "landing: below this the descent is MPC_LAND_SPEED"),
    _f("MPC_LAND_ALT3", 1.0, 0.0, 122.0, "m", "landing: below this (range finder) the descent is MPC_LAND_CRWL"),
    _f("MPC_LAND_CRWL", 0.3, 0.1, 10.0, "m/s", "landing: crawl speed for the last metre"),
    _f("MPC_YAWRAUTO_MAX", 45.0, 0.0, 360.0, "deg/s", "yaw rate limit in auto modes"),
    _f("LNDMC_TRIG_TIME", 1.0, 0.1, 10.0, "s", "land detector: time the landed conditions must hold"),
    _f("LNDMC_Z_VEL_MAX", 0.25, 0.1, 10.0, "m/s", "land detector: fastest vertical speed that counts as still"),
    _f("LNDMC_XY_VEL_MAX", 1.5, 0.0, 10.0, "m/s", "land detector: fastest horizontal speed that counts as still"),
    _f("LNDMC_ROT_MAX", 20.0, 0.1, 180.0, "deg/s", "land detector: fastest rotation that counts as still"),
    _i("EKF2_NOAID_TOUT", 5000000, 500000, 10000000, "us", "dead reckoning without position aiding before the position is invalid"),
    _f("MC_ORBIT_RAD_MAX", 1000.0, 1.0, 10000.0, "m", "largest orbit radius"),
    _i("MC_ORBIT_YAW_MOD", 0, 0, 4, "", "orbit heading: 0 front to centre, 1 initial, 2 uncontrolled, 3 tangent"),
    _f("MC_YAWRATE_P", 0.2, 0.0, 0.6, "", "yaw rate P gain (normalized torque per rad/s)"),
    _f("MC_YAWRATE_I", 0.1, 0.0, 10.0, "", "yaw rate I gain"),
    _f("MC_YAWRATE_D", 0.0, 0.0, 10.0, "", "yaw rate D gain"),
    _f("MC_YR_INT_LIM", 0.3, 0.0, 1.0, "", "yaw rate integrator limit (normalized torque)"),
    _f("MC_YAW_TQ_CUTOFF", 2.0, 0.0, 10.0, "Hz", "low-pass cutoff of the yaw torque (0: off)"),
)

SPEC_BY_NAME: dict[str, ParamSpec] = {s.name: s for s in SPECS}
REFERENCE = Path(__file__).resolve().parent / "reference" / "px4_v1.16.1_sih_parameters.json"

# PX4 SITL's start-up script (ROMFS init.d-posix/rcS, v1.16.1) lengthens the loss timeouts when
# PX4_SIM_SPEED_FACTOR is set, so that a ground station or offboard client that keeps up in wall time
# is not taken for lost at speed: each becomes this many seconds times the speed factor. (v1.14.0 used
# 0.5 for RC and offboard.) At 4x, RC loss is 4 s of vehicle time, one wall second, not 0.5 s.
SPEED_SCALED = {"COM_DL_LOSS_T": 10.0, "COM_RC_LOSS_T": 1.0, "COM_OF_LOSS_T": 1.0, "COM_OBC_LOSS_T": 5.0}


def speed_scaled_timeouts(speed: float) -> dict[str, float]:
    """The loss timeouts PX4 SITL's rcS sets at this speed factor; none at 1x, where the harness leaves
    PX4_SIM_SPEED_FACTOR unset."""
    return {} if speed == 1.0 else {name: per_speed * speed for name, per_speed in SPEED_SCALED.items()}
# A PX4 parameter name: capitals, digits and underscores, at most 16 characters (param_id is char[16]).
PARAM_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,15}$")
HASH_CHECK = "_HASH_CHECK"  # the list's last PARAM_VALUE: a hash of every value, for a client's cache
MAV_PARAM_TYPE_INT32 = 6
MAV_PARAM_TYPE_REAL32 = 9


class ParamError(ValueError):
    """A parameter name is unknown or a value is out of its range."""


@dataclass(frozen=True)
class Px4Table:
    """PX4's parameter list as measured: (name, is INT32, value) in PX4's order, the volatile names, and the
    PX4 release measured."""

    parameters: tuple[tuple[str, bool, float], ...]
    volatile: frozenset[str]
    release: str = ""


def load_px4_table(path: Path = REFERENCE) -> Px4Table:
    """The measured table (px4/reference/); ParamError naming the file when it is unreadable."""
    try:
        data = json.loads(path.read_text())
        rows = tuple((str(name), int(kind) == MAV_PARAM_TYPE_INT32, float(value))
                     for name, kind, value in data["parameters"])
        return Px4Table(rows, frozenset(data.get("volatile", ())), str(data["build"]["release"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ParamError(f"{path}: expected PX4's measured parameter table ({{'build': {{'release': ...}}, "
                         f"'parameters': [[name, type, value], ...]}}): {exc}") from None


PX4_TABLE = load_px4_table()
NO_TABLE = Px4Table((), frozenset())


class ParamStore:
    """The vehicle's parameter values, in PX4's order (MAVLink parameters are also read by index).

    Parameters with a spec keep their range and meaning; the others of PX4's table take any finite
    value of their type and are only stored.
    """

    def __init__(self, specs: Iterable[ParamSpec] = SPECS, overrides: Mapping[str, float] | None = None,
                 table: Px4Table = PX4_TABLE):
        self._specs = {s.name: s for s in table_specs(table)}
        self._specs.update({s.name: s for s in specs})
        self._names = sorted(self._specs)  # PX4 lists its parameters sorted by name
        self._index = {name: i for i, name in enumerate(self._names)}
        self._values = {name: spec.default for name, spec in self._specs.items()}
        self.volatile = table.volatile
        self.version = 0  # bumped on every change, so controllers can re-read cheaply
        for name, value in (overrides or {}).items():
            self.set(name, value)

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def __contains__(self, name: object) -> bool:
        return name in self._values

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def spec(self, name: str) -> ParamSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise ParamError(f"unknown parameter {name!r}") from None

    def implemented(self, name: str) -> bool:
        """Whether the built-in vehicle acts on this parameter (it has a spec), rather than only storing it."""
        return name in SPEC_BY_NAME

    def index(self, name: str) -> int:
        try:
            return self._index[name]
        except KeyError:
            raise ParamError(f"unknown parameter {name!r}") from None

    def name_at(self, index: int) -> str:
        return self._names[index]

    def set(self, name: str, value: float) -> float:
        """Set a parameter, enforcing its range; returns the value stored."""
        spec = self.spec(name)
        value = float(value)
        if math.isnan(value) or not spec.min <= value <= spec.max:
            raise ParamError(f"{name}={value} is outside [{spec.min}, {spec.max}] {spec.unit}".rstrip())
        return self.take(name, value)

    def take(self, name: str, value: float) -> float:
        """Store any finite value, outside the parameter's range too, as PX4 stores what a PARAM_SET carries
        (the module that reads a parameter constrains it, or not); returns the value stored."""
        spec = self.spec(name)
        value = float(value)
        if not math.isfinite(value):
            raise ParamError(f"{name}={value} is not a finite number")
        if spec.is_int:
            value = float(int(round(value)))
        if self._values[name] != value:
            self._values[name] = value
            self.version += 1
        return value

    def as_dict(self) -> dict[str, float]:
        return dict(self._values)

    def hash_check(self) -> int:
        """PX4's _HASH_CHECK: CRC-32 over each non-volatile parameter's name and 4 value bytes, in order."""
        crc = 0
        for name in self._names:
            if name in self.volatile:
                continue
            value = self._values[name]
            raw = struct.pack("<i", int(value)) if self._specs[name].is_int else struct.pack("<f", value)
            crc = crc32part(name.encode() + raw, crc)
        return crc


def table_specs(table: Px4Table) -> list[ParamSpec]:
    """Specs for the parameters of PX4's table: PX4's type and value, no range, no meaning here."""
    return [ParamSpec(name, value, is_int, doc="stored and echoed as PX4 v1.16.1 has it")
            for name, is_int, value in table.parameters]
