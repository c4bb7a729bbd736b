"""The simulator's records: rows made on the simulator's thread, handed to a sink on the caller's.

The simulator records its ground truth ("sim_truth") and what it sent PX4 ("sim_sensors": the
IMU, magnetometer and barometer readings with their `fields_updated`; "sim_gps": every fix) as
rows keyed by ``time_us``, the clock PX4 runs on in lockstep, so a row lines up exactly with
PX4's own log (ULog timestamps) and telemetry. The lockstep loop runs on a thread of its own;
its rows wait here until the event loop drains them into the sink (for example a trial
recorder's ``append``), so the sink is only ever called from one thread.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Mapping

RecordSink = Callable[[str, Mapping[str, Any]], None]


class RecordBuffer:
    """Rows per table, appended by the simulator, taken out in order by `drain`: a deque, whose append and
    popleft are each atomic, so the simulator's thread (a row or two every frame) takes no lock."""

    def __init__(self) -> None:
        self._rows: deque[tuple[str, Mapping[str, Any]]] = deque()

    def add(self, table: str, row: Mapping[str, Any]) -> None:
        self._rows.append((table, row))

    def drain(self, sink: RecordSink | None) -> int:
        """Hand every row waiting now to `sink` (or drop them when there is none); returns how many."""
        rows, take = self._rows, self._rows.popleft
        count = len(rows)  # rows added meanwhile wait for the next drain
        for _ in range(count):
            table, row = take()
            if sink is not None:
                sink(table, row)
        return count
