"""Sensor calibration as PX4 v1.16.1 SITL runs it, told to the pilot in its "[cal]" texts.

QGroundControl and MAVSDK's calibration plugin drive MAV_CMD_PREFLIGHT_CALIBRATION and follow the
calibration by these texts alone ("[cal] calibration started: 2 gyro", "[cal] progress <N>",
"[cal] calibration done: gyro", ...). The sequences and their timing are those measured on the
v1.16.1 binary with the SIH vehicle standing still and disarmed:

* gyro (param1 = 1) and level horizon (param5 = 2) complete;
* accelerometer (param5 = 1) measures the "down" side at rest, then waits for the vehicle to be
  turned onto another side, and magnetometer (param2 = 1) waits to be rotated: a simulated
  vehicle on the ground never is, so both run until cancelled (all parameters 0);
* RC (param4 = 1) disables RC input until the command with all parameters 0 restores it;
* airspeed (param6 = 1) fails after about 36 s (SIH has no airspeed sensor); ESC (param7 = 1) is
  denied; param5 = 4 is accepted and says nothing; param1 = 3 (temperature) is not answered at all.

One deliberate difference: barometer (param3 = 1) on v1.16.1 SITL says "started" and never ends
(its search for the pressure offset does not terminate there, and arming stays denied as
"calibrating" until PX4 restarts). A harness cannot work with that, so here it completes after
PX4's 3 s of sampling with "[cal] calibration done: baro", as PX4 does on hardware.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from pymavlink.dialects.v20 import common as mavlink

INFO, CRITICAL = mavlink.MAV_SEVERITY_INFO, mavlink.MAV_SEVERITY_CRITICAL
NO_ACK = -1  # PX4 answers some requests with nothing at all
WAIT_FOREVER = float("inf")


@dataclass(frozen=True)
class Step:
    """A text said ``after`` seconds of vehicle time past the previous step."""

    after: float
    text: str
    severity: int = INFO


def _progress(name: str, steps: list[int], spacing: float) -> list[Step]:
    return ([Step(0.0, f"[cal] calibration started: 2 {name}")]
            + [Step(spacing, f"[cal] progress <{p}>") for p in steps]
            + [Step(0.0, f"[cal] calibration done: {name}")])


_SIDES = "back front left right up down"
SEQUENCES: dict[str, list[Step]] = {
    "gyro": _progress("gyro", list(range(0, 101, 10)), 0.1),
    "level": _progress("level", [0, 20, 40, 60, 80, 100, 100], 0.05),
    "baro": [Step(0.0, "[cal] calibration started: 2 baro"), Step(3.0, "[cal] calibration done: baro")],
    "accel": [Step(0.0, "[cal] calibration started: 2 accel"), Step(0.0, f"[cal] pending: {_SIDES}"),
              Step(0.0, "[cal] hold vehicle still on a pending side"),
              Step(2.0, "[cal] detected rest position, hold still..."),
              Step(0.0, "[cal] down orientation detected"), Step(0.0, "[cal] down orientation detected"),
              Step(2.0, "[cal] Hold still, measuring down side"),
              Step(2.0, "[cal] down side result: [0.000 0.000 -9.807]"), Step(0.0, "[cal] progress <17>"),
              Step(0.0, "[cal] down side done, rotate to a different side"),
              Step(0.0, "[cal] down side done, rotate to a different side"),
              Step(0.0, "[cal] pending: back front left right up"),
              Step(0.0, "[cal] hold vehicle still on a pending side"), Step(WAIT_FOREVER, "")],
    "mag": [Step(0.0, "[cal] calibration started: 2 mag"), Step(0.0, f"[cal] pending: {_SIDES}"),
            Step(0.0, "[cal] hold vehicle still on a pending side"),
            Step(0.0, "[cal] detected rest position, hold still..."),
            Step(2.0, "[cal] down orientation detected"), Step(0.0, "[cal] down orientation detected"),
            Step(0.0, "[cal] Rotate vehicle"), Step(WAIT_FOREVER, "")],
    "rc": [Step(0.0, "Calibration: Disabling RC input"), Step(WAIT_FOREVER, "")],
    "airspeed": [Step(0.0, "[cal] calibration started: 2 airspeed"),
                 Step(0.0, "[cal] Ensure sensor is not measuring wind"),
                 Step(36.0, "[cal] calibration failed: airspeed", CRITICAL)],
    "simple_accel": [Step(WAIT_FOREVER, "")],
}
CANCEL_TEXTS = {"accel": ["[cal] calibration cancelled", "[cal] calibration failed: accel"],
                "mag": ["[cal] calibration cancelled"], "rc": ["Calibration: Restoring RC input"],
                "simple_accel": []}


def requested(p: tuple) -> str | None:
    """Which calibration a PREFLIGHT_CALIBRATION's parameters ask for; "cancel" for all zeros."""
    p1, p2, p3, p4, p5, p6, p7 = (round(x) if x == x else 0 for x in p[:7])
    table = [(p1 == 1, "gyro"), (p1 == 3, "temperature"), (p2 == 1, "mag"), (p3 == 1, "baro"), (p4 == 1, "rc"),
             (p5 == 1, "accel"), (p5 == 2, "level"), (p5 == 4, "simple_accel"), (p6 == 1, "airspeed"),
             (p7 == 1, "esc")]
    for hit, name in table:
        if hit:
            return name
    return "cancel" if not any((p1, p2, p3, p4, p5, p6, p7)) else None


class Calibration:
    """The calibration in progress, if any; texts come out of :meth:`update` in vehicle time."""

    def __init__(self) -> None:
        self.kind: str | None = None
        self._steps: deque[Step] = deque()
        self._due = 0.0

    @property
    def active(self) -> bool:
        return self.kind is not None

    def command(self, p: tuple, now: float, armed: bool) -> tuple[int, list[tuple[int, str]]]:
        """A PREFLIGHT_CALIBRATION: (MAV_RESULT or NO_ACK, texts to say at once)."""
        kind = requested(p)
        if kind == "cancel":
            texts = [(INFO, t) for t in CANCEL_TEXTS.get(self.kind or "", [])]
            self._finish()
            return mavlink.MAV_RESULT_ACCEPTED, texts
        if kind == "temperature":
            return NO_ACK, []
        if kind is None:
            return mavlink.MAV_RESULT_UNSUPPORTED, []
        if self.active or armed:
            return mavlink.MAV_RESULT_TEMPORARILY_REJECTED, []
        if kind == "esc":
            return mavlink.MAV_RESULT_DENIED, [(CRITICAL, "[cal] calibration failed: Disconnect battery and try again")]
        self.kind = kind
        self._steps = deque(SEQUENCES[kind])
        self._due = now
        return mavlink.MAV_RESULT_ACCEPTED, self.update(now)

    def update(self, now: float) -> list[tuple[int, str]]:
        """Texts whose time has come; the calibration ends after its last one."""
        out = []
        while self._steps and now >= self._due + self._steps[0].after:
            step = self._steps.popleft()
            self._due += step.after
            out.append((step.severity, step.text))
        if self.active and not self._steps:
            self._finish()
        return out

    def _finish(self) -> None:
        self.kind = None
        self._steps.clear()
