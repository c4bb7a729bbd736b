"""What a trial itself knows of how it ran: the summary in a trial record's manifest, one dataclass per kind
of trial. The harness writes it (`hil`, through `hil.session.TrialSession.finish`); `reports` reads it back
(`Summary.from_manifest`).

A summary holds facts of the run, never a figure computed from its telemetry (path length, clearance,
compute time): `reports.figures` computes those from the finished record.

- `Summary`: how any trial ended: its outcome and why, and for an abort (`Stop`) the phase it was in, what
  stopped it and how the vehicle was left;
- `NavigationSummary`: a planner's navigation through a scene (a campaign trial): when on the vehicle's
  clock the judge decided, the speed factor the telemetry's stamps run at, where the navigation phase lies
  in the telemetry and where home is in the scene, what judged it (scene, planner, goal radius, time budget),
  the platform's facts (`Platform`) and the scene's (`SceneFacts`);
- `MissionSummary`: a route flown by the autopilot (`hil fly`, a campaign's mission trial): the speed
  factor and the route it was judged against (`Route`), its time budget and the time it used, and in a
  campaign the platform's facts;
- both say the clock their times were measured on (`records.clock`): the vehicle's own, or, for a target
  whose snapshots carry no stamp (and records from before), the harness's times the speed factor;
- `PytestSummary`: a HIL test's metrics and which of them failed;
- `LinkSummary`: `hil link`'s proxy counters;
- `FiguresSummary`: figures a trial measured as it ran and names itself (the fidelity suite's); a summary
  without a kind (written before summaries were typed, or by a writer that hands a mapping) reads as one,
  its values as they were, figures included.

`columns()` is what a results-table row takes from a summary. Its names are the table's columns since before
summaries were typed, so saved tables, gates and campaign files keep working. `from_manifest` takes the
manifest as hostile input: a missing field, one of the wrong type, a NaN where a number is needed, is one
`UnreadableRecord` naming the file, the field and what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar, Union

from config.fields import shown
from records.clock import NOMINAL_CLOCK, VEHICLE_CLOCK
from records.fidelity_run import ESTIMATE
from records.record import UnreadableRecord

Column = Union[str, float, int, bool, None]  # one cell of a results-table row
Point = tuple[float, float, float]  # NED metres


class Outcome(str, Enum):
    """How the judge decided a flight; a str, so records and summaries keep plain strings."""

    SUCCESS = "success"
    COLLISION = "collision"
    BREACH = "breach"
    FAILSAFE = "failsafe"
    TIMEOUT = "timeout"
    ERROR = "error"
    ONBOARD_LOST = "onboard_lost"

    def __str__(self) -> str:
        return self.value

    __hash__ = str.__hash__  # a key like its string: {"success": ...}[Outcome.SUCCESS] finds it


class _Fields:
    """A summary's fields as hostile input: what is missing or not what a writer writes is one UnreadableRecord
    naming the file, the field and what was expected."""

    def __init__(self, values: Mapping[str, Any], path: str | Path, prefix: str = "summary.") -> None:
        self.values = values
        self.path = path
        self.prefix = prefix

    def fail(self, name: str, expected: str, value: Any = None, missing: bool = False) -> UnreadableRecord:
        got = "nothing" if missing else f"{type(value).__name__} {shown(value)}"
        return UnreadableRecord(f"{self.path}: {self.prefix}{name}: expected {expected}, got {got}")

    def _get(self, name: str, expected: str) -> Any:
        if name not in self.values:
            raise self.fail(name, expected, missing=True)
        return self.values[name]

    def text(self, name: str, default: str | None = None) -> str:
        if default is not None and name not in self.values:
            return default
        value = self._get(name, "text")
        if not isinstance(value, str):
            raise self.fail(name, "text", value)
        return value

    def number(self, name: str, *, nan: bool = False, infinite: bool = False, positive: bool = False) -> float:
        return self.check_number(name, self._get(name, "a number"), nan=nan, infinite=infinite, positive=positive)

    def check_number(self, name: str, value: Any, *, nan: bool = False, infinite: bool = False,
                     positive: bool = False) -> float:
        expected = ("a positive number" if positive else "a number") + (", or NaN" if nan else "") + \
            ("" if infinite else " (finite)")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(name, expected, value)
        value = float(value)
        if (math.isnan(value) and not nan) or (math.isinf(value) and not infinite) or (positive and not value > 0):
            raise self.fail(name, expected, value)
        return value

    def optional_number(self, name: str) -> float:
        """A number or NaN that records before it was written do not hold (NaN then)."""
        return self.number(name, nan=True) if name in self.values else math.nan

    def clock(self, speed_factor: float) -> str:
        """What the summary's times were measured on (records.clock); a record from before the vehicle's clock
        was kept measured them on the harness's, in vehicle time already only in lockstep."""
        default = VEHICLE_CLOCK if math.isinf(speed_factor) else NOMINAL_CLOCK
        value = self.text("clock", default=default)
        if value not in (VEHICLE_CLOCK, NOMINAL_CLOCK):
            raise self.fail("clock", f"{VEHICLE_CLOCK!r} or {NOMINAL_CLOCK!r}", value)
        return value

    def integer(self, name: str) -> int:
        value = self._get(name, "an integer")
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(name, "an integer", value)
        return value

    def stamp(self, name: str) -> int | None:
        """A telemetry stamp (ns), or null where there is none."""
        value = self._get(name, "an integer (ns) or null")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise self.fail(name, "an integer (ns) or null", value)
        return value

    def point(self, name: str, value: Any) -> Point:
        if not (isinstance(value, list) and len(value) == 3):
            raise self.fail(name, "a point [north, east, down]", value)
        return tuple(self.check_number(f"{name}[{i}]", v) for i, v in enumerate(value))  # type: ignore[return-value]

    def points(self, name: str, value: Any) -> tuple[Point, ...]:
        if not (isinstance(value, list) and value):
            raise self.fail(name, "a list of points [north, east, down]", value)
        return tuple(self.point(f"{name}[{i}]", v) for i, v in enumerate(value))

    def mapping(self, name: str) -> Mapping[str, Any]:
        value = self._get(name, "an object")
        if not isinstance(value, dict):
            raise self.fail(name, "an object", value)
        return value


