"""One HTML page per trial, linked from every table of the report: what a PX4 engineer opens to debug
a trial, laid out after Flight Review's plots.

What the trial was and how it ended; its flight against the setpoints (the planner's commands and the
vehicle's own position, velocity, attitude and rate setpoints) with flight modes and events marked; the
XY map of the track over the scene; actuator outputs; battery; PX4's estimate against the physics'
truth; per-cycle compute time against the loop's deadline; the vehicle's messages (STATUSTEXT) and the
harness's events in one log; the parameters that differ from PX4's defaults. Each plot is drawn only
from what the record holds, and says "not in this record" otherwise.

Pages live in ``trials/`` beside report.html and load Plotly from ``report_files/``.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from missions.geometry import Scene
from missions.scenes import scene_for
from onboard.timing import TOTAL, per_cycle
from px4.external_physics.simulator import TRUTH_TABLE
from px4.ulog import read_topic
from records.campaign_dir import TRIALS_DIR
from records.clock import VehicleAxis
from records.record import (
    MANIFEST_NAME,
    UnreadableRecord,
    read_events,
    read_manifest,
    read_table,
)
from records.summary import Summary
from reports.estimation import QUANTITIES, estimation_errors, euler_angles
from reports.figures import record_figures
from reports.flight_log import SEVERITIES, VehicleLog, changed_parameters, read_tlog
from reports.interactive import (
    EVENT_KINDS,
    MARGIN,
    PLOTLY_JS,
    div,
    line,
    mark_modes_and_events,
    script_tag,
    stacked,
    thin,
    timing_histogram,
    values,
)

PAGES_DIR = "trials"
HEADLINE = ("end_time_s", "duration_s", "path_length_m", "final_distance_m", "min_clearance_m", "avg_speed",
            "t_tot_ms")
STYLE = ("body{font-family:sans-serif;max-width:1400px;margin:1.5em auto;color:#222;font-size:15px}"
         "table{border-collapse:collapse;font-size:13px;margin:.8em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
         "text-align:left;vertical-align:top;overflow-wrap:anywhere}th{background:#f3f3f3}.bad{color:#a00;font-weight:bold}"
         ".ok{color:#070;font-weight:bold}details{margin:.6em 0}summary{cursor:pointer}.missing{color:#777}"
         ".sev0,.sev1,.sev2,.sev3{color:#a00}.sev4{color:#a60}nav a{margin-right:1em}"
         "#message-log td:nth-child(-n+3){white-space:nowrap}")
NOT_RECORDED = "<p class='missing'>Not in this record: {}.</p>"
SETPOINT_DASH = "dash"
AXIS_COLOURS = ("#1f77b4", "#2ca02c", "#d62728")  # the same colour for an axis and its setpoints
MAP_OBSTACLE = "rgba(139,69,19,0.55)"


def page_href(trial_id: str) -> str:
    """Where a trial's page is, relative to report.html."""
    return f"{PAGES_DIR}/{trial_id}.html"


def record_dir(row: pd.Series) -> Path:
    """The trial record a results row came from."""
    return Path(row["run_dir"]) / TRIALS_DIR / str(row["trial_id"])


def cycle_totals_ms(record: Path) -> np.ndarray:
    """Per-cycle T_tot (ms) of a trial's onboard runtime; empty when it recorded none."""
    timing = _optional(record, "timing")
    if timing is None or timing.empty:
        return np.array([])
    table = per_cycle(timing)
    return table[TOTAL].dropna().to_numpy(float) / 1e6 if TOTAL in table else np.array([])


@dataclass
class TrialPages:
    """What writing the trial pages found, by trial id: each page's href, and each trial's per-cycle
    T_tot (ms), read once for its page and reused by the overview's histograms."""

    links: dict[str, str] = field(default_factory=dict)
    cycle_totals_ms: dict[str, np.ndarray] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)  # RUN/TRIAL -> why its record could not be read


def write_trial_pages(results: pd.DataFrame, out_dir: Path) -> TrialPages:
    """A page for every trial of `results` whose record can be read; the others are in `unreadable`."""
    folder = out_dir / PAGES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    pages = TrialPages()
    for _, row in results.iterrows():
        record = record_dir(row)
        if not (record / "manifest.json").exists():
            continue
        trial_id = str(row["trial_id"])
        try:
            totals = cycle_totals_ms(record)
            page = trial_page(record, totals)
        except (OSError, UnreadableRecord) as exc:  # reading only: writing the page is below
            pages.unreadable[f"{row['run']}/{trial_id}"] = str(exc)
            totals, page = np.array([]), None  # not read again for the histograms
        pages.cycle_totals_ms[trial_id] = totals
        if page is not None:
            (folder / f"{trial_id}.html").write_text(page, encoding="utf-8")
            pages.links[trial_id] = page_href(trial_id)
    return pages


