"""PX4 flight logs (ULog) read with pyulog and put on the harness's clock.

A ULog stamps every sample with PX4's own clock (microseconds since PX4 booted; in SITL that
clock runs at the speed factor). The trial record stamps everything with the harness's monotonic
clock (nanoseconds). The two are related by ``t_harness_ns = offset_ns + scale * t_px4_us * 1000``
with ``scale = 1 / speed factor`` (1 on hardware). When the offset is known (MAVLink TIMESYNC) it is used as given; otherwise :func:`fit_offset` finds it by matching the altitude
PX4 logged (vehicle_local_position.z) against the altitude the harness recorded in its telemetry
table: a flight's climb and descent pin the offset to a few tens of milliseconds, whatever
the target, with no cooperation from the flight controller.

:func:`keep_in_record` copies nothing itself; it reads a ULog already in the trial record and
writes next to it one Parquet table per requested topic with a ``t_ns`` column on the harness
clock, plus ``alignment.json`` saying how the clocks were matched and how well.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from pyulog import ULog

DEFAULT_TOPICS = ("vehicle_local_position", "vehicle_attitude", "vehicle_angular_velocity", "actuator_outputs")
COARSE_STEP_S = 0.02
FINE_STEP_S = 0.001
ARMING_STATE_ARMED = 2  # vehicle_status.arming_state


@dataclass(frozen=True)
class ClockAlignment:
    """``t_harness_ns = offset_ns + scale * t_px4_us * 1000``; ``rms_m`` is the altitude misfit (NaN if given)."""

    offset_ns: int
    scale: float
    method: str  # "given" (e.g. TIMESYNC) or "altitude-fit"
    rms_m: float = float("nan")

    def to_harness_ns(self, t_px4_us: np.ndarray) -> np.ndarray:
        return (self.offset_ns + self.scale * np.asarray(t_px4_us, dtype=np.float64) * 1000.0).astype(np.int64)


def read_topic(ulog: ULog | Path | str, topic: str, multi_id: int = 0) -> pd.DataFrame:
    """One topic of a ULog as a DataFrame (``timestamp`` in PX4 microseconds); KeyError if absent."""
    log = ulog if isinstance(ulog, ULog) else ULog(str(ulog), [topic])
    for data in log.data_list:
        if data.name == topic and data.multi_id == multi_id:
            return pd.DataFrame(data.data)
    raise KeyError(f"topic {topic!r} (instance {multi_id}) is not in the log")


def armed_spans_s(ulog: ULog | Path | str) -> list[float]:
    """How long each armed stretch of a ULog lasted on the vehicle's clock (s): between the midpoints of
    vehicle_status's arming and disarming edges (PX4 publishes it on change, the built-in vehicle at 5 Hz).
    A stretch the log ends in is left out."""
    status = read_topic(ulog, "vehicle_status")
    t, armed = status["timestamp"].to_numpy(float) / 1e6, (status["arming_state"] == ARMING_STATE_ARMED).to_numpy()
    edges = np.flatnonzero(np.diff(armed.astype(int)))
    middle = (t[edges] + t[edges + 1]) / 2
    if len(edges) and not armed[edges[0] + 1]:  # the log began armed
        middle = middle[1:]
    return [float(down - up) for up, down in zip(middle[::2], middle[1::2])]


def fit_offset(px4_t_us: Sequence[float], px4_down: Sequence[float], harness_t_ns: Sequence[int],
               harness_down: Sequence[float], scale: float = 1.0) -> ClockAlignment:
    """The clock offset that best lays PX4's logged altitude over the harness's recorded altitude.

    Searches every offset that makes the two recordings overlap by at least half of the shorter
    one, first in 20 ms steps, then in 1 ms steps around the best; the misfit is the RMS altitude
    difference over the overlap. Needs altitude that changes (a take-off or landing): a vehicle
    that sat still has no offset to find, and that is a ValueError.
    """
    s = np.asarray(px4_t_us, dtype=np.float64) * 1e-6 * scale  # PX4 time, harness seconds
    zs = np.asarray(px4_down, dtype=np.float64)
    h = np.asarray(harness_t_ns, dtype=np.float64) * 1e-9
    zh = np.asarray(harness_down, dtype=np.float64)
    if len(s) < 2 or len(h) < 2:
        raise ValueError("need at least two samples on each clock to align them")
    if np.ptp(zh) < 0.5:
        raise ValueError("the recorded altitude hardly changes (under 0.5 m): nothing to align by")
    need = 0.5 * min(s[-1] - s[0], h[-1] - h[0])
    lo, hi = h[0] - s[-1] + need, h[-1] - s[0] - need

    def misfit(offset: float) -> float:
        t = s + offset
        inside = (t >= h[0]) & (t <= h[-1])
        if inside.sum() < 2:
            return np.inf
        return float(np.sqrt(np.mean((np.interp(t[inside], h, zh) - zs[inside]) ** 2)))

    coarse = np.arange(lo, hi + COARSE_STEP_S, COARSE_STEP_S)
    best = coarse[int(np.argmin([misfit(o) for o in coarse]))]
    fine = np.arange(best - COARSE_STEP_S, best + COARSE_STEP_S + FINE_STEP_S, FINE_STEP_S)
    errors = [misfit(o) for o in fine]
    best = fine[int(np.argmin(errors))]
    return ClockAlignment(int(round(best * 1e9)), scale, "altitude-fit", float(min(errors)))


def keep_in_record(ulog_path: Path, telemetry: pd.DataFrame, scale: float = 1.0,
                   topics: Sequence[str] = DEFAULT_TOPICS, offset_ns: int | None = None) -> ClockAlignment:
    """Write aligned topic tables and ``alignment.json`` beside ``ulog_path`` (in the trial record).

    ``telemetry`` is the record's telemetry table (``t_ns`` and ``down`` columns). With
    ``offset_ns`` given (TIMESYNC) it is used; otherwise the altitude fit decides. Topics the log
    does not have are skipped.
    """
    log = ULog(str(ulog_path))
    if offset_ns is not None:
        alignment = ClockAlignment(int(offset_ns), scale, "given")
    else:
        position = read_topic(log, "vehicle_local_position")
        alignment = fit_offset(position["timestamp"], position["z"], telemetry["t_ns"], telemetry["down"], scale)
    stem = ulog_path.with_suffix("")
    for topic in topics:
        try:
            frame = read_topic(log, topic)
        except KeyError:
            continue
        frame.insert(0, "t_ns", alignment.to_harness_ns(frame["timestamp"].to_numpy()))
        frame.to_parquet(f"{stem}.{topic}.parquet", index=False)
    Path(f"{stem}.alignment.json").write_text(json.dumps(asdict(alignment), indent=2) + "\n")
    return alignment
