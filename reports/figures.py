"""The figures of a finished trial, computed from its record: what a results-table row holds besides the
trial's configuration and its summary's facts.

From the summary (`records.summary`: where the navigation phase lies in the telemetry, the route a mission
was judged against, the scene, the platform) and the record's tables:

- a planner's navigation (`NavigationSummary`): the flight metrics of the navigation phase (`trial_metrics`:
  FlightBench's, goal distances, TCR@delta, clearance), the planner's per-cycle compute time, a ROS 2 node's
  setpoint ages; and how close its verdict was: `margin_clearance_m` (the minimum clearance to the scene's
  obstacles, the vehicle radius taken off) and `margin_fence_m` (the closest approach to the scene's rectangle
  or ceiling, negative beyond it);
- a route flown by the autopilot (`MissionSummary`): the stages completed and the mission metrics of the
  armed flight (`mission_metrics`, per stage too), how far it strayed from the route (`tracking_error_m`: the
  mean distance of its positions from the route); its margins against the scene and the airspace its judge
  watched (`reports.metrics.airspace_room`), NaN where its summary names none (a record from before);
- both: the margins on the positions the judge used (`judged_on`: the target's truth where it has one, its
  estimate otherwise), and each side apart (`JUDGED_FIGURES`: minimum clearance and fence margin on the truth
  table `records.truth` and on the telemetry, the truth's NaN where the record has none), so a report can show
  where the two disagree; PX4's estimate against the physics' truth, where the record has them
  (`trial_estimation`), and the telemetry's position against the truth table on any target that has one
  (`estimate_against_truth`);
- any other summary: none (a `FiguresSummary` brings its own).

Neither summary carries the time budget, so the time margin (`margin_time_s`) is the report's, from the rule's
budget (`reports.render.Margins`).

A campaign keeps each trial's figures in its figures/ folder (`records.campaign_dir`), computed once, as
the trial finishes (`keep_figures`, which `hil run` calls through `reports.results.CampaignResults`): a
table of thousands of trials then reads a small file per trial instead of its telemetry. The file is
derived and never part of the record: one that is missing, unreadable, of another version of these
figures or of another run of the trial is computed again from the record.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from missions.geometry import Scene
from missions.scenes import SceneError, scene_for
from missions.schema import Airspace, NoFlyZone, SceneRef
from onboard.ros2.topics import is_ros2
from records.atomic import write_file_atomically, writing
from records.campaign_dir import FIGURES_DIR, TRIALS_DIR
from records.clock import vehicle_time
from records.fidelity_run import ESTIMATE, TRUTH
from records.record import (
    MANIFEST_NAME,
    UnreadableRecord,
    read_events,
    read_json_object,
    read_manifest,
    read_table,
)
from records.summary import Column, MissionSummary, NavigationSummary, Outcome, Summary
from records.truth import TRUTH_TABLE
from reports.estimation import estimate_against_truth, trial_estimation
from reports.metrics import (
    Trajectory,
    airspace_room,
    latency_columns,
    mission_metrics,
    safety_figures,
    timing_summary,
    trial_metrics,
)
from reports.trial_summary import distance_to_polyline

# Raise when a figure's computation changes: a campaign's kept figures of another version are computed again.
FIGURES_VERSION = 4
MARGIN_FIGURES = ("margin_clearance_m", "margin_fence_m")  # the distance margins; NaN where not applicable
# The margins on each side: the target's truth and its estimate (NaN where the record has no such side).
JUDGED_FIGURES = ("min_clearance_truth_m", "min_clearance_estimate_m", "margin_fence_truth_m",
                  "margin_fence_estimate_m")
MAX_FIGURES_BYTES = 1 << 20  # a trial's figures are a few hundred numbers

Figures = dict[str, Column]


def trial_figures(record: Path, summary: Summary | None = None) -> Figures:
    """The figures of the finished trial record in `record` (see the module doc); `summary`: its summary, when
    read already."""
    if summary is None:
        summary = Summary.from_manifest(read_manifest(record), record / MANIFEST_NAME)
    if isinstance(summary, NavigationSummary):
        figures = _navigation(record, summary)
    elif isinstance(summary, MissionSummary):
        figures = _mission(record, summary)
    else:
        return {}
    return {**figures, **trial_estimation(record)}


def _navigation(record: Path, summary: NavigationSummary) -> Figures:
    """The navigation phase's metrics, from the start point to the verdict, in vehicle time."""
    telemetry = _optional_table(record, "telemetry")
    if summary.nav_start_ns is not None and telemetry is not None and not telemetry.empty:
        end_ns = summary.nav_end_ns if summary.nav_end_ns is not None else int(telemetry["t_ns"].max())
        telemetry = telemetry[(telemetry["t_ns"] >= summary.nav_start_ns) & (telemetry["t_ns"] <= end_ns)]
    else:
        telemetry = pd.DataFrame()
    true_rows = _true_positions(record, telemetry)
    trajectory, truth = (_trajectory(rows, summary.speed_factor, summary.home) for rows in (telemetry, true_rows))
    shortest = summary.facts.shortest_length_m
    if trajectory is None or len(trajectory) < 2:
        flown: Figures = {"path_length_m": 0.0, "shortest_length_m": shortest, "oracle_success": False,
                          **dict.fromkeys(MARGIN_FIGURES + JUDGED_FIGURES, math.nan)}
    else:
        try:
            scene = scene_for(summary.scene, summary.scene_config)
        except SceneError as exc:
            raise UnreadableRecord(f"{record / MANIFEST_NAME}: summary.scene: {exc}") from None
        flown = trial_metrics(trajectory, scene, vehicle_radius=summary.platform.vehicle_radius_m,
                              goal_radius=summary.goal_radius_m, shortest_length=shortest,
                              collision_time_s=summary.end_time_s if summary.outcome == Outcome.COLLISION else None,
                              success=summary.outcome == Outcome.SUCCESS)
        # The estimate's side is trial_metrics' own; the truth's the same figures on the truth's positions.
        true = safety_figures(truth, scene, summary.platform.vehicle_radius_m) if truth is not None else None
        flown.update(_judged(summary.judged_on, (flown["min_clearance_m"], flown["margin_fence_m"]),
                             (true.min_clearance_m, true.margin_fence_m) if true is not None else None))
    latency = latency_columns(_optional_table(record, "ros2")) if is_ros2(summary.planner) else {}
    return {**flown, **estimate_against_truth(telemetry, true_rows), **timing_summary(_optional_table(record, "timing")),
            **latency}