@dataclass
class _Flight:
    """A record's data on one time axis: vehicle seconds from the first telemetry row."""

    record: Path
    config: dict
    columns: dict  # its results-table columns: the summary's and the figures (records from before typed summaries too)
    events: list[dict]
    telemetry: pd.DataFrame
    commands: pd.DataFrame  # the planner's, one row per cycle (table "onboard"); empty without a planner
    log: VehicleLog
    axis: VehicleAxis

    def seconds(self, t_ns) -> np.ndarray:
        return self.axis.seconds(t_ns)

    def row_seconds(self, table: pd.DataFrame) -> np.ndarray:
        """Vehicle seconds of an onboard-side table's rows. Their `t_ns` is the harness's clock, the
        telemetry's too except on lockstep, whose telemetry is in simulated time: there the rows'
        `t_vehicle` (simulated seconds) places them."""
        t_ns = table["t_ns"].to_numpy(float)
        if "t_vehicle" in table and len(t_ns) and not self.telemetry.empty and \
                t_ns[0] > float(self.telemetry["t_ns"].iloc[-1]):
            return self.seconds(table["t_vehicle"].to_numpy(float) * 1e9)
        return self.seconds(t_ns)


def trial_page(record: Path, totals: np.ndarray | None = None) -> str:
    """The HTML page of one trial record (`totals`: its per-cycle T_tot, if already read)."""
    manifest = read_manifest(record)
    config = manifest.get("config", {})
    summary = Summary.from_manifest(manifest, record / MANIFEST_NAME)
    columns = {**summary.columns(), **record_figures(record, manifest, summary)}
    events = read_events(record)
    trial_id = config.get("trial_id", record.name)
    outcome = manifest.get("outcome", "?")
    telemetry = _optional(record, "telemetry")
    telemetry = telemetry if telemetry is not None else pd.DataFrame()
    t0 = int(telemetry["t_ns"].iloc[0]) if not telemetry.empty else None
    # Lockstep stamps in simulated time already; a real-time target at a speed factor does not.
    speed = math.inf if config.get("target") == "lockstep" else float(config.get("speed", 1.0))
    commands = _optional(record, "onboard")
    flight = _Flight(record, config, columns, events, telemetry, commands if commands is not None else pd.DataFrame(),
                     read_tlog(record, t0), VehicleAxis(telemetry, speed))
    sections = [("flight", "Flight against setpoints", _flight_section(flight)),
                ("map", "Track over the scene", _map_section(flight)),
                ("actuators", "Actuator outputs", _actuator_section(flight)),
                ("battery", "Battery", _battery_section(flight)),
                ("estimation", "Estimate against truth", _estimation_section(record)),
                ("timing", "Onboard compute time", _timing_section(record, config, totals)),
                ("messages", "Messages and events", _message_log(flight)),
                ("parameters", "Parameters changed from PX4's defaults", _parameter_section(record, events))]
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(trial_id)}</title>"
             f"<style>{STYLE}</style>{script_tag(f'../report_files/{PLOTLY_JS}')}</head><body>",
             "<p><a href='../report.html'>&larr; report</a></p>",
             f"<h1>{html.escape(trial_id)}</h1>",
             f"<p>Outcome <span class='{'ok' if outcome == 'success' else 'bad'}'>{html.escape(str(outcome))}</span>"
             + (f": {html.escape(summary.reason)}" if summary.reason else "") + "</p>",
             "<p>" + html.escape(", ".join(f"{k} {_text(columns[k])}" for k in HEADLINE if k in columns)) + "</p>",
             "<nav>" + "".join(f"<a href='#sec-{key}'>{html.escape(title)}</a>" for key, title, _ in sections) + "</nav>"]
    for key, title, body in sections:
        parts += [f"<h2 id='sec-{key}'>{html.escape(title)}</h2>", body]
    parts += [_table({k: v for k, v in config.items() if k != "trial_id"}, "what was flown"),
              _table(columns, "every figure"),
              "</body></html>"]
    return "".join(parts)


