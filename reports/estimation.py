"""PX4's state estimate against the truth of the harness's physics: what neither SIH nor a field flight shows.

A trial flown on the harness's physics (`physics: harness`) keeps two things in its record: the
simulator's ground truth (table ``sim_truth``, keyed by ``time_us``, the simulated clock PX4 runs on
in lockstep) and PX4's own ULog. The two share that clock, so PX4's estimate (EKF2's
vehicle_local_position and vehicle_attitude) lines up with the truth sample for sample, with no
clock fitting. Errors are taken while airborne, a second in from take-off and touch-down (ground
contact is not what the estimator is judged on).

Per trial and quantity: the mean error with a 95 % confidence interval, and the 95th percentile.
Successive errors are strongly correlated (an estimator drifts slowly), so the interval comes from
the means of 2 s blocks (a t interval over the blocks), not from the raw samples, which would
overstate the certainty by the correlation length.

Every target with a truth (bridges.truth: the built-in vehicle's state, PX4 SIH's HIL_STATE_QUATERNION, the
harness's physics for PX4 SITL or a board on the bench) also keeps it beside each telemetry snapshot (table
``truth``, records.truth), so the position the telemetry reports can be set against it on all of them alike
(`estimate_against_truth`): the comparison a sim-to-bench report makes across targets. It is coarser than the
ULog's: a truth read as the snapshot arrives is off by the snapshot's transport delay (at speed x, x times as
many vehicle seconds), and the built-in vehicle's estimate is its truth (zero by construction).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from px4.external_physics.simulator import TRUTH_TABLE
from px4.ulog import read_topic
from records.record import read_table

BLOCK_S = 2.0  # errors within this much vehicle time count as one sample for the interval
SETTLE_US = 1_000_000  # left out after take-off and before touch-down
LEVEL = 0.95
# Summary column stem -> what it is, in the report's words.
QUANTITIES = {"est_pos_h_m": "horizontal position (m)", "est_pos_v_m": "vertical position (m)",
              "est_vel_h_mps": "horizontal velocity (m/s)", "est_vel_v_mps": "vertical velocity (m/s)",
              "est_roll_deg": "roll (deg)", "est_pitch_deg": "pitch (deg)", "est_yaw_deg": "yaw (deg)"}


@dataclass(frozen=True)
class ErrorSummary:
    """One quantity's estimation error over a flight."""

    mean: float
    low: float  # 95 % interval of the mean, from block means
    high: float
    p95: float
    rms: float
    max: float
    samples: int


