"""Collision queries per second: vehicle-sphere checks against a scene, as the trial monitor makes them.

For each scene, prints the rate of `Scene.collides` (exact signed distance to every obstacle, then
a comparison with the vehicle radius) for points inside the flight volume, two ways: in batches
(one call per 1024 samples, as when a monitor checks a block of telemetry or a planner checks a
trajectory) and one point per call (the worst case: one telemetry sample at a time). Goal: at
least 100k queries/s.

    python benchmarks/collision_queries.py [--scenes forest,perlin] [--seconds 1.0]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.quick import parse_args  # noqa: E402
from missions.scenes import FLYINGTRUST, generate  # noqa: E402

BATCH = 1024
RADIUS = 0.27  # m, the default vehicle profile's


def rate(call, points: np.ndarray, per_call: int, seconds: float) -> float:
    """Queries per second of `call` on blocks of `per_call` points, timed for about `seconds`."""
    blocks = [points[i:i + per_call] for i in range(0, len(points), per_call)]
    call(blocks[0])  # warm caches (k-d trees, axis arrays)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for block in blocks:
            call(block)
            done += len(block)
    return done / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", default=",".join(spec.name for spec in FLYINGTRUST))
    parser.add_argument("--seconds", type=float, default=1.0, help="timing per measurement")
    args = parse_args(parser, {'seconds': 0.3}, argv)
    print(f"{'scene':<14}{'obstacles':>10}{'batched q/s':>14}{'single q/s':>13}{'single us':>11}")
    for name in args.scenes.split(","):
        scene = generate(name, 0)
        points = np.random.default_rng(0).uniform(scene.bounds_min, scene.bounds_max, size=(BATCH * 8, 3))
        check = lambda block: scene.collides(block, RADIUS)  # noqa: E731
        batched = rate(check, points, BATCH, args.seconds)
        single = rate(check, points[:2000], 1, args.seconds)
        count = sum(len(g) for g in scene.groups)
        print(f"{name:<14}{count:>10}{batched:>14,.0f}{single:>13,.0f}{1e6 / single:>11.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