@dataclass(frozen=True)
class Stop:
    """An aborted trial: the phase it was in (hil.stop.FlightPhase), what stopped it (a signal's name, the abort
    key) and how the vehicle was left (hil.stop.SafeEnd's value; "" when nothing was commanded)."""

    phase: str
    stopped_by: str
    left: str = ""


@dataclass(frozen=True, kw_only=True)
class Summary:
    """How a trial ended; the summary of a trial that has nothing more to say (one that ended before it flew)."""

    KIND: ClassVar[str] = "trial"
    outcome: str  # an Outcome where the judge decided; another record's word as it is (aborted, refused, passed)
    reason: str = ""
    stop: Stop | None = None

    def columns(self) -> dict[str, Column]:
        """What a results-table row takes from this summary."""
        ended: dict[str, Column] = {"outcome": str(self.outcome), "reason": self.reason}
        return {**ended, **(asdict(self.stop) if self.stop is not None else {})}

    def to_manifest(self) -> dict[str, Any]:
        """The manifest's `summary` object: the kind, the columns under their names, and the facts beside them."""
        return {"kind": self.KIND, **self.columns(), **self._facts()}

    def _facts(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any], path: str | Path) -> Summary:
        """The summary of a manifest (`path`: its file, for the messages), of the kind it names; UnreadableRecord
        when it is not one, or not of this class."""
        summary = manifest.get("summary")
        if not isinstance(summary, dict) and summary is not None:
            raise _Fields({}, path, "").fail("summary", "an object", summary)
        kind = (summary or {}).get("kind")
        if kind is None:
            read: Summary = FiguresSummary.of_mapping(summary or {}, manifest.get("outcome"), path)
        elif kind in _KINDS:
            read = _KINDS[kind].read(_Fields(summary, path))
        else:
            raise _Fields(summary, path).fail("kind", "one of " + ", ".join(_KINDS), kind)
        if not isinstance(read, cls):
            raise _Fields(summary or {}, path).fail("kind", f"{cls.KIND} (a {cls.__name__})", kind)
        return read

    @classmethod
    def read(cls, fields: _Fields) -> Summary:
        """This kind's summary from its manifest fields."""
        return cls(**cls._ending(fields))

    @staticmethod
    def _ending(fields: _Fields) -> dict[str, Any]:
        stop = None
        if "phase" in fields.values:
            stop = Stop(fields.text("phase"), fields.text("stopped_by"), fields.text("left", default=""))
        return {"outcome": fields.text("outcome"), "reason": fields.text("reason"), "stop": stop}