# ------------------------------------------------------------------------------------------ sections
def _flight_section(flight: _Flight) -> str:
    """Position, velocity, attitude and angular rates against time, each with its setpoints dashed in
    the axis's colour: the planner's commands and what the vehicle reported as its own setpoints."""
    telemetry = flight.telemetry
    if telemetry.empty:
        return NOT_RECORDED.format("telemetry")
    tel = thin(telemetry)
    t = flight.seconds(tel["t_ns"])
    horizontal = [line(t, tel["north"], "north", colour=AXIS_COLOURS[0], group="north"),
                  line(t, tel["east"], "east", colour=AXIS_COLOURS[1], group="east")]
    altitude = [line(t, -tel["down"], "altitude", colour=AXIS_COLOURS[2], group="altitude")]
    velocity = [line(t, tel[c], c, colour=colour, group=c) for c, colour in zip(("vn", "ve", "vd"), AXIS_COLOURS)]
    attitude = [line(t, np.degrees(tel[c]), c, colour=colour, group=c)
                for c, colour in zip(("roll", "pitch", "yaw"), AXIS_COLOURS)]
    commanded = _planner_setpoints(flight, ("position", "trajectory"), ("north", "east", "altitude"))
    horizontal += commanded[:2]
    altitude += commanded[2:]
    velocity += _planner_setpoints(flight, ("velocity",), ("vn", "ve", "vd"))
    target = thin(flight.log.table("POSITION_TARGET_LOCAL_NED"))
    if not target.empty:
        mask = target["type_mask"].astype(int)
        tt = flight.seconds(target["t_ns"])
        for bit, columns, names, rows in ((0b1, ("x", "y", "z"), ("north", "east", "altitude"),
                                           (horizontal, horizontal, altitude)),
                                          (0b1000, ("vx", "vy", "vz"), ("vn", "ve", "vd"), (velocity,) * 3)):
            used = (mask & bit) == 0
            for column, name, colour, traces in zip(columns, names, AXIS_COLOURS, rows):
                sign = -1.0 if column == "z" else 1.0
                traces.append(line(tt, np.where(used, sign * target[column], np.nan), f"{name} setpoint (vehicle)",
                                   SETPOINT_DASH, colour, name))
    rows = [("horizontal position (m)", horizontal), ("altitude (m)", altitude), ("velocity (m/s, NED)", velocity)]
    attitude_target = thin(flight.log.table("ATTITUDE_TARGET"))
    if not attitude_target.empty:
        ta = flight.seconds(attitude_target["t_ns"])
        euler = np.degrees(euler_angles(np.array(attitude_target["q"].tolist(), dtype=float)))
        ignore_attitude = (attitude_target["type_mask"].astype(int) & 0b10000000) != 0
        for index, (name, colour) in enumerate(zip(("roll", "pitch", "yaw"), AXIS_COLOURS)):
            attitude.append(line(ta, np.where(ignore_attitude, np.nan, euler[:, index]), f"{name} setpoint",
                                 SETPOINT_DASH, colour, name))
    rows.append(("attitude (deg)", attitude))
    rates = thin(flight.log.table("ATTITUDE"))
    if not rates.empty:
        tr = flight.seconds(rates["t_ns"])
        traces = [line(tr, np.degrees(rates[c]), name, colour=colour, group=name)
                  for c, name, colour in zip(("rollspeed", "pitchspeed", "yawspeed"), ("p", "q", "r"), AXIS_COLOURS)]
        if not attitude_target.empty:
            ignore_rates = attitude_target["type_mask"].astype(int) & 0b111
            for bit, (c, name, colour) in enumerate(zip(("body_roll_rate", "body_pitch_rate", "body_yaw_rate"),
                                                        ("p", "q", "r"), AXIS_COLOURS)):
                traces.append(line(ta, np.where(ignore_rates & (1 << bit), np.nan, np.degrees(attitude_target[c])),
                                   f"{name} setpoint", SETPOINT_DASH, colour, name))
        rows.append(("angular rate (deg/s)", traces))
    figure = stacked(rows, "vehicle time (s)")
    mark_modes_and_events(figure, telemetry["flight_mode"], flight.seconds(telemetry["t_ns"]), _marked_events(flight))
    notes = [] if target.empty and attitude_target.empty else ["vehicle setpoints from its telemetry log"]
    if flight.commands.empty or not flight.commands["kind"].isin(["position", "trajectory", "velocity"]).any():
        notes.append("no planner commands in this record")
    caption = f"<p>Dashed: setpoints ({'; '.join(notes)}).</p>" if notes else "<p>Dashed: setpoints.</p>"
    return caption + div(figure, "flight")