def _mission(record: Path, summary: MissionSummary) -> Figures:
    """The stages completed (HUGE-Bench's sub-tasks done, in order) and the mission metrics of the armed flight,
    in vehicle time, in the mission's frame: SR/OSR/DTS/SPL terms, CR, TCR@delta whole and per stage."""
    route = summary.route
    done = [e for e in read_events(record) if isinstance(e, dict) and e.get("kind") == "stage_ended"
            and e.get("completed")]
    out: Figures = {"stages_completed": len(done) / len(route.labels)}
    success, collided = summary.outcome == Outcome.SUCCESS, summary.outcome == Outcome.COLLISION
    stamped = _optional_table(record, "telemetry")
    stamped = stamped if stamped is not None else pd.DataFrame()
    telemetry = vehicle_time(stamped, summary.speed_factor) if len(stamped) else stamped
    flown = telemetry[telemetry["armed"].astype(bool)] if "armed" in telemetry else telemetry
    out.update(dict.fromkeys(MARGIN_FIGURES + JUDGED_FIGURES, math.nan))
    truth = _true_positions(record, stamped)
    truth = truth[truth["armed"].astype(bool)] if "armed" in truth else truth
    out.update(estimate_against_truth(stamped, truth))  # on the harness's stamps, by which the truth is keyed
    if len(flown) < 2:
        return {**out, "success": success, "collided": collided}
    trajectory = Trajectory.from_telemetry(flown, offset=np.array(route.home))
    stages = [(label, np.array(path)) for label, path in route.stages]
    reference = np.array(route.reference)
    out.update(mission_metrics(trajectory, reference, stages, goal_radius=route.success_radius_m,
                               success=success, collided=collided))
    # How closely the route was followed: the mean distance of the armed flight's positions from it.
    out["tracking_error_m"] = float(distance_to_polyline(trajectory.pos, reference).mean())
    if summary.airspace is not None:
        scene, airspace = _judged_against(record, summary)
        radius = summary.judged_radius_m

        def margins(flight: Trajectory | None) -> tuple[float, float] | None:
            if flight is None or not len(flight):
                return None
            clearance = float(np.min(scene.distance(flight.pos))) - radius if scene is not None else math.nan
            return clearance, float(airspace_room(flight.pos, airspace).min())

        out.update(_judged(summary.judged_on, margins(trajectory),
                           margins(_trajectory(truth, summary.speed_factor, route.home))))
    return out


def _true_positions(record: Path, telemetry: pd.DataFrame) -> pd.DataFrame:
    """`telemetry`'s rows with the truth table's positions in place of the estimate's, where the record has them
    (records.truth: keyed by the snapshot's t_ns); no rows where it has none."""
    truth = _optional_table(record, TRUTH_TABLE)
    if truth is None or truth.empty or telemetry.empty:
        return pd.DataFrame()
    axes = ["north", "east", "down"]
    return telemetry.drop(columns=axes).merge(truth[["t_ns", *axes]].drop_duplicates("t_ns"), on="t_ns")


def _trajectory(rows: pd.DataFrame, speed_factor: float, home) -> Trajectory | None:
    """Telemetry rows (vehicle time already where `speed_factor` is infinite) as a trajectory in the scene's or
    mission's frame; None without rows."""
    if not len(rows):
        return None
    return Trajectory.from_telemetry(vehicle_time(rows, speed_factor), offset=np.array(home))


