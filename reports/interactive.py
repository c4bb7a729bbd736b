"""Interactive plots (Plotly) for the HTML report: a trial's time series against its setpoints with
flight-mode shading and events marked, and per-cycle timing histograms with p99 and the deadline.

The overview page carries Plotly's JavaScript inline, so report.html alone draws its plots offline
(mailed, archived); the trial pages, which live in the report's folder anyway, load the one copy
written beside them (`report_files/plotly.min.js`) instead of 3.5 MB each. No CDN anywhere.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

PLOTLY_JS = "plotly.min.js"
MAX_POINTS = 400  # per series and trial page: enough to read a flight, small enough for thousands of pages
# Flight modes in a consistent colour on every page (Flight Review shades them the same way).
MODE_COLOURS = {"TAKEOFF": "#cce5ff", "HOLD": "#e2e3e5", "MISSION": "#d4edda", "OFFBOARD": "#fff3cd",
                "LAND": "#f8d7da", "RETURN_TO_LAUNCH": "#f5c6cb", "POSCTL": "#d1ecf1", "ALTCTL": "#d6d8f5"}
EVENT_KINDS = {"fault_injected": "fault", "fault_cleared": "fault cleared", "navigation_started": "navigation",
               "verdict": "verdict", "failed": "failed", "link_summary": "link", "params_restored_after_crash":
               "params restored"}


def write_plotly_js(folder: Path) -> Path:
    """Plotly's JavaScript as a file in `folder` (once per report)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PLOTLY_JS
    if not path.exists():
        path.write_text(get_plotlyjs(), encoding="utf-8")
    return path


def inline_script() -> str:
    """Plotly's JavaScript as a <script> element, for a page that must draw on its own."""
    return f"<script>{get_plotlyjs()}</script>"


def div(figure: go.Figure, element_id: str) -> str:
    """A figure as an HTML fragment that draws with the page's Plotly (loaded once, not per figure)."""
    return figure.to_html(full_html=False, include_plotlyjs=False, div_id=element_id,
                          config={"displaylogo": False, "responsive": True})


def _thin(frame: pd.DataFrame, limit: int = MAX_POINTS) -> pd.DataFrame:
    step = max(1, int(np.ceil(len(frame) / limit)))
    return frame.iloc[::step]


def timeseries(telemetry: pd.DataFrame, commands: pd.DataFrame, events: list[dict], t0_ns: int,
               scale: float) -> go.Figure:
    """Position, velocity and attitude against time (vehicle seconds from `t0_ns`), the planner's
    position and velocity commands over them, flight modes shaded, events as vertical lines."""
    seconds = lambda t_ns: (np.asarray(t_ns, dtype=float) - t0_ns) / 1e9 * scale  # noqa: E731
    figure = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.04,
                           subplot_titles=("position (m, NED; altitude up)", "velocity (m/s, NED)",
                                           "attitude (deg)"))
    thin = _thin(telemetry)
    t = seconds(thin["t_ns"])
    for column, name in (("north", "north"), ("east", "east")):
        figure.add_scatter(x=t, y=thin[column], name=name, row=1, col=1)
    figure.add_scatter(x=t, y=-thin["down"], name="altitude", row=1, col=1)
    for column in ("vn", "ve", "vd"):
        figure.add_scatter(x=t, y=thin[column], name=column, row=2, col=1)
    for column in ("roll", "pitch", "yaw"):
        figure.add_scatter(x=t, y=np.degrees(thin[column]), name=column, row=3, col=1)
    if not commands.empty:
        _add_commands(figure, commands, seconds)
    # Shapes and labels as plain layout entries, set once: plotly's add_vrect/add_vline validate the
    # whole layout on every call (0.1 s each), too slow for a page per trial of a large campaign.
    shapes, labels = _mode_shading(telemetry, seconds)
    for event in events:
        kind = EVENT_KINDS.get(event.get("kind"))
        if kind is not None and "t_ns" in event:
            x = float(seconds(event["t_ns"]))
            shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                           "line": {"color": "#b00", "dash": "dot", "width": 1}, "opacity": 0.6})
            labels.append({"x": x, "y": 1.0, "xref": "x", "yref": "paper", "text": kind, "showarrow": False,
                           "textangle": -90, "xanchor": "right", "yanchor": "top",
                           "font": {"size": 10, "color": "#b00"}})
    figure.update_layout(shapes=shapes, annotations=[*figure.layout.annotations, *labels])
    figure.update_layout(height=760, margin={"l": 50, "r": 20, "t": 40, "b": 40}, hovermode="x unified",
                         legend={"orientation": "h", "y": -0.06})
    figure.update_xaxes(title_text="vehicle time (s)", row=3, col=1)
    return figure


