"""Step responses of the built-in vehicle: how much capability a vehicle shows under its limits.

Four experiments, each from a settled hover 50 m up, flown in-process by the built-in vehicle's
physics and PX4-shaped controller (the same code as in every trial, at fast time):

* climb: an upward acceleration setpoint far beyond any vehicle, horizontal position held; the
  metric is the mean upward acceleration from 0.2 to 0.6 s after the step;
* horizontal: a northward acceleration setpoint far beyond any vehicle at held altitude; the mean
  northward acceleration from 1.0 to 2.0 s (after the tilt has built up);
* roll: a 30 deg roll attitude step at hover thrust; the time to 90 % of the step and the peak
  roll acceleration;
* yaw: a 90 deg heading step with position held; the time to 90 % and the peak yaw acceleration.

Air drag is switched off for these runs (``kdv = 0``), so that the numbers measure the rotors and
the controller limits, not how fast the vehicle happened to be going; both vehicles of a
comparison are measured the same way.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Mapping

from physics.dynamics import QuadrotorDynamics
from profiles.vehicle import VehicleProfile
from px4.params import ParamStore
from px4.sim.control import AttitudeSetpoint, MulticopterController, TrajectorySetpoint

NAN = math.nan
SETTLE_S = 1.0
HOVER = (0.0, 0.0, -50.0)
BEYOND_ANY_VEHICLE = 100.0  # m/s^2: an acceleration setpoint every limit will clip
ROLL_STEP_RAD = math.radians(30.0)
YAW_STEP_RAD = math.radians(90.0)

METRICS = ("climb_acc", "horizontal_acc", "roll_t90", "yaw_t90", "roll_acc_peak", "yaw_acc_peak")


@dataclass(frozen=True)
class StepMetrics:
    """What the four step responses showed (SI units: m/s^2, s, rad/s^2)."""

    climb_acc: float
    horizontal_acc: float
    roll_t90: float
    yaw_t90: float
    roll_acc_peak: float
    yaw_acc_peak: float


class _Rig:
    """One vehicle, hovering, with its controller and parameters, stepped by hand."""

    def __init__(self, profile: VehicleProfile, params: Mapping[str, float]):
        phys = dataclasses.replace(profile.physical(), kdv=0.0)
        self.store = ParamStore(overrides=params)
        self.dyn = QuadrotorDynamics(phys)
        self.ctrl = MulticopterController(phys, self.store)
        self.dyn.reset(pos=HOVER)
        self.dyn.rotor_speed = [phys.omega_max * math.sqrt(phys.hover_thrust)] * 4
        self.hover_thrust = phys.hover_thrust
        self.fly(TrajectorySetpoint(position=HOVER, yaw=0.0), SETTLE_S)

    def fly(self, setpoint, seconds: float, each: Callable[[float], None] | None = None) -> None:
        """Hold ``setpoint`` for ``seconds``; ``each(t)`` is called after every step (t from 0)."""
        dyn, ctrl = self.dyn, self.ctrl
        t = 0.0
        for _ in range(int(round(seconds / dyn.dt))):
            dyn.step(ctrl.update(dyn, setpoint))
            t += dyn.dt
            if each is not None:
                each(t)


def _mean_acceleration(rig: _Rig, setpoint: TrajectorySetpoint, axis: int, sign: float,
                       window: tuple[float, float]) -> float:
    start: list[float] = []
    end: list[float] = []

    def sample(t: float) -> None:
        if not start and t >= window[0]:
            start.append(rig.dyn.vel[axis])
        if not end and t >= window[1]:
            end.append(rig.dyn.vel[axis])

    rig.fly(setpoint, window[1] + rig.dyn.dt, sample)
    return sign * (end[0] - start[0]) / (window[1] - window[0])


def _step_time_and_peak(rig: _Rig, setpoint, angle: Callable[[], float], rate_axis: int,
                        step: float, seconds: float = 3.0) -> tuple[float, float]:
    t90: list[float] = []
    peak = [0.0]
    previous = [rig.dyn.omega[rate_axis]]

    def sample(t: float) -> None:
        rate = rig.dyn.omega[rate_axis]
        peak[0] = max(peak[0], abs(rate - previous[0]) / rig.dyn.dt)
        previous[0] = rate
        if not t90 and angle() >= 0.9 * step:
            t90.append(t)

    rig.fly(setpoint, seconds, sample)
    return (t90[0] if t90 else math.inf), peak[0]


def measure(profile: VehicleProfile, params: Mapping[str, float] | None = None) -> StepMetrics:
    """The four step responses of ``profile`` flown with these PX4 parameters (defaults otherwise)."""
    params = dict(params or {})
    climb = _mean_acceleration(
        _Rig(profile, params),
        TrajectorySetpoint(position=(HOVER[0], HOVER[1], NAN), acceleration=(NAN, NAN, -BEYOND_ANY_VEHICLE), yaw=0.0),
        axis=2, sign=-1.0, window=(0.2, 0.6))
    horizontal = _mean_acceleration(
        _Rig(profile, params),
        TrajectorySetpoint(position=(NAN, HOVER[1], HOVER[2]), acceleration=(BEYOND_ANY_VEHICLE, NAN, NAN), yaw=0.0),
        axis=0, sign=1.0, window=(1.0, 2.0))
    rig = _Rig(profile, params)
    roll_q = (math.cos(ROLL_STEP_RAD / 2), math.sin(ROLL_STEP_RAD / 2), 0.0, 0.0)
    roll_t90, roll_peak = _step_time_and_peak(
        rig, AttitudeSetpoint(q_d=roll_q, thrust=rig.hover_thrust / math.cos(ROLL_STEP_RAD)),
        lambda: rig.dyn.euler()[0], rate_axis=0, step=ROLL_STEP_RAD)
    rig = _Rig(profile, params)
    yaw_t90, yaw_peak = _step_time_and_peak(
        rig, TrajectorySetpoint(position=HOVER, yaw=YAW_STEP_RAD),
        lambda: rig.dyn.yaw, rate_axis=2, step=YAW_STEP_RAD, seconds=6.0)
    return StepMetrics(climb, horizontal, roll_t90, yaw_t90, roll_peak, yaw_peak)


def permissive_params() -> dict[str, float]:
    """PX4 limits opened to their maxima, so that a vehicle shows its physical capability."""
    store = ParamStore()
    return {name: store.spec(name).max for name in
            ("MPC_ACC_UP_MAX", "MPC_ACC_HOR_MAX", "MPC_ACC_HOR", "MPC_TILTMAX_AIR",
             "MC_ROLLRATE_MAX", "MC_PITCHRATE_MAX", "MC_YAWRATE_MAX")}