@dataclass(frozen=True)
class Platform:
    """The vehicle profile's facts a results table groups and explains by (FLYINGTRUST's capability axes)."""

    kind: str  # real or virtual (the profile's category)
    mass_kg: float
    twr_max: float
    alpha_xy_max: float
    alpha_z_max: float
    vehicle_radius_m: float

    def columns(self) -> dict[str, Column]:
        return {"platform_kind": self.kind, "mass_kg": self.mass_kg, "twr_max": self.twr_max,
                "alpha_xy_max": self.alpha_xy_max, "alpha_z_max": self.alpha_z_max,
                "vehicle_radius_m": self.vehicle_radius_m}

    @classmethod
    def read(cls, fields: _Fields) -> Platform:
        return cls(fields.text("platform_kind"), *(fields.number(name) for name in (
            "mass_kg", "twr_max", "alpha_xy_max", "alpha_z_max", "vehicle_radius_m")))


@dataclass(frozen=True)
class SceneFacts:
    """A scene configuration's task difficulty (FlightBench's TO, VO, AOL) and path lengths, m."""

    difficulty_to: float
    difficulty_vo: float
    difficulty_aol: float
    guide_length_m: float
    shortest_length_m: float

    def columns(self) -> dict[str, Column]:
        return asdict(self)

    @classmethod
    def read(cls, fields: _Fields) -> SceneFacts:
        return cls(*(fields.number(name) for name in cls.__dataclass_fields__))


@dataclass(frozen=True, kw_only=True)
class NavigationSummary(Summary):
    """A planner's navigation through a scene: what `reports.figures` needs to cut the flown track out of the
    telemetry and judge it again, and the facts a results table groups by."""

    KIND: ClassVar[str] = "navigation"
    end_time_s: float  # mission time (vehicle s) at the verdict; NaN when none was reached (an error before the start)
    speed_factor: float  # vehicle seconds per second of the telemetry's stamps the judge used; inf: vehicle time already
    scene: str  # the scene's generator name (missions.scenes) and its configuration
    scene_config: int
    planner: str  # as the campaign names it
    goal_radius_m: float  # the success rule's
    nav_start_ns: int | None  # telemetry stamp at which the navigation (mission clock) started; None: it never did
    nav_end_ns: int | None  # stamp of the last snapshot judged: the deciding one
    home: Point  # the vehicle's home (its local frame's origin) in the scene's frame
    platform: Platform
    facts: SceneFacts
    time_budget_s: float = math.nan  # the rule's (vehicle s); end_time_s is the time used of it
    clock: str = VEHICLE_CLOCK  # what end_time_s was measured on (records.clock)
    judged_on: str = ESTIMATE  # the positions the judge used: the target's truth or its estimate (records.truth)

    def columns(self) -> dict[str, Column]:
        return {**super().columns(), "success": self.outcome == Outcome.SUCCESS,
                "collided": self.outcome == Outcome.COLLISION, "end_time_s": self.end_time_s,
                "judged_on": self.judged_on,
                "time_budget_s": self.time_budget_s, "clock": self.clock,
                "nav_start_ns": self.nav_start_ns, "nav_end_ns": self.nav_end_ns,
                **dict(zip(("home_north", "home_east", "home_down"), self.home)), **self.platform.columns(),
                **self.facts.columns()}

    def _facts(self) -> dict[str, Any]:
        return {"speed_factor": self.speed_factor, "scene": self.scene, "scene_config": self.scene_config,
                "planner": self.planner, "goal_radius_m": self.goal_radius_m}

    @classmethod
    def read(cls, fields: _Fields) -> NavigationSummary:
        home = tuple(fields.number(f"home_{axis}") for axis in ("north", "east", "down"))
        speed_factor = fields.number("speed_factor", infinite=True, positive=True)
        return cls(**cls._ending(fields), end_time_s=fields.number("end_time_s", nan=True), speed_factor=speed_factor,
                   time_budget_s=fields.optional_number("time_budget_s"), clock=fields.clock(speed_factor),
                   scene=fields.text("scene"), scene_config=fields.integer("scene_config"),
                   judged_on=fields.text("judged_on", default=ESTIMATE),
                   planner=fields.text("planner"), goal_radius_m=fields.number("goal_radius_m", positive=True),
                   nav_start_ns=fields.stamp("nav_start_ns"), nav_end_ns=fields.stamp("nav_end_ns"),
                   home=home, platform=Platform.read(fields), facts=SceneFacts.read(fields))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Route:
    """The route a mission flight is judged against, in the mission's frame (NED m): the reference path (the
    start, then every route point), each stage with its stretch of it, the success radius, and where the
    vehicle's home lies (telemetry is in the vehicle's frame, whose origin is home)."""

    reference: tuple[Point, ...]
    stages: tuple[tuple[str, tuple[Point, ...]], ...]  # in the order flown
    success_radius_m: float
    home: Point

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.stages)

    def to_manifest(self) -> dict[str, Any]:
        return {"reference": [list(p) for p in self.reference],
                "stages": [{"stage": label, "path": [list(p) for p in path]} for label, path in self.stages],
                "success_radius_m": self.success_radius_m, "home": list(self.home)}

    @classmethod
    def read(cls, fields: _Fields) -> Route:
        stages = fields.values.get("stages")
        if not (isinstance(stages, list) and stages and all(isinstance(s, dict) for s in stages)):
            raise fields.fail("stages", "a list of {stage, path} objects", stages)
        read = tuple((_Fields(s, fields.path, f"{fields.prefix}stages[{i}].").text("stage"),
                      fields.points(f"stages[{i}].path", s.get("path"))) for i, s in enumerate(stages))
        return cls(fields.points("reference", fields.values.get("reference")), read,
                   fields.number("success_radius_m", positive=True), fields.point("home", fields.values.get("home")))


