"""MAVSDK's own example scripts, run unchanged from a user's copy (the project ships none of them): each on a
fresh PX4 SITL instance 0 and then a fresh built-in vehicle that also sends to 14540, where the examples
listen (udpin://0.0.0.0:14540). One target at a time, so that the port is the example's alone.

What is compared is what the example printed: its exit status and its distinct lines with every number
masked (a telemetry value, a time or an id differs from run to run on PX4 alone).
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from pathlib import Path

from .suite import BUILTIN, PX4, Case, Observation, Outcome, Target, start_target

EXAMPLE_PORT = 14540
NUMBER = re.compile(r"-?\d+(\.\d+)?(e-?\d+)?")


def example_cases(directory: Path, names: list[str], timeout_s: float) -> list[Case]:
    """A case per example script (`names`, or every *.py in `directory`); ValueError naming what is missing."""
    scripts = ([directory / f"{name.removesuffix('.py')}.py" for name in names] if names
               else sorted(directory.glob("*.py")))
    missing = [str(s) for s in scripts if not s.is_file()]
    if missing or not scripts:
        raise ValueError(f"no MAVSDK example script {', '.join(missing) or 'in ' + str(directory)}")
    return [Case(f"example {s.stem}", "MAVSDK example", _runner(s, timeout_s)) for s in scripts]


def _runner(script: Path, timeout_s: float):
    async def run(target: Target) -> Observation:
        proc = await asyncio.create_subprocess_exec(sys.executable, str(script), cwd=script.parent,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
            status: object = proc.returncode
        except asyncio.TimeoutError:
            proc.kill()
            out, _ = await proc.communicate()
            status = f"still running after {timeout_s:g} s"
        lines = {NUMBER.sub("#", line).strip() for line in out.decode(errors="replace").splitlines()}
        return {"exit": status, "printed": sorted(line for line in lines if line)}
    return run


async def run_examples(cases: list[Case], px4_dir: str | None, report=lambda o: None) -> list[Outcome]:
    """Each example on PX4, then on the built-in vehicle, one target at a time."""
    outcomes = []
    for case in cases:
        outcome = Outcome(case)
        started = time.monotonic()
        for kind in (PX4, BUILTIN):
            try:
                async with start_target(kind, px4_dir, case.speed, example_port=EXAMPLE_PORT) as target:
                    observed = await case.run(target)
            except Exception as exc:  # noqa: BLE001 - a target that fails to start is that case's error
                outcome.error = f"{kind}: {type(exc).__name__}: {exc}"
                break
            if kind == PX4:
                outcome.px4 = observed
            else:
                outcome.builtin = observed
        outcome.seconds = time.monotonic() - started
        report(outcome)
        outcomes.append(outcome)
    return outcomes
