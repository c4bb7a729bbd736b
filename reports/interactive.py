"""Interactive plots (Plotly) for the HTML report and the trial pages.

Figures are plain dicts in Plotly's JSON schema ({"data": [...], "layout": {...}}), handed to
`Plotly.newPlot` by `div`. Building them with plotly.graph_objects validated every property on every
call and took most of a report's time (0.1 s per figure, several figures per trial page); the dicts
cost nothing and draw the same. Plotly's JavaScript is one file per report folder
(`report_files/plotly.min.js`), loaded by report.html and by every trial page. No CDN anywhere.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd
from plotly.offline import get_plotlyjs

PLOTLY_JS = "plotly.min.js"
MAX_POINTS = 400  # per series and trial page: enough to read a flight, small enough for thousands of pages
# Flight modes in a consistent colour on every page (Flight Review shades them the same way).
MODE_COLOURS = {"TAKEOFF": "#cce5ff", "HOLD": "#e2e3e5", "MISSION": "#d4edda", "OFFBOARD": "#fff3cd",
                "LAND": "#f8d7da", "RETURN_TO_LAUNCH": "#f5c6cb", "POSCTL": "#d1ecf1", "ALTCTL": "#d6d8f5"}
EVENT_KINDS = {"fault_injected": "fault", "fault_cleared": "fault cleared", "navigation_started": "navigation",
               "verdict": "verdict", "failed": "failed", "link_summary": "link", "params_restored_after_crash":
               "params restored"}
MAD_FENCE = 8.0  # the bulk of a histogram ends this many (normal-scaled) MADs above the median, or at p99
BINS = 60
MARGIN = {"l": 55, "r": 20, "t": 40, "b": 40}


def write_plotly_js(folder: Path) -> Path:
    """Plotly's JavaScript as a file in `folder` (once per report)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / PLOTLY_JS
    if not path.exists():
        path.write_text(get_plotlyjs(), encoding="utf-8")
    return path


def script_tag(src: str) -> str:
    """The <script> element that loads the report folder's Plotly from `src` (relative to the page)."""
    return f"<script src='{html.escape(src)}'></script>"


def div(figure: dict, element_id: str) -> str:
    """A figure as a <div> with id `element_id` and the call that draws it with the page's Plotly."""
    spec = {**figure, "config": {"displaylogo": False, "responsive": True}}
    text = json.dumps(spec, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    return f"<div id='{element_id}' class='plot'></div><script>Plotly.newPlot('{element_id}',{text});</script>"


def values(series) -> list:
    """Numbers as a JSON-ready list: rounded to what a plot can show, NaN and infinities as gaps."""
    array = np.round(np.asarray(series, dtype=float), 4)
    listed = array.astype(object)
    listed[~np.isfinite(array)] = None
    return listed.tolist()


def thin(frame: pd.DataFrame, limit: int = MAX_POINTS) -> pd.DataFrame:
    step = max(1, int(np.ceil(len(frame) / limit)))
    return frame.iloc[::step]


def line(x, y, name: str, dash: str | None = None, colour: str | None = None, group: str | None = None) -> dict:
    """One line trace; `group` ties a trace's legend entry to its setpoint's (clicking hides both)."""
    trace = {"type": "scatter", "mode": "lines", "x": values(x), "y": values(y), "name": name,
             "line": {"width": 1 if dash else 1.5}}
    if dash:
        trace["line"]["dash"] = dash
    if colour:
        trace["line"]["color"] = colour
    if group:
        trace["legendgroup"] = group
    return trace


def stacked(rows: list[tuple[str, list[dict]]], x_title: str, height_per_row: int = 230) -> dict:
    """Rows of traces over one shared x axis (zooming one zooms all), each row titled."""
    count, gap = len(rows), 0.06 if len(rows) > 1 else 0.0
    size = (1.0 - gap * (count - 1)) / count
    data, layout = [], {"height": height_per_row * count + 90, "margin": MARGIN, "hovermode": "x unified",
                        "legend": {"orientation": "h", "y": -0.04 - 0.25 / count}, "annotations": []}
    for index, (title, traces) in enumerate(rows):
        top = 1.0 - index * (size + gap)
        suffix = "" if index == 0 else str(index + 1)
        layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", "domain": [0, 1], "showticklabels": index == count - 1,
                                    **({} if index == 0 else {"matches": "x"}),
                                    **({"title": {"text": x_title}} if index == count - 1 else {})}
        layout[f"yaxis{suffix}"] = {"anchor": f"x{suffix}", "domain": [top - size, top]}
        layout["annotations"].append({"text": title, "x": 0.5, "y": top, "xref": "paper", "yref": "paper",
                                      "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                                      "font": {"size": 13}})
        for trace in traces:
            data.append({**trace, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}"})
    return {"data": data, "layout": layout}


def mark_modes_and_events(figure: dict, modes: pd.Series, mode_t: np.ndarray,
                          events: list[tuple[float, str]]) -> None:
    """Flight-mode spans shaded across every row, each labelled, and events (time, label) as lines."""
    shapes, labels = [], []
    modes = modes.astype(str).to_numpy()
    if len(modes):
        starts = np.flatnonzero(np.r_[True, modes[1:] != modes[:-1]])
        ends = np.r_[starts[1:], len(modes) - 1]
        for start, end in zip(starts, ends):
            x0, x1 = float(mode_t[start]), float(mode_t[end])
            shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": x0, "x1": x1, "y0": 0, "y1": 1,
                           "fillcolor": MODE_COLOURS.get(modes[start], "#f0f0f0"), "opacity": 0.5, "layer": "below",
                           "line": {"width": 0}})
            labels.append({"x": x0, "y": 0.0, "xref": "x", "yref": "paper", "text": modes[start],
                           "showarrow": False, "xanchor": "left", "yanchor": "bottom",
                           "font": {"size": 9, "color": "#555"}})
    for x, label in events:
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
                       "line": {"color": "#b00", "dash": "dot", "width": 1}, "opacity": 0.6})
        labels.append({"x": x, "y": 1.0, "xref": "x", "yref": "paper", "text": label, "showarrow": False,
                       "textangle": -90, "xanchor": "right", "yanchor": "top", "font": {"size": 10, "color": "#b00"}})
    figure["layout"]["shapes"] = shapes
    figure["layout"]["annotations"] += labels


