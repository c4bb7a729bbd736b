"""A trial's perturbation (`profiles.perturbation`) on the built-in vehicle, before it has flown: its own
sensor-noise and gust seed, a steady wind with gusts through the physics' `wind_ned`, and its spawn a
little off the nominal start and heading. The lockstep target and `hil sim` both apply it here."""

from __future__ import annotations

import math

from physics.faults import MAX_GUST, VehicleFaults
from physics.sensors import SensorModel
from profiles.perturbation import Perturbation
from px4.sim.autopilot import Autopilot


def perturb(autopilot: Autopilot, perturbation: Perturbation) -> None:
    """Give a vehicle that has not flown yet `perturbation`; the nominal one leaves it exactly as built."""
    if perturbation == Perturbation():
        return
    if perturbation.gust_m_s > MAX_GUST:
        raise ValueError(f"gusts of {perturbation.gust_m_s} m/s: the built-in vehicle's gusts go up to {MAX_GUST} m/s")
    dyn = autopilot.dyn
    autopilot.sensors = SensorModel(perturbation.noise_seed)
    # A fresh fault state: nothing is injected before the first flight, and its generator (gusts, noise
    # faults) takes the trial's seed.
    autopilot.faults = VehicleFaults(dyn.rotor_efficiency, dyn.wind_ned, seed=perturbation.noise_seed,
                                     steady_wind=perturbation.wind_ned, gust=perturbation.gust_m_s / MAX_GUST)
    north, east = perturbation.position_ne
    dyn.reset(pos=(north, east, 0.0), yaw=math.radians(perturbation.heading_deg))
