"""How closely a stronger vehicle under PX4 limits flies like a weaker FLYINGTRUST profile.

For each (strong, weak) pair of Table I profiles, the built-in vehicle is flown in-process three
times through the step responses of px4/sim/step_response.py: the weak profile itself, the
strong profile with the caps of px4/limits.py (the emulation), and the strong profile uncapped
(what the caps remove). All three start from PX4 limits opened to their maxima, so each shows its
physical capability. Prints, per metric, the weak value, the capped value and the emulation
error (capped - weak) / weak, then the largest absolute error per metric over all pairs.

    python benchmarks/capped_emulation.py [--pair STRONG:WEAK ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.quick import parse_args  # noqa: E402
from profiles.library import load_vehicle_profile  # noqa: E402
from px4.limits import cap_plan  # noqa: E402
from px4.params import ParamStore  # noqa: E402
from px4.sim.step_response import METRICS, measure, permissive_params  # noqa: E402

# Strong vehicles that dominate their weak targets in all three numbers: virtual-to-real (the
# field case: an agile research build standing in for commercial platforms) and real-to-real.
DEFAULT_PAIRS = (
    ("0.75kg-Quadrotor-2", "2.00kg-T-MOTOR"),
    ("1.00kg-SunnySky", "1.20kg-JFRC"),
    ("0.98kg-EGO-Planner-DIY", "0.60kg-EMAX"),
    ("1.20kg-Quadrotor-5", "0.68kg-Agile-Autonomy-DIY"),
    ("0.895kg-DJI", "1.40kg-EMAX"),
)


def emulation_errors(strong_name: str, weak_name: str) -> dict[str, tuple[float, float, float, float]]:
    """metric -> (weak, capped, uncapped, relative error of capped against weak)."""
    strong, weak = load_vehicle_profile(strong_name), load_vehicle_profile(weak_name)
    opened = permissive_params()
    plan = cap_plan(weak, strong, {**ParamStore().as_dict(), **opened})
    weak_m = measure(weak, opened)
    capped_m = measure(strong, {**opened, **plan.params})
    uncapped_m = measure(strong, opened)
    out = {}
    for metric in METRICS:
        w, c, u = (getattr(m, metric) for m in (weak_m, capped_m, uncapped_m))
        out[metric] = (w, c, u, (c - w) / w)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", action="append", metavar="STRONG:WEAK", help="profile names (repeatable)")
    args = parse_args(parser, {})
    pairs = [tuple(p.split(":", 1)) for p in args.pair] if args.pair else DEFAULT_PAIRS
    worst = {metric: 0.0 for metric in METRICS}
    for strong, weak in pairs:
        print(f"{strong} capped to fly as {weak}")
        print(f"  {'metric':<16}{'weak':>10}{'capped':>10}{'uncapped':>10}{'error':>9}")
        for metric, (w, c, u, err) in emulation_errors(strong, weak).items():
            print(f"  {metric:<16}{w:>10.3f}{c:>10.3f}{u:>10.3f}{100 * err:>+8.1f}%")
            worst[metric] = max(worst[metric], abs(err))
    print("largest |error| over all pairs:")
    for metric, err in worst.items():
        print(f"  {metric:<16}{100 * err:>7.1f}%")
    print("units: acc m/s^2, t90 s, acc_peak rad/s^2; climb/horizontal are the emulated capability, "
          "t90 the attitude-change times the rate caps aim at, acc_peak what PX4 cannot cap")
    return 0


if __name__ == "__main__":
    sys.exit(main())
