"""Simulation versus hardware: the same trials on different targets, metric by metric.

Trials are aligned by what they flew (scene, configuration, rule, profile, link, fault, planner)
and their repeat index, across targets; each target is compared with a reference target (the first
one named, normally the simulator). For every metric the paired differences (target minus
reference) get a bootstrap interval and a Wilcoxon signed-rank p-value; with several metrics the
p-values are Holm-adjusted, and a gap is flagged significant only with enough pairs, an adjusted p
below 5 % and an interval that excludes zero. Tracks of aligned pairs are compared by DTW distance (`reports.tracks`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from reports.stats import bootstrap_mean, significant
from reports.tracks import dtw_distance, navigation_track

MIN_PAIRS = 6  # below this no paired test can reach 5 % two-sided (Wilcoxon's smallest p at n = 5 is 0.0625)
ALPHA = 0.05
ALIGN_ON = ["scene", "config", "rule", "profile", "link", "fault", "planner", "repeat"]
COMPARED_METRICS = ["success", "progress", "avg_speed", "avg_curvature", "avg_acceleration", "avg_jerk",
                    "final_distance_m", "min_clearance_m", "duration_s", "t_tot_ms"]


# How a flight went, on both targets: two pairs of repeats equal in all of these are copies of one pair
# (compute time differs between copies of one flight, so it is not one of them).
FLIGHT_METRICS = [m for m in COMPARED_METRICS if m != "t_tot_ms"]


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
    for metric in COMPARED_METRICS:
        if f"{metric}_ref" not in pairs.columns:
            continue
        ref = pairs[f"{metric}_ref"].astype(float)
        tgt = pairs[f"{metric}_tgt"].astype(float)
        differences = (tgt - ref).to_numpy()
        gap = bootstrap_mean(differences, label=f"gap|{reference}|{target}|{metric}")
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
