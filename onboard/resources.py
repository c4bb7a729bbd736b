"""Resource sampler: CPU per core, memory and temperatures on the same timeline as the stage spans.

On a Jetson with jetson-stats installed, `jtop` supplies what psutil cannot see (GPU load, EMC
bandwidth, rail power) and its numbers are recorded alongside; everywhere else psutil alone is
used. Rows go to the recorder's "resources" table stamped with `time.monotonic_ns()`, the clock the
timing spans use, so a slow cycle can be lined up with what the machine was doing.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any, Protocol

import psutil

from aio.tasks import cancel_and_wait

DEFAULT_INTERVAL_S = 0.5


class Recorder(Protocol):
    def append(self, table: str, row: dict[str, Any]) -> None: ...


def _column(name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", name).strip("_").lower()


def psutil_sample(process: psutil.Process) -> dict[str, float]:
    """One psutil reading: per-core and process CPU (% since the previous call), memory, temperatures."""
    row: dict[str, float] = {f"cpu{i}_pct": float(p) for i, p in enumerate(psutil.cpu_percent(percpu=True))}
    memory = psutil.virtual_memory()
    row.update(mem_used_pct=float(memory.percent), mem_used_mb=(memory.total - memory.available) / 2**20,
               process_cpu_pct=float(process.cpu_percent()), process_rss_mb=process.memory_info().rss / 2**20)
    temperatures = getattr(psutil, "sensors_temperatures", lambda: {})() or {}
    for chip, readings in temperatures.items():
        for i, reading in enumerate(readings):
            row[f"temp_{_column(chip)}_{_column(reading.label or str(i))}_c"] = float(reading.current)
    return row


def open_jtop():
    """A started jtop client when jetson-stats is installed (and its service answers), else None."""
    try:
        from jtop import jtop
    except ImportError:
        return None
    client = jtop()
    try:
        client.start()
    except Exception:  # jtop raises its own errors when the jtop service is not running
        return None
    return client


def jtop_sample(client) -> dict[str, float]:
    """The numeric entries of jtop's stats (GPU, EMC, power rails, temperatures), prefixed jtop_."""
    return {f"jtop_{_column(str(k))}": float(v) for k, v in client.stats.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


class ResourceSampler:
    """Samples every `interval_s` (wall clock) into `recorder`'s "resources" table while running."""

    def __init__(self, recorder: Recorder, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self._recorder = recorder
        self._interval = interval_s
        self._task: asyncio.Task | None = None
        self._process = psutil.Process()
        self.source = "psutil"

    async def __aenter__(self) -> "ResourceSampler":
        self._jtop = open_jtop()
        if self._jtop is not None:
            self.source = "jtop+psutil"
        psutil.cpu_percent(percpu=True)  # the first reading only starts the interval
        self._process.cpu_percent()
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc) -> None:
        if self._task is not None:
            await cancel_and_wait(self._task)
        if self._jtop is not None:
            with contextlib.suppress(Exception):
                self._jtop.close()

    def sample(self) -> dict[str, float | str]:
        row: dict[str, float | str] = {"source": self.source, **psutil_sample(self._process)}
        if self._jtop is not None:
            row.update(jtop_sample(self._jtop))
        return row

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            self._recorder.append("resources", self.sample())