def _add_commands(figure: go.Figure, commands: pd.DataFrame, seconds) -> None:
    """The planner's setpoints, dashed, over what the vehicle flew."""
    for kind, row, names in (("position", 1, ("north cmd", "east cmd", "altitude cmd")),
                             ("velocity", 2, ("vn cmd", "ve cmd", "vd cmd"))):
        chosen = _thin(commands[commands["kind"] == kind])
        if chosen.empty:
            continue
        t = seconds(chosen["t_ns"])
        for index, name in enumerate(names):
            values = chosen[f"cmd_{index}"].astype(float)
            if kind == "position" and index == 2:
                values = -values
            figure.add_scatter(x=t, y=values, name=name, mode="lines", line={"dash": "dash", "width": 1},
                               row=row, col=1)


def _mode_shading(telemetry: pd.DataFrame, seconds) -> tuple[list[dict], list[dict]]:
    """A shaded band per flight-mode span across all rows, and its label."""
    modes = telemetry["flight_mode"].astype(str).to_numpy()
    times = seconds(telemetry["t_ns"])
    shapes, labels = [], []
    if not len(modes):
        return shapes, labels
    starts = np.flatnonzero(np.r_[True, modes[1:] != modes[:-1]])
    ends = np.r_[starts[1:], len(modes) - 1]
    for start, end in zip(starts, ends):
        mode = modes[start]
        x0, x1 = float(times[start]), float(times[end])
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": x0, "x1": x1, "y0": 0, "y1": 1,
                       "fillcolor": MODE_COLOURS.get(mode, "#f0f0f0"), "opacity": 0.5, "layer": "below",
                       "line": {"width": 0}})
        labels.append({"x": x0, "y": 0.0, "xref": "x", "yref": "paper", "text": mode, "showarrow": False,
                       "xanchor": "left", "yanchor": "bottom", "font": {"size": 9, "color": "#555"}})
    return shapes, labels


def timing_histogram(totals_ms: dict[str, np.ndarray], deadline_ms: float | None, title: str) -> go.Figure:
    """Per-cycle compute time (T_tot, ms) per group, with each group's p99 and the loop's deadline."""
    figure = go.Figure()
    for name, values in totals_ms.items():
        if len(values) == 0:
            continue
        p99 = float(np.percentile(values, 99))
        misses = int((values > deadline_ms).sum()) if deadline_ms else 0
        label = f"{name}: p99 {p99:.2f} ms" + (f", {misses}/{len(values)} cycles over the deadline" if deadline_ms
                                                else "")
        figure.add_histogram(x=values, name=label, opacity=0.6, nbinsx=60)
        figure.add_vline(x=p99, line_dash="dash", annotation_text=f"p99 {name}", annotation_font_size=9)
    if deadline_ms:
        figure.add_vline(x=deadline_ms, line_color="#b00", annotation_text=f"deadline {deadline_ms:g} ms",
                         annotation_font_color="#b00")
    figure.update_layout(barmode="overlay", title=title, height=380, xaxis_title="T_tot per cycle (ms)",
                         yaxis_title="cycles", margin={"l": 50, "r": 20, "t": 50, "b": 40},
                         legend={"orientation": "h", "y": -0.25})
    return figure