def robust_upper(samples: np.ndarray) -> float:
    """Where a histogram's axis ends: the bulk and its tail, not a lone outlier. The bulk ends at the
    larger of the 99th percentile and the median plus MAD_FENCE normal-scaled MADs; the axis goes on to
    the largest value unless that would more than double it (then the values past it are outliers)."""
    median = float(np.median(samples))
    mad = 1.4826 * float(np.median(np.abs(samples - median)))
    bulk, largest = max(float(np.percentile(samples, 99)), median + MAD_FENCE * mad), float(samples.max())
    return largest if largest <= 2 * bulk else bulk


def outlier_note(samples: np.ndarray, upper: float, unit: str) -> str:
    """How many cycles lie past `upper`, and the largest, in words ('' when none)."""
    over = samples[samples > upper]
    if not len(over):
        return ""
    cycles = "cycles" if len(over) > 1 else "cycle"
    return f"{len(over)} {cycles} above {upper:,.4g} {unit}, largest {over.max():,.6g} {unit}"


def timing_histogram(totals_ms: dict[str, np.ndarray], deadline_ms: float | None, title: str) -> dict:
    """Per-cycle compute time (T_tot, ms) per group, with each group's p99 and the loop's deadline.

    The axis covers the bulk of every group (`robust_upper`): one stalled cycle of seconds would
    otherwise squeeze every bar into one pixel column. What lies past the axis is counted and named in
    the group's legend entry and the title; the p99 and deadline lines are drawn where they fall on it.
    """
    groups = {name: np.asarray(v, dtype=float) for name, v in totals_ms.items() if len(v)}
    figure = {"data": [], "layout": {"barmode": "overlay", "height": 380, "margin": {**MARGIN, "t": 60},
                                     "xaxis": {"title": {"text": "T_tot per cycle (ms)"}},
                                     "yaxis": {"title": {"text": "cycles"}},
                                     "showlegend": True,  # even for one group: its entry holds the p99
                                     "legend": {"orientation": "h", "y": -0.3},
                                     "shapes": [], "annotations": []}}
    if not groups:
        figure["layout"]["title"] = {"text": title}
        return figure
    upper = max(robust_upper(v) for v in groups.values())
    lower = min(float(v.min()) for v in groups.values())
    edges = np.linspace(lower, upper, BINS + 1) if upper > lower else np.array([lower - 0.5, upper + 0.5])
    notes = []
    for name, samples in groups.items():
        p99 = float(np.percentile(samples, 99))
        counts, _ = np.histogram(samples[samples <= upper], edges)
        note = outlier_note(samples, upper, "ms")
        misses = f", {int((samples > deadline_ms).sum())}/{len(samples)} cycles over the deadline" if deadline_ms else ""
        figure["data"].append({"type": "bar", "x": values((edges[:-1] + edges[1:]) / 2), "y": counts.tolist(),
                               "width": float(edges[1] - edges[0]), "opacity": 0.6,
                               "name": f"{name}: p99 {p99:.2f} ms{misses}" + (f"; {note}" if note else "")})
        if note:
            notes.append(f"{name}: {note}" if len(groups) > 1 else note)
        if p99 <= upper:
            _vline(figure, p99, f"p99 {name}", "#444")
    if deadline_ms and deadline_ms <= upper:
        _vline(figure, deadline_ms, f"deadline {deadline_ms:g} ms", "#b00")
    elif deadline_ms:
        notes.append(f"deadline {deadline_ms:g} ms, past the axis")
    subtitle = f"<br><sub>off the axis: {'; '.join(notes)}</sub>" if notes else ""
    figure["layout"]["title"] = {"text": title + subtitle}
    figure["layout"]["xaxis"]["range"] = [float(edges[0]), float(edges[-1])]
    return figure


def _vline(figure: dict, x: float, label: str, colour: str) -> None:
    figure["layout"]["shapes"].append({"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0,
                                       "y1": 1, "line": {"color": colour, "dash": "dash", "width": 1}})
    figure["layout"]["annotations"].append({"x": x, "y": 1, "xref": "x", "yref": "paper", "text": label,
                                            "showarrow": False, "yanchor": "bottom", "font": {"size": 9,
                                                                                               "color": colour}})
