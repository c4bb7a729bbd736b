"""Cost of one stage-timing span (goal: <= 2 us per span).

Times N iterations of ``with span("map"): pass`` under an active profiler, minus N iterations of an
empty loop, and divides by N; the profiler is drained every 100 spans, as the runtime drains it
once per cycle. Best of several repeats, since a shared machine only ever adds time.

    python benchmarks/span_overhead.py [--count 200000] [--repeats 7]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from onboard.timing import StageProfiler, span  # noqa: E402

GOAL_US = 2.0


def measure(count: int) -> float:
    """Seconds per span, loop overhead removed."""
    profiler = StageProfiler()
    token = profiler.activate()
    try:
        start = time.perf_counter()
        for i in range(count):
            with span("map"):
                pass
            if i % 100 == 0:
                profiler.drain()
        spans = time.perf_counter() - start
    finally:
        StageProfiler.deactivate(token)
    start = time.perf_counter()
    for i in range(count):
        if i % 100 == 0:
            pass
    empty = time.perf_counter() - start
    return (spans - empty) / count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parse_args(parser, {'count': 50000, 'repeats': 3})
    best = min(measure(args.count) for _ in range(args.repeats)) * 1e6
    verdict = "ok" if best <= GOAL_US else "OVER GOAL"
    print(f"span overhead: {best:.3f} us per span (best of {args.repeats} x {args.count}; goal <= {GOAL_US} us) {verdict}")
    return 0 if best <= GOAL_US else 1


if __name__ == "__main__":
    sys.exit(main())
