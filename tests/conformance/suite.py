"""Cases, the targets they run on, and how two runs of a case are compared."""

from __future__ import annotations

import asyncio
import contextlib
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

from px4.process import free_udp_port
from px4.sitl import SitlOptions, px4_sitl
from targets.builtin import SimProcessOptions, builtin_vehicle

BUILTIN = "built-in"
PX4 = "px4"
# Both at the same factor, so what a case times in vehicle seconds is alike on both; 2x keeps a PX4 SITL and
# a built-in vehicle per case (two cases at a time) within two cores.
SPEED = 2.0


@dataclass(frozen=True)
class Target:
    """A fresh autopilot for one case: where MAVSDK (api_url) and a ground station (gcs_url) connect."""

    kind: str
    api_url: str
    gcs_url: str
    speed: float
    root: Path  # its working folder: what MAVLink FTP serves


@contextlib.asynccontextmanager
async def start_target(kind: str, px4_dir: str | None, speed: float = SPEED,
                       params: dict[str, float] | None = None, example_port: int | None = None) -> AsyncIterator[Target]:
    """`example_port`: the API link also sends there (PX4: instance 0, whose API port it must be)."""
    params = dict(params or {})
    if kind == BUILTIN:
        gcs_port = free_udp_port()
        with tempfile.TemporaryDirectory(prefix="conformance-") as root:
            extra = [] if example_port is None else [f"udpout://127.0.0.1:{example_port}"]
            options = SimProcessOptions(speed=speed, params=params, root=Path(root), extra_links=extra,
                                        gcs_links=[f"udpin://127.0.0.1:{gcs_port}"])
            async with builtin_vehicle(options) as sim:
                yield Target(kind, sim.url, f"udpout:127.0.0.1:{gcs_port}", speed, Path(root))
        return
    instance = None if example_port is None else 0
    async with px4_sitl(SitlOptions(instance=instance, px4_dir=px4_dir, speed=speed, params=params)) as sitl:
        yield Target(kind, sitl.url, f"udpout:127.0.0.1:{sitl.ports.gcs_local}", speed, sitl.workdir)


Observation = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """One client run. `run` returns what the user saw, by name; `tolerance` is the absolute spread a number
    (or each number of a list) may differ by; `known` names, for a key that still differs, the measured reason."""

    name: str
    client: str  # pymavlink | MAVSDK | MAVProxy
    run: Callable[[Target], Awaitable[Observation]]
    quick: bool = False
    speed: float = SPEED
    params: dict[str, float] = field(default_factory=dict)
    tolerance: dict[str, float] = field(default_factory=dict)
    known: dict[str, str] = field(default_factory=dict)


CASES: list[Case] = []


def case(name: str, client: str, **options) -> Callable:
    """Register the decorated coroutine function (target -> observations) as a case."""
    def register(run: Callable[[Target], Awaitable[Observation]]):
        CASES.append(Case(name, client, run, **options))
        return run
    return register


def blocking(run: Callable[[Target], Observation]) -> Callable[[Target], Awaitable[Observation]]:
    """A blocking client (pymavlink, a MAVProxy process) run in a thread, so the two targets run side by side."""
    async def in_thread(target: Target) -> Observation:
        return await asyncio.to_thread(run, target)
    in_thread.__name__ = run.__name__
    return in_thread


# A figure that does not apply to this run: the autopilot took a path that another of the case's keys
# names (with its reason), so this figure has nothing to compare and is the same as anything.
DOES_NOT_APPLY = "does not apply to this run"


def _same(a: Any, b: Any, tolerance: float) -> bool:
    if a == DOES_NOT_APPLY or b == DOES_NOT_APPLY:
        return True
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y, tolerance) for x, y in zip(a, b))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= tolerance
    return a == b


@dataclass
class Difference:
    key: str
    px4: Any
    builtin: Any
    reason: str | None  # the measured reason, when the difference is named


@dataclass
class Outcome:
    case: Case
    px4: Observation | None = None
    builtin: Observation | None = None
    error: str | None = None  # a run that raised, on which autopilot
    seconds: float = 0.0

    @property
    def differences(self) -> list[Difference]:
        if self.px4 is None or self.builtin is None:
            return []
        tol = self.case.tolerance
        return [Difference(key, self.px4.get(key), self.builtin.get(key), self.case.known.get(key))
                for key in sorted(set(self.px4) | set(self.builtin))
                if not _same(self.px4.get(key), self.builtin.get(key), tol.get(key, 0.0))]

    @property
    def verdict(self) -> str:
        """same | named (every difference has its reason) | differs | error"""
        if self.error is not None:
            return "error"
        diffs = self.differences
        if not diffs:
            return "same"
        return "named" if all(d.reason for d in diffs) else "differs"

    def lines(self) -> list[str]:
        """What differs, and why where that is known."""
        if self.error is not None:
            return [f"    {self.error}"]
        out = []
        for d in self.differences:
            out.append(f"    {d.key}: PX4 {d.px4!r}, built-in {d.builtin!r}")
            if d.reason:
                out.append(f"      why: {d.reason}")
        return out


async def _observe(case: Case, kind: str, px4_dir: str | None) -> Observation:
    async with start_target(kind, px4_dir, case.speed, case.params) as target:
        return await case.run(target)


async def run_case(case: Case, px4_dir: str | None) -> Outcome:
    """The case on a fresh PX4 and a fresh built-in vehicle, side by side."""
    started = time.monotonic()
    outcome = Outcome(case)
    results = await asyncio.gather(_observe(case, PX4, px4_dir), _observe(case, BUILTIN, None),
                                   return_exceptions=True)
    for kind, result in zip((PX4, BUILTIN), results):
        if isinstance(result, BaseException):
            outcome.error = f"{kind}: {type(result).__name__}: {result}"
        elif kind == PX4:
            outcome.px4 = result
        else:
            outcome.builtin = result
    outcome.seconds = time.monotonic() - started
    return outcome


async def run_cases(cases: list[Case], px4_dir: str | None, parallel: int = 2,
                    report: Callable[[Outcome], None] = lambda o: None) -> list[Outcome]:
    """Every case, `parallel` at a time, each outcome reported as it is known; in the order given."""
    gate = asyncio.Semaphore(parallel)

    async def one(case: Case) -> Outcome:
        async with gate:
            outcome = await run_case(case, px4_dir)
        report(outcome)
        return outcome

    return list(await asyncio.gather(*(one(c) for c in cases)))


def all_cases() -> list[Case]:
    """Every registered case (importing the modules that register them)."""
    from . import flight_cases, mavproxy_cases, mavsdk_cases, probes  # noqa: F401 - registration
    return list(CASES)