def _planner_setpoints(flight: _Flight, kinds: tuple[str, ...], names: tuple[str, str, str]) -> list[dict]:
    commands = flight.commands
    if commands.empty:
        return []
    chosen = thin(commands[commands["kind"].isin(kinds)])
    if chosen.empty:
        return []
    t = flight.row_seconds(chosen)
    traces = []
    for index, (name, colour) in enumerate(zip(names, AXIS_COLOURS)):
        value = chosen[f"cmd_{index}"].astype(float)
        value = -value if name == "altitude" else value
        traces.append(line(t, value, f"{name} planner command", "dot", colour, name))
    return traces


def _marked_events(flight: _Flight) -> list[tuple[float, str]]:
    """Events that can be placed on the telemetry's time axis, as (vehicle seconds, label).

    Events carry the harness's clock; so does telemetry over MAVLink, but a lockstep vehicle stamps its
    telemetry in simulated time, where only the navigation phase's ends (from the summary's columns) are known.
    """
    placed = _on_telemetry_clock(flight)
    if not placed:
        ends = [("navigation_started", flight.columns.get("nav_start_ns")), ("verdict", flight.columns.get("nav_end_ns"))]
        placed = [{"kind": kind, "t_ns": t} for kind, t in ends if isinstance(t, (int, float)) and not math.isnan(t)]
    return [(float(flight.seconds(e["t_ns"])), EVENT_KINDS[e["kind"]]) for e in placed if e.get("kind") in EVENT_KINDS]


def _on_telemetry_clock(flight: _Flight) -> list[dict]:
    """The events whose time falls near the telemetry's span (none when the two clocks differ)."""
    if flight.telemetry.empty:
        return []
    t0, t1 = int(flight.telemetry["t_ns"].iloc[0]), int(flight.telemetry["t_ns"].iloc[-1])
    margin = max(t1 - t0, 1)
    return [e for e in flight.events if isinstance(e.get("t_ns"), int) and t0 - margin <= e["t_ns"] <= t1 + margin]


def _map_section(flight: _Flight) -> str:
    """North-east view of the flown track over the scene's obstacles, with the setpoints' path."""
    telemetry = flight.telemetry
    if telemetry.empty:
        return NOT_RECORDED.format("telemetry")
    home = np.nan_to_num(np.array([flight.columns.get(f"home_{axis}", 0.0) for axis in ("north", "east")], float))
    scene = _scene(flight.config)
    data, shapes = [], []
    if scene is not None:
        shapes, data = _scene_drawing(scene)
    track = thin(telemetry, 2000)
    data.append({"type": "scatter", "mode": "lines", "x": values(track["east"] + home[1]),
                 "y": values(track["north"] + home[0]), "name": "flown", "line": {"color": "#1f77b4", "width": 2}})
    target = flight.log.table("POSITION_TARGET_LOCAL_NED")
    if not target.empty:
        target = thin(target, 2000)
        ignored = (target["type_mask"].astype(int) & 0b11) != 0  # a gap where the vehicle flew on velocity
        data.append({"type": "scatter", "mode": "lines", "x": values(np.where(ignored, np.nan, target["y"] + home[1])),
                     "y": values(np.where(ignored, np.nan, target["x"] + home[0])), "name": "position setpoint (vehicle)",
                     "line": {"color": "#d62728", "width": 1, "dash": "dash"}})
    end = telemetry.iloc[-1]
    data.append({"type": "scatter", "mode": "markers", "x": [float(end["east"] + home[1])],
                 "y": [float(end["north"] + home[0])], "name": "end", "marker": {"symbol": "x", "size": 10,
                                                                                  "color": "black"}})
    layout = {"height": 640, "margin": MARGIN, "shapes": shapes, "legend": {"orientation": "h", "y": -0.12},
              "xaxis": {"title": {"text": "east (m)"}, "constrain": "domain"}, "yaxis": {"title": {"text": "north (m)"},
                                                                  "scaleanchor": "x", "scaleratio": 1}}
    note = "" if scene is not None else NOT_RECORDED.format("a scene (a mission file's trial): the track alone")
    return note + div({"data": data, "layout": layout}, "map")


