"""Fault schedules: which failure to inject, when, for how long and how badly.

A mission's `faults:` block (or a fault profile file holding one) is a list of UAVBench-style
fault tuples (UAVBench, Sec. III-A6: start time, type, duration, severity) plus the component they
hit::

    faults:
      - {start_s: 20, type: "off", target: gps, duration_s: 10, severity: 1.0}
      - {start_s: 35, type: degraded, target: motor1, severity: 0.3}     # no duration: to the end
      - {at_waypoint: 2, type: "off", target: motor3}                   # when waypoint 2 becomes the target
      - {near_obstacle_m: 1.5, type: stuck, target: gps}                # within 1.5 m of an obstacle
      - {start_s: 0, type: steady, target: wind, wind: [3.0, -1.0, 0.0]}
      - {start_s: 10, type: gust, target: wind, severity: 0.5}
      - {start_s: 20, type: stall, target: planner, stall_ms: 400}
      - {at_waypoint: 3, type: crash, target: planner}

Types and targets follow PX4's failure injection (`failure <unit> <type>`), so a schedule can be
replayed on PX4 SITL and on hardware as well as on the built-in vehicle. Three scopes:

- ``vehicle``: PX4's types (off, stuck, garbage, wrong, slow, delayed, intermittent) on PX4's
  units; sent as MAV_CMD_INJECT_FAILURE; a target may refuse what it does not implement;
- ``sim``: what only a simulator can do: ``degraded`` (a motor gives 1 - severity of its thrust;
  gyro/accel get noise; the battery sags), ``steady`` wind (``wind: [north, east, down]`` m/s) and
  ``gust`` (severity x 10 m/s); other targets refuse them;
- ``onboard``: the planner ``stall`` (``stall_ms``) or ``crash``, applied by the planner runtime.

Triggers: ``start_s`` alone fires at that time; with ``at_waypoint`` (index from 0) or
``near_obstacle_m`` (clearance, m) the fault fires at the first moment after ``start_s`` (default 0)
that the condition holds. Validation follows UAVBench's rule: a fault starts at t >= 0 and its
severity lies within calibrated limits (0..1). Errors have the mission schema's form
``SOURCE: faults[i].FIELD: expected WHAT, got VALUE``, every problem at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.errors import ConfigError
from config.fields import (
    Field,
    Problems,
    choice,
    integer,
    is_number,
    number,
    read_fields,
)
from config.loading import load_yaml

PX4_TYPES = ("off", "stuck", "garbage", "wrong", "slow", "delayed", "intermittent")
SIM_TYPES = ("degraded", "steady", "gust")
ONBOARD_TYPES = ("stall", "crash")
FAULT_TYPES = PX4_TYPES + SIM_TYPES + ONBOARD_TYPES
MOTORS = ("motor1", "motor2", "motor3", "motor4")
FAULT_TARGETS = ("gps", "gyro", "accel", "mag", "baro", "battery", "rc_signal", "mavlink_signal", *MOTORS, "motors",
                 "optical_flow", "vio", "distance_sensor", "airspeed", "wind", "planner")
# PX4's FAILURE_UNIT and FAILURE_TYPE values (MAVLink common.xml).
PX4_UNITS = {"gyro": 0, "accel": 1, "mag": 2, "baro": 3, "gps": 4, "optical_flow": 5, "vio": 6,
             "distance_sensor": 7, "airspeed": 8, "battery": 100, "motor": 101, "rc_signal": 104,
             "mavlink_signal": 105}
PX4_TYPE_VALUES = {name: value for value, name in enumerate(PX4_TYPES, start=1)}
# Which targets each non-PX4 type applies to (and so the only types "wind" and "planner" take).
_TYPE_TARGETS = {"degraded": (*MOTORS, "motors", "gyro", "accel", "battery"), "steady": ("wind",),
                 "gust": ("wind",), "stall": ("planner",), "crash": ("planner",)}
MAX_WIND_M_S = 30.0

_FAULT_FIELDS: dict[str, Field] = {
    "start_s": number("seconds after the trial starts", at_least=0, required=False),
    "at_waypoint": integer("index of the waypoint, from 0, whose turn starts the fault", at_least=0, required=False),
    "near_obstacle_m": number("clearance to the nearest obstacle that starts the fault, m", above=0, required=False),
    "type": choice(FAULT_TYPES),
    "target": choice(FAULT_TARGETS),
    "duration_s": number("seconds; omit for a fault that lasts to the end", above=0, required=False),
    "severity": number("0 = none .. 1 = complete failure", at_least=0, at_most=1, required=False, default=1.0),
    "stall_ms": number("how long the planner stalls, ms", above=0, required=False),
}


@dataclass(frozen=True)
class FaultSpec:
    """One scheduled fault; `duration_s` None means it lasts to the end of the trial."""

    start_s: float
    type: str
    duration_s: float | None
    severity: float  # 0 (none) .. 1 (complete failure)
    target: str
    at_waypoint: int | None = None
    near_obstacle_m: float | None = None
    wind: tuple[float, float, float] = (0.0, 0.0, 0.0)  # NED m/s, for a steady wind
    stall_ms: float = 0.0  # for a planner stall

    @property
    def scope(self) -> str:
        """vehicle (PX4 failure injection) | sim (simulator only) | onboard (planner runtime)."""
        if self.type in ONBOARD_TYPES:
            return "onboard"
        return "sim" if self.type in SIM_TYPES else "vehicle"

    @property
    def instance(self) -> int:
        """PX4's instance: motor N is N, everything else 0 (all)."""
        return int(self.target[-1]) if self.target in MOTORS else 0

    @property
    def px4_unit_type(self) -> tuple[int, int]:
        """PX4's (FAILURE_UNIT, FAILURE_TYPE) of a vehicle-scope fault."""
        unit = "motor" if self.target in MOTORS or self.target == "motors" else self.target
        return PX4_UNITS[unit], PX4_TYPE_VALUES[self.type]

    def due(self, elapsed_s: float, waypoint: int, clearance_m: float = math.inf) -> bool:
        """Whether the trigger has fired: `elapsed_s` since the trial started, `waypoint` the index of
        the current target waypoint, `clearance_m` the distance to the nearest obstacle."""
        if elapsed_s < self.start_s:
            return False
        if self.at_waypoint is not None and waypoint < self.at_waypoint:
            return False
        return self.near_obstacle_m is None or clearance_m <= self.near_obstacle_m

    def describe(self) -> str:
        """One line for logs and reports, e.g. "motor1 off at 12 s for 5 s"."""
        what = f"{self.target} {self.type}"
        if self.type in ("degraded", "gust") or self.severity != 1.0:
            what += f" severity {self.severity:g}"
        after = f" after {self.start_s:g} s" if self.start_s else ""
        when = f"at {self.start_s:g} s"
        if self.at_waypoint is not None:
            when = f"at waypoint {self.at_waypoint}{after}"
        elif self.near_obstacle_m is not None:
            when = f"within {self.near_obstacle_m:g} m of an obstacle{after}"
        return f"{what} {when}" + (f" for {self.duration_s:g} s" if self.duration_s is not None else "")


