"""Bringing a test's target up through `targets.open_target`, and leaving its vehicle safe after."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pytest

from hil.pytest_plugin.bench import BenchConnections
from hil.pytest_plugin.config import HilConfig

if TYPE_CHECKING:  # the lab file is read only when --hil-env names one
    from hil.pytest_plugin.lab import LabTarget
    from profiles.perturbation import Perturbation


@dataclass
class LinkUnderTest:
    """The impairment proxy a test's vehicle is reached through, and every frame's fate so far."""

    profile: str
    rows: list = field(default_factory=list)
    proxy: object = None

    def applied_delays_ms(self, direction: str) -> list[float]:
        """Delays really applied to the frames that went through, one direction (to_vehicle | to_onboard)."""
        return [r["applied_ms"] for r in self.rows
                if r["direction"] == direction and r["fate"] != "dropped" and r["copy_no"] == 0]


LINK = pytest.StashKey[LinkUnderTest]()
# The onboard agent hil_navigation's planners run on (--hil-onboard), with the board's link to the target.
ONBOARD = pytest.StashKey[object]()
# The harness's physics when it drives the test's target (PX4 on the harness physics, a HITL bench):
# faults then act in the physics instead of being asked of the flight controller.
SIMULATOR = pytest.StashKey[object]()


@contextlib.asynccontextmanager
async def bring_up(entry: LabTarget, config: HilConfig, profile: str, params: dict, link_name: str | None, session,
                   request, bench: BenchConnections, perturbation: Perturbation):
    """Start (or reach) the target through the test's trial session (hil.session) and yield its connected
    Vehicle, its telemetry recorded, flying `perturbation` (this run's); stop everything after.

    The impairment proxy's frame rows (or, in lockstep, the same model's) go to the test's
    `hil_link`; PX4's console and logs into the test's trial record. A running flight controller
    reached directly (no proxy, no harness physics) is reached over the session's connection in
    `bench`, which stays open after the test.
    """
    from bridges.transport import parse_url
    from px4.sitl import Px4Build, Px4NotFound
    from targets import PX4_HITL, PX4_SITL, TargetOptions, TargetSpec

    target = entry.target
    spec = TargetSpec.parse(target)
    link = LinkUnderTest(link_name) if link_name else None
    if link is not None:
        if spec.kind == "hardware" and parse_url(spec.url).scheme != "udpin":
            pytest.skip(f"--hil-link needs a UDP target the proxy can stand in front of, not {target}")
        request.node.stash[LINK] = link

    def sink(table: str, row) -> None:
        if table == "link" and link is not None:
            link.rows.append(row)
        else:
            session.recorder.append(table, row)

    physics = entry.physics or config.physics
    options = TargetOptions(profile=profile, speed=entry.speed or config.speed, params=params, link=link_name,
                            physics=physics, sink=sink, allow_arming=config.arm or entry.arm, perturbation=perturbation)
    if spec.kind in (PX4_SITL, PX4_HITL):  # PX4 the harness starts: a SITL, or a HITL board on its bench
        try:
            Px4Build.locate(options.px4_dir)
        except Px4NotFound as exc:
            pytest.skip(str(exc))
    if spec.kind == "hardware" and link is None and physics == "default":
        options = replace(options, connection=await bench.get(spec.url, options.connect_timeout_s))
    if config.onboard is not None:
        from hil.agent_client import remote_onboard

        request.node.stash[ONBOARD], links = remote_onboard(config.onboard)
        options = replace(options, extra_links=links)
    async with session.target(spec, options) as target_up:
        if link is not None:
            link.proxy = target_up.link
        if target_up.simulator is not None:
            request.node.stash[SIMULATOR] = target_up.simulator
        yield target_up.vehicle
