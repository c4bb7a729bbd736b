"""Naming a target, the options every target takes, and what an opened target hands back."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bridges.transport import TransportError, parse_url
from bridges.vehicle import Vehicle

if TYPE_CHECKING:  # MAVSDK loads only where a connection is made
    from bridges.mavsdk_vehicle import MavsdkConnection

SIM, LOCKSTEP, PX4_SITL, HARDWARE = "sim", "lockstep", "px4-sitl", "hardware"
PHYSICS = ("default", "harness")


@dataclass(frozen=True)
class TargetSpec:
    """What a target name says: its kind, a PX4 instance, or the connection string of a running one."""

    kind: str  # sim | lockstep | px4-sitl | hardware
    name: str  # as written: sim, lockstep, px4-sitl, px4-sitl:3, udpin://127.0.0.1:14540, ...
    instance: int | None = None  # px4-sitl:N; None takes the lowest free instance
    url: str | None = None  # hardware: the connection string

    @property
    def simulated(self) -> bool:
        """Whether the harness starts (and so owns) the flight controller: anything but hardware."""
        return self.kind != HARDWARE

    @classmethod
    def parse(cls, text: str) -> TargetSpec:
        """A target name; ValueError saying what the names are."""
        if text in (SIM, LOCKSTEP, PX4_SITL):
            return cls(text, text)
        if text.startswith(PX4_SITL + ":"):
            number = text[len(PX4_SITL) + 1:]
            if not number.isdigit() or int(number) > 9:
                raise ValueError(f"target {text!r}: expected px4-sitl or px4-sitl:N with an instance N of 0-9")
            return cls(PX4_SITL, text, instance=int(number))
        try:
            parse_url(text)
        except TransportError as exc:
            raise ValueError(f"target {text!r}: expected sim, lockstep, px4-sitl[:N] or a connection string of a "
                             f"running flight controller ({exc})") from None
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
    allow_arming: bool = False  # a HITL board: let the harness arm it
    # A connection already open on a running flight controller's url, used and left open (a bench
    # board shared by a pytest session); None: connect anew and close after.
    connection: MavsdkConnection | None = None
    # More MAVLink links the flight controller opens (udpout://HOST:PORT), such as an onboard agent's own: the
    # built-in vehicle and PX4 SITL with SIH.
    extra_links: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed) and self.speed > 0):
            raise ValueError(f"speed factor: expected a finite number > 0, got {self.speed}")
        if self.physics not in PHYSICS:
            raise ValueError(f"physics: expected one of {', '.join(PHYSICS)}, got {self.physics!r}")


@dataclass
class OpenTarget:
    """A target that is up: the connected vehicle, and how to tell why it died if it did."""

    vehicle: Vehicle
    name: str  # what the trial record calls it (px4-sitl:3, sim, udpin://...)
    hardware: bool  # a flight controller the harness does not own: every safety gate applies
    failure: Callable[[], str | None] = lambda: None  # why the target process died, None while it runs
    simulator: Any = None  # the harness's physics when it drives the target (faults in the physics)
    link: Any = None  # the impairment proxy in front of a MAVLink target (its summary() for the record)
