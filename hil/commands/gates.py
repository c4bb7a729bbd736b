"""--fail-on GATE, shared by `hil run` and `hil report`: CI's pass/fail on a campaign's results (reports.gates)."""

from __future__ import annotations

import argparse
import sys

from hil import exit_codes

HELP = """gates (--fail-on GATE, repeatable; for hil run also a campaign file's `gates:` list): each names what fails
  collision               any trial collided
  success<0.8             the success rate's lower 95 % bound (Wilson score interval) is below 0.8
  STAT:COLUMN>VALUE       STAT over the trials of a numeric results.parquet column is above VALUE (< for below);
                          STAT is mean, min, max or pNN (a percentile), e.g. p99:t_tot_ms>100 (t_tot_ms: a trial's
                          mean planner compute time per cycle), max:duration_s>60, min:min_clearance_m<0.2
  GATE@COLUMN[,COLUMN]    the gate per group of trials, e.g. success<0.8@planner, collision@target,planner
  Every gate's verdict is printed with the measured value; a failed gate makes the exit code 1, a malformed one 2."""


def add_fail_on(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fail-on", type=_gate, action="append", default=[], metavar="GATE",
                        help="exit 1 when GATE fails, e.g. collision, success<0.8, p99:t_tot_ms>100 (see 'gates' "
                             "below)")


def _gate(text: str):
    from config.gates import parse_gate

    try:
        return parse_gate(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def check_gates(args: argparse.Namespace, gates: list, results) -> int:
    """Print every gate's verdict on the results (a line each) and put them in the --json result; the exit code:
    OK, FAILED when a gate failed, USAGE when a gate names a column the results do not have."""
    from reports.gates import judge

    try:
        verdicts = judge(gates, results)
    except ValueError as exc:
        print(f"hil {args.verb}: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    for verdict in verdicts:
        print(verdict.line())
    args.result["gates"] = [verdict.as_dict() for verdict in verdicts]
    return exit_codes.OK if all(v.passed for v in verdicts) else exit_codes.FAILED
