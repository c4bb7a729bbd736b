"""Per-trial flight metrics and the per-group benchmark metrics built from them.

Per trial (`trial_metrics`, from the flown trajectory in the scene frame):

* FlightBench (Sec. 3.3): average speed (1/T) int |v| dt; average acceleration
  (1/L) int |a|^2 dt; average jerk (1/L) int |j|^2 dt; average curvature (1/L) int kappa |v| dt with
  kappa = |v x a| / |v|^3; computation time (from the planner's timing table, `timing_summary`);
  Progress (Sec. 4.4): the fraction of the reference path completed before the first collision.
* Goal distances for UAV-ON: final distance d_i, closest approach min_t d_{i,t}, flown
  path length p_i and shortest path length l_i.
* HUGE-Bench TCR@delta: the fraction of reference-trajectory points within delta metres
  of the flown path (a polyline).
* Safety: minimum clearance (obstacle distance minus the vehicle radius), seconds outside the
  geofence rectangle and seconds above the flight ceiling, and the fence margin: the smallest distance from
  the vehicle to the rectangle's sides or the ceiling (negative: outside).

Per group of trials (`group_metrics`): UAV-ON's SR, OSR, DTS, SPL and HUGE-Bench's CR, CSPL and
mean TCR@1/2/5.

Accelerations and jerks are finite differences of the recorded velocity (telemetry does not carry
them); T and L cover the navigation phase only, from the start point to the end of the trial.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from missions.geometry import Scene, polyline_length, sample_polyline
from missions.schema import Airspace, point_in_polygon
from onboard.timing import TOTAL, per_cycle
from reports.trial_summary import distance_to_polyline

# Below this speed the curvature |v x a| / |v|^3 is numerically meaningless (a hover); such samples
# add nothing to the path-length weighted average, where they weigh |v| ~ 0 anyway.
MIN_CURVATURE_SPEED = 0.2  # m/s
TCR_TOLERANCES = (1.0, 2.0, 5.0)  # m, HUGE-Bench's TCR@1, @2, @5
# Reference points for TCR are this far apart; flown points closer than this are thinned first so
# the point-to-segment distance array stays small.
TCR_STEP = 0.25  # m


@dataclass(frozen=True)
class Trajectory:
    """A flown trajectory: times (s, vehicle time), positions and velocities (N, 3), scene NED frame."""

    t: np.ndarray
    pos: np.ndarray
    vel: np.ndarray

    @classmethod
    def from_telemetry(cls, telemetry: pd.DataFrame, offset: np.ndarray | None = None,
                       t0_ns: int | None = None) -> Trajectory:
        """From telemetry rows (t_ns, north, east, down, vn, ve, vd); `offset` moves the vehicle's
        local frame into the scene frame; rows before `t0_ns` are dropped."""
        rows = telemetry.dropna(subset=["t_ns", "north", "east", "down", "vn", "ve", "vd"]).sort_values("t_ns")
        if t0_ns is not None:
            rows = rows[rows["t_ns"] >= t0_ns]
        t_ns = rows["t_ns"].to_numpy(np.int64)
        pos = rows[["north", "east", "down"]].to_numpy(float)
        if offset is not None:
            pos = pos + np.asarray(offset, dtype=float)
        t = (t_ns - t_ns[0]) / 1e9 if len(t_ns) else np.zeros(0)
        return cls(t, pos, rows[["vn", "ve", "vd"]].to_numpy(float))

    def __len__(self) -> int:
        return len(self.t)

    def derivatives(self) -> tuple[np.ndarray, np.ndarray]:
        """Acceleration and jerk (N, 3) by central differences in time."""
        if len(self) < 3:
            zeros = np.zeros_like(self.vel)
            return zeros, zeros
        acc = np.gradient(self.vel, self.t, axis=0)
        return acc, np.gradient(acc, self.t, axis=0)

    def path_length(self) -> float:
        return float(np.linalg.norm(np.diff(self.pos, axis=0), axis=1).sum()) if len(self) > 1 else 0.0


@dataclass(frozen=True)
class FlightMetrics:
    """FlightBench's flight-quality metrics of one trajectory (SI units)."""

    duration_s: float  # T
    path_length_m: float  # L
    avg_speed: float  # m/s
    avg_curvature: float  # 1/m
    avg_acceleration: float  # m/s^3 (FlightBench's units: (1/L) int |a|^2 dt)
    avg_jerk: float  # m/s^5


