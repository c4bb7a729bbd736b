"""What differs between the repeats of a trial: a campaign's `perturb:` block, and each trial's draw from it.

In lockstep the built-in vehicle is deterministic: repeats of one test case fly bitwise the same
flight, and a 95 % interval over them describes nothing. A campaign therefore names what varies from
repeat to repeat, as it varies between two real flights of the same mission::

    perturb:
      sensor_noise: true     # each trial's own sensor-noise (and gust) seed
      wind_m_s: 1.0          # steady wind of up to this speed, from any horizontal direction
      gust_m_s: 0.5          # gusts: standard deviation per axis (2 s correlation time)
      position_m: 0.3        # initial position up to this far from the nominal start (horizontal)
      heading_deg: 5         # initial heading within +-this of north
      link_jitter_ms: 2      # added to every latency of the trial's link profile (+-uniform); no link, none

`perturb: off` (or `none`) turns it off: every repeat flies the nominal trial. Left out, it is on with
these defaults when `repeats` > 1 and off for single trials; a mapping overrides the defaults field by
field (0 or false turns one part off). Each trial draws its values from its own trial seed
(`hil.campaign.trial_seed`), so a trial flies the same perturbation on any machine, and the draw is
kept in the trial's configuration (`Perturbation.as_config`) with whatever its target could not apply.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass
from typing import Any

from config.fields import Field, Problems, flag, number, read_fields

OFF_WORDS = ("off", "none")
# Sanity limits: a perturbation is the spread between two flights of one mission, not a new mission.
MAX_WIND_M_S = 20.0
MAX_GUST_M_S = 10.0  # the built-in vehicle's full-severity gust (physics.faults.MAX_GUST)
MAX_POSITION_M = 10.0
MAX_HEADING_DEG = 180.0
MAX_LINK_JITTER_MS = 1000.0


@dataclass(frozen=True)
class Perturb:
    """A campaign's `perturb:` block: what differs between repeats, and at most by how much."""

    sensor_noise: bool = True
    wind_m_s: float = 1.0
    gust_m_s: float = 0.5
    position_m: float = 0.3
    heading_deg: float = 5.0
    link_jitter_ms: float = 2.0

    @property
    def active(self) -> bool:
        return self != OFF

    def draw(self, seed: int) -> Perturbation:
        """One trial's perturbation, from its trial seed: the same on every machine and Python version
        (`random.Random` seeded with an integer, and only its `random()` drawn)."""
        if not self.active:
            return Perturbation()
        uniform = random.Random(seed).random
        wind_speed, wind_from = self.wind_m_s * uniform(), 2.0 * math.pi * uniform()
        # Uniform over the disc, not bunched at its centre.
        radius, bearing = self.position_m * math.sqrt(uniform()), 2.0 * math.pi * uniform()
        heading = self.heading_deg * (2.0 * uniform() - 1.0)
        return Perturbation(
            noise_seed=seed if self.sensor_noise else 0,
            wind_ned=(wind_speed * math.cos(wind_from), wind_speed * math.sin(wind_from), 0.0),
            gust_m_s=self.gust_m_s, position_ne=(radius * math.cos(bearing), radius * math.sin(bearing)),
            heading_deg=heading, link_jitter_ms=self.link_jitter_ms)


OFF = Perturb(sensor_noise=False, wind_m_s=0.0, gust_m_s=0.0, position_m=0.0, heading_deg=0.0, link_jitter_ms=0.0)

_FIELDS: dict[str, Field] = {
    "sensor_noise": flag("each trial's own sensor-noise seed", Perturb.sensor_noise),
    "wind_m_s": number("m/s, the steady wind's greatest speed", at_least=0, at_most=MAX_WIND_M_S,
                       required=False, default=Perturb.wind_m_s),
    "gust_m_s": number("m/s, the gusts' standard deviation per axis", at_least=0, at_most=MAX_GUST_M_S,
                       required=False, default=Perturb.gust_m_s),
    "position_m": number("m, the initial position's greatest offset", at_least=0, at_most=MAX_POSITION_M,
                         required=False, default=Perturb.position_m),
    "heading_deg": number("degrees, the initial heading's greatest offset", at_least=0, at_most=MAX_HEADING_DEG,
                          required=False, default=Perturb.heading_deg),
    "link_jitter_ms": number("ms, latency jitter added to the link profile", at_least=0,
                             at_most=MAX_LINK_JITTER_MS, required=False, default=Perturb.link_jitter_ms),
}
EXPECTED = "off, none, on, or a mapping of " + ", ".join(_FIELDS)


