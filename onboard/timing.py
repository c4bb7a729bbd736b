"""Stage timing: cheap spans around each stage of the onboard loop, and their statistics.

Stages (DESIGN.md, FlightBench Table 5):

* ``sense``: telemetry snapshot and virtual sensor (harness work, not the planner's);
* ``map``, ``plan``, ``control``: the planner's own work; a planner marks them with
  ``with span("map"): ...``, and an unmarked step counts as ``plan``;
* ``link``: a setpoint sent until the flight controller echoes it back (where the target echoes).

T_tot is the sum of map, plan and control within one loop cycle, as FlightBench defines it.
Statistics are over cycles: a stage timed twice in one cycle counts once, with the two summed.

Spans read `time.monotonic_ns()`, the process's one clock, so they line up with the recorder and
the resource sampler. A span costs well under 2 us (benchmarks/span_overhead.py): it stores two
integers and a stage name; everything else happens after the planner's step.
"""

from __future__ import annotations

import contextvars
import time
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

import numpy as np
import pandas as pd

STAGES = ("sense", "map", "plan", "control", "link")
COMPUTE_STAGES = ("map", "plan", "control")
TOTAL = "total"  # the name T_tot goes by in statistics

_now = time.monotonic_ns


class _Span:
    """One timed block; created by `StageProfiler.span`."""

    __slots__ = ("_spans", "_stage", "_start")

    def __init__(self, spans: list, stage: str) -> None:
        self._spans = spans
        self._stage = stage

    def __enter__(self) -> None:
        self._start = _now()

    def __exit__(self, *exc) -> None:
        self._spans.append((self._stage, self._start, _now()))


class _NoSpan:
    """What `span` returns when no profiler is active: a planner runs unchanged outside the runtime."""

    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        pass


_NO_SPAN = _NoSpan()
_active: contextvars.ContextVar["StageProfiler | None"] = contextvars.ContextVar("onboard_profiler", default=None)


class StageProfiler:
    """Collects (stage, start_ns, end_ns) spans until `drain` hands them over."""

    def __init__(self) -> None:
        self._spans: list[tuple[str, int, int]] = []

    def span(self, stage: str) -> _Span:
        """A context manager timing one block as `stage`."""
        return _Span(self._spans, stage)

    def add(self, stage: str, start_ns: int, end_ns: int) -> None:
        """A span measured elsewhere (e.g. the link, from an echo)."""
        self._spans.append((stage, start_ns, end_ns))

    def marked(self, stages: tuple[str, ...]) -> bool:
        """Whether a span of any of `stages` was recorded since the last drain."""
        return any(s in stages for s, _, _ in self._spans)

    def drain(self) -> list[tuple[str, int, int]]:
        """Every span since the last drain, in the order they ended."""
        spans, self._spans = self._spans, []
        return spans

    def activate(self) -> contextvars.Token:
        """Make this the profiler `span()` reports to (in this task); undo with `deactivate`."""
        return _active.set(self)

    @staticmethod
    def deactivate(token: contextvars.Token) -> None:
        _active.reset(token)


def span(stage: str) -> _Span | _NoSpan:
    """Time a block as `stage` in the active runtime's profiler; a no-op outside a runtime."""
    profiler = _active.get()
    return _NO_SPAN if profiler is None else _Span(profiler._spans, stage)


@dataclass(frozen=True)
class StageStats:
    """Per-cycle durations of one stage, in milliseconds."""

    count: int
    mean_ms: float
    p50_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, durations_ns: Iterable[float]) -> "StageStats":
        ms = np.asarray(list(durations_ns), dtype=float) / 1e6
        if ms.size == 0:
            return cls(0, float("nan"), float("nan"), float("nan"), float("nan"))
        return cls(int(ms.size), float(ms.mean()), float(np.percentile(ms, 50)), float(np.percentile(ms, 99)),
                   float(ms.max()))


def per_cycle(timing: pd.DataFrame, column: str = "dur_ns") -> pd.DataFrame:
    """Stage durations summed per cycle: one row per cycle, one column per stage (NaN: not timed)."""
    # What pivot_table(index="cycle", columns="stage", values=column, aggfunc="sum") gives, at a quarter
    # of its cost (twice per trial).
    table = timing.groupby(["cycle", "stage"])[column].sum().unstack("stage").sort_index(axis=1)
    compute = [s for s in COMPUTE_STAGES if s in table.columns]
    if compute:
        # A cycle in which the planner ran has a T_tot even if it marked only some stages.
        table[TOTAL] = table[compute].sum(axis=1, min_count=1)
    return table


def summarize(timing: pd.DataFrame, column: str = "dur_ns") -> dict[str, StageStats]:
    """Statistics of every stage present (in `STAGES` order) and of T_tot, from a timing table."""
    if timing.empty:
        return {}
    table = per_cycle(timing, column)
    return {stage: StageStats.of(table[stage].dropna()) for stage in (*STAGES, TOTAL) if stage in table.columns}


def stats_as_dict(stats: Mapping[str, StageStats]) -> dict[str, dict[str, float]]:
    """JSON-ready form for a manifest summary."""
    return {stage: asdict(s) for stage, s in stats.items()}


def cycle_timeline(spans: pd.DataFrame) -> pd.DataFrame:
    """Per planner cycle, on one clock (ns): sensing started, the planner's compute started and ended, and
    the first position setpoint sent after it and its echo from the flight controller (NaN when the
    cycle's command was not a position, whose echo the runtime cannot pair)."""
    columns = ["cycle", "sense_ns", "plan_start_ns", "plan_end_ns", "sent_ns", "echoed_ns"]
    if spans.empty:
        return pd.DataFrame(columns=columns)
    spans = spans.assign(end_ns=spans["t_ns"] + spans["dur_ns"])
    sense = spans[spans["stage"] == "sense"].groupby("cycle")["t_ns"].min().rename("sense_ns")
    compute = spans[spans["stage"].isin(COMPUTE_STAGES)].groupby("cycle").agg(
        plan_start_ns=("t_ns", "min"), plan_end_ns=("end_ns", "max"))
    cycles = compute.join(sense, how="left").reset_index().sort_values("plan_end_ns")
    link = spans[spans["stage"] == "link"][["t_ns", "end_ns"]].rename(
        columns={"t_ns": "sent_ns", "end_ns": "echoed_ns"}).sort_values("sent_ns")
    # A link span is reported in whichever cycle its echo arrived: pair it by time, with the cycle it follows.
    timeline = pd.merge_asof(cycles, link, left_on="plan_end_ns", right_on="sent_ns", direction="forward")
    after_next = timeline["sense_ns"].shift(-1)
    late = timeline["sent_ns"] > after_next.fillna(np.inf)
    timeline.loc[late, ["sent_ns", "echoed_ns"]] = np.nan
    return timeline[columns].astype(float).astype({"cycle": int})
