"""One timeline: the board's clock against the harness's, from ping exchanges (as NTP does).

An exchange is (t1, t2, t3): the harness's clock when it sent a ping, the board's when it answered,
the harness's when the answer came back. The board's clock is ahead by ``t2 - (t1 + t3) / 2``, known to
half the round trip; the exchange with the shortest round trip of a burst is the one kept. A burst
before the trial and one after give the offset and its drift over the trial, with which every board
time in the record is put on the harness's clock.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BoardClock:
    """The board's clock: its monotonic clock, plus `offset_ns` where a test stands in for a board whose
    clock differs (two processes on one machine share one monotonic clock)."""

    offset_ns: int = 0

    def now_ns(self) -> int:
        return time.monotonic_ns() + self.offset_ns


@dataclass(frozen=True)
class OffsetEstimate:
    """The board's clock minus the harness's at harness time `at_ns`, within +/- `uncertainty_ns`."""

    at_ns: float
    offset_ns: float
    uncertainty_ns: float
    rtt_ns: int
    exchanges: int


def estimate_offset(exchanges: Sequence[tuple[int, int, int]]) -> OffsetEstimate:
    """The estimate from the exchange with the shortest round trip; raises ValueError without one."""
    valid = [(t1, t2, t3) for t1, t2, t3 in exchanges if t3 >= t1]
    if not valid:
        raise ValueError("no clock exchange to estimate the board's offset from")
    t1, t2, t3 = min(valid, key=lambda e: e[2] - e[0])
    middle = (t1 + t3) / 2
    return OffsetEstimate(middle, t2 - middle, (t3 - t1) / 2, t3 - t1, len(valid))


@dataclass(frozen=True)
class ClockAlignment:
    """The offset before the trial and, when measured, after it: a straight line between the two."""

    before: OffsetEstimate
    after: OffsetEstimate | None = None

    @property
    def drift_ppm(self) -> float:
        """How fast the board's clock gains on the harness's, in parts per million (0 with one estimate)."""
        if self.after is None or self.after.at_ns == self.before.at_ns:
            return 0.0
        return (self.after.offset_ns - self.before.offset_ns) / (self.after.at_ns - self.before.at_ns) * 1e6

    @property
    def drift_uncertainty_ppm(self) -> float:
        """How well the drift is known: both offsets' uncertainties over the time between them (inf with one)."""
        if self.after is None or self.after.at_ns == self.before.at_ns:
            return float("inf")
        span = self.after.at_ns - self.before.at_ns
        return (self.before.uncertainty_ns + self.after.uncertainty_ns) / span * 1e6

    def to_harness(self, board_ns: np.ndarray | int) -> np.ndarray:
        """Board times (ns) on the harness's clock, as int64 nanoseconds."""
        drift = self.drift_ppm / 1e6
        t = np.asarray(board_ns, dtype=np.float64)
        harness = (t - self.before.offset_ns + drift * self.before.at_ns) / (1.0 + drift)
        return np.rint(harness).astype(np.int64)

    def as_event(self) -> dict[str, float]:
        """For the record's `onboard_clock` event: offset, drift and how well they are known."""
        last = self.after or self.before
        return {"offset_ms": self.before.offset_ns / 1e6, "uncertainty_ms": self.before.uncertainty_ns / 1e6,
                "rtt_ms": self.before.rtt_ns / 1e6, "offset_after_ms": last.offset_ns / 1e6,
                "uncertainty_after_ms": last.uncertainty_ns / 1e6, "drift_ppm": self.drift_ppm,
                "drift_uncertainty_ppm": self.drift_uncertainty_ppm,
                "exchanges": self.before.exchanges + (self.after.exchanges if self.after else 0)}