def read_perturb(value: Any, repeats: int, problems: Problems, path: str = "perturb") -> Perturb:
    """A campaign's `perturb:` value (absent: None), problems recorded at `path`; OFF where it is invalid."""
    if value is None:
        return Perturb() if repeats > 1 else OFF
    # YAML 1.1 reads an unquoted off / on as a boolean: either spelling means what it says.
    if value is False or value in OFF_WORDS:
        return OFF
    if value is True or value == "on":
        return Perturb()
    if not isinstance(value, dict):
        problems.invalid(path, EXPECTED, value)
        return OFF
    before = len(problems.lines)
    values = read_fields(value, _FIELDS, f"{path}.", problems)
    return OFF if len(problems.lines) > before else Perturb(**values)


@dataclass(frozen=True)
class Perturbation:
    """What one trial flies: its draw from the campaign's `Perturb`, in the vehicle's terms. The default is
    the nominal trial (seed 0, no wind, the nominal start)."""

    noise_seed: int = 0  # sensor noise and gusts; 0 is the vehicle's own default
    wind_ned: tuple[float, float, float] = (0.0, 0.0, 0.0)  # m/s, the air's velocity
    gust_m_s: float = 0.0
    position_ne: tuple[float, float] = (0.0, 0.0)  # m from the nominal start, north and east
    heading_deg: float = 0.0  # initial heading (0 = north)
    link_jitter_ms: float = 0.0
    # The `perturb:` fields the trial's target could not apply, each with why; their values above are nominal.
    not_applied: tuple[tuple[str, str], ...] = ()

    def without(self, gaps: dict[str, str]) -> Perturbation:
        """This perturbation less what a target cannot apply (`gaps`: `perturb:` field -> why): those fields are
        left nominal and named in `not_applied`, unless they were nominal anyway."""
        nominal = Perturbation()
        dropped = {name: why for name, why in gaps.items()
                   if getattr(self, _ATTRIBUTES[name]) != getattr(nominal, _ATTRIBUTES[name])}
        return dataclasses.replace(self, **{_ATTRIBUTES[name]: getattr(nominal, _ATTRIBUTES[name]) for name in dropped},
                                   not_applied=self.not_applied + tuple(dropped.items()))

    def describe(self) -> str:
        """One line for the person flying it: what differs from the nominal flight, and what could not."""
        north, east, _ = self.wind_ned
        said = {"sensor_noise": f"noise seed {self.noise_seed}",
                "wind_m_s": f"wind {math.hypot(north, east):.2f} m/s toward {math.degrees(math.atan2(east, north)) % 360:.0f} deg",
                "gust_m_s": f"gusts {self.gust_m_s:g} m/s",
                "position_m": f"start {self.position_ne[0]:+.2f} m N {self.position_ne[1]:+.2f} m E",
                "heading_deg": f"heading {self.heading_deg:+.1f} deg", "link_jitter_ms": f"link jitter {self.link_jitter_ms:g} ms"}
        missing = dict(self.not_applied)
        return "; ".join([text for name, text in said.items() if name not in missing]
                         + [f"not applied: {name} ({why})" for name, why in missing.items()])

    def as_config(self) -> dict[str, Any]:
        """The trial manifest's record of what was flown, and what was not applied and why."""
        return {**dataclasses.asdict(self), "not_applied": dict(self.not_applied)}


# `perturb:` field -> the Perturbation attribute its draw sets.
_ATTRIBUTES = {"sensor_noise": "noise_seed", "wind_m_s": "wind_ned", "gust_m_s": "gust_m_s",
               "position_m": "position_ne", "heading_deg": "heading_deg", "link_jitter_ms": "link_jitter_ms"}

