"""The simulator's records: rows made on the simulator's thread, handed to a sink on the caller's.

The simulator records its ground truth ("sim_truth") and what it sent PX4 ("sim_sensors": the
IMU, magnetometer and barometer readings with their `fields_updated`; "sim_gps": every fix) as
rows keyed by ``time_us``, the clock PX4 runs on in lockstep, so a row lines up exactly with
PX4's own log (ULog timestamps) and telemetry. The lockstep loop runs on a thread of its own;
its rows wait here until the event loop drains them into the sink (for example a trial
recorder's ``append``), so the sink is only ever called from one thread.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping

RecordSink = Callable[[str, Mapping[str, Any]], None]


class RecordBuffer:
    """Rows per table, appended by the simulator, taken out in order by `drain`."""

    def __init__(self) -> None:
        self._rows: list[tuple[str, Mapping[str, Any]]] = []
        self._lock = threading.Lock()

    def add(self, table: str, row: Mapping[str, Any]) -> None:
        with self._lock:
            self._rows.append((table, row))

    def drain(self, sink: RecordSink | None) -> int:
        """Hand every waiting row to `sink` (or drop them when there is none); returns how many."""
        with self._lock:
            rows, self._rows = self._rows, []
        if sink is not None:
            for table, row in rows:
                sink(table, row)
        return len(rows)