@dataclass(frozen=True, kw_only=True)
class MissionSummary(Summary):
    """A route flown by the autopilot: what `reports.figures` needs to judge the flown track against it."""

    KIND: ClassVar[str] = "mission"
    speed_factor: float  # vehicle seconds per second of the telemetry's stamps, as measured over the flight
    route: Route
    platform: Platform | None = None  # a campaign trial's
    time_budget_s: float = math.nan  # the mission's (vehicle s)
    time_used_s: float = math.nan  # the armed flight (vehicle s): the budget's margin is the difference
    clock: str = VEHICLE_CLOCK  # what time_used_s was measured on (records.clock)
    # What the judge watched beside the route, for the margins (reports.figures): its positions (records.truth),
    # the mission's scene as its file names it ({generator, seed} or {file}; None: no scene), the airspace
    # (missions.schema.Airspace's fields) and the radius of the vehicle's collision sphere (m).
    judged_on: str = ESTIMATE
    scene: Mapping[str, Any] | None = None
    airspace: Mapping[str, Any] | None = None
    judged_radius_m: float = 0.0

    def columns(self) -> dict[str, Column]:
        platform = self.platform.columns() if self.platform is not None else {}
        return {**super().columns(), **platform, "stages": ",".join(self.route.labels), "judged_on": self.judged_on,
                "time_budget_s": self.time_budget_s, "time_used_s": self.time_used_s, "clock": self.clock}

    def _facts(self) -> dict[str, Any]:
        judged = {"scene": self.scene, "airspace": self.airspace, "judged_radius_m": self.judged_radius_m}
        return {"speed_factor": self.speed_factor, "route": self.route.to_manifest(),
                **{name: value for name, value in judged.items() if value is not None}}

    @classmethod
    def read(cls, fields: _Fields) -> MissionSummary:
        route = Route.read(_Fields(fields.mapping("route"), fields.path, f"{fields.prefix}route."))
        speed_factor = fields.number("speed_factor", infinite=True, positive=True)
        return cls(**cls._ending(fields), speed_factor=speed_factor, route=route,
                   platform=Platform.read(fields) if "platform_kind" in fields.values else None,
                   time_budget_s=fields.optional_number("time_budget_s"),
                   time_used_s=fields.optional_number("time_used_s"), clock=fields.clock(speed_factor),
                   **cls._judged(fields))

    @staticmethod
    def _judged(fields: _Fields) -> dict[str, Any]:
        """What the judge watched (records before it was kept: the estimate, nothing beside the route)."""
        judged: dict[str, Any] = {"judged_on": fields.text("judged_on", default=ESTIMATE)}
        for name in ("scene", "airspace"):
            if fields.values.get(name) is not None:
                judged[name] = fields.mapping(name)
        if "judged_radius_m" in fields.values:
            judged["judged_radius_m"] = fields.number("judged_radius_m")
        return judged


