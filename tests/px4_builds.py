"""Which PX4 SITL builds the tests run: PX4_DIR (the whole behaviour suite) and PX4_SMOKE_DIRS
(a colon-separated list of further builds, e.g. an older release, on which a smoke subset runs).

`make test` sets both to the builds beside the repository when they are there; a user points them
at their own. Without PX4_DIR every PX4 test skips with the message that says how to get a build.
"""

from __future__ import annotations

import os

import pytest

from px4.sitl import Px4Build, Px4NotFound


def _located(directory: str | None) -> str | None:
    try:
        Px4Build.locate(directory, env={}, which=lambda _: None)
    except Px4NotFound:
        return None
    return directory


MAIN_BUILD: str | None = _located(os.environ.get("PX4_DIR"))
SMOKE_BUILDS: list[str] = [d for d in os.environ.get("PX4_SMOKE_DIRS", "").split(":") if d and _located(d)]
NO_PX4 = ("no PX4 SITL build: set PX4_DIR to one (a PX4-Autopilot checkout, its build/px4_sitl_default, or a "
          "folder with its bin/ and etc/); `make test` uses ../shared/px4/v1.16.1 when it is there")

needs_px4 = pytest.mark.skipif(MAIN_BUILD is None, reason=NO_PX4)
