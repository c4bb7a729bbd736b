"""What counts as a navigation trial's success: FLYINGTRUST's and FlightBench's rules, or a mission file's own.

Apart from the judge (`hil.monitor`) so that naming a rule (the command line's choices, a campaign file's
check) does not load the judge's geometry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from missions.schema import BenchmarkMission


@dataclass(frozen=True)
class SuccessRule:
    """When a navigation trial counts as a success."""

    name: str
    goal_radius: float  # m
    hold_s: float  # must stay within goal_radius this long (0: reaching it is enough)
    time_budget_s: float  # from the start point
    speed_cap: float | None  # m/s horizontal speed limit applied to the vehicle; None: the vehicle's own

    @classmethod
    def of_mission(cls, mission: BenchmarkMission) -> SuccessRule:
        """A mission file's own rule: its success radius, settle time, time budget and speed cap."""
        return cls("mission", goal_radius=mission.success_radius, hold_s=mission.termination.settle_s,
                   time_budget_s=mission.time_budget, speed_cap=mission.speed_cap)


RULES = {
    # Seed 000 Sec. IV-B: goal within 1.5 min under a 4 m/s cap, "remaining stably within a 2 m
    # radius"; the paper gives no hold time, 2 s is this harness's reading of "stably".
    "flyingtrust": SuccessRule("flyingtrust", goal_radius=2.0, hold_s=2.0, time_budget_s=90.0, speed_cap=4.0),
    # Seed 001 Sec. 3.3: "reaches the goal within a 1.5 m radius without crashing"; no budget is
    # given, FLYINGTRUST's 1.5 min is used.
    "flightbench": SuccessRule("flightbench", goal_radius=1.5, hold_s=0.0, time_budget_s=90.0, speed_cap=None),
}
