"""Small argument types shared by the verbs."""

from __future__ import annotations

import argparse


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
    """A number > 0."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value
