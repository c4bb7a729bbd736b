"""Simulation versus hardware: the same trials on different targets, metric by metric.

Trials are aligned by what they flew (scene, configuration, rule, profile, link, fault, planner)
and their repeat index, across targets; each target is compared with a reference target (the first
one named, normally the simulator). For every metric the paired differences (target minus
reference) get a bootstrap interval, and a gap is flagged significant when the interval excludes
zero. Tracks of aligned pairs are compared by DTW distance (`reports.tracks`).
"""

from __future__ import annotations

import pandas as pd

from reports.stats import bootstrap_mean, significant
from reports.tracks import dtw_distance, navigation_track

ALIGN_ON = ["scene", "config", "rule", "profile", "link", "fault", "planner", "repeat"]
COMPARED_METRICS = ["success", "progress", "avg_speed", "avg_curvature", "avg_acceleration", "avg_jerk",
                    "final_distance_m", "min_clearance_m", "duration_s", "t_tot_ms"]


def aligned_pairs(results: pd.DataFrame, reference: str, target: str) -> pd.DataFrame:
    """Rows of `reference` and `target` joined on `ALIGN_ON`; columns suffixed _ref and _tgt."""
    ref = results[results["target"] == reference]
    tgt = results[results["target"] == target]
    return ref.merge(tgt, on=ALIGN_ON, suffixes=("_ref", "_tgt"))


def metric_gaps(results: pd.DataFrame, reference: str, target: str) -> pd.DataFrame:
    """Per metric: reference mean, target mean, mean paired difference with CI, and `significant`."""
    pairs = aligned_pairs(results, reference, target)
    rows = []
    for metric in COMPARED_METRICS:
        if f"{metric}_ref" not in pairs.columns:
            continue
        ref = pairs[f"{metric}_ref"].astype(float)
        tgt = pairs[f"{metric}_tgt"].astype(float)
        gap = bootstrap_mean((tgt - ref).to_numpy(), label=f"gap|{reference}|{target}|{metric}")
        rows.append({"metric": metric, "reference": ref.mean(), "target": tgt.mean(), "difference": gap.value,
                     "low": gap.low, "high": gap.high, "pairs": gap.n, "significant": significant(gap)})
    return pd.DataFrame(rows, columns=["metric", "reference", "target", "difference", "low", "high", "pairs",
                                       "significant"])


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
