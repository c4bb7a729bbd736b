"""FLYINGTRUST's composite score (Sec. III-C, Eqs. 12-19).

For each algorithm a, with success rates S_{a,s,m} per scenario s and platform m:

    W_s = w_s / sum w_s                                   (12)  scenario weights, by scenario kind
    W_m = w_m / sum w_m                                   (13)  platform weights, by platform kind
    Score^_a = sum W_s W_m S / sum W_s W_m                (14)
    Score_a = 100 Score^_a                                (15)
    Var_a = sum W_s W_m (S - Score^_a)^2                  (16)
    Var_a^norm = Var_a / max_a' Var_a'                    (17)
    FinalScore_a = Score_a (1 - beta Var_a^norm)          (18)
    W'_s = W_s / sum over the scenarios a has of W_s      (19)  when a lacks a whole scenario

The paper's settings are the defaults: classic scenarios 1.2, theoretical 1.0; real platforms 1.5,
virtual 1.0; beta = 0.3. The scenario and platform sets are the union over the algorithms compared.

Where the paper is silent (a grid with single (s, m) cells missing but no whole scenario missing),
Eq. 16 is divided by the same sum of weights as Eq. 14, so both are weighted means over the cells
present; with a complete grid that sum is 1 and the formulas are exactly the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

# FLYINGTRUST Fig. 8: (a-c) classic, (d-g) theoretical.
CLASSIC_SCENARIOS = ("forest", "urban", "random-angle")
THEORETICAL_SCENARIOS = ("narrow-gap", "sudden-drop", "maze", "perlin")


@dataclass(frozen=True)
class ScoreSettings:
    """Initial weights by kind, and the stability penalty beta (paper defaults)."""

    scenario_kind_weights: dict[str, float] = field(default_factory=lambda: {"classic": 1.2, "theoretical": 1.0})
    platform_kind_weights: dict[str, float] = field(default_factory=lambda: {"real": 1.5, "virtual": 1.0})
    beta: float = 0.3
    # Scenarios and platforms of a kind the settings do not name (a FlightBench test, a custom
    # profile) weigh this much.
    other_weight: float = 1.0

    def scenario_weight(self, scenario: str) -> float:
        if scenario in CLASSIC_SCENARIOS:
            return self.scenario_kind_weights["classic"]
        if scenario in THEORETICAL_SCENARIOS:
            return self.scenario_kind_weights["theoretical"]
        return self.other_weight

    def platform_weight(self, kind: str) -> float:
        return self.platform_kind_weights.get(kind, self.other_weight)


def composite_scores(rates: pd.DataFrame, settings: ScoreSettings = ScoreSettings()) -> pd.DataFrame:
    """Table II from success rates.

    `rates` has one row per (algorithm, scenario, platform) with columns algorithm, scenario,
    platform, platform_kind (real / virtual / ...) and success_rate in [0, 1]. Returns one row per
    algorithm: score, variance, variance_norm, final_score, missing_scenarios (comma-separated).
    """
    scenarios = sorted(rates["scenario"].unique())
    platforms = rates.drop_duplicates("platform").set_index("platform")["platform_kind"]
    w_s = pd.Series({s: settings.scenario_weight(s) for s in scenarios})
    w_s = w_s / w_s.sum()  # Eq. 12
    w_m = platforms.map(settings.platform_weight).astype(float)
    w_m = w_m / w_m.sum()  # Eq. 13

    rows = []
    for algorithm, cells in rates.groupby("algorithm", sort=True):
        present = sorted(cells["scenario"].unique())
        missing = [s for s in scenarios if s not in present]
        w_s_own = w_s[present] / w_s[present].sum()  # Eq. 19 (identity when nothing is missing)
        weights = w_s_own[cells["scenario"]].to_numpy() * w_m[cells["platform"]].to_numpy()
        success = cells["success_rate"].to_numpy(float)
        mean = float(np.sum(weights * success) / np.sum(weights))  # Eq. 14
        variance = float(np.sum(weights * (success - mean) ** 2) / np.sum(weights))  # Eq. 16
        rows.append({"algorithm": algorithm, "score": 100.0 * mean, "variance": variance,  # Eq. 15
                     "missing_scenarios": ", ".join(missing)})
    table = pd.DataFrame(rows, columns=["algorithm", "score", "variance", "missing_scenarios"])
    table["variance_norm"] = normalized_variance(table["variance"].to_numpy())
    table["final_score"] = [final_score(score, norm, settings.beta)
                            for score, norm in zip(table["score"], table["variance_norm"])]
    return table[["algorithm", "score", "variance", "variance_norm", "final_score", "missing_scenarios"]]


def normalized_variance(variances: np.ndarray) -> np.ndarray:
    """Eq. 17; all zeros when every algorithm has zero variance (nothing to penalize)."""
    largest = float(np.max(variances)) if len(variances) else 0.0
    return np.zeros(len(variances)) if largest <= 0 else np.asarray(variances, float) / largest


def final_score(score: float, variance_norm: float, beta: float = 0.3) -> float:
    """Eq. 18."""
    return score * (1.0 - beta * variance_norm)