def _integral(values: np.ndarray, t: np.ndarray) -> float:
    return float(np.trapezoid(values, t)) if len(t) > 1 else 0.0


def flight_metrics(trajectory: Trajectory) -> FlightMetrics:
    """Average speed, curvature, acceleration and jerk exactly as FlightBench Sec. 3.3 defines them."""
    t = trajectory.t
    duration = float(t[-1] - t[0]) if len(t) > 1 else 0.0
    length = trajectory.path_length()
    if duration <= 0 or length <= 0:
        nan = math.nan
        return FlightMetrics(duration, length, 0.0 if duration > 0 else nan, nan, nan, nan)
    acc, jerk = trajectory.derivatives()
    speed = np.linalg.norm(trajectory.vel, axis=1)
    moving = speed >= MIN_CURVATURE_SPEED
    # kappa * |v| = |v x a| / |v|^2: the curvature weighted by arc length per unit time.
    kappa_speed = np.zeros(len(t))
    kappa_speed[moving] = np.linalg.norm(np.cross(trajectory.vel[moving], acc[moving]), axis=1) / speed[moving] ** 2
    return FlightMetrics(
        duration_s=duration,
        path_length_m=length,
        avg_speed=_integral(speed, t) / duration,
        avg_curvature=_integral(kappa_speed, t) / length,
        avg_acceleration=_integral(np.einsum("ij,ij->i", acc, acc), t) / length,
        avg_jerk=_integral(np.einsum("ij,ij->i", jerk, jerk), t) / length,
    )


def arc_length_along(points: np.ndarray, polyline: np.ndarray) -> np.ndarray:
    """For each point, the arc-length coordinate (m from the start) of its nearest point on the polyline."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    polyline = np.asarray(polyline, dtype=float).reshape(-1, 3)
    starts, segments = polyline[:-1], np.diff(polyline, axis=0)
    lengths = np.linalg.norm(segments, axis=1)
    cumulative = np.concatenate([[0.0], np.cumsum(lengths)])[:-1]
    offsets = points[:, None, :] - starts[None]
    along = np.clip(np.einsum("nmk,mk->nm", offsets, segments) / np.where(lengths > 0, lengths**2, 1.0), 0, 1)
    gaps = np.linalg.norm(offsets - along[..., None] * segments[None], axis=2)
    nearest = gaps.argmin(axis=1)
    rows = np.arange(len(points))
    return cumulative[nearest] + along[rows, nearest] * lengths[nearest]


def progress(trajectory: Trajectory, reference: np.ndarray, collision_time_s: float | None) -> float:
    """FlightBench's Progress: farthest point reached along the reference before the first collision, 0..1."""
    reference = np.asarray(reference, dtype=float)
    total = float(np.linalg.norm(np.diff(reference, axis=0), axis=1).sum())
    if total <= 0 or len(trajectory) == 0:
        return math.nan
    before = trajectory.pos if collision_time_s is None else trajectory.pos[trajectory.t <= collision_time_s]
    if len(before) == 0:
        return 0.0
    return float(min(arc_length_along(before, reference).max() / total, 1.0))


def trajectory_coverage(flown: np.ndarray, reference: np.ndarray, tolerances=TCR_TOLERANCES) -> dict[str, float]:
    """HUGE-Bench TCR@delta: share of reference points within delta of the flown polyline."""
    if len(flown) == 0:
        return {f"tcr_{d:g}": 0.0 for d in tolerances}
    reference_points = sample_polyline(reference, TCR_STEP)
    distances = distance_to_polyline(reference_points, _thin(flown, TCR_STEP))
    return {f"tcr_{d:g}": float(np.mean(distances <= d)) for d in tolerances}


def _thin(points: np.ndarray, spacing: float) -> np.ndarray:
    """Keep a point only once it is `spacing` from the last kept one (and always the last point).

    A numpy norm per point was a fifth of a matrix trial's figures; plain floats decide all but the points within
    a rounding error of `spacing`, which get that norm still, so the same points are kept."""
    rows = points.tolist()
    below, above = spacing**2 * (1 - 1e-9), spacing**2 * (1 + 1e-9)
    kept, last = [points[0]], rows[0]
    for index in range(1, len(rows)):
        row = rows[index]
        squared = (row[0] - last[0]) ** 2 + (row[1] - last[1]) ** 2 + (row[2] - last[2]) ** 2
        if squared >= above or (squared > below and np.linalg.norm(points[index] - kept[-1]) >= spacing):
            kept.append(points[index])
            last = row
    if len(points) > 1 and not np.array_equal(kept[-1], points[-1]):
        kept.append(points[-1])
    return np.asarray(kept)


