"""`hil report`: metrics, scores and comparisons of one or more runs, as HTML and Markdown."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from hil.commands.args import add_json
from hil.commands.gates import HELP as GATES_HELP
from hil.commands.gates import add_fail_on, check_gates

SHOWN_UNREADABLE = 10  # unreadable trial records named on stderr; the report lists them all


def add_parser(verbs) -> None:
    parser = verbs.add_parser(
        "report", formatter_class=argparse.RawDescriptionHelpFormatter,
        help="render the report of one or more campaign runs (HTML + Markdown)",
        description="Read the results of one or more campaign directories (or results.parquet files) and write "
                    "report.html (with a page per trial) and report.md: success with CIs, platform and scenario views, "
                    "composite scores, metrics, timing, flown tracks, and simulation versus hardware when the "
                    "runs cover several targets.",
        epilog="examples:\n"
               "  hil report runs/demo\n"
               "  hil report runs/sim runs/bench --out runs/sim-vs-bench   # compare targets\n"
               "  hil report runs/demo --fail-on collision --fail-on 'p99:t_tot_ms>100'   # a CI step\n"
               "  hil report runs/demo --margin-m 0.5 --margin-s 10   # a wider net for marginal verdicts\n\n"
               + GATES_HELP)
    parser.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="campaign directory or results.parquet")
    parser.add_argument("--out", type=Path, help="where to write the report (default: the first RUN's directory)")
    parser.add_argument("--title", help="report title (default: the run names)")
    # Defaults left to reports.render.Margins, which this module does not import until a report is made.
    parser.add_argument("--margin-m", type=_margin, metavar="M",
                        help="the report's marginal verdicts: trials whose minimum clearance (less the vehicle "
                             "radius) or closest approach to the fence or ceiling is within M metres of zero, "
                             "either side (default: 0.25)")
    parser.add_argument("--margin-s", type=_margin, metavar="S",
                        help="... or whose time budget less the time a success took is within S seconds "
                             "(default: 5)")
    add_fail_on(parser)
    add_json(parser)
    parser.set_defaults(func=run)


def _margin(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    import pandas as pd

    from hil.rules import RULES
    from records.atomic import writing
    from reports.render import Margins, write_report
    from reports.results import read_run

    unreadable: dict[str, str] = {}
    tables = []
    try:
        for path in args.runs:
            table, unread = read_run(path)
            tables.append(table)
            unreadable.update(unread)
    except FileNotFoundError as exc:
        print(f"hil report: {exc}", file=sys.stderr)
        return 2
    results = pd.concat(tables, ignore_index=True)
    first = args.runs[0]
    out = args.out or (first if first.is_dir() else first.parent)
    title = args.title or "Report: " + ", ".join(p.name for p in args.runs)
    with writing("the report", out):
        given = {"metres": args.margin_m, "seconds": args.margin_s}
        margins = Margins(**{k: v for k, v in given.items() if v is not None},
                          budgets={name: rule.time_budget_s for name, rule in RULES.items()})
        markdown, page = write_report(results, out, title, unreadable, margins)
    for why in list(unreadable.values())[:SHOWN_UNREADABLE]:
        print(f"hil report: warning: an unreadable trial record, listed in the report: {why}", file=sys.stderr)
    if len(unreadable) > SHOWN_UNREADABLE:
        print(f"hil report: warning: {len(unreadable) - SHOWN_UNREADABLE} more trial records could not be read "
              "(all listed in the report)", file=sys.stderr)
    print(f"report   {page}")
    print(f"markdown {markdown}")
    args.result = {"verb": "report", "html": str(page), "markdown": str(markdown), "trials": len(results),
                   "outcomes": results["outcome"].value_counts().to_dict() if "outcome" in results else {},
                   "unreadable": unreadable}
    return check_gates(args, args.fail_on, results)
