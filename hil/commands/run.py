"""`hil run`: run a campaign (cross-join, executors, resume)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from hil import exit_codes
from hil.commands.args import add_json, bounded_int
from hil.commands.gates import HELP as GATES_HELP
from hil.commands.gates import add_fail_on, check_gates


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "run", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="run a campaign of trials (missions x profiles x targets x links x faults x planners x seeds)",
        description="Run every trial of a campaign file into a campaign directory, with a progress bar. Running "
                    "it again (on the file or the directory) resumes: finished trials are never repeated. Ctrl-C "
                    "stops cleanly; the results table (results.parquet, results.csv) is written either way.",
        epilog="examples:\n"
               "  hil run hil/campaigns/demo.yaml                      # into runs/demo\n"
               "  hil run runs/demo                                    # resume\n"
               "  hil run CAMPAIGN.yaml --workers 8 --out runs/big\n"
               "  hil run CAMPAIGN.yaml --executor ray --address 10.0.0.1:6379   # on a Ray cluster (README)\n"
               "  hil run CAMPAIGN.yaml --fail-on collision --fail-on 'success<0.8@planner'   # a CI step\n\n"
               + GATES_HELP)
    parser.add_argument("campaign", type=Path, help="campaign YAML file, a packaged campaign by name (demo, demo-px4), or a campaign directory to resume")
    parser.add_argument("--out", type=Path, help="campaign directory (default: runs/<campaign name>)")
    parser.add_argument("--workers", type=bounded_int(1, 256), default=os.cpu_count() or 1,
                        help="local worker processes (default: the number of CPUs, %(default)s)")
    parser.add_argument("--executor", choices=("local", "ray"), default="local",
                        help="'local' process pool (default) or 'ray' for a cluster of machines")
    parser.add_argument("--address", default="local",
                        help="Ray cluster address for --executor ray: HOST:PORT of a `ray start --head`, 'auto' "
                             "for the cluster this machine is in, 'ray://HOST:10001' through Ray Client; default "
                             "'local' starts a private one-machine cluster on loopback. Trials carry the package "
                             "and the files the campaign names; each node uses its own PX4_DIR")
    parser.add_argument("--arm", action="store_true",
                        help="allow targets that may be real aircraft (connection strings); they run one at a time")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_fail_on(parser)
    add_json(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from config.errors import ConfigError
    from hil.campaign import load_campaign
    from hil.executors import (
        HARDWARE_STOP_GRACE_S,
        STOP,
        STOP_GRACE_S,
        LocalPool,
        RayExecutor,
    )
    from hil.runner import run_campaign
    from records.atomic import WriteRefused
    from records.campaign_dir import CAMPAIGN_FILE
    from records.claim import DirectoryTaken
    from reports.results import CampaignResults, load_results
    from targets.spec import TargetSpec

    source = args.campaign / CAMPAIGN_FILE if args.campaign.is_dir() else args.campaign
    try:
        campaign = load_campaign(source)
    except ConfigError as exc:
        print(f"hil run: {exc}", file=sys.stderr)
        return 2
    campaign_dir = args.out or (args.campaign if args.campaign.is_dir() else Path("runs") / campaign.name)
    hardware = [t for t in campaign.targets if not TargetSpec.parse(t).simulated]
    if hardware and not args.arm:
        print(f"hil run: refusing to fly {', '.join(hardware)} without --arm: a target other than a simulator "
              "may be a real aircraft.", file=sys.stderr)
        return 2
    workers = 1 if hardware else args.workers
    # A worker stopped mid-trial on hardware brings its vehicle down first (hil.stop), which takes minutes.
    executor = RayExecutor(args.address) if args.executor == "ray" else \
        LocalPool(workers, HARDWARE_STOP_GRACE_S if hardware else STOP_GRACE_S)
    # SIGTERM (e.g. from a job scheduler) stops the campaign as Ctrl-C does.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, STOP.handler)
    print(f"campaign {campaign.name}: {len(campaign.trials())} trials into {campaign_dir} "
          f"({args.executor} executor{'' if args.executor == 'ray' else f', {workers} workers'})", flush=True)
    try:
        # Each trial's figures are computed from its record as it finishes and kept in the campaign directory, so
        # the results table of thousands of trials reads them instead of every trial's telemetry.
        summary = run_campaign(campaign, campaign_dir, executor, results=CampaignResults(campaign_dir),
                               progress=not args.no_progress, arm=args.arm)
    except DirectoryTaken as exc:
        print(f"hil run: {exc}; wait for it to finish or stop it (its finished trials are kept, and running this "
              "again resumes)", file=sys.stderr)
        return 2
    except WriteRefused as exc:
        print(f"hil run: {exc}; the finished trials are kept, and `hil run {campaign_dir}` resumes once it can "
              "write", file=sys.stderr)
        return exit_codes.ERROR
    for error in summary.harness_errors[:5]:
        print(f"harness error: {error}", file=sys.stderr)
    left = summary.total - summary.ran - summary.skipped
    outcomes = ", ".join(f"{name} {count}" for name, count in sorted(summary.outcomes.items())) or (
        "none finished" if summary.interrupted else "nothing to run")
    print(f"{summary.ran} trials run in {summary.seconds:.1f} s ({outcomes}); {summary.skipped} already finished"
          + (f"; {left} left" if summary.interrupted else ""))
    print(f"results  {campaign_dir / 'results.parquet'} (and results.csv)")
    args.result = {"verb": "run", "campaign": campaign.name, "directory": str(campaign_dir), "trials": summary.total,
                   "ran": summary.ran, "skipped": summary.skipped, "outcomes": dict(summary.outcomes),
                   "harness_errors": summary.harness_errors, "seconds": summary.seconds,
                   "interrupted": summary.interrupted, "results": str(campaign_dir / "results.parquet")}
    if summary.interrupted:
        print(f"stopped with {left} of {summary.total} trials left: finished trials are kept; `hil run {campaign_dir}` "
              "resumes with the rest", file=sys.stderr)
        return 130
    # Gates judge the whole campaign, the trials finished by an earlier run included.
    gated = check_gates(args, [*campaign.gates, *args.fail_on], load_results(campaign_dir))
    if gated == exit_codes.OK and summary.harness_errors:
        return exit_codes.FAILED
    return gated