@dataclass(frozen=True)
class SafetyFigures:
    min_clearance_m: float  # smallest obstacle distance minus the vehicle radius (negative: contact)
    geofence_violation_s: float  # time outside the scene's rectangle
    altitude_violation_s: float  # time above the flight ceiling
    margin_fence_m: float  # closest the vehicle came to a side of the rectangle or the ceiling (negative: beyond)


def safety_figures(trajectory: Trajectory, scene: Scene, vehicle_radius: float) -> SafetyFigures:
    if len(trajectory) == 0:
        return SafetyFigures(math.nan, 0.0, 0.0, math.nan)
    clearance = scene.distance(trajectory.pos) - vehicle_radius
    horizontal = np.all((trajectory.pos[:, :2] >= scene.bounds_min[:2]) & (trajectory.pos[:, :2] <= scene.bounds_max[:2]),
                        axis=1)
    above = trajectory.pos[:, 2] < scene.bounds_min[2]
    # Signed room left to each limit; the floor is the ground, which the clearance and the judge already cover.
    room = np.column_stack([trajectory.pos[:, :2] - scene.bounds_min[:2], scene.bounds_max[:2] - trajectory.pos[:, :2],
                            trajectory.pos[:, 2] - scene.bounds_min[2]])
    return SafetyFigures(
        min_clearance_m=float(clearance.min()) if np.isfinite(clearance.min()) else math.inf,
        geofence_violation_s=_time_where(~horizontal, trajectory.t),
        altitude_violation_s=_time_where(above, trajectory.t),
        margin_fence_m=float(room.min()),
    )


def airspace_room(points: np.ndarray, airspace: Airspace) -> np.ndarray:
    """Per NED point (N, 3), the signed distance (m) to the nearest limit of a mission's airspace: its ceiling,
    its geofence polygon and circle, its no-fly cylinders and polygons; negative beyond one. The band's floor is
    left out, as the scene's ground is: the judge holds it only between the climb into the band and the landing."""
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    alt = -points[:, 2]
    rooms = [airspace.alt_max - alt]
    if airspace.geofence is not None:
        rooms.append(_polygon_room(points, np.array(airspace.geofence, dtype=float)))
    if airspace.geofence_circle is not None:
        north, east, radius = airspace.geofence_circle
        rooms.append(radius - np.hypot(points[:, 0] - north, points[:, 1] - east))
    for zone in airspace.no_fly:
        outside = np.hypot(points[:, 0] - zone.north, points[:, 1] - zone.east) - zone.radius
        rooms.append(np.maximum.reduce([outside, alt - zone.alt_max, zone.alt_min - alt]))
    for polygon in airspace.no_fly_polygons:
        rooms.append(-_polygon_room(points, np.array(polygon, dtype=float)))
    return np.min(rooms, axis=0)