def parse_faults(entries: Any, source: str = "<faults>") -> tuple[FaultSpec, ...]:
    """Validate a list of fault mappings; raise `ConfigError` listing every problem.

    The faults come back in order of their earliest start.
    """
    problems = Problems(source)
    if not isinstance(entries, list):
        problems.invalid("faults", "a list of faults, each {start_s, type, target, duration_s, severity}", entries)
        raise ConfigError(problems.lines)
    faults = [spec for index, entry in enumerate(entries)
              if (spec := _read_fault(entry, f"faults[{index}]", problems)) is not None]
    if problems.lines:
        raise ConfigError(problems.lines)
    return tuple(sorted(faults, key=lambda f: f.start_s))


def load_fault_profile(path: str | Path) -> tuple[FaultSpec, ...]:
    """A fault profile file: a mapping with a ``faults:`` list; raises ConfigError."""
    data = load_yaml(path, "fault profile (YAML with a faults: list)")
    if not isinstance(data, dict) or "faults" not in data:
        problems = Problems(str(path))
        problems.invalid("faults", "a mapping with a 'faults' list", data)
        raise ConfigError(problems.lines)
    return parse_faults(data["faults"], str(path))


def _read_fault(entry: Any, where: str, problems: Problems) -> FaultSpec | None:
    """One fault mapping, or None (with its problems recorded)."""
    if not isinstance(entry, dict):
        problems.invalid(where, "a mapping {start_s, type, target, duration_s, severity}", entry)
        return None
    reported = len(problems.lines)
    values = read_fields(entry, _FAULT_FIELDS, f"{where}.", problems, nested=("wind",))
    kind, target = values.get("type"), values.get("target")
    if not any(t in entry for t in ("start_s", "at_waypoint", "near_obstacle_m")):
        problems.add(where, "missing trigger, expected start_s, at_waypoint or near_obstacle_m")
    allowed = _TYPE_TARGETS.get(kind)
    if kind is not None and target is not None:
        if allowed is not None and target not in allowed:
            problems.invalid(f"{where}.target", f"one of {', '.join(allowed)} (for type {kind})", target)
        elif allowed is None and target in ("wind", "planner"):
            options = [t for t, targets in _TYPE_TARGETS.items() if target in targets]
            problems.invalid(f"{where}.type", f"one of {', '.join(options)} (for target {target})", kind)
    wind = entry.get("wind")
    if kind == "steady":
        if not (isinstance(wind, list) and len(wind) == 3 and all(is_number(v) for v in wind)
                and math.hypot(*wind) <= MAX_WIND_M_S):
            problems.invalid(f"{where}.wind", f"[north, east, down] in m/s, at most {MAX_WIND_M_S:g} m/s", wind)
    elif wind is not None:
        problems.invalid(f"{where}.wind", "no wind vector (only type steady takes one)", wind)
    if kind == "stall" and "stall_ms" not in entry:
        problems.add(f"{where}.stall_ms", "missing required field for a planner stall, expected a number > 0 (ms)")
    elif kind != "stall" and "stall_ms" in entry:
        problems.invalid(f"{where}.stall_ms", "nothing (only type stall takes stall_ms)", entry["stall_ms"])
    if len(problems.lines) > reported:
        return None
    return FaultSpec(start_s=values["start_s"] if values["start_s"] is not None else 0.0, type=kind,
                     duration_s=values["duration_s"], severity=values["severity"], target=target,
                     at_waypoint=values["at_waypoint"], near_obstacle_m=values["near_obstacle_m"],
                     wind=tuple(float(v) for v in wind) if kind == "steady" else (0.0, 0.0, 0.0),
                     stall_ms=values["stall_ms"] or 0.0)
