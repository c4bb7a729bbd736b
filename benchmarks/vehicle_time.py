"""Is a flight's reported duration the flight's, on a loaded machine? (issue 31: `hil fly` at --speed 4 beside
CPU burners once reported 390.7 s for a flight whose ULog spanned 153 s.)

Flies a mission with `hil fly` (default: demo_square on the built-in vehicle, `--target sim`, at --speed 4),
first alone, then beside `--burners` processes spinning (`while True: pass`, benchmarks.pace's, started in this
script's session and killed by their pids after), and prints for each run what the record says the armed flight
took, on each clock a record can be read on, beside what the vehicle's own ULog says it was armed:

- vehicle: the record's time used (summary.time_used_s), on the vehicle's stamps (t_vehicle_s);
- x measured: the harness clock times the speed the vehicle's clock measured over the whole session (what
  reports.figures computed before the stamps were kept, and still does for a record without them);
- x nominal: the harness clock times the speed factor asked for;
- kept: the share of the speed factor the vehicle kept over its armed flight (vehicle s / wall s / factor).

Each ratio is to the ULog's armed span of the same run (1.00: the same duration). The harness learns arming
and disarming from the autopilot's HEARTBEAT (1 Hz of vehicle time), the ULog from vehicle_status as it
changes: a second on either end is that, not the clock.

    python benchmarks/vehicle_time.py [--target sim|px4-sitl] [--speed 4] [--burners 2] [--mission FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo

from benchmarks.pace import burners  # noqa: E402
from benchmarks.quick import parse_args  # noqa: E402
from px4.ulog import armed_spans_s  # noqa: E402
from records.clock import vehicle_time  # noqa: E402
from records.record import read_manifest, read_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def armed_span(telemetry, column: str = "t_ns") -> float:
    stamps = telemetry.loc[telemetry["armed"].astype(bool), column]
    return (float(stamps.iloc[-1]) - float(stamps.iloc[0])) / (1e9 if column == "t_ns" else 1.0)


def fly(args: argparse.Namespace, record: Path) -> str:
    """One `hil fly`; the row of figures of its record."""
    done = subprocess.run([sys.executable, "-m", "hil", "fly", args.mission, "--target", args.target, "--speed",
                           str(args.speed), "--record-dir", str(record)], cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True)
    manifest = read_manifest(record)
    summary = manifest.get("summary") or {}
    if done.returncode != 0 or "time_used_s" not in summary:
        return f"failed (exit {done.returncode}): {summary.get('reason') or done.stderr.strip()[-200:]}"
    telemetry = read_table(record, "telemetry")
    wall = armed_span(telemetry)
    measured = armed_span(vehicle_time(telemetry.drop(columns=["t_vehicle_s"]), summary["speed_factor"]))
    nominal = wall * args.speed
    used = summary["time_used_s"]
    spans = [span for log in (record / "ulog").glob("*.ulg") for span in armed_spans_s(log)]
    logged = spans[0] if len(spans) == 1 else float("nan")
    return (f"{summary['outcome']:<8} {used:7.1f} {used / logged:5.2f} {measured:8.1f} {measured / logged:5.2f} "
            f"{nominal:8.1f} {nominal / logged:5.2f} {logged:6.1f} {used / wall / args.speed:5.2f} "
            f"{summary['clock']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="sim", help="sim (the built-in vehicle) or px4-sitl (PX4_DIR)")
    parser.add_argument("--speed", type=float, default=4.0)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--mission", default=str(ROOT / "missions" / "examples" / "demo_square.yaml"))
    args = parse_args(parser, {"speed": 8.0}, argv)
    print(f"{Path(args.mission).name} on {args.target} at {args.speed:g}x; load average before: "
          f"{os.getloadavg()[0]:.1f}")
    print(f"{'burners':>7} {'outcome':<8} {'vehicle':>7} {'ratio':>5} {'x measd':>8} {'ratio':>5} {'x nomin':>8} "
          f"{'ratio':>5} {'ULog':>6} {'kept':>5} clock")
    with tempfile.TemporaryDirectory(prefix="vehicle-time-") as scratch:
        for count in sorted({0, args.burners}):
            with burners(count):
                print(f"{count:7d} {fly(args, Path(scratch) / f'burners-{count}')}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