def _polygon_room(points: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Horizontal distance from each point to a polygon's boundary, positive inside, negative outside."""
    ring = np.column_stack([np.vstack([polygon, polygon[:1]]), np.zeros(len(polygon) + 1)])
    flat = np.column_stack([points[:, :2], np.zeros(len(points))])
    inside = np.array([point_in_polygon(p, polygon) for p in points[:, :2]])
    return np.where(inside, 1.0, -1.0) * distance_to_polyline(flat, ring)


def _time_where(mask: np.ndarray, t: np.ndarray) -> float:
    """Seconds during which `mask` held, counting each sample interval by its starting sample."""
    if len(t) < 2:
        return 0.0
    return float(np.sum(np.diff(t)[mask[:-1]]))


def trial_metrics(trajectory: Trajectory, scene: Scene, *, vehicle_radius: float, goal_radius: float,
                  shortest_length: float, collision_time_s: float | None, success: bool) -> dict[str, float]:
    """Every per-trial number the results table holds, flat, for one navigation phase."""
    reference = scene.reference_path()
    goal_distances = np.linalg.norm(trajectory.pos - scene.goal, axis=1) if len(trajectory) else np.array([math.inf])
    flown = asdict(flight_metrics(trajectory))
    return {
        **flown,
        "progress": 1.0 if success else progress(trajectory, reference, collision_time_s),
        "final_distance_m": float(goal_distances[-1]),
        "closest_distance_m": float(goal_distances.min()),
        "oracle_success": bool(goal_distances.min() <= goal_radius),
        "shortest_length_m": float(shortest_length),
        **trajectory_coverage(trajectory.pos, reference),
        **asdict(safety_figures(trajectory, scene, vehicle_radius)),
    }


def mission_metrics(trajectory: Trajectory, reference: np.ndarray, stages: list[tuple[str, np.ndarray]], *,
                    goal_radius: float, success: bool, collided: bool) -> dict[str, float]:
    """The per-trial numbers of a mission flight (its route as the reference), flat, in the mission's frame.

    `reference` is the planned route (start then every route point), the mission's shortest valid path
    for SPL; `stages` is each stage's label with its own stretch of that route, for HUGE-Bench's
    TCR@delta per stage (`tcr_<delta>_<stage>`). Columns match `trial_metrics`' so `group_metrics`
    gives SR, OSR, DTS, SPL, CR, CSPL and TCR@delta over mission trials too.
    """
    goal = np.asarray(reference, dtype=float)[-1]
    goal_distances = np.linalg.norm(trajectory.pos - goal, axis=1) if len(trajectory) else np.array([math.inf])
    out: dict[str, float] = {
        **asdict(flight_metrics(trajectory)),
        "progress": 1.0 if success else progress(trajectory, reference, None),
        "final_distance_m": float(goal_distances[-1]),
        "closest_distance_m": float(goal_distances.min()),
        "oracle_success": bool(goal_distances.min() <= goal_radius),
        "shortest_length_m": polyline_length(reference),
        "success": bool(success),
        "collided": bool(collided),
        **trajectory_coverage(trajectory.pos, reference),
    }
    for stage, stretch in stages:
        for key, value in trajectory_coverage(trajectory.pos, stretch).items():
            out[f"{key}_{stage}"] = value
    return out


def spl_terms(success: np.ndarray, shortest: np.ndarray, flown: np.ndarray) -> np.ndarray:
    """Per-episode S_i * l_i / max(p_i, l_i) (UAV-ON Eq. 4)."""
    shortest, flown = np.asarray(shortest, float), np.asarray(flown, float)
    return np.asarray(success, float) * shortest / np.maximum(np.maximum(flown, shortest), 1e-9)


def group_metrics(trials: pd.DataFrame) -> dict[str, float]:
    """UAV-ON SR, OSR, DTS, SPL and HUGE-Bench CR, CSPL, TCR@delta over a group of results-table rows."""
    if trials.empty:
        return {}
    success = trials["success"].to_numpy(bool)
    collided = trials["collided"].to_numpy(bool)
    spl = spl_terms(success, trials["shortest_length_m"], trials["path_length_m"].fillna(0.0))
    out = {
        "SR": float(success.mean()),
        "OSR": float(trials["oracle_success"].to_numpy(bool).mean()),
        "DTS": float(trials["final_distance_m"].mean()),
        "SPL": float(spl.mean()),
        "CR": float(collided.mean()),
        "CSPL": float((spl * ~collided).mean()),
    }
    for d in TCR_TOLERANCES:
        out[f"TCR@{d:g}"] = float(trials[f"tcr_{d:g}"].mean())
    return out


def timing_summary(timing: pd.DataFrame | None) -> dict[str, float]:
    """Mean per-cycle T_map, T_plan, T_ctrl and T_tot (ms) from the onboard timing table (FlightBench Table 5).

    The table is the one `onboard.runtime` records (stage, dur_ns, cycle); an absent one gives NaNs.
    """
    keys = {"map": "t_map_ms", "plan": "t_plan_ms", "control": "t_ctrl_ms", TOTAL: "t_tot_ms"}
    if timing is None or timing.empty:
        return {key: math.nan for key in keys.values()}
    table = per_cycle(timing)
    return {key: float(table[stage].mean() / 1e6) if stage in table.columns else math.nan
            for stage, key in keys.items()}


def latency_columns(table: pd.DataFrame | None) -> dict[str, float]:
    """A ROS 2 trial's figures from its record's "ros2" table: setpoints received and their header-stamp ages
    (mean, median, 99th percentile; ms of wall time). None: nothing arrived."""
    ms = table["latency_s"].to_numpy(dtype=float) * 1e3 if table is not None else np.empty(0)
    stats = (float(np.mean(ms)), float(np.percentile(ms, 50)), float(np.percentile(ms, 99))) if len(ms) \
        else (math.nan,) * 3
    return {"ros2_setpoints": len(ms), **dict(zip(("ros2_latency_mean_ms", "ros2_latency_p50_ms",
                                                    "ros2_latency_p99_ms"), stats))}
