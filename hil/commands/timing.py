"""`hil timing`: onboard stage timing tables (FlightBench Table 5 shape) and run-to-run comparisons.

`hil profile` is its old name, kept as an alias for one release (it was easy to confuse with
`hil profiles`, the vehicle, link and compute profiles).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hil.commands.args import add_json


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "timing", aliases=["profile"], formatter_class=argparse.RawDescriptionHelpFormatter,
        help="onboard stage timing of trial records: T_map, T_plan, T_ctrl, T_tot, and ratios between runs",
        description="Print the per-stage computation time of one or more trial records written by the onboard "
                    "runtime (mean, p50, p99, max in ms), like FlightBench's Table 5. With two or more records, "
                    "each is also given as a ratio of its means to the first record's; --save turns the ratio of "
                    "the second to the first into a compute profile (e.g. desktop run first, Jetson run second).",
        epilog="examples:\n"
               "  hil timing runs/forest-desktop\n"
               "  hil timing runs/forest-desktop runs/forest-jetson\n"
               "  hil timing runs/forest-desktop runs/forest-on-my-board --save my_board\n"
               "  hil timing runs/forest-jetson-emulated --emulated     # times as stretched by the compute profile")
    parser.add_argument("records", nargs="+", type=Path, metavar="RECORD", help="trial record directories")
    parser.add_argument("--emulated", action="store_true",
                        help="show the times as emulated by each run's compute profile instead of as measured")
    parser.add_argument("--save", metavar="NAME",
                        help="write profiles/compute/NAME.yaml with the second record's stage times over the first's")
    parser.add_argument("--out", type=Path, help="with --save: write the profile here instead")
    add_json(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from onboard.profile_table import format_table, mean_ms, record_stats
    from onboard.timing import stats_as_dict
    from profiles.compute import profile_from_runs, save_compute_profile

    try:
        runs = [record_stats(record, emulated=args.emulated) for record in args.records]
    except FileNotFoundError as exc:
        print(f"hil timing: {exc} (is it a trial record written by the onboard runtime?)", file=sys.stderr)
        return 2
    labels = [record.name or str(record) for record in args.records]
    print(format_table(labels, runs))
    args.result = {"verb": "timing", "emulated": args.emulated,
                   "records": {str(record): stats_as_dict(stats) for record, stats in zip(args.records, runs)}}
    if args.save:
        if len(runs) < 2:
            print("hil timing: --save needs two records: the reference run first, the board's run second",
                  file=sys.stderr)
            return 2
        profile = profile_from_runs(args.save, mean_ms(runs[0]), mean_ms(runs[1]),
                                    description=f"measured: {args.records[1]} against {args.records[0]}",
                                    source="hil timing --save (ratio of mean stage times)")
        print(f"wrote {save_compute_profile(profile, args.out)}")
    return 0
