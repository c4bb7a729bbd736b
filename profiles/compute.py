"""Compute profiles: how much slower than this machine a planner's stages run on an onboard computer.

A profile (profiles/compute/*.yaml) gives one slowdown factor per compute stage::

    name: jetson_orin_nx
    description: NVIDIA Jetson Orin NX 16 GB vs the desktop FlightBench measured on
    source: FlightBench Table 5, per-stage geometric mean of onboard / desktop times
    factors: {map: 5.17, plan: 3.45, control: 5.71}

The runtime multiplies each stage's measured time by its factor and holds the planner's command
back for the emulated time before it takes effect (onboard.emulation). ``desktop`` is factor 1:
the planner's own time is felt by the loop, nothing more. `derive_from_table5` shows where the
Jetson factors come from; `profile_from_runs` makes a user profile from two measured runs (what
`hil timing A B --save NAME` writes).

A bad file raises one `ComputeProfileError` naming the file, the field and what was expected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from config.errors import ConfigError
from config.fields import Problems, number, read_fields, text
from config.loading import load_yaml

COMPUTE_DIR = Path(__file__).resolve().parent / "compute"
STAGE_KEYS = ("map", "plan", "control")

# FlightBench Table 5, milliseconds: method -> (desktop map, plan, ctrl, tot;
# onboard map, plan, ctrl, tot). None where the paper prints "-". SBMT (no onboard figures) is left out.
FLIGHTBENCH_TABLE5: dict[str, tuple[float | None, ...]] = {
    "LMT": (1.607, 1.167, None, 2.773, 2.768, 10.445, None, 13.213),
    "TGK": (3.964, 7.994, 0.002, 11.960, 27.420, 10.211, 0.015, 37.646),
    "Fast-Planner": (7.038, 1.155, 0.003, 8.196, 36.853, 2.310, 0.014, 39.177),
    "EGO-Planner": (2.956, 0.510, 0.003, 3.470, 24.020, 0.910, 0.016, 24.946),
    "Agile": (0.338, 5.115, 0.119, 5.573, 1.175, 26.283, None, 27.458),
    "LPA": (0.399, 0.995, None, 1.395, 4.313, 7.980, None, 12.293),
}


class ComputeProfileError(ValueError):
    """A compute profile is invalid or missing; `problems` holds one line per error."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class ComputeProfile:
    """Per-stage slowdown factors relative to the machine the planner runs on."""

    name: str
    factors: Mapping[str, float] = field(default_factory=lambda: {k: 1.0 for k in STAGE_KEYS})
    description: str = ""
    source: str = ""

    def factor(self, stage: str) -> float:
        """The factor of a compute stage; 1 for stages the profile does not stretch (sense, link)."""
        return self.factors.get(stage, 1.0)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "source": self.source,
                "factors": dict(self.factors)}


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def derive_from_table5() -> dict[str, float]:
    """Per-stage factors: geometric mean over FlightBench's methods of onboard / desktop time.

    Only methods that report a stage on both platforms count (map and plan: six methods; control:
    TGK, Fast-Planner and EGO-Planner, whose control times are printed to 3 decimals of a ms, so
    that factor is the least certain). The geometric mean suits ratios: a 2x and a 0.5x cancel.
    Also returned, as "total", the same mean of the T_tot ratios (FlightBench's 3.1x-8.8x range).
    """
    columns = {"map": (0, 4), "plan": (1, 5), "control": (2, 6), "total": (3, 7)}
    factors = {}
    for stage, (desk, board) in columns.items():
        ratios = [row[board] / row[desk] for row in FLIGHTBENCH_TABLE5.values()
                  if row[desk] is not None and row[board] is not None]
        factors[stage] = round(geometric_mean(ratios), 2)
    return factors


def compute_profile_path(name_or_path: str | Path) -> Path:
    """A profile name from profiles/compute/ (e.g. "jetson_orin_nx"), or a path to a YAML file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    return COMPUTE_DIR / f"{name_or_path}.yaml"


def list_compute_profiles() -> list[str]:
    return sorted(p.stem for p in COMPUTE_DIR.glob("*.yaml"))


def load_compute_profile(name_or_path: str | Path) -> ComputeProfile:
    """Load and validate a compute profile; raise ComputeProfileError naming every problem."""
    path = compute_profile_path(name_or_path)
    if not path.exists():
        raise ComputeProfileError([f"{path}: no such compute profile (shipped: {', '.join(list_compute_profiles())})"])
    try:
        data = load_yaml(path, "compute profile")
    except ConfigError as exc:
        raise ComputeProfileError(list(exc.problems)) from None
    return parse_compute_profile(data, str(path))


_FIELDS = {
    "name": text("the profile's name"),
    "description": text("what board this is", required=False, default=""),
    "source": text("where the factors come from", required=False, default=""),
}
_FACTOR = number("slowdown factor, 1 = as fast as this machine", above=0, at_most=1000)


def parse_compute_profile(data: Any, source: str = "<string>") -> ComputeProfile:
    """Validate a parsed compute profile mapping."""
    problems = Problems(source)
    if not isinstance(data, dict):
        problems.invalid("<top level>", "a mapping with name and factors", data)
        raise ComputeProfileError(problems.lines)
    values = read_fields(data, _FIELDS, "", problems, nested=("factors",))
    factors = data.get("factors")
    if not isinstance(factors, dict):
        problems.invalid("factors", f"a mapping of {', '.join(STAGE_KEYS)} to slowdown factors", factors)
        factors = {}
    else:
        factors = read_fields(factors, {k: _FACTOR for k in STAGE_KEYS}, "factors.", problems)
    if problems.lines:
        raise ComputeProfileError(problems.lines)
    return ComputeProfile(name=values["name"], factors=factors, description=values["description"],
                          source=values["source"])


def profile_from_runs(name: str, base_ms: Mapping[str, float], board_ms: Mapping[str, float],
                      description: str, source: str) -> ComputeProfile:
    """Factors board / base per stage from two runs' mean stage times; a stage missing in either is 1."""
    factors = {}
    for stage in STAGE_KEYS:
        base, board = base_ms.get(stage, math.nan), board_ms.get(stage, math.nan)
        factors[stage] = round(board / base, 3) if base > 0 and board > 0 else 1.0
    return ComputeProfile(name=name, factors=factors, description=description, source=source)


def save_compute_profile(profile: ComputeProfile, path: Path | None = None) -> Path:
    """Write a profile as YAML (default profiles/compute/NAME.yaml); returns the path written."""
    path = path or COMPUTE_DIR / f"{profile.name}.yaml"
    path.write_text(yaml.safe_dump(profile.as_dict(), sort_keys=False), encoding="utf-8")
    return path
