"""Simulation versus hardware: the same trials on different targets, metric by metric.

Trials are aligned by what they flew (scene, configuration, rule, profile, link, fault, planner)
and their repeat index, across targets; each target is compared with a reference target
(`reference_target`: the bench when the runs have one, the hardware a sim-to-bench report is about; else a
flight controller on a connection string; else PX4 SITL with SIH; else the first named). Every target's own
value of each metric gets a 95 % interval (`target_values`: Wilson for a rate, Student's t for a mean), and
for every metric the paired differences (target minus reference) get a Student's t interval of their mean
(`reports.stats.t_mean`: bench trials are few, and a bootstrap over a few pairs is their own range) and a
Wilcoxon signed-rank p-value; with several metrics the p-values are Holm-adjusted, and a gap is flagged
significant only with enough pairs, an adjusted p below 5 % and an interval that excludes zero. Tracks of
aligned pairs are compared by DTW distance (`reports.tracks`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reports.stats import significant, t_mean, wilson_rate
from reports.tracks import dtw_distance, navigation_track
from targets.spec import ON_HARNESS_PHYSICS, PX4_SITL

MIN_PAIRS = 6  # below this no paired test can reach 5 % two-sided (Wilcoxon's smallest p at n = 5 is 0.0625)
ALPHA = 0.05
ALIGN_ON = ["scene", "config", "rule", "profile", "link", "fault", "planner", "repeat"]
# Each compared metric (the results-table column) and what it is, in the report's words; a metric no trial of a
# comparison has is left out of it (a mission with no scene has no clearance, hardware no truth).
METRICS = {"success": "success rate", "progress": "progress (share of the route)",
           "time_used_s": "time used (vehicle s)", "duration_s": "navigation duration (vehicle s)",
           "path_length_m": "path length (m)", "avg_speed": "average speed (m/s)",
           "tracking_error_m": "route tracking error (m)", "tcr_1": "TCR@1 (share of the route within 1 m)",
           "final_distance_m": "final distance to the goal (m)", "min_clearance_m": "minimum clearance (m)",
           "avg_curvature": "average curvature (1/m)", "avg_acceleration": "average acceleration (m/s^3)",
           "avg_jerk": "average jerk (m/s^5)", "truth_error_h_m": "estimate against truth, horizontal (m)",
           "truth_error_v_m": "estimate against truth, vertical (m)", "t_tot_ms": "onboard T_tot (ms)"}
COMPARED_METRICS = list(METRICS)
RATES = {"success"}  # pass/fail per trial: a Wilson interval for a target's own value
BENCH = "px4-hitl"  # the HITL bench's target name (targets.spec): the hardware here


# How a flight went, on both targets: two pairs of repeats equal in all of these are copies of one pair
# (compute time differs between copies of one flight, so it is not one of them).
FLIGHT_METRICS = [m for m in COMPARED_METRICS if m != "t_tot_ms"]


def reference_target(targets: list[str]) -> str:
    """What the other targets are measured against: the bench (px4-hitl) when there is one, else a flight
    controller on a connection string, else PX4 SITL with SIH, else PX4 SITL on the harness's physics, else the
    first named."""
    preferences = (lambda t: t.startswith(BENCH), lambda t: "://" in t,
                   lambda t: t.startswith(PX4_SITL) and not t.endswith(ON_HARNESS_PHYSICS),
                   lambda t: t.startswith(PX4_SITL))
    for prefer in preferences:
        found = [t for t in targets if prefer(t)]
        if found:
            return found[0]
    return targets[0]


def compared_metrics(results: pd.DataFrame) -> list[str]:
    """The metrics of COMPARED_METRICS that some trial of `results` has; a navigation's duration not where every
    trial that has one is a mission's, whose time used it then repeats."""
    def has(metric: str) -> pd.Series:
        return pd.to_numeric(results[metric], errors="coerce").notna() if metric in results else \
            pd.Series(False, index=results.index)

    repeated = {"duration_s"} if (has("duration_s") <= has("time_used_s")).all() else set()
    return [m for m in COMPARED_METRICS if has(m).any() and m not in repeated]


def target_order(targets: list[str]) -> list[str]:
    """Targets from the simplest simulation to the hardware: the built-in vehicle, PX4 SITL with SIH, PX4 SITL on
    the harness's physics, the bench, flight controllers on connection strings (each kind in the order given)."""
    def rank(target: str) -> int:
        if target.startswith(BENCH):
            return 3
        if "://" in target:
            return 4
        if target.startswith(PX4_SITL):
            return 2 if target.endswith(ON_HARNESS_PHYSICS) else 1
        return 0

    return sorted(targets, key=rank)


