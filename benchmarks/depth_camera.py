"""Virtual depth camera: time to render one 64 x 48 depth image (FlightBench's 90 x 75 deg, 4 m).

Renders from poses along the straight reference line of a scene, heading to the goal, and prints
the median and 95th-percentile render time. Goal: a Forest image in at most 2 ms (a 30 Hz camera
then costs under 6 % of one core).

    python benchmarks/depth_camera.py [--scene forest] [--frames 300]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.quick import parse_args  # noqa: E402
from missions.scenes import generate  # noqa: E402
from missions.sensors import DepthCamera, Pose  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="forest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int, default=300)
    args = parse_args(parser, {'frames': 100}, argv)
    scene = generate(args.scene, args.seed)
    camera = DepthCamera()
    heading = scene.goal - scene.start
    yaw = math.atan2(heading[1], heading[0])
    poses = [Pose(tuple(scene.start + f * heading), yaw=yaw) for f in np.linspace(0.0, 1.0, args.frames)]
    camera.render(scene, poses[0])
    times, hits = [], []
    for pose in poses:
        start = time.perf_counter()
        depth = camera.render(scene, pose)
        times.append(time.perf_counter() - start)
        hits.append(np.isfinite(depth).mean())
    times_ms = np.array(times) * 1e3
    print(f"{args.scene} seed {args.seed}: {camera.width}x{camera.height} depth, {camera.hfov_deg:g}x{camera.vfov_deg:g} deg, "
          f"{camera.max_range:g} m range, {len(poses)} poses along the reference line")
    print(f"render time  median {np.median(times_ms):.3f} ms   p95 {np.percentile(times_ms, 95):.3f} ms   "
          f"max {times_ms.max():.3f} ms")
    print(f"pixels with a return: {np.mean(hits) * 100:.1f} % on average")
    return 0


if __name__ == "__main__":
    sys.exit(main())