@dataclass(frozen=True, kw_only=True)
class PytestSummary(Summary):
    """A HIL test (the pytest plugin): the metrics it recorded (`hil_expect`) and the names of those that failed."""

    KIND: ClassVar[str] = "pytest"
    metrics: Mapping[str, float] = field(default_factory=dict)
    failed: tuple[str, ...] = ()

    def _facts(self) -> dict[str, Any]:
        return {"metrics": dict(self.metrics), "failed": list(self.failed)}

    @classmethod
    def read(cls, fields: _Fields) -> PytestSummary:
        metrics = fields.mapping("metrics")
        failed = fields.values.get("failed")
        if not (isinstance(failed, list) and all(isinstance(name, str) for name in failed)):
            raise fields.fail("failed", "a list of metric names", failed)
        return cls(**cls._ending(fields), failed=tuple(failed),
                   metrics={name: fields.check_number(f"metrics.{name}", value, nan=True, infinite=True)
                            for name, value in metrics.items()})


@dataclass(frozen=True, kw_only=True)
class LinkSummary(Summary):
    """`hil link`'s record: the impairment proxy's counters (frames per direction and fate, malformed bytes)."""

    KIND: ClassVar[str] = "link"
    counts: Mapping[str, int] = field(default_factory=dict)

    def columns(self) -> dict[str, Column]:
        return {**super().columns(), **self.counts}

    @classmethod
    def read(cls, fields: _Fields) -> LinkSummary:
        ending = cls._ending(fields)
        known = {"kind", *ending, *Stop.__dataclass_fields__}
        counts = {name: value for name, value in fields.values.items() if name not in known}
        wrong = next((name for name, value in counts.items() if isinstance(value, bool) or not isinstance(value, int)),
                     None)
        if wrong is not None:
            raise fields.fail(wrong, "a count (an integer)", counts[wrong])
        return cls(**ending, counts=counts)


@dataclass(frozen=True, kw_only=True)
class FiguresSummary(Summary):
    """Figures a trial measured as it ran, under names of its own (the fidelity suite's `fidelity.<figure>`);
    they are its columns as they are."""

    KIND: ClassVar[str] = "figures"
    figures: Mapping[str, Column] = field(default_factory=dict)

    def columns(self) -> dict[str, Column]:
        return dict(self.figures)

    def to_manifest(self) -> dict[str, Any]:
        return {"kind": self.KIND, **super().columns(), "figures": dict(self.figures)}

    @classmethod
    def read(cls, fields: _Fields) -> FiguresSummary:
        return cls(**cls._ending(fields), figures=_scalars(fields.mapping("figures")))

    @classmethod
    def of_mapping(cls, summary: Mapping[str, Any], outcome: Any, path: str | Path) -> FiguresSummary:
        """A summary without a kind, and the manifest's outcome: its scalar values are its columns, as results
        tables always took them (nested values never were)."""
        if not isinstance(outcome, str):
            raise _Fields({}, path, "").fail("outcome", "text", outcome)
        reason = summary.get("reason", "")
        return cls(outcome=outcome, reason=reason if isinstance(reason, str) else "",
                   figures=_scalars(summary))


def _scalars(values: Mapping[str, Any]) -> dict[str, Column]:
    return {name: value for name, value in values.items() if not isinstance(value, (dict, list))}


_KINDS: dict[str, type[Summary]] = {kind.KIND: kind for kind in (Summary, NavigationSummary, MissionSummary,
                                                                  PytestSummary, LinkSummary, FiguresSummary)}