def estimation_errors(truth: pd.DataFrame, local_position: pd.DataFrame,
                      attitude: pd.DataFrame) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per quantity of QUANTITIES: (PX4 time_us, absolute error) while airborne.

    `truth`: the simulator's truth table; `local_position`, `attitude`: PX4's vehicle_local_position
    and vehicle_attitude topics (`timestamp` in PX4 microseconds).
    """
    airborne = truth[~truth["on_ground"].astype(bool)]
    if len(airborne) < 2:
        return {}
    t0, t1 = airborne["time_us"].min() + SETTLE_US, airborne["time_us"].max() - SETTLE_US
    lpos = local_position[(local_position["timestamp"] >= t0) & (local_position["timestamp"] <= t1)]
    att = attitude[(attitude["timestamp"] >= t0) & (attitude["timestamp"] <= t1)]
    if lpos.empty or att.empty:
        return {}
    t_pos = lpos["timestamp"].to_numpy(np.int64)
    pos = lpos[["x", "y", "z"]].to_numpy(float) - _at(truth, t_pos, ["north", "east", "down"])
    vel = lpos[["vx", "vy", "vz"]].to_numpy(float) - _at(truth, t_pos, ["vn", "ve", "vd"])
    t_att = att["timestamp"].to_numpy(np.int64)
    euler = euler_angles(att[[f"q[{i}]" for i in range(4)]].to_numpy(float)) \
        - _at(truth, t_att, ["roll", "pitch", "yaw"], angles=True)
    euler = np.degrees(np.abs((euler + np.pi) % (2 * np.pi) - np.pi))
    return {"est_pos_h_m": (t_pos, np.hypot(pos[:, 0], pos[:, 1])), "est_pos_v_m": (t_pos, np.abs(pos[:, 2])),
            "est_vel_h_mps": (t_pos, np.hypot(vel[:, 0], vel[:, 1])), "est_vel_v_mps": (t_pos, np.abs(vel[:, 2])),
            "est_roll_deg": (t_att, euler[:, 0]), "est_pitch_deg": (t_att, euler[:, 1]),
            "est_yaw_deg": (t_att, euler[:, 2])}


def summarize(t_us: np.ndarray, errors: np.ndarray, block_s: float = BLOCK_S) -> ErrorSummary:
    """Mean, its interval from `block_s` block means, 95th percentile, RMS and maximum."""
    blocks = pd.Series(errors).groupby((t_us - t_us[0]) // int(block_s * 1e6)).mean().to_numpy()
    mean = float(errors.mean())
    if len(blocks) > 1:
        from scipy import stats  # here, not at the top: its ~0.5 s import delayed every `hil fly` start

        half = stats.t.ppf(0.5 + LEVEL / 2, len(blocks) - 1) * blocks.std(ddof=1) / math.sqrt(len(blocks))
    else:
        half = math.nan  # one block: no spread to estimate an interval from
    return ErrorSummary(mean, mean - half, mean + half, float(np.percentile(errors, 95)),
                        float(np.sqrt((errors ** 2).mean())), float(errors.max()), len(errors))


def trial_estimation(record_dir: Path) -> dict[str, float]:
    """The summary columns of a trial record's estimation errors (`est_*`, `est_*_low`, `_high`, `_p95`);
    empty where the record has no truth table or no PX4 log (SIH, the built-in vehicle, hardware)."""
    try:
        truth = read_table(record_dir, TRUTH_TABLE)
    except FileNotFoundError:
        return {}
    logs = sorted((record_dir / "ulog").glob("*.ulg"))
    if truth.empty or not logs:
        return {}
    try:
        errors = estimation_errors(truth, read_topic(logs[-1], "vehicle_local_position"),
                                   read_topic(logs[-1], "vehicle_attitude"))
    except (KeyError, ValueError):  # a log cut short (PX4 killed) lacks topics or whole messages
        return {}
    columns: dict[str, float] = {}
    for name, (t_us, values) in errors.items():
        summary = summarize(t_us, values)
        columns.update({name: summary.mean, f"{name}_low": summary.low, f"{name}_high": summary.high,
                        f"{name}_p95": summary.p95})
    return columns


# The telemetry's position against the truth table's, per snapshot: each figure's column and what it is.
TRUTH_ERRORS = {"truth_error_h_m": "horizontal position against the truth (m)",
                "truth_error_v_m": "vertical position against the truth (m)"}


def estimate_against_truth(telemetry: pd.DataFrame, truth: pd.DataFrame) -> dict[str, float]:
    """Mean and 95th percentile (`_p95`) of |estimate - truth|, horizontal and vertical (TRUTH_ERRORS), over the
    snapshots of `telemetry` that `truth` (the same snapshots' true north, east, down, by t_ns) has; NaN where none
    has one (a target with no truth)."""
    axes = ["north", "east", "down"]
    both = telemetry[["t_ns", *axes]].merge(truth[["t_ns", *axes]], on="t_ns", suffixes=("", "_true")) \
        if len(telemetry) and len(truth) else pd.DataFrame()
    if both.empty:
        return {name: math.nan for column in TRUTH_ERRORS for name in (column, f"{column}_p95")}
    error = both[axes].to_numpy(float) - both[[f"{a}_true" for a in axes]].to_numpy(float)
    out = {}
    for column, values in (("truth_error_h_m", np.hypot(error[:, 0], error[:, 1])),
                           ("truth_error_v_m", np.abs(error[:, 2]))):
        out[column], out[f"{column}_p95"] = float(values.mean()), float(np.percentile(values, 95))
    return out


def format_estimation(columns: dict[str, float]) -> str:
    """The `trial_estimation` columns as lines for a terminal: mean [interval], p95."""
    lines = ["PX4's estimate against the truth (mean [95 % CI], p95):"]
    for name, label in QUANTITIES.items():
        if name in columns:
            lines.append(f"  {label:<26} {columns[name]:.3f} [{columns[name + '_low']:.3f}, "
                         f"{columns[name + '_high']:.3f}]  p95 {columns[name + '_p95']:.3f}")
    return "\n".join(lines)


def _at(truth: pd.DataFrame, t_us: np.ndarray, columns: list[str], angles: bool = False) -> np.ndarray:
    """Truth interpolated to PX4's sample times (angles unwrapped first, so +-180 deg is no jump)."""
    values = [np.unwrap(truth[c].to_numpy(float)) if angles else truth[c].to_numpy(float) for c in columns]
    return np.column_stack([np.interp(t_us, truth["time_us"].to_numpy(float), v) for v in values])


def euler_angles(q: np.ndarray) -> np.ndarray:
    """Roll, pitch, yaw (rad) of unit quaternions w, x, y, z."""
    w, x, y, z = q.T
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1, 1))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.column_stack([roll, pitch, yaw])
