"""Timing tables in the shape of FlightBench Table 5, from trial records, and run-to-run ratios.

Rows are T_map, T_plan, T_ctrl and T_tot (plus sense and link, which FlightBench leaves out but a
harness user wants next to them); for each run the columns are mean, p50, p99 and max in ms. With
two or more runs, a last column gives each run's mean over the first run's: the per-stage
slowdown `hil timing A B --save NAME` turns into a compute profile.
"""

from __future__ import annotations

import math
from pathlib import Path

from records.record import read_table
from onboard.timing import TOTAL, StageStats, summarize

ROWS = (("map", "T_map"), ("plan", "T_plan"), ("control", "T_ctrl"), (TOTAL, "T_tot"), ("sense", "sense"),
        ("link", "link"))


def record_stats(record_dir: str | Path, emulated: bool = False) -> dict[str, StageStats]:
    """Per-stage statistics of a record's "timing" table (measured, or stretched by its compute profile)."""
    return summarize(read_table(record_dir, "timing"), "emulated_ns" if emulated else "dur_ns")


def mean_ms(stats: dict[str, StageStats]) -> dict[str, float]:
    return {stage: s.mean_ms for stage, s in stats.items()}


def _cell(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


MAX_LABEL = 16  # longer run names (campaign trial ids run to 80 characters) become letters with a legend


def format_table(labels: list[str], runs: list[dict[str, StageStats]]) -> str:
    """A text table: one block of mean/p50/p99/max per run, then ratios of means to the first run."""
    names = list(labels)
    legend = ""
    if any(len(label) > MAX_LABEL for label in labels):
        labels = [chr(ord("A") + i) if i < 26 else f"R{i + 1}" for i in range(len(names))]
        legend = "\n" + "\n".join(f"{short} = {name}" for short, name in zip(labels, names))
    header = ["stage"]
    for label in labels:
        header += [f"{label} mean", "p50", "p99", "max"]
    for label in labels[1:]:
        header.append(f"{label}/{labels[0]}")
    lines = [header]
    for stage, name in ROWS:
        if not any(stage in run for run in runs):
            continue
        row = [name + " (ms)"]
        for run in runs:
            s = run.get(stage)
            row += [_cell(s.mean_ms), _cell(s.p50_ms), _cell(s.p99_ms), _cell(s.max_ms)] if s else ["-"] * 4
        base = runs[0].get(stage)
        for run in runs[1:]:
            s = run.get(stage)
            ok = s is not None and base is not None and base.mean_ms > 0
            row.append(f"{s.mean_ms / base.mean_ms:.2f}x" if ok else "-")
        lines.append(row)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(line, widths)))
                     for line in lines) + legend
