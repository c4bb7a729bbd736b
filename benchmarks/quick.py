"""`--quick` for every benchmark: the same measurement, CI-sized, for `make bench`.

A benchmark hands its parser and the smaller values its options take in a quick run; an option given
on the command line still wins. The full figures (no `--quick`) are the ones a closing note quotes.
"""

from __future__ import annotations

import argparse
from typing import Any


def parse_args(parser: argparse.ArgumentParser, quick: dict[str, Any],
               argv: list[str] | None = None) -> argparse.Namespace:
    """Parse `argv`; with --quick, the options named in `quick` default to its values instead."""
    shown = ", ".join(f"--{name.replace('_', '-')} {value}" for name, value in quick.items()) or "the full run"
    parser.add_argument("--quick", action="store_true", help=f"a CI-sized run ({shown})")
    args = parser.parse_args(argv)
    if args.quick and quick:
        parser.set_defaults(**quick)
        args = parser.parse_args(argv)
    return args
