"""FLYINGTRUST profiles on real PX4 SITL SIH: expected vs measured climb and angular accelerations.

Each profile flies once on the given PX4 build (bridges/capability_flight.py: full collective
thrust from hover, roll/pitch/yaw attitude steps), and px4/sih_check.py measures from PX4's ULog
the climb acceleration at full collective ``(TWR-1) g`` and the angular accelerations at the
saturating rotor pattern (alpha_xy for roll and pitch, alpha_z for yaw). Goal: every number within
the check's tolerance (3 %) of the profile, for every profile SIH can reproduce; profiles it cannot
are listed with PX4's reason. `exc` is the fraction of the full command the flight reached, `raw`
the climb acceleration read directly at PX4's full collective (drag removed; PX4 keeps attitude
margin, so it is lower).

    python benchmarks/sih_profiles.py [--px4-dir DIR] [--speed 4] [--jobs 1] [--keep DIR] [--all | NAME ...]
    python benchmarks/sih_profiles.py --measure-again DIR [--all | NAME ...]   # the logs a --keep run left

Without names: Table I's extremes (lowest and highest TWR, alpha_xy, alpha_z; real and virtual).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from bridges.capability_flight import measure_on_px4  # noqa: E402
from profiles.library import library_profiles, load_vehicle_profile  # noqa: E402
from px4.sih import sitl_params  # noqa: E402
from px4.sih_check import TOLERANCE, SihCheck, check_log  # noqa: E402

# Lowest TWR and alpha (real), highest TWR and alpha (real), highest alpha_xy and alpha_z
# (virtual), lowest virtual alpha_xy, highest virtual TWR, heaviest.
EXTREMES = ("2.00kg-T-MOTOR", "1.00kg-SunnySky", "3.50kg-SunnySky", "0.75kg-Quadrotor-2", "4.50kg-Quadrotor-14",
            "0.98kg-EGO-Planner-DIY", "5.45kg-JFRC")


def row(check: SihCheck) -> str:
    cells = [f"{check.profile:<26}"]
    for m in check.measurements:
        cells.append(f"{m.expected:9.2f} {m.measured:9.2f} {100 * m.error:+6.2f}% {m.excitation:4.2f}")
    climb = check.get("climb")
    cells.append(f"{climb.observed:7.2f}")
    cells.append("pass" if check.passed() else "FAIL")
    return " | ".join(cells)


HEADER = (f"{'profile':<26} | {'climb (TWR-1)g m/s^2':^31} | {'roll alpha_xy rad/s^2':^31} | "
          f"{'pitch alpha_xy rad/s^2':^31} | {'yaw alpha_z rad/s^2':^31} | {'raw':^7} | result\n"
          f"{'':<26} | " + " | ".join([f"{'expected':>9} {'measured':>9} {'error':>7} {'exc':>4}"] * 4)
          + f" | {'climb':^7} |")


async def run(names: list[str], px4_dir: str | None, speed: float, jobs: int, keep: Path, again: bool) -> int:
    gate = asyncio.Semaphore(jobs)
    failures = 0

    async def one(name: str) -> str:
        nonlocal failures
        profile = load_vehicle_profile(name)
        try:
            sitl_params(profile)
        except ValueError as exc:
            return f"{name:<26} | refused: {exc}"
        async with gate:
            started = time.monotonic()
            try:
                if again:
                    check = check_log(sorted((keep / name / "ulog").glob("*.ulg"))[-1], profile)
                else:
                    check = await measure_on_px4(profile, keep / name, px4_dir=px4_dir, speed=speed)
            except Exception as exc:  # noqa: BLE001 - one profile's failed flight must not hide the others
                failures += 1
                return f"{name:<26} | not measured ({type(exc).__name__}): {exc}"
        failures += not check.passed()
        print(f"  {name}: {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        return row(check)

    async def show(name: str) -> None:
        print(await one(name), flush=True)

    started = time.monotonic()
    print(HEADER, flush=True)
    await asyncio.gather(*(show(name) for name in names))
    how = "measured again from their logs" if again else f"at {speed:g}x, {jobs} at a time"
    print(f"{len(names)} profiles in {time.monotonic() - started:.0f} s, {how}; logs in {keep}")
    print(f"goal: every number within {100 * TOLERANCE:.0f} % of the profile: "
          f"{'met' if failures == 0 else f'NOT met ({failures} profiles)'}")
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="profile names (default: Table I's extremes)")
    parser.add_argument("--all", action="store_true", help="all 36 profiles of Table I")
    parser.add_argument("--px4-dir", default=os.environ.get("PX4_DIR"))
    parser.add_argument("--speed", type=float, default=4.0)
    parser.add_argument("--jobs", type=int, default=1, help="PX4 instances at a time")
    parser.add_argument("--keep", type=Path, help="where to keep each flight's PX4 log (default: a temp folder)")
    parser.add_argument("--measure-again", type=Path, metavar="DIR",
                        help="fly nothing: measure again from the logs a --keep DIR run left")
    args = parse_args(parser, {})
    names = [p.name for p in library_profiles()] if args.all else (args.names or list(EXTREMES))
    keep = args.measure_again or args.keep or Path(tempfile.mkdtemp(prefix="sih-profiles-"))
    print(f"logs of {keep}" if args.measure_again else f"PX4 build: {args.px4_dir or '(PATH)'}")
    return asyncio.run(run(names, args.px4_dir, args.speed, args.jobs, keep, args.measure_again is not None))


if __name__ == "__main__":
    sys.exit(main())
