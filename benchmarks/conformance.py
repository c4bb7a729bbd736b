"""The differential conformance suite (issue 35), whole: every case of tests/conformance on a fresh PX4
v1.16.1 SITL (SIH) and a fresh built-in vehicle side by side, then client x case with same / named /
differs and, for each difference, the two observations and the measured reason where it is named.

    PX4_DIR=../shared/px4/v1.16.1 python benchmarks/conformance.py [--quick] [--case TEXT] [--parallel 2]
        [--mavsdk-examples DIR [--example NAME ...] [--example-timeout 120]]

`--quick` runs the cases tests/test_conformance.py runs. `--mavsdk-examples` also runs MAVSDK's own example
scripts from a copy of its examples folder, unchanged (tests/conformance/examples.py: one target at a time
on port 14540, where they listen, so nothing else may use that port meanwhile). Exit 1 when a difference is
not named (or a run failed), so that a new one cannot pass unnoticed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from px4.sitl import Px4Build, Px4NotFound  # noqa: E402
from tests.conformance.examples import example_cases, run_examples  # noqa: E402
from tests.conformance.mavproxy_cases import MAVPROXY  # noqa: E402
from tests.conformance.suite import Outcome, all_cases, run_cases  # noqa: E402


def _row(outcome: Outcome) -> str:
    return f"{outcome.case.client:<10} {outcome.verdict:<8} {outcome.seconds:5.0f} s  {outcome.case.name}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--px4-dir", default=os.environ.get("PX4_DIR"), help="PX4 SITL build (default: PX4_DIR)")
    parser.add_argument("--case", action="append", default=[], help="only cases whose name contains TEXT")
    parser.add_argument("--parallel", type=int, default=2, help="cases at a time (each starts two autopilots)")
    parser.add_argument("--quick", action="store_true", help="the quick subset (make test's)")
    parser.add_argument("--mavsdk-examples", type=Path, metavar="DIR",
                        help="also run the example scripts of this copy of MAVSDK's examples folder, unchanged")
    parser.add_argument("--example", action="append", default=[], metavar="NAME",
                        help="only this example (takeoff_and_land or takeoff_and_land.py); repeat for several")
    parser.add_argument("--example-timeout", type=float, default=120.0, metavar="S",
                        help="wall seconds an example may run before it is stopped (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        Px4Build.locate(args.px4_dir)
    except Px4NotFound as exc:
        print(f"conformance: {exc}", file=sys.stderr)
        return 2
    if args.parallel < 1:
        print(f"conformance: --parallel must be at least 1, got {args.parallel}", file=sys.stderr)
        return 2
    cases = [c for c in all_cases() if (not args.quick or c.quick) and
             (not args.case or any(text in c.name for text in args.case))]
    if not MAVPROXY.exists() and any(c.client == "MAVProxy" for c in cases):
        print(f"conformance: MAVProxy is not installed ({MAVPROXY}): its cases are left out; "
              "pip install -e '.[conformance]' (make bench does) runs them", file=sys.stderr)
        cases = [c for c in cases if c.client != "MAVProxy"]
    examples = []
    if args.mavsdk_examples is not None:
        if not args.mavsdk_examples.is_dir():
            print(f"conformance: --mavsdk-examples {args.mavsdk_examples}: not a folder", file=sys.stderr)
            return 2
        if not args.example_timeout > 0:
            print(f"conformance: --example-timeout must be a number of seconds > 0, got {args.example_timeout}",
                  file=sys.stderr)
            return 2
        try:
            examples = example_cases(args.mavsdk_examples, args.example, args.example_timeout)
        except ValueError as exc:
            print(f"conformance: --example: {exc}", file=sys.stderr)
            return 2
    started = time.monotonic()
    print(f"{len(cases)} cases, {args.parallel} at a time, PX4 from {args.px4_dir}", flush=True)
    outcomes = asyncio.run(run_cases(cases, args.px4_dir, args.parallel,
                                     report=lambda o: print(_row(o), flush=True)))
    outcomes += asyncio.run(run_examples(examples, args.px4_dir, report=lambda o: print(_row(o), flush=True)))
    print("\nclient     PX4 v1.16.1 vs built-in   case")
    for outcome in sorted(outcomes, key=lambda o: (o.case.client, o.case.name)):
        print(_row(outcome))
        for line in outcome.lines():
            print(line)
    counts = Counter((o.case.client, o.verdict) for o in outcomes)
    for client in sorted({o.case.client for o in outcomes}):
        print(f"{client}: " + ", ".join(f"{n} {v}" for (c, v), n in sorted(counts.items()) if c == client))
    print(f"{len(outcomes)} cases in {time.monotonic() - started:.0f} s wall")
    return 0 if all(o.verdict in ("same", "named") for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
