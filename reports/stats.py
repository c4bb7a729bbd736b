"""Confidence intervals and flakiness.

Every mean a report shows carries a 95 % bootstrap interval with B = 1000 resamples (FLYINGTRUST,
Sec. IV-B, after Efron and Tibshirani), bias-corrected and accelerated (BCa, scipy.stats.bootstrap):
flight metrics are skewed (a time to goal has a floor and a long tail), and BCa's interval follows
the skew where the plain percentile interval covers the true mean less often than it says. The
resampling is seeded, so a report rendered twice from the same results shows the same intervals.
Every rate (success, collision, a test's pass rate) carries a 95 % Wilson score interval instead,
which stays honest at small n and at 0 % or 100 %, where a bootstrap collapses to a point.

Intervals are over observations, not trials: repeats of a test case that flew the same flight to the last
bit (a deterministic target whose repeats nothing perturbed) are one observation (`observations`), since
copies of one flight say nothing about how another would go.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

RESAMPLES = 1000
LEVEL = 0.95
SEED = 0


@dataclass(frozen=True)
class Estimate:
    """A statistic with its bootstrap interval; NaNs when there was nothing to estimate from."""

    value: float
    low: float
    high: float
    n: int

    def format(self, digits: int = 2) -> str:
        if math.isnan(self.value):
            return "n/a"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _rng(seed: int, label: str) -> np.random.Generator:
    # One stream per (seed, label): intervals of different groups do not share resamples, and each
    # is reproducible on its own whatever order the groups are computed in.
    return np.random.default_rng([seed, zlib.crc32(label.encode())])


def _clean(values: Sequence[float] | np.ndarray) -> np.ndarray:
    data = np.asarray(values, dtype=float)
    return data[~np.isnan(data)]


def _mean(sample: np.ndarray, axis: int = -1) -> np.ndarray:
    return sample.mean(axis=axis)


def bootstrap_mean(values: Sequence[float] | np.ndarray, *, resamples: int = RESAMPLES, level: float = LEVEL,
                   seed: int = SEED, label: str = "") -> Estimate:
    """Mean of `values` with a BCa bootstrap interval; NaNs are ignored, one value is its own interval."""
    data = _clean(values)
    n = len(data)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    value = float(data.mean())
    if np.ptp(data) == 0:  # one value, or all alike: nothing to resample
        return Estimate(value, value, value, n)
    from scipy import stats  # here, not at the top: its ~0.5 s import delayed every `hil` command that imports this

    result = stats.bootstrap((data,), _mean, n_resamples=resamples, confidence_level=level, method="BCa",
                             vectorized=True, random_state=_rng(seed, label))
    low, high = result.confidence_interval
    return Estimate(value, float(low), float(high), n)


def t_mean(values: Sequence[float] | np.ndarray, *, level: float = LEVEL) -> Estimate:
    """Mean of `values` with Student's t interval (n - 1 degrees of freedom); NaNs are ignored, one value has no
    interval (NaN bounds). For a few paired differences (a handful of bench trials), where a bootstrap's interval
    is the sample's own range and so narrower than the spread it stands for (two values: their min and max)."""
    data = _clean(values)
    n = len(data)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    value = float(data.mean())
    if n == 1:
        return Estimate(value, math.nan, math.nan, 1)
    from scipy import stats

    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * float(data.std(ddof=1)) / math.sqrt(n)
    return Estimate(value, value - half, value + half, n)


def wilson_rate(values: Sequence[float] | np.ndarray, *, level: float = LEVEL) -> Estimate:
    """A rate (booleans or 0/1, NaNs ignored) with its Wilson score interval.

    Unlike a bootstrap, it does not collapse to [1, 1] when every trial passed: 12 of 12 gives
    [0.76, 1.00], 3 of 3 [0.44, 1.00] (Wilson 1927; Brown, Cai and DasGupta 2001 recommend it for
    small n).
    """
    data = _clean(values)
    n = len(data)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    p = float(data.mean())
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + level / 2.0))
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1.0 - p) / n + z * z / (4 * n * n)) / denominator
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half), n)


def observations(frame: pd.DataFrame, case: list[str], flight: list[str]) -> pd.DataFrame:
    """One row per observation, with column `repeats`: how many trials it stands for.

    Trials of one test case (equal in the `case` columns) whose `flight` columns are all equal, to the last
    bit, flew one flight: the first stands for all of them. A trial with nothing measured (every float
    `flight` column NaN: it never flew, or its error left no figures) is its own observation, since two
    failures to fly are two events. Columns of either list the frame lacks are left out.
    """
    keys = [c for c in (*case, *flight) if c in frame]
    measured = [c for c in flight if c in frame and pd.api.types.is_float_dtype(frame[c])]
    out = frame.assign(repeats=1)
    if frame.empty or not measured:
        return out
    flown = frame[measured].notna().any(axis=1)
    sizes = frame[flown].groupby(keys, dropna=False, sort=False)[keys[0]].transform("size")
    out.loc[sizes.index, "repeats"] = sizes
    return out[~flown | ~frame.duplicated(keys)]


def significant(estimate: Estimate) -> bool:
    """True when a difference's interval excludes zero."""
    return not math.isnan(estimate.value) and (estimate.low > 0 or estimate.high < 0)


def grouped_means(frame: pd.DataFrame, by: list[str], column: str, *, rate: bool = False,
                  seed: int = SEED) -> pd.DataFrame:
    """Per group of `by`: mean of `column` with its interval, as columns value, low, high, n, and trials (how
    many trials the n observations stand for: more than n where `frame` is `observations`' and some were
    identical repeats).

    `rate`: the column is pass/fail, and gets the Wilson interval instead of the bootstrap.
    """
    rows = []
    for key, group in frame.groupby(by, sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        values = group[column].to_numpy(float)
        estimate = wilson_rate(values) if rate else bootstrap_mean(values, seed=seed, label=f"{column}|{key}")
        rows.append({**dict(zip(by, key)), "value": estimate.value, "low": estimate.low, "high": estimate.high,
                     "n": estimate.n, "trials": trials_behind(group, column)})
    return pd.DataFrame(rows, columns=[*by, "value", "low", "high", "n", "trials"])


def trials_behind(group: pd.DataFrame, column: str) -> int:
    """How many trials stand behind the values of `column` in a group of observations (NaNs left out)."""
    present = group[column].notna()
    return int(group.loc[present, "repeats"].sum()) if "repeats" in group else int(present.sum())


def describe(estimate: Estimate, trials: int, digits: int = 2) -> str:
    """An estimate as a report prints it: with its interval over two observations or more; one observation
    has no interval, and says how many identical repeats it stands for."""
    if math.isnan(estimate.value) or estimate.n != 1:
        return estimate.format(digits)
    copies = f": {trials} identical repeats" if trials > 1 else ""
    return f"{estimate.value:.{digits}f} (1 observation{copies})"


def flakiness(frame: pd.DataFrame, case: list[str], passed: str = "success", *, seed: int = SEED) -> pd.DataFrame:
    """Pass rate with its interval per test case across repeats; `flaky` when it both passed and failed."""
    table = grouped_means(frame, case, passed, rate=True, seed=seed)
    table = table.rename(columns={"value": "pass_rate"})
    table["flaky"] = (table["pass_rate"] > 0) & (table["pass_rate"] < 1)
    return table
