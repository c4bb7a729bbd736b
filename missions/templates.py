"""Mission templates: the route each mission type flies, as points labelled with their stage.

The multi-stage tasks follow HUGE-Bench (Sec. 3): a short instruction implies a fixed
sequence of sub-tasks, and the stage labels let the recorder and the reports say which sub-task a
trial was in when it ended (TCR, collisions per stage):

* point_to_point: ``transit`` to the goal (FLYINGTRUST's task);
* multi_waypoint: ``waypoint-1`` ... ``waypoint-N`` in order (FlightBench's Multi-Waypoint);
* survey (HUGE-Bench Area Mapping): ``transit`` to the area's first corner, ``descend`` to the
  survey altitude, ``coverage`` along lawnmower lines, ``return`` to the start altitude;
* orbit (Orbit-H / Orbit-R): ``transit`` overhead of the centre at the orbit altitude, ``enter``
  the circle, ``loiter`` for the laps, ``exit`` back overhead of the centre;
* inspection (Adaptive Building Inspection): ``approach`` the target's boundary at the start
  altitude, ``descend`` to the inspection altitude, ``circumnavigate`` at the stand-off radius,
  ``return`` to the start pose;
* precision_landing (Target Landing): ``approach`` overhead of the pad, ``descend`` to the hover
  altitude, ``hover``, then ``land`` on the pad.

All positions are NED metres; altitudes in the templates' parameters are metres above the ground.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MISSION_TYPES = ("point_to_point", "multi_waypoint", "survey", "orbit", "inspection", "precision_landing")
ORBIT_POINTS_PER_LAP = 16


@dataclass(frozen=True)
class RoutePoint:
    """One point of a route: where (NED, m), which stage it ends, and how long to hold there (s)."""

    north: float
    east: float
    down: float
    stage: str
    hold_s: float = 0.0
    yaw_deg: float | None = None  # None: the vehicle keeps its own heading

    @property
    def position(self) -> np.ndarray:
        """(north, east, down) as an array."""
        return np.array([self.north, self.east, self.down])


def _point(north: float, east: float, alt: float, stage: str, hold_s: float = 0.0) -> RoutePoint:
    return RoutePoint(float(north), float(east), -float(alt), stage, float(hold_s))


def point_to_point(goal: tuple[float, float, float]) -> list[RoutePoint]:
    """Fly to `goal` (north, east, alt)."""
    return [_point(*goal, "transit")]


def multi_waypoint(waypoints: list[tuple[float, float, float, float]],
                   yaws: list[float | None] | None = None) -> list[RoutePoint]:
    """Visit (north, east, alt, hold_s) waypoints in order, each with its yaw (deg) if given."""
    yaws = yaws or [None] * len(waypoints)
    return [RoutePoint(float(n), float(e), -float(a), f"waypoint-{i + 1}", float(h),
                       None if yaw is None else float(yaw))
            for i, ((n, e, a, h), yaw) in enumerate(zip(waypoints, yaws))]


def landing(last: RoutePoint) -> RoutePoint:
    """Touch down straight below the last point of a route (a mission that lands at its end)."""
    return RoutePoint(last.north, last.east, 0.0, "land")


def survey(start_alt: float, north: tuple[float, float], east: tuple[float, float], alt: float,
           spacing: float) -> list[RoutePoint]:
    """Lawnmower coverage of a rectangle: lines along north, `spacing` apart across east."""
    lines = np.arange(east[0], east[1] + 1e-9, spacing)
    route = [_point(north[0], lines[0], start_alt, "transit"), _point(north[0], lines[0], alt, "descend")]
    for index, e in enumerate(lines):
        ends = north if index % 2 == 0 else north[::-1]
        route += [_point(ends[0], e, alt, "coverage"), _point(ends[1], e, alt, "coverage")]
    last = route[-1]
    route.append(_point(last.north, last.east, start_alt, "return"))
    return route


def orbit(centre: tuple[float, float], alt: float, radius: float, laps: float, clockwise: bool = True) -> list[RoutePoint]:
    """Circle `laps` times around `centre` at `radius` and `alt`, starting from the south of it."""
    n = max(int(round(laps * ORBIT_POINTS_PER_LAP)), 1)
    sign = 1.0 if clockwise else -1.0  # clockwise seen from above: north -> east -> south in NED
    angles = np.pi + sign * 2 * np.pi * np.arange(1, n + 1) / ORBIT_POINTS_PER_LAP
    cn, ce = centre
    route = [_point(cn, ce, alt, "transit"), _point(cn - radius, ce, alt, "enter")]
    route += [_point(cn + radius * np.cos(a), ce + radius * np.sin(a), alt, "loiter") for a in angles]
    route.append(_point(cn, ce, alt, "exit"))
    return route


def inspection(start: tuple[float, float, float], target: tuple[float, float], standoff: float, alt: float,
               clockwise: bool = True) -> list[RoutePoint]:
    """Approach a target's boundary, descend, go once around it at `standoff` m, return to the start pose."""
    sn, se, start_alt = start
    tn, te = target
    bearing = np.arctan2(se - te, sn - tn)  # the side of the target facing the start
    sign = 1.0 if clockwise else -1.0
    angles = bearing + sign * 2 * np.pi * np.arange(1, ORBIT_POINTS_PER_LAP + 1) / ORBIT_POINTS_PER_LAP
    entry = (tn + standoff * np.cos(bearing), te + standoff * np.sin(bearing))
    route = [_point(*entry, start_alt, "approach"), _point(*entry, alt, "descend")]
    route += [_point(tn + standoff * np.cos(a), te + standoff * np.sin(a), alt, "circumnavigate") for a in angles]
    route.append(_point(sn, se, start_alt, "return"))
    return route


def precision_landing(start_alt: float, pad: tuple[float, float], pad_alt: float, hover_alt: float,
                      hover_s: float) -> list[RoutePoint]:
    """Fly overhead of the pad, descend to `hover_alt`, hover `hover_s`, land on the pad."""
    pn, pe = pad
    return [_point(pn, pe, start_alt, "approach"), _point(pn, pe, hover_alt, "descend"),
            _point(pn, pe, hover_alt, "hover", hover_s), _point(pn, pe, pad_alt, "land")]
