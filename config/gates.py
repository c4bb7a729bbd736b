"""What a gate declares: a threshold on a campaign's results that a CI step fails on, as a campaign file's
`gates:` and `--fail-on` name it. Parsed here, where a campaign file is read; judged by `reports.gates`.

A gate names what fails, never what passes, so that a list of them reads as a list of reasons to stop:

    collision               any trial collided
    success<0.8             the success rate's lower 95 % bound (Wilson) is below 0.8
    p99:t_tot_ms>100        the 99th percentile over the trials of a results-table column is above 100
    success<0.8@planner     the same, per group of trials (here per planner; @target,planner for pairs)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

COLLISION = "collision"
SUCCESS = "success"
EXPECTED = ("collision, success<RATE (RATE from 0 to 1) or STAT:COLUMN>VALUE (or <VALUE; STAT mean, min, max or "
            "pNN, the NN-th percentile, e.g. p99), "
            "each optionally followed by @COLUMN[,COLUMN] to judge each group of trials; e.g. collision, "
            "success<0.8@planner, p99:t_tot_ms>100")

_NAME = r"[A-Za-z_]\w*"
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_GATE = re.compile(rf"(?:(?P<collision>{COLLISION})|{SUCCESS}<(?P<rate>{_NUMBER})"
                   rf"|(?P<stat>mean|min|max|p\d+(?:\.\d+)?):(?P<column>{_NAME})(?P<op>[<>])(?P<value>{_NUMBER}))"
                   rf"(?:@(?P<by>{_NAME}(?:,{_NAME})*))?")


@dataclass(frozen=True)
class Gate:
    """One parsed gate; `text` is how the user wrote it (without spaces), and how every verdict names it."""

    text: str
    kind: str  # collision, success or a statistic (mean, min, max, pNN)
    column: str = ""
    above: bool = True  # a statistic's gate fails above its threshold (`>`), else below (`<`)
    threshold: float = math.nan
    by: tuple[str, ...] = ()


def parse_gate(text: str) -> Gate:
    """A gate from its text; ValueError naming it and what a gate looks like."""
    compact = "".join(str(text).split())
    match = _GATE.fullmatch(compact)
    if match is None:
        raise ValueError(f"gate {text!r}: expected {EXPECTED}")
    by = tuple(match["by"].split(",")) if match["by"] else ()
    if match["collision"]:
        return Gate(compact, COLLISION, by=by)
    if match["rate"] is not None:
        rate = float(match["rate"])
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"gate {text!r}: expected a success rate from 0 to 1, got {match['rate']}")
        return Gate(compact, SUCCESS, SUCCESS, above=False, threshold=rate, by=by)
    stat = match["stat"]
    if stat.startswith("p") and not 0.0 <= float(stat[1:]) <= 100.0:
        raise ValueError(f"gate {text!r}: expected a percentile from p0 to p100, got {stat}")
    return Gate(compact, stat, match["column"], above=match["op"] == ">", threshold=float(match["value"]), by=by)
