"""Judging gates (`config.gates`: what a campaign file's `gates:` and `--fail-on` declare) on a campaign's
results, for `hil run --fail-on`, a campaign's `gates:` and `hil report --fail-on`.

A success gate judges the lower bound, not the rate itself: 4 of 4 trials is a rate of 1.0, but its
interval reaches down to 0.51, and a gate at 0.8 should not pass on so little evidence.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass

import pandas as pd
from pandas.api.types import is_numeric_dtype

from config.gates import COLLISION, SUCCESS, Gate
from reports.stats import LEVEL, wilson_rate


@dataclass(frozen=True)
class Verdict:
    """A gate judged on one group of trials (`group` empty: all of them)."""

    gate: Gate
    group: str
    passed: bool
    value: float  # what was measured: trials collided, the success rate's lower bound, the statistic
    detail: str

    def line(self) -> str:
        where = f" [{self.group}]" if self.group else ""
        return f"gate {'passed' if self.passed else 'FAILED'}: {self.gate.text}{where}: {self.detail}"

    def as_dict(self) -> dict:
        return {"gate": self.gate.text, "group": self.group, "passed": self.passed, "value": self.value,
                "threshold": self.gate.threshold, "detail": self.detail}


def judge(gates: list[Gate], results: pd.DataFrame) -> list[Verdict]:
    """Every gate's verdict on a results table, per group where a gate asks for groups; ValueError naming the
    gate when it names a column the table does not have (or one that holds no numbers)."""
    verdicts = []
    for gate in gates:
        if results.empty:  # nothing measured is no evidence of passing
            verdicts.append(Verdict(gate, "", False, math.nan, "no finished trials to judge"))
            continue
        for column in (*gate.by, gate.column):
            if column and column not in results:
                close = difflib.get_close_matches(column, list(results.columns), n=1)
                raise ValueError(f"gate {gate.text!r}: the results have no column {column!r} " + (
                    f"(did you mean {close[0]!r}?)" if close else f"(they have: {', '.join(results.columns)})"))
        if gate.column and gate.kind != SUCCESS and not is_numeric_dtype(results[gate.column]):
            raise ValueError(f"gate {gate.text!r}: expected a column of numbers, but {gate.column!r} holds "
                             f"{results[gate.column].dtype} values")
        if not gate.by:
            verdicts.append(_judge_trials(gate, "", results))
            continue
        for key, trials in results.groupby(list(gate.by), sort=True, dropna=False):
            key = key if isinstance(key, tuple) else (key,)
            verdicts.append(_judge_trials(gate, ", ".join(f"{c}={v}" for c, v in zip(gate.by, key)), trials))
    return verdicts


def _judge_trials(gate: Gate, group: str, trials: pd.DataFrame) -> Verdict:
    if gate.kind == COLLISION:
        collided = int((trials["outcome"] == COLLISION).sum())
        return Verdict(gate, group, collided == 0, collided, f"{collided} of {len(trials)} trials collided")
    if gate.kind == SUCCESS:
        rate = wilson_rate(trials[SUCCESS].fillna(False).astype(float))
        return Verdict(gate, group, rate.low >= gate.threshold, rate.low,
                       f"success rate {rate.value:.2f}, lower {LEVEL:.0%} bound {rate.low:.2f} (Wilson, "
                       f"{rate.n} trials) {'<' if rate.low < gate.threshold else '>='} {gate.threshold:g}")
    values = trials[gate.column].dropna().astype(float)
    if values.empty:
        return Verdict(gate, group, False, math.nan, f"no trial has a value of {gate.column}")
    value = float(values.quantile(float(gate.kind[1:]) / 100.0) if gate.kind.startswith("p")
                  else getattr(values, gate.kind)())
    failed = value > gate.threshold if gate.above else value < gate.threshold
    op = ">" if gate.above else "<"
    return Verdict(gate, group, not failed, value,
                   f"{gate.kind} of {gate.column} {value:.4g} {op if failed else 'not ' + op} {gate.threshold:g} "
                   f"({len(values)} trials)")