def _scene(config: dict) -> Scene | None:
    """The scene a navigation trial flew in; None for a mission file's trial (no scene to draw)."""
    if config.get("mission") or "scene" not in config:
        return None
    try:
        return scene_for(str(config["scene"]), int(config.get("config", 0)))
    except (KeyError, ValueError):  # SceneError is a ValueError: a scene this version does not know
        return None


def _scene_drawing(scene: Scene) -> tuple[list[dict], list[dict]]:
    """The scene top-down as Plotly shapes and traces: the flight volume, obstacles near the flight
    altitude, the reference path, start and goal."""
    lo, hi = scene.bounds_min, scene.bounds_max
    shapes = [{"type": "rect", "x0": float(lo[1]), "x1": float(hi[1]), "y0": float(lo[0]), "y1": float(hi[0]),
               "line": {"color": "grey", "dash": "dash", "width": 1}}]
    cylinders = scene.cylinders
    for a, b, r in zip(cylinders.a, cylinders.b, cylinders.radius):
        if abs(a[0] - b[0]) < 1e-6 and abs(a[1] - b[1]) < 1e-6:
            shapes.append({"type": "circle", "x0": float(a[1] - r), "x1": float(a[1] + r), "y0": float(a[0] - r),
                           "y1": float(a[0] + r), "fillcolor": MAP_OBSTACLE, "line": {"width": 0}})
        else:
            shapes.append({"type": "line", "x0": float(a[1]), "x1": float(b[1]), "y0": float(a[0]), "y1": float(b[0]),
                           "line": {"color": MAP_OBSTACLE, "width": max(1.0, 8 * float(r))}})
    if len(scene.boxes):
        for l, h in zip(*scene.boxes.bounding_boxes()):
            shapes.append({"type": "rect", "x0": float(l[1]), "x1": float(h[1]), "y0": float(l[0]), "y1": float(h[0]),
                           "fillcolor": "rgba(112,128,144,0.5)", "line": {"width": 0}})
    traces = []
    if scene.voxels is not None and len(scene.voxels):
        # Only cubes within 1 m of the start altitude: a full projection would blacken the map.
        centres = scene.voxels.centres
        near = centres[np.abs(centres[:, 2] - scene.start[2]) < 1.0]
        traces.append({"type": "scatter", "mode": "markers", "x": values(near[:, 1]), "y": values(near[:, 0]),
                       "name": "obstacles", "marker": {"symbol": "square", "size": 4, "color": "slategray"}})
    path = scene.reference_path()
    traces += [{"type": "scatter", "mode": "lines", "x": values(path[:, 1]), "y": values(path[:, 0]),
                "name": "reference", "line": {"color": "#888", "dash": "dot", "width": 1}},
               {"type": "scatter", "mode": "markers", "x": [float(scene.start[1])], "y": [float(scene.start[0])],
                "name": "start", "marker": {"symbol": "triangle-up", "size": 11, "color": "green"}},
               {"type": "scatter", "mode": "markers", "x": [float(scene.goal[1])], "y": [float(scene.goal[0])],
                "name": "goal", "marker": {"symbol": "star", "size": 13, "color": "red"}}]
    return shapes, traces


def _actuator_section(flight: _Flight) -> str:
    """The outputs the vehicle reported: SERVO_OUTPUT_RAW (PWM, us) or ACTUATOR_OUTPUT_STATUS, else the
    actuator_outputs topic PX4's ULog kept in the record (on the telemetry clock)."""
    servo = flight.log.table("SERVO_OUTPUT_RAW")
    status = flight.log.table("ACTUATOR_OUTPUT_STATUS")
    if not servo.empty:
        columns = [c for c in servo.columns if c.startswith("servo") and (servo[c] != 0).any()]  # 0: unused
        frame, unit, source = servo, "PWM (us)", "SERVO_OUTPUT_RAW"
        names = {c: f"output {c[len('servo'):-len('_raw')]}" for c in columns}
    elif not status.empty:
        outputs = np.array(status["actuator"].tolist(), dtype=float)
        used = [i for i in range(outputs.shape[1]) if np.nanmax(np.abs(outputs[:, i])) > 0]
        frame = pd.DataFrame({f"a{i}": outputs[:, i] for i in used}).assign(t_ns=status["t_ns"].to_numpy())
        columns, unit, source = [f"a{i}" for i in used], "output", "ACTUATOR_OUTPUT_STATUS"
        names = {f"a{i}": f"output {i + 1}" for i in used}
    else:
        frame = _ulog_table(flight.record, "actuator_outputs")
        if frame is None:
            return NOT_RECORDED.format("actuator outputs (no SERVO_OUTPUT_RAW, ACTUATOR_OUTPUT_STATUS or "
                                       "actuator_outputs topic)")
        columns = [c for c in frame.columns if c.startswith("output[") and (frame[c] != 0).any()]
        unit, source, names = "output", "PX4's ULog actuator_outputs", {c: c for c in columns}
    frame = thin(frame)
    t = flight.seconds(frame["t_ns"])
    figure = stacked([(f"{source}: {unit}", [line(t, frame[c], names[c]) for c in columns])], "vehicle time (s)",
                     height_per_row=300)
    mark_modes_and_events(figure, flight.telemetry.get("flight_mode", pd.Series(dtype=str)),
                          flight.seconds(flight.telemetry.get("t_ns", [])), [])
    return div(figure, "actuators")


