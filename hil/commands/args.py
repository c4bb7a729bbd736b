"""Small argument types shared by the verbs."""

from __future__ import annotations

import argparse
import math


def param_assignment(text: str) -> tuple[str, float]:
    """NAME=VALUE with a number, e.g. MPC_XY_CRUISE=8 (names are PX4 parameter names)."""
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name.strip().upper(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with a number, e.g. MPC_XY_CRUISE=8, got {text!r}") from None


def positive_float(text: str) -> float:
    """A finite number > 0 (NaN freezes a simulator and inf spins it: neither is a speed)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def bounded_int(low: int, high: int):
    """An argparse type: an integer in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected an integer from {low} to {high}, got {text!r}")
        return value
    return parse


def bounded_float(low: float, high: float):
    """An argparse type: a number in [low, high] (NaN and infinities are in no range)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected a number from {low:g} to {high:g}, got {text!r}")
        return value
    return parse


def vector(size: int, limit: float):
    """An argparse type: `size` comma-separated numbers, each within +-limit (e.g. 1.5,-0.5)."""
    def parse(text: str) -> tuple[float, ...]:
        try:
            values = tuple(float(part) for part in text.split(","))
        except ValueError:
            values = ()
        if len(values) != size or not all(-limit <= v <= limit for v in values):
            raise argparse.ArgumentTypeError(f"expected {size} comma-separated numbers within +-{limit:g}, "
                                             f"got {text!r}")
        return values
    return parse


def percent(text: str) -> float:
    """A number from 0 to 100."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 100.0:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 100, got {text!r}")
    return value


def add_json(parser: argparse.ArgumentParser) -> None:
    """--json, which hil.cli carries out for every verb that offers it."""
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object on stdout (the outcome, the figures, where things were written, "
                             "the exit code, and on an error its reason as 'error'); the human-readable lines go "
                             "to stderr")
