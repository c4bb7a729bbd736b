"""Targets: what a trial flies on, each kind a plugin module, all behind one `open_target`.

    sim             the built-in vehicle as a MAVLink process at a speed factor   (targets.builtin)
    lockstep        the built-in vehicle in-process, in simulated time            (targets.lockstep)
    px4-sitl[:N]    PX4 SITL: SIH inside PX4, or the harness's physics            (targets.px4_sitl)
    px4-hitl[:BAUD] PX4 as a board in HITL mode on a serial cable, flown on the
                    harness's physics exactly as a CONNECTION board is            (targets.hardware)
    CONNECTION      a flight controller that is already running: hardware, or a
                    SITL someone else started; with the harness's physics, a
                    board in HITL mode on the bench                               (targets.hardware)

Every plugin has one function, `open_target(spec, options)`: an async context manager that brings
its flight controller up in a known state (the profile and parameters applied), yields an
`OpenTarget` holding a connected `Vehicle`, and on the way out undoes everything it changed and stops
everything it started. A link profile puts the impairment proxy (or, in lockstep, the same model in
simulated time) between the target and the vehicle. Plugins are found by name, as pyserial finds its
URL handlers, so a new kind of target is one new module and one line in KINDS.
"""

from __future__ import annotations

import importlib
from typing import AsyncContextManager

from targets.spec import (
    HARDWARE,
    LOCKSTEP,
    PX4_HITL,
    PX4_SITL,
    SIM,
    OpenTarget,
    TargetOptions,
    TargetSpec,
)

__all__ = [
    "HARDWARE",
    "KINDS",
    "LOCKSTEP",
    "PX4_HITL",
    "PX4_SITL",
    "SIM",
    "OpenTarget",
    "TargetOptions",
    "TargetSpec",
    "open_target",
]

# Target kind -> the plugin module that opens it.
KINDS = {SIM: "targets.builtin", LOCKSTEP: "targets.lockstep", PX4_SITL: "targets.px4_sitl",
         HARDWARE: "targets.hardware", PX4_HITL: "targets.hardware"}


def open_target(target: str | TargetSpec, options: TargetOptions | None = None) -> AsyncContextManager[OpenTarget]:
    """Bring `target` up (a name as the CLI, campaign files and pytest options spell it) and connect to it."""
    spec = target if isinstance(target, TargetSpec) else TargetSpec.parse(target)
    return importlib.import_module(KINDS[spec.kind]).open_target(spec, options or TargetOptions())
