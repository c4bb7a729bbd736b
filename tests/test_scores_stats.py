"""Composite score (FLYINGTRUST Eqs. 12-19), bootstrap intervals and flakiness on hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from reports.scores import composite_scores, final_score, normalized_variance
from reports.stats import bootstrap_mean, flakiness, significant, wilson_rate


def rates(algorithm, cells):
    return [{"algorithm": algorithm, "scenario": s, "platform": p, "platform_kind": k, "success_rate": r}
            for s, p, k, r in cells]


GRID = [("forest", "R", "real"), ("forest", "V", "virtual"), ("maze", "R", "real"), ("maze", "V", "virtual")]


def test_composite_score_by_hand():
    # W_s: forest 1.2/2.2, maze 1.0/2.2; W_m: real 1.5/2.5 = 0.6, virtual 0.4.
    a = rates("A", [(s, p, k, r) for (s, p, k), r in zip(GRID, [1.0, 0.5, 0.0, 0.5])])
    b = rates("B", [(s, p, k, r) for (s, p, k), r in zip(GRID, [0.5, 0.5, 0.5, 0.5])])
    table = composite_scores(pd.DataFrame(a + b)).set_index("algorithm")
    ws, wm = np.array([1.2, 1.2, 1.0, 1.0]) / 2.2, np.array([0.6, 0.4, 0.6, 0.4])
    s = np.array([1.0, 0.5, 0.0, 0.5])
    mean = np.sum(ws * wm * s)  # 0.52727...
    variance = np.sum(ws * wm * (s - mean) ** 2)
    assert table.loc["A", "score"] == pytest.approx(100 * mean)
    assert table.loc["A", "score"] == pytest.approx(52.727, abs=1e-3)
    assert table.loc["A", "variance"] == pytest.approx(variance)
    assert table.loc["B", "score"] == pytest.approx(50.0)
    assert table.loc["B", "variance"] == pytest.approx(0.0)
    assert table.loc["A", "variance_norm"] == 1.0
    assert table.loc["A", "final_score"] == pytest.approx(100 * mean * (1 - 0.3))
    assert table.loc["B", "final_score"] == pytest.approx(50.0)


def test_missing_scenario_is_dropped_and_weights_renormalized():
    a = rates("A", [(s, p, k, r) for (s, p, k), r in zip(GRID, [1.0, 0.5, 0.0, 0.5])])
    c = rates("C", [("forest", "R", "real", 1.0), ("forest", "V", "virtual", 0.5)])  # no maze
    table = composite_scores(pd.DataFrame(a + c)).set_index("algorithm")
    # Only forest remains for C, with W'_forest = 1: score = 0.6 * 1.0 + 0.4 * 0.5.
    assert table.loc["C", "score"] == pytest.approx(80.0)
    assert table.loc["C", "missing_scenarios"] == "maze"
    assert table.loc["A", "missing_scenarios"] == ""


def test_final_scores_of_table_ii():
    # FLYINGTRUST Table II: Var_norm divides by the largest variance (NavRL's 0.122), beta = 0.3.
    variances = np.array([0.120, 0.106, 0.054, 0.122, 0.005])
    norm = normalized_variance(variances)
    scores = [30.25, 37.34, 20.39, 37.78, 6.05]
    finals = [final_score(s, n, 0.3) for s, n in zip(scores, norm)]
    # The table prints variances to three decimals, which moves the finals by up to 0.04.
    assert finals == pytest.approx([21.32, 27.58, 17.70, 26.41, 5.97], abs=0.05)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = np.r_[np.ones(30), np.zeros(70)]
    first = bootstrap_mean(values, label="x")
    assert first == bootstrap_mean(values, label="x")
    assert first.value == pytest.approx(0.3)
    assert first.low < 0.3 < first.high
    # Binomial standard error sqrt(0.3 * 0.7 / 100) = 0.046: the 95 % interval is about +-0.09.
    assert first.high - first.low == pytest.approx(2 * 1.96 * 0.0458, abs=0.03)
    assert bootstrap_mean([]).n == 0


def test_difference_is_significant_only_when_it_excludes_zero():
    rng = np.random.default_rng(1)
    a, b = rng.normal(1.0, 0.1, 40), rng.normal(0.0, 0.1, 40)
    assert significant(bootstrap_mean(a - b))
    assert not significant(bootstrap_mean(rng.normal(0, 0.01, 40)))


def test_the_mean_interval_covers_a_skewed_mean_at_least_as_often_as_the_percentile_interval():
    # Log-normal samples of 20 (a time to goal's shape: a floor and a long tail), true mean e^0.5:
    # the percentile bootstrap under-covers here; BCa corrects for the skew. Seeded, so deterministic
    # (measured: BCa 271 of 300, percentile 263).
    rng = np.random.default_rng(7)
    bca_hits = percentile_hits = 0
    draws, n, true_mean = 300, 20, math.exp(0.5)
    for i in range(draws):
        sample = rng.lognormal(0.0, 1.0, n)
        bca = bootstrap_mean(sample, label=str(i))
        means = sample[rng.integers(0, n, (1000, n))].mean(axis=1)
        low, high = np.percentile(means, [2.5, 97.5])
        bca_hits += bca.low <= true_mean <= bca.high
        percentile_hits += low <= true_mean <= high
        assert bca.low < sample.mean() < bca.high
    assert bca_hits > percentile_hits and bca_hits / draws >= 0.9, (bca_hits, percentile_hits)


def test_flakiness_per_case():
    frame = pd.DataFrame({"case": ["a"] * 4 + ["b"] * 4, "success": [1, 1, 1, 1, 1, 0, 1, 0]})
    table = flakiness(frame, ["case"]).set_index("case")
    assert not table.loc["a", "flaky"] and table.loc["a", "pass_rate"] == 1.0
    assert table.loc["b", "flaky"] and table.loc["b", "pass_rate"] == 0.5
    assert table.loc["b", "low"] <= 0.5 <= table.loc["b", "high"]


def test_a_rate_gets_a_wilson_interval_that_never_collapses_to_a_point():
    all_passed = wilson_rate([1.0] * 12)
    assert all_passed.value == 1.0 and all_passed.high == 1.0
    assert all_passed.low == pytest.approx(0.7575, abs=1e-3)  # Wilson's 12/12; the bootstrap said [1, 1]
    assert bootstrap_mean([1.0] * 12).low == 1.0
    none = wilson_rate([0.0] * 5)
    assert none.low == 0.0 and none.high == pytest.approx(0.4345, abs=1e-3)
    half = wilson_rate([1, 0] * 10 + [math.nan])
    assert half.n == 20 and half.low < 0.5 < half.high
    table = flakiness(pd.DataFrame({"case": ["a"] * 3, "success": [1.0, 1.0, 1.0]}), ["case"])
    assert table["low"].iloc[0] == pytest.approx(0.4385, abs=1e-3)
