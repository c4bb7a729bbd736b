"""Sensor noise as a client sees it: HIGHRES_IMU and ATTITUDE at rest and in a hover, per target.

The standard deviation of each field over 5 s of vehicle time, disarmed on the ground and then
hovering at 5 m after a takeoff, for each target at --speed x real time (physics.sensors takes its
levels from PX4 v1.16.1 SIH's numbers).

    python benchmarks/sensor_noise.py --targets px4-sitl builtin --px4-dir ../shared/px4/v1.16.1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.quick import parse_args  # noqa: E402
from bridges.vehicle import VehicleError  # noqa: E402
from hil.fidelity import TARGETS, connected, run_record_dir  # noqa: E402
from hil.session import TrialSession  # noqa: E402
from records.summary import Summary  # noqa: E402

FIELDS = {"HIGHRES_IMU": ("xacc", "yacc", "zacc", "xgyro", "ygyro", "zgyro", "xmag", "ymag", "zmag", "abs_pressure"),
          "ATTITUDE": ("roll", "pitch", "yaw", "rollspeed", "pitchspeed", "yawspeed")}
WINDOW_S = 5.0


async def _sample(vehicle, seconds: float) -> dict[str, float]:
    """Standard deviation of every field over `seconds` of vehicle time."""
    rows: dict[str, list[dict]] = {name: [] for name in FIELDS}

    async def follow(name: str) -> None:
        async for fields in vehicle.messages(name):
            rows[name].append(fields)

    tasks = [asyncio.create_task(follow(name)) for name in FIELDS]
    await vehicle.sleep(seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return {f"{name}.{field}": float(np.std([r[field] for r in rows[name]])) if rows[name] else float("nan")
            for name, fields in FIELDS.items() for field in fields}


async def measure(target: str, speed: float, px4_dir: str | None) -> dict[str, dict[str, float]]:
    config = {"kind": "sensor_noise", "target": target, "speed": speed, "px4_dir": px4_dir or ""}
    with run_record_dir(None, f"sensor-noise-{target}") as record, \
            TrialSession(record, config=config, target=target) as session:
        async with connected(session, target, speed, px4_dir) as vehicle:
            await vehicle.wait_armable(60.0)
            rest = await _sample(vehicle, WINDOW_S)
            await vehicle.arm()
            with contextlib.suppress(VehicleError):  # the harness's final settle is not needed here
                await vehicle.takeoff(5.0, timeout=30.0)
            hover = await _sample(vehicle, WINDOW_S)
            await vehicle.land()
        session.finish("success", Summary(outcome="success"))
    return {"rest": rest, "hover": hover}


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", nargs="+", choices=TARGETS, default=["px4-sitl", "builtin"])
    parser.add_argument("--px4-dir", default=os.environ.get("PX4_DIR"))
    parser.add_argument("--speed", type=float, default=2.0)
    args = parse_args(parser, {}, argv)
    results = {t: await measure(t, args.speed, args.px4_dir) for t in args.targets}
    print("standard deviation per field | " + " | ".join(f"{t} {phase}" for t in args.targets
                                                       for phase in ("rest", "hover")))
    for key in next(iter(results.values()))["rest"]:
        print(f"{key:28s} | " + " | ".join(f"{results[t][phase][key]:.4g}" for t in args.targets
                                          for phase in ("rest", "hover")))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