def _battery_section(flight: _Flight) -> str:
    """Remaining charge (the telemetry table) and voltage and current (BATTERY_STATUS or SYS_STATUS)."""
    rows = []
    if "battery_pct" in flight.telemetry and flight.telemetry["battery_pct"].notna().any():
        tel = thin(flight.telemetry)
        rows.append(("remaining (%)", [line(flight.seconds(tel["t_ns"]), tel["battery_pct"], "remaining")]))
    battery = flight.log.table("BATTERY_STATUS")
    status = flight.log.table("SYS_STATUS")
    if not battery.empty:
        cells = np.array(battery["voltages"].tolist(), dtype=float)
        volts = np.where(cells == 65535, 0.0, cells).sum(axis=1) / 1000.0  # UINT16_MAX: no such cell
        t, amps = flight.seconds(battery["t_ns"]), battery["current_battery"].astype(float) / 100.0
    elif not status.empty:
        status = thin(status)
        t, volts = flight.seconds(status["t_ns"]), status["voltage_battery"].astype(float) / 1000.0
        amps = status["current_battery"].astype(float) / 100.0
    else:
        t = None
    if t is not None:
        rows.append(("voltage (V)", [line(t, volts, "voltage")]))
        rows.append(("current (A; -1: not measured)", [line(t, amps, "current")]))
    if not rows:
        return NOT_RECORDED.format("battery state")
    return div(stacked(rows, "vehicle time (s)", height_per_row=170), "battery")


def _estimation_section(record: Path) -> str:
    """PX4's estimate against the truth of the harness's physics, error over time per quantity."""
    truth = _optional(record, TRUTH_TABLE)
    logs = sorted((record / "ulog").glob("*.ulg"))
    if truth is None or truth.empty or not logs:
        return NOT_RECORDED.format("a ground truth (only trials flown on the harness's physics keep one)")
    try:
        errors = estimation_errors(truth, read_topic(logs[-1], "vehicle_local_position"),
                                   read_topic(logs[-1], "vehicle_attitude"))
    except (KeyError, ValueError):  # a log cut short (PX4 killed) lacks topics or whole messages
        errors = {}
    if not errors:
        return NOT_RECORDED.format("an airborne stretch of PX4's estimate to set against the truth")
    t_first = min(int(t[0]) for t, _ in errors.values())
    rows = []
    for stems, title in ((("est_pos_h_m", "est_pos_v_m"), "position error (m)"),
                         (("est_vel_h_mps", "est_vel_v_mps"), "velocity error (m/s)"),
                         (("est_roll_deg", "est_pitch_deg", "est_yaw_deg"), "attitude error (deg)")):
        traces = []
        for stem in stems:
            t_us, error = errors[stem]
            chosen = thin(pd.DataFrame({"t": (t_us - t_first) / 1e6, "e": error}))
            traces.append(line(chosen["t"], chosen["e"], QUANTITIES[stem]))
        rows.append((title, traces))
    return ("<p>Absolute error of PX4's EKF2 estimate (its ULog) against the simulator's truth while airborne, "
            "on PX4's clock.</p>" + div(stacked(rows, "PX4 time since the first compared sample (s)", 200),
                                        "estimation"))


def _timing_section(record: Path, config: dict, totals: np.ndarray | None) -> str:
    totals = cycle_totals_ms(record) if totals is None else totals
    if not len(totals):
        return NOT_RECORDED.format("onboard stage timing (no planner ran on the companion side)")
    rate = config.get("rate_hz")
    deadline = 1000.0 / float(rate) if rate else None
    return div(timing_histogram({"this trial": totals}, deadline, "T_tot per planner cycle"), "timing")