def _judged(judged_on: str, estimate: tuple[float, float] | None, truth: tuple[float, float] | None) -> Figures:
    """The margins (minimum clearance less the radius, fence margin) of each side (None: the record has no such
    flight) and of the side the judge used (the truth where it judged on it and the record has it); a clearance
    margin where there are no obstacles (an infinite clearance) is NaN."""
    sides = {side: margins if margins is not None else (math.nan, math.nan)
             for side, margins in ((ESTIMATE, estimate), (TRUTH, truth))}
    clearance, fence = sides[TRUTH if judged_on == TRUTH and truth is not None else ESTIMATE]
    return {"min_clearance_m": clearance, "margin_clearance_m": clearance if math.isfinite(clearance) else math.nan,
            "margin_fence_m": fence,
            "min_clearance_truth_m": sides[TRUTH][0], "min_clearance_estimate_m": sides[ESTIMATE][0],
            "margin_fence_truth_m": sides[TRUTH][1], "margin_fence_estimate_m": sides[ESTIMATE][1]}


def _judged_against(record: Path, summary: MissionSummary) -> tuple[Scene | None, Airspace]:
    """The scene and airspace a mission's judge watched, from its summary; UnreadableRecord naming the field."""
    where = record / MANIFEST_NAME
    try:
        scene = SceneRef(**summary.scene).load() if summary.scene is not None else None
    except (TypeError, ValueError, OSError, SceneError) as exc:
        raise UnreadableRecord(f"{where}: summary.scene: expected a generator and seed or a scene file ({exc})") \
            from None
    values = dict(summary.airspace or {})
    try:
        airspace = Airspace(
            alt_min=float(values["alt_min"]), alt_max=float(values["alt_max"]),
            geofence=_polygon(values.get("geofence")), no_fly=tuple(NoFlyZone(**z) for z in values.get("no_fly", ())),
            geofence_circle=tuple(map(float, values["geofence_circle"])) if values.get("geofence_circle") else None,
            no_fly_polygons=tuple(_polygon(p) for p in values.get("no_fly_polygons", ())))
    except (KeyError, TypeError, ValueError) as exc:
        raise UnreadableRecord(f"{where}: summary.airspace: expected the fields of a mission's airspace "
                               f"(alt_min, alt_max, geofence, geofence_circle, no_fly, no_fly_polygons): {exc!r}") \
            from None
    return scene, airspace


def _polygon(vertices) -> tuple[tuple[float, float], ...] | None:
    return None if vertices is None else tuple((float(n), float(e)) for n, e in vertices)


def _optional_table(record: Path, name: str) -> pd.DataFrame | None:
    try:
        return read_table(record, name)
    except FileNotFoundError:
        return None


def figures_path(record: Path) -> Path | None:
    """Where a campaign keeps the figures of the trial record in `record` (None: not a campaign's trial)."""
    if record.parent.name != TRIALS_DIR:
        return None
    return record.parent.parent / FIGURES_DIR / f"{record.name}.json"


def keep_figures(record: Path) -> None:
    """Compute a campaign trial's figures and keep them in its campaign's figures/ (written atomically; the
    record is not touched). A record that cannot be read keeps none: the table lists it with why."""
    try:
        manifest = read_manifest(record)
        summary = Summary.from_manifest(manifest, record / MANIFEST_NAME)
        figures = trial_figures(record, summary)
    except UnreadableRecord:
        return
    _write(record, manifest, figures)


def record_figures(record: Path, manifest: dict[str, Any], summary: Summary) -> Figures:
    """The figures of a finished trial record: its campaign's kept ones when they are this record's and this
    version's, else computed from the record (and kept, where the campaign directory can be written)."""
    path = figures_path(record)
    if path is not None:
        with contextlib.suppress(FileNotFoundError, UnreadableRecord):
            kept = read_json_object(path, MAX_FIGURES_BYTES)
            figures = kept.get("figures")
            if kept.get("version") == FIGURES_VERSION and kept.get("record") == manifest.get("started") \
                    and isinstance(figures, dict) and not any(isinstance(v, (dict, list)) for v in figures.values()):
                return figures
    figures = trial_figures(record, summary)
    # A report may read a campaign it cannot write (someone else's, a read-only copy): the figures stand anyway.
    with contextlib.suppress(OSError):
        _write(record, manifest, figures)
    return figures


def _write(record: Path, manifest: dict[str, Any], figures: Figures) -> None:
    path = figures_path(record)
    if path is None or not figures:  # a summary with no figures to compute (one from before, the fidelity suite's)
        return
    # Tied to the record's start: a trial run again after its record was removed gets its own figures.
    text = json.dumps({"version": FIGURES_VERSION, "record": manifest.get("started"), "figures": figures})
    with writing(f"the figures of trial {record.name}", path):
        path.parent.mkdir(exist_ok=True)
        write_file_atomically(path, lambda temporary: temporary.write_text(text))
