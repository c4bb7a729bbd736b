"""Naming a target, the options every target takes, and what an opened target hands back."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridges.transport import TransportError, parse_url
from bridges.vehicle import VEHICLE_LOST_S, Vehicle
from profiles.perturbation import Perturbation

if TYPE_CHECKING:  # MAVSDK loads only where a connection is made
    from bridges.mavsdk_vehicle import MavsdkConnection

SIM, LOCKSTEP, PX4_SITL, HARDWARE = "sim", "lockstep", "px4-sitl", "hardware"
# PX4 as a flight controller on the bench in HITL mode (px4.hitl_board): the harness starts it, and flies it as
# any board on a serial port, so it is not `simulated`.
PX4_HITL = "px4-hitl"
PHYSICS = ("default", "harness")
# A PX4 SITL name ending in this flies the harness's physics whatever the campaign's `physics:` says, so one
# campaign can fly SIH (px4-sitl) and the harness's physics (px4-sitl+harness) side by side.
ON_HARNESS_PHYSICS = "+harness"


@dataclass(frozen=True)
class TargetSpec:
    """What a target name says: its kind, a PX4 instance, or the connection string of a running one."""

    kind: str  # sim | lockstep | px4-sitl | px4-hitl | hardware
    name: str  # as written: sim, lockstep, px4-sitl, px4-sitl:3, px4-sitl+harness, udpin://127.0.0.1:14540, ...
    instance: int | None = None  # px4-sitl:N; None takes the lowest free instance
    url: str | None = None  # hardware: the connection string
    baud: int | None = None  # px4-hitl:BAUD; None: px4.hitl_board.DEFAULT_BAUD
    physics: str | None = None  # the physics the name itself asks for (+harness); None: the trial's options say

    @property
    def simulated(self) -> bool:
        """Whether the harness owns a simulated flight controller: anything but hardware and a HITL board, which
        the harness starts but flies as any board (arming only with --arm, its parameters journaled)."""
        return self.kind not in (HARDWARE, PX4_HITL)

    @classmethod
    def parse(cls, text: str) -> TargetSpec:
        """A target name; ValueError saying what the names are."""
        sitl, harness = text.removesuffix(ON_HARNESS_PHYSICS), text.endswith(ON_HARNESS_PHYSICS)
        physics = "harness" if harness else None
        if text in (SIM, LOCKSTEP) or sitl == PX4_SITL:
            return cls(sitl, text, physics=physics)
        if sitl.startswith(PX4_SITL + ":"):
            number = sitl[len(PX4_SITL) + 1:]
            if not number.isdigit() or int(number) > 9:
                raise ValueError(f"target {text!r}: expected px4-sitl or px4-sitl:N with an instance N of 0-9, "
                                 f"either followed by {ON_HARNESS_PHYSICS} for the harness's physics")
            return cls(PX4_SITL, text, instance=int(number), physics=physics)
        if text == PX4_HITL or text.startswith(PX4_HITL + ":"):
            baud = text[len(PX4_HITL) + 1:] or None
            if baud is not None and not (baud.isdigit() and 1200 <= int(baud) <= 4_000_000):
                raise ValueError(f"target {text!r}: expected px4-hitl or px4-hitl:BAUD with a baud rate of 1200-4000000")
            return cls(PX4_HITL, text, baud=None if baud is None else int(baud))
        try:
            parse_url(text)
        except TransportError as exc:
            raise ValueError(f"target {text!r}: expected sim, lockstep, px4-sitl[:N][+harness] or a connection "
                             f"string of a running flight controller ({exc})") from None
        return cls(HARDWARE, text, url=text)


@dataclass(frozen=True)
class TargetOptions:
    """How to bring a target up. Simulated targets take the profile and parameters at boot; a
    flight controller that is already running is never reconfigured here (trials set, journal and
    restore what they change)."""

    profile: str = "default"  # vehicle profile name or file
    speed: float = 1.0  # simulation speed factor (hardware: 1)
    params: Mapping[str, float] = field(default_factory=dict)  # PX4 parameters at boot
    link: str | None = None  # link profile: the impairment proxy (lockstep: the same model in simulated time)
    seed: int = 0  # the link model's seed
    # A mission's comms-loss windows, (start, end) s after the link starts: nothing passes either way.
    outages: tuple[tuple[float, float], ...] = ()
    physics: str = "default"  # default | harness: the harness's physics as PX4's simulator (SITL or a HITL board)
    px4_dir: str | None = None  # PX4 build (default: PX4_DIR)
    px4_airframe: str | None = None  # PX4 SITL airframe by id or model (default: SIH quad-X)
    keep_in: Path | None = None  # a trial record: PX4's console and ULogs, the physics' truth tables
    sink: Callable[[str, Mapping[str, Any]], None] | None = None  # (table, row): link and physics rows
    # Wall seconds a flight controller already running (a connection string) has to answer. One the harness
    # starts has as long as its process is alive and starting (px4.process.START_CAP_S at most).
    connect_timeout_s: float = 20.0
    # Wall seconds the connected vehicle's clock may stand still before the trial ends with it lost
    # (bridges.vehicle.VEHICLE_LOST_S says why wall time, and why 30 s); a process the harness started is lost
    # the moment it dies. Every other duration of a trial is vehicle time.
    vehicle_lost_s: float = VEHICLE_LOST_S
    allow_arming: bool = False  # a HITL board: let the harness arm it
    # A connection already open on a running flight controller's url, used and left open (a bench
    # board shared by a pytest session); None: connect anew and close after.
    connection: MavsdkConnection | None = None
    # More MAVLink links the flight controller opens (udpout://HOST:PORT), such as an onboard agent's own: the
    # built-in vehicle and PX4 SITL with SIH.
    extra_links: tuple[str, ...] = ()
    # What differs between repeats (a campaign's `perturb:`, this trial's draw): the built-in vehicle takes all
    # of it, a link profile the link jitter; perturbation_gaps says what each target leaves out.
    perturbation: Perturbation = Perturbation()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed) and self.speed > 0):
            raise ValueError(f"speed factor: expected a finite number > 0, got {self.speed}")
        if not (math.isfinite(self.vehicle_lost_s) and self.vehicle_lost_s > 0):
            raise ValueError(f"vehicle lost bound: expected a finite number of seconds > 0, got {self.vehicle_lost_s}")
        if self.physics not in PHYSICS:
            raise ValueError(f"physics: expected one of {', '.join(PHYSICS)}, got {self.physics!r}")


# What a target leaves out of a trial's perturbation (profiles.perturbation), by `perturb:` field, and why.
_NOT_ON_SIH = {
    "sensor_noise": "PX4 SIH draws its sensor noise from C rand(), which no parameter seeds",
    "wind_m_s": "PX4 v1.16.1's SIH has no wind parameters (no SIH_WIND_*)",
    "gust_m_s": "PX4 v1.16.1's SIH has no wind parameters (no SIH_WIND_*)",
    "position_m": "PX4 puts its local origin where it starts, so a spawn offset moves nothing relative to it",
    "heading_deg": "PX4 SIH always starts facing north (no parameter sets its initial heading)",
}
_NOT_ON_HARDWARE = {name: "a real flight controller flies in the real world's own conditions"
                    for name in _NOT_ON_SIH}


def perturbation_gaps(spec: TargetSpec, physics: str, linked: bool) -> dict[str, str]:
    """What of a trial's perturbation the target cannot apply, by `perturb:` field, with why: the built-in
    vehicle applies all of it; PX4 on the harness's physics all but the spawn offset; SIH none of it; a link
    profile takes the link jitter, which an ideal link (`linked` False) has not."""
    gaps = {} if linked else {"link_jitter_ms": "no link profile: the trial's link is ideal"}
    if spec.kind == HARDWARE and physics != "harness":
        return {**_NOT_ON_HARDWARE, **gaps}
    if spec.kind == PX4_SITL and physics != "harness":
        return {**_NOT_ON_SIH, **gaps}
    if spec.kind in (PX4_SITL, HARDWARE, PX4_HITL):  # PX4 on the harness's physics: a SITL, or a HITL board
        return {"position_m": _NOT_ON_SIH["position_m"], **gaps}
    return gaps


@dataclass
class OpenTarget:
    """A target that is up: the connected vehicle, and how to tell why it died if it did."""

    vehicle: Vehicle
    name: str  # what the trial record calls it (px4-sitl:3, sim, udpin://...)
    hardware: bool  # a flight controller the harness does not own: every safety gate applies
    failure: Callable[[], str | None] = lambda: None  # why the target process died, None while it runs
    pid: int | None = None  # the flight controller's process where the harness started one
    simulator: Any = None  # the harness's physics when it drives the target (faults in the physics)
    link: Any = None  # the impairment proxy in front of a MAVLink target (its summary() for the record)
