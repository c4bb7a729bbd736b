"""PX4 SITL's simulated battery: it drains linearly while armed over SIM_BAT_DRAIN seconds, down to
SIM_BAT_MIN_PCT. Its voltage follows the charge over four cells; its current follows the motors.
"""

from __future__ import annotations

CELLS = 4
CURRENT_PER_MOTOR_A = 5.0


class SitlBattery:
    """The battery's charge.

    A mixin of `Autopilot` (px4/sim/autopilot.py), whose state it reads and sets.
    """

    def _drain_battery(self, dt: float) -> None:
        """PX4 SITL's battery: drains linearly while armed over SIM_BAT_DRAIN s down to SIM_BAT_MIN_PCT."""
        p = self.param_snapshot()
        floor = p["SIM_BAT_MIN_PCT"] / 100.0
        rate = 1.0 / max(p["SIM_BAT_DRAIN"], 1e-3)
        self.battery_remaining = max(floor, self.battery_remaining - rate * dt)
        # battery_current_a's sum, from the motors' array itself (two property calls fewer, 50 times a second)
        self.battery_discharged_mah += CURRENT_PER_MOTOR_A * sum(self._motors.tolist()) * dt / 3.6

    @property
    def battery_current_a(self) -> float:
        """The current drawn (A): 5 A per motor at full command. PX4 SITL's simulated battery reports none
        (-1); a current and a discharged amount that follow the flight are what a log reader plots."""
        return CURRENT_PER_MOTOR_A * sum(self.motor_commands)

    def battery_reading(self) -> tuple[float, float]:
        """(remaining fraction or -1 if unknown, volts or NaN) as the battery monitor reports them."""
        remaining = self.battery_remaining
        return self.faults.battery_reading(remaining, CELLS * (3.5 + 0.7 * remaining))
