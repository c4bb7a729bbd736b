"""The built-in vehicle as a target: a child process speaking MAVLink on loopback, exactly as PX4
SITL would be run (`hil sim` underneath), stopped and never orphaned afterwards."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from bridges.truth import StateIsTruth, truth_of
from bridges.vehicle import VehicleConnectionError
from profiles.perturbation import Perturbation
from px4.process import (
    ChildProcess,
    Console,
    die_with_parent,
    free_udp_port,
    stop_process,
)
from targets.connection import connected
from targets.sim_server import READY_LINE
from targets.spec import SIM, OpenTarget, TargetOptions, TargetSpec


@dataclass
class SimProcessOptions:
    """How to start the built-in vehicle as a child process."""

    profile: str = "default"
    speed: float = 1.0
    params: dict[str, float] = field(default_factory=dict)
    extra_links: list[str] = field(default_factory=list)
    gcs_links: list[str] = field(default_factory=list)  # hil sim --gcs-link: PX4's ground-station streams
    root: Path | None = None  # the vehicle's own folder (its ULogs under log/)
    max_stream_hz: float | None = None  # hil sim --max-stream-hz; None: its default
    perturbation: Perturbation = Perturbation()  # hil sim --noise-seed, --wind, --gusts, --spawn, --heading


def sim_command(port: int, options: SimProcessOptions) -> list[str]:
    """The command line of a built-in vehicle that sends to 127.0.0.1:port."""
    cmd = [sys.executable, "-m", "hil", "sim", "--link", f"udpout://127.0.0.1:{port}",
           "--profile", options.profile, "--speed", repr(options.speed)]
    for url in options.extra_links:
        cmd += ["--link", url]
    for url in options.gcs_links:
        cmd += ["--gcs-link", url]
    for name, value in options.params.items():
        cmd += ["--param", f"{name}={value}"]
    if options.root is not None:
        cmd += ["--root", str(options.root)]
    if options.max_stream_hz is not None:
        cmd += ["--max-stream-hz", repr(options.max_stream_hz)]
    p = options.perturbation
    if p != Perturbation():
        # NAME=VALUE: argparse would take a value such as -0.3,0.1 for an option's name.
        cmd += [f"--noise-seed={p.noise_seed}", f"--wind={','.join(map(repr, p.wind_ned))}", f"--gusts={p.gust_m_s!r}",
                f"--spawn={','.join(map(repr, p.position_ne))}", f"--heading={p.heading_deg!r}"]
    return cmd


@dataclass
class SimProcess(ChildProcess):
    """A running built-in vehicle: where to connect, and what it said if it died."""

    url: str


@contextlib.asynccontextmanager
async def builtin_vehicle(options: SimProcessOptions | None = None) -> AsyncIterator[SimProcess]:
    """Run the built-in vehicle in a child process on loopback, yielded once its links are open (READY_LINE);
    stopped (never orphaned) after.

    Raises VehicleConnectionError with its exit code and last lines the moment it dies before that, or if
    it is alive but not ready after START_CAP_S.
    """
    options = options or SimProcessOptions()
    port = free_udp_port()
    # A session of its own, as PX4 SITL gets (px4.sitl): the kernel's autogroup scheduling shares the CPU
    # between sessions first, so a vehicle in the harness's session had one share with the harness and
    # whatever else its shell started (CPU burners, a test run) and fell behind where PX4 kept its pace.
    # A Ctrl-C in that shell reaches the harness alone, which brings the vehicle down and stops it.
    proc = subprocess.Popen(sim_command(port, options), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent)
    sim = SimProcess("built-in vehicle", proc, Console(proc.stdout), url=f"udpin://127.0.0.1:{port}")
    try:
        await sim.while_alive(sim.console.first(READY_LINE), VehicleConnectionError, "opened its links")
        yield sim
    finally:
        await stop_process(proc)
        sim.console.close()


@contextlib.asynccontextmanager
async def open_target(spec: TargetSpec, options: TargetOptions) -> AsyncIterator[OpenTarget]:
    """The built-in vehicle with the profile and parameters at boot, at the options' speed factor."""
    with tempfile.TemporaryDirectory(prefix="quad-hil-vehicle-") as root:
        sim_options = SimProcessOptions(profile=options.profile, speed=options.speed, params=dict(options.params),
                                        extra_links=list(options.extra_links), root=Path(root),
                                        perturbation=options.perturbation)
        try:
            async with builtin_vehicle(sim_options) as sim:
                async with connected(sim.url, options, sim) as (vehicle, proxy), truth_of(vehicle, StateIsTruth()):
                    yield OpenTarget(vehicle, SIM, hardware=False, failure=sim.failure, pid=sim.proc.pid,
                                     link=proxy)
        finally:
            if options.keep_in is not None:
                keep_ulogs(Path(root), options.keep_in)


def keep_ulogs(root: Path, record_dir: Path) -> None:
    """The vehicle's ULogs (root/log/DATE/TIME.ulg, as PX4 SITL writes them) into the record's ulog/ folder,
    where PX4 SITL's go too, once the vehicle has stopped and closed them."""
    logs = sorted(root.glob("log/*/*.ulg"))
    if logs:
        (record_dir / "ulog").mkdir(parents=True, exist_ok=True)
    for log in logs:
        shutil.copy2(log, record_dir / "ulog" / f"{log.parent.name}_{log.name}")