def target_values(results: pd.DataFrame, targets: list[str]) -> pd.DataFrame:
    """Each target's own value of each compared metric over its trials: metric, target, value, low, high, n (a
    95 % Wilson interval for a rate, Student's t for a mean; NaN where the target has none of it)."""
    rows = []
    for metric in compared_metrics(results):
        for target in targets:
            values = pd.to_numeric(results.loc[results["target"] == target, metric], errors="coerce").to_numpy(float)
            estimate = wilson_rate(values) if metric in RATES else t_mean(values)
            rows.append({"metric": metric, "target": target, "value": estimate.value, "low": estimate.low,
                         "high": estimate.high, "n": estimate.n})
    return pd.DataFrame(rows, columns=["metric", "target", "value", "low", "high", "n"])


def aligned_pairs(results: pd.DataFrame, reference: str, target: str) -> pd.DataFrame:
    """Rows of `reference` and `target` joined on `ALIGN_ON`, columns suffixed _ref and _tgt; pairs of repeats
    that flew identically on both targets (every flight metric equal) count once, as observations do in
    `reports.stats`."""
    ref = results[results["target"] == reference]
    tgt = results[results["target"] == target]
    pairs = ref.merge(tgt, on=ALIGN_ON, suffixes=("_ref", "_tgt"))
    flown = [f"{m}{side}" for m in FLIGHT_METRICS for side in ("_ref", "_tgt") if f"{m}{side}" in pairs]
    if not flown:
        return pairs
    case = [c for c in ALIGN_ON if c != "repeat"]
    return pairs[pairs[flown].isna().all(axis=1) | ~pairs.duplicated([*case, *flown])]


def metric_gaps(results: pd.DataFrame, reference: str, target: str) -> pd.DataFrame:
    """Per metric: reference mean, target mean, mean paired difference with CI, Holm-adjusted p, `significant`.

    A gap is significant only with at least MIN_PAIRS pairs, a Wilcoxon signed-rank p below LEVEL
    after Holm's correction over every metric compared, and an interval that excludes zero: ten
    metrics tested at 5 % each would flag one in three comparisons of identical targets by chance.
    """
    pairs = aligned_pairs(results, reference, target)
    rows = []
    for metric in compared_metrics(results):
        if f"{metric}_ref" not in pairs.columns:
            continue
        ref = pd.to_numeric(pairs[f"{metric}_ref"], errors="coerce").astype(float)
        tgt = pd.to_numeric(pairs[f"{metric}_tgt"], errors="coerce").astype(float)
        differences = (tgt - ref).to_numpy()
        if not np.isfinite(differences).any():
            continue  # no pair has it on both sides (hardware has no truth): not in Holm's family either
        gap = t_mean(differences)
        rows.append({"metric": metric, "reference": ref.mean(), "target": tgt.mean(), "difference": gap.value,
                     "low": gap.low, "high": gap.high, "pairs": gap.n, "p": paired_p_value(differences),
                     "ci_excludes_zero": significant(gap)})
    table = pd.DataFrame(rows, columns=["metric", "reference", "target", "difference", "low", "high", "pairs", "p",
                                        "ci_excludes_zero"])
    table["p"] = holm(table["p"].to_numpy(float))
    table["significant"] = (table["pairs"] >= MIN_PAIRS) & (table["p"] < ALPHA) & table["ci_excludes_zero"]
    return table.drop(columns="ci_excludes_zero")


def paired_p_value(differences: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p of paired differences (NaNs dropped); 1 when all are zero."""
    data = differences[~np.isnan(differences)]
    if len(data) == 0 or not np.any(data):
        return 1.0
    from scipy import stats  # here, not at the top: its ~0.5 s import delayed `hil report` for every record

    return float(stats.wilcoxon(data).pvalue)


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (family-wise error over the whole family)."""
    order = np.argsort(p_values)
    adjusted = np.empty_like(p_values, dtype=float)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def track_deviations(results: pd.DataFrame, reference: str, target: str, limit: int = 60) -> pd.DataFrame:
    """DTW distance (m) between the flown tracks of up to `limit` aligned pairs."""
    pairs = aligned_pairs(results, reference, target).head(limit)
    rows = []
    for _, pair in pairs.iterrows():
        ref = navigation_track(_side(pair, "_ref"))
        tgt = navigation_track(_side(pair, "_tgt"))
        if ref is None or tgt is None:
            continue
        rows.append({**{key: pair[key] for key in ALIGN_ON}, "trial_ref": pair["trial_id_ref"],
                     "trial_tgt": pair["trial_id_tgt"], "dtw_m": dtw_distance(ref, tgt)})
    return pd.DataFrame(rows)


def _side(pair: pd.Series, suffix: str) -> pd.Series:
    """One side of a joined pair as a plain results row."""
    own = {key[: -len(suffix)]: value for key, value in pair.items() if key.endswith(suffix)}
    return pd.Series({**{key: pair[key] for key in ALIGN_ON}, **own})
