"""One HTML page per trial, linked from every table of the report: what the trial was, how it ended
and why, its flight against the planner's setpoints with flight modes and events (fault, link,
verdict) marked, its per-cycle compute time against the loop's deadline, and its event log.

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

from onboard.timing import TOTAL, per_cycle
from records.clock import clock_scale
from records.record import UnreadableRecord, read_events, read_manifest, read_table
from reports.interactive import PLOTLY_JS, div, timeseries, timing_histogram
from reports.results import TRIALS_DIR

PAGES_DIR = "trials"
HEADLINE = ("end_time_s", "duration_s", "path_length_m", "final_distance_m", "min_clearance_m", "avg_speed",
            "t_tot_ms")
STYLE = ("body{font-family:sans-serif;max-width:1400px;margin:1.5em auto;color:#222;font-size:15px}"
         "table{border-collapse:collapse;font-size:13px;margin:.8em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
         "text-align:left;vertical-align:top;overflow-wrap:anywhere}th{background:#f3f3f3}.bad{color:#a00;font-weight:bold}"
         ".ok{color:#070;font-weight:bold}details{margin:.6em 0}summary{cursor:pointer}")


def page_href(trial_id: str) -> str:
    """Where a trial's page is, relative to report.html."""
    return f"{PAGES_DIR}/{trial_id}.html"


def record_dir(row: pd.Series) -> Path:
    """The trial record a results row came from."""
    return Path(row["run_dir"]) / TRIALS_DIR / str(row["trial_id"])


def cycle_totals_ms(record: Path) -> np.ndarray:
    """Per-cycle T_tot (ms) of a trial's onboard runtime; empty when it recorded none."""
    try:
        timing = read_table(record, "timing")
    except FileNotFoundError:
        return np.array([])
    if timing.empty:
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


def trial_page(record: Path, totals: np.ndarray | None = None) -> str:
    """The HTML page of one trial record (`totals`: its per-cycle T_tot, if already read)."""
    manifest = read_manifest(record)
    config = manifest.get("config", {})
    summary = manifest.get("summary") or {}
    events = read_events(record)
    trial_id = config.get("trial_id", record.name)
    outcome = manifest.get("outcome", "?")
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(trial_id)}</title>"
             f"<style>{STYLE}</style><script src='../report_files/{PLOTLY_JS}'></script></head><body>",
             "<p><a href='../report.html'>&larr; report</a></p>",
             f"<h1>{html.escape(trial_id)}</h1>",
             f"<p>Outcome <span class='{'ok' if outcome == 'success' else 'bad'}'>{html.escape(str(outcome))}</span>"
             + (f": {html.escape(str(summary.get('reason')))}" if summary.get("reason") else "") + "</p>",
             "<p>" + html.escape(", ".join(f"{k} {_text(summary[k])}" for k in HEADLINE if k in summary)) + "</p>"]
    telemetry = _optional(record, "telemetry")
    if telemetry is not None and not telemetry.empty:
        # Lockstep stamps in simulated time already; a real-time target at a speed factor does not.
        scale = 1.0 if config.get("target") == "lockstep" else clock_scale(float(config.get("speed", 1.0)))
        commands = _optional(record, "onboard")
        figure = timeseries(telemetry, commands if commands is not None else pd.DataFrame(),
                            _on_telemetry_clock(events, telemetry, summary), int(telemetry["t_ns"].iloc[0]), scale)
        parts += ["<h2>Flight</h2>", div(figure, "timeseries")]
    totals = cycle_totals_ms(record) if totals is None else totals
    if len(totals):
        rate = config.get("rate_hz")
        deadline = 1000.0 / float(rate) if rate else None
        parts += ["<h2>Onboard compute time</h2>",
                  div(timing_histogram({"this trial": totals}, deadline, "T_tot per planner cycle"), "timing")]
    parts += [_table({k: v for k, v in config.items() if k != "trial_id"}, "what was flown"),
              _table({k: v for k, v in summary.items() if not isinstance(v, (dict, list))}, "every figure"),
              "<h2>Events</h2>", _events_table(events), "</body></html>"]
    return "".join(parts)


def _on_telemetry_clock(events: list[dict], telemetry: pd.DataFrame, summary: dict) -> list[dict]:
    """Events that can be placed on the telemetry's time axis.

    Events carry the harness's clock; so does telemetry over MAVLink, but a lockstep vehicle stamps its
    telemetry in simulated time, where only the navigation phase's ends (from the summary) are known.
    """
    t0, t1 = int(telemetry["t_ns"].iloc[0]), int(telemetry["t_ns"].iloc[-1])
    margin = max(t1 - t0, 1)
    placed = [e for e in events if "t_ns" in e and t0 - margin <= e["t_ns"] <= t1 + margin]
    if placed:
        return placed
    ends = [("navigation_started", summary.get("nav_start_ns")), ("verdict", summary.get("nav_end_ns"))]
    return [{"kind": kind, "t_ns": t} for kind, t in ends if isinstance(t, (int, float)) and not math.isnan(t)]


def _optional(record: Path, name: str) -> pd.DataFrame | None:
    try:
        return read_table(record, name)
    except FileNotFoundError:
        return None


def _table(mapping: dict, caption: str) -> str:
    rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(_text(v))}</td></tr>"
                   for k, v in mapping.items())
    return f"<details><summary>{html.escape(caption)}</summary><table>{rows}</table></details>"


def _events_table(events: list[dict]) -> str:
    if not events:
        return "<p>No events.</p>"
    t0 = events[0].get("t_ns", 0)
    rows = "".join(
        f"<tr><td>{(e.get('t_ns', t0) - t0) / 1e9:.2f}</td><td>{html.escape(str(e.get('kind')))}</td>"
        f"<td>{html.escape(json.dumps({k: v for k, v in e.items() if k not in ('t_ns', 'kind')}, default=str)[:400])}"
        "</td></tr>" for e in events)
    return f"<table><tr><th>t (s, harness clock)</th><th>event</th><th>details</th></tr>{rows}</table>"


def _text(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.4g}"
    return str(value)