def _message_log(flight: _Flight) -> str:
    """The vehicle's STATUSTEXTs and the harness's events, in one table in time order. Rows on the
    telemetry's clock give vehicle seconds; events of a lockstep trial (harness clock, its telemetry in
    simulated time) keep harness seconds from the first event, and say so."""
    rows = []
    texts = flight.log.table("STATUSTEXT")
    for _, message in texts.iterrows():
        severity = int(message["severity"])
        rows.append((float(flight.seconds(message["t_ns"])), "vehicle", severity,
                     SEVERITIES[severity] if 0 <= severity < len(SEVERITIES) else str(severity), str(message["text"]),
                     False))
    placed = {id(e) for e in _on_telemetry_clock(flight)}
    t_first = next((e["t_ns"] for e in flight.events if isinstance(e.get("t_ns"), int)), 0)
    for event in flight.events:
        details = json.dumps({k: v for k, v in event.items() if k not in ("t_ns", "kind")}, default=str)[:400]
        stamp = event.get("t_ns", t_first)
        t = float(flight.seconds(stamp)) if id(event) in placed else (stamp - t_first) / 1e9
        clock = "" if id(event) in placed else " (harness clock)"
        rows.append((t, "harness", 6, str(event.get("kind")) + clock, details, id(event) not in placed))
    if not rows:
        return NOT_RECORDED.format("messages or events")
    if flight.log.present and texts.empty:
        note = "<p class='missing'>The vehicle sent no STATUSTEXT in this record.</p>"
    elif not flight.log.present:
        note = NOT_RECORDED.format("the vehicle's telemetry log (its STATUSTEXTs)")
    else:
        note = ""
    body = "".join(f"<tr class='sev{severity}'><td>{t:.2f}</td><td>{source}</td><td>{html.escape(label)}</td>"
                   f"<td>{html.escape(text)}</td></tr>"
                   for t, source, severity, label, text, _ in sorted(rows, key=lambda r: (r[5], r[0])))
    return (note + "<table id='message-log'><tr><th>t (s, vehicle)</th><th>from</th><th>severity / event</th>"
            f"<th>text</th></tr>{body}</table>")


def _parameter_section(record: Path, events: list[dict]) -> str:
    """What the trial set (its `params_set` events) and every ULog parameter off PX4's default."""
    parts = []
    set_by_trial = {k: v for e in events if e.get("kind") == "params_set" for k, v in (e.get("params") or {}).items()}
    if set_by_trial:
        parts.append(_plain_table(pd.DataFrame({"parameter": list(set_by_trial), "set to": list(set_by_trial.values())}),
                                  "params-set", "Set by the trial:"))
    changed = changed_parameters(record)
    if changed is None:
        parts.append(NOT_RECORDED.format("a flight log with the vehicle's parameters"))
    elif changed.empty:
        parts.append("<p>Every parameter in the flight log is at PX4's default.</p>")
    else:
        parts.append(_plain_table(changed, "params", f"In the flight log, {len(changed)} differ from PX4 v1.16.1's "
                                                     "defaults (the built-in vehicle's SIH_* come from its profile):"))
    return "".join(parts)


# ------------------------------------------------------------------------------------------ helpers
def _optional(record: Path, name: str) -> pd.DataFrame | None:
    try:
        return read_table(record, name)
    except FileNotFoundError:
        return None


def _ulog_table(record: Path, topic: str) -> pd.DataFrame | None:
    """A ULog topic kept in the record on the harness clock (`px4.ulog.keep_in_record`), if there is one."""
    kept = sorted((record / "ulog").glob(f"*.{topic}.parquet"))
    return pd.read_parquet(kept[-1]) if kept else None


def _table(mapping: dict, caption: str) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_text(v))}</td></tr>"
                   for k, v in mapping.items())
    return f"<details><summary>{html.escape(caption)}</summary><table>{rows}</table></details>"


def _plain_table(frame: pd.DataFrame, element_id: str, caption: str) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_text(v))}</td>" for v in row) + "</tr>"
                   for row in frame.itertuples(index=False))
    return f"<p>{html.escape(caption)}</p><table id='{element_id}'><tr>{head}</tr>{body}</table>"


def _text(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return str(value)
