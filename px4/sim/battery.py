"""PX4 SITL's simulated battery: it drains linearly while armed over SIM_BAT_DRAIN seconds, down to
SIM_BAT_MIN_PCT.
"""

from __future__ import annotations


class SitlBattery:
    """The battery's charge.

    A mixin of `Autopilot` (px4/sim/autopilot.py), whose state it reads and sets.
    """

    def _drain_battery(self, dt: float) -> None:
        """PX4 SITL's battery: drains linearly while armed over SIM_BAT_DRAIN s down to SIM_BAT_MIN_PCT."""
        p = self._p()
        floor = p["SIM_BAT_MIN_PCT"] / 100.0
        rate = 1.0 / max(p["SIM_BAT_DRAIN"], 1e-3)
        self.battery_remaining = max(floor, self.battery_remaining - rate * dt)
