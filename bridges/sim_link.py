"""A link profile applied in simulated time: the lockstep vehicle's link, with the proxy's very model.

The MAVLink proxy impairs bytes on sockets against the wall clock; the lockstep vehicle has no
sockets, so what would cross the link (setpoints up, telemetry down) goes through the same
`DirectionModel` here, against simulated time, and a campaign in fast time sees the latency, loss
and bandwidth of a real-time run. Each message is judged as the MAVLink frame it would be (its id
and size), and a corrupted frame is never delivered, since its receiver would drop it on the CRC.
Every decision is kept as a row with the columns of the proxy's "link" table.
"""

from __future__ import annotations

import math

from bridges.impairment import DelayLine, DirectionModel, direction_seed
from profiles.link import DIRECTIONS, LinkSpec

# The MAVLink 2 frames that carry what crosses in lockstep: (message id, frame bytes).
SET_POSITION_TARGET_LOCAL_NED = (84, 65)
SET_ATTITUDE_TARGET = (82, 51)
LOCAL_POSITION_NED = (32, 40)


class SimulatedLink:
    """Both directions of a link profile, driven by the caller's simulated clock (seconds)."""

    def __init__(self, spec: LinkSpec, t0: float = 0.0):
        self.spec = spec
        self._models = {d: DirectionModel(spec.direction(d), direction_seed(spec.seed, d), t0) for d in DIRECTIONS}
        self._lines = {d: DelayLine() for d in DIRECTIONS}
        self.rows: list[dict] = []

    def send(self, direction: str, t: float, item: object, frame: tuple[int, int]) -> None:
        """`item` enters the link at `t` as a frame of (message id, size)."""
        msgid, size = frame
        decision = self._models[direction].decide(t, bytes(size), msgid)
        releases = () if decision.fate == "corrupted" else decision.releases
        arrival_ns = int(t * 1e9)
        if not decision.releases:
            self.rows.append(self._row(direction, msgid, size, decision.fate, decision.reason, arrival_ns, None,
                                       decision.drawn_ms, decision.planned_ms, 0))
        for copy, (release, _) in enumerate(decision.releases):
            self.rows.append(self._row(direction, msgid, size, decision.fate, decision.reason, arrival_ns,
                                       int(release * 1e9) if releases else None, decision.drawn_ms,
                                       decision.planned_ms, copy))
        for release, _ in releases:
            self._lines[direction].push(release, item)

    @staticmethod
    def _row(direction, msgid, size, fate, reason, arrival_ns, sent_ns, drawn_ms, planned_ms, copy) -> dict:
        return {"direction": direction, "msgid": msgid, "seq": 0, "sysid": 0, "size": size, "fate": fate,
                "reason": reason, "copy_no": copy, "arrival_ns": arrival_ns, "sent_ns": sent_ns,
                "drawn_ms": drawn_ms, "planned_ms": planned_ms,
                "applied_ms": (sent_ns - arrival_ns) / 1e6 if sent_ns is not None else math.nan}

    def next_due(self) -> float:
        """When the next item comes out of either direction (inf when nothing is in flight)."""
        dues = [d for d in (line.next_due() for line in self._lines.values()) if d is not None]
        return min(dues) if dues else math.inf

    def deliver(self, direction: str, t: float) -> list:
        """Items of one direction whose time has come, in release order."""
        return [item for _, item in self._lines[direction].pop_due(t)]
