"""Benchmark suites: which missions to run, on which scene seeds.

A suite file (shipped ones in `missions/suites/`)::

    name: flyingtrust
    defaults: {speed_cap: 4.0, success_radius: 2.0, time_budget: 90}   # for scene entries
    entries:
      - scene: forest              # the scene's own point-to-point task (start, goal, waypoints)
        seeds: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
      - mission: ../examples/benchmark/forest_orbit.yaml   # a mission file, relative to this file
        seeds: [0, 1]              # replace the mission's scene seed; omit to keep it

Loading checks the suite's structure (known scenes, seeds 0-9, mission files present) and lists
every problem at once; `Suite.missions()` then builds and validates each mission when asked, since
generating every scene up front costs seconds for large suites.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from config.fields import (
    Field,
    Invalid,
    Problems,
    mapping_entries,
    number,
    read_fields,
    text,
)
from config.loading import load_yaml
from missions.schema import (
    BenchmarkMission,
    load_benchmark_mission,
    parse_benchmark_mission,
)

SUITES_DIR = Path(__file__).resolve().parent / "suites"


@dataclass(frozen=True)
class SuiteEntry:
    """One line of a suite: a scene's own task or a mission file, and the seeds to run it on."""

    seeds: tuple[int | None, ...]  # (None,): a mission entry that keeps its own scene seed
    scene: str | None = None
    mission: Path | None = None


@dataclass(frozen=True)
class Suite:
    """A validated suite; iterate `missions()` for (entry index, seed, BenchmarkMission)."""

    name: str
    defaults: dict[str, float]
    entries: tuple[SuiteEntry, ...]
    source: str

    def missions(self) -> Iterator[tuple[int, int | None, BenchmarkMission]]:
        """Every (entry, seed) as a validated mission; raises `ConfigError` on the first bad one.

        The seed is None for a mission entry without seeds (the mission keeps its own scene seed).
        """
        from missions.scenes import SCENES

        for index, entry in enumerate(self.entries):
            for seed in entry.seeds:
                if entry.mission is not None:
                    yield index, seed, load_benchmark_mission(entry.mission, seed=seed)
                else:
                    mapping = {"name": f"{entry.scene}-{seed}", "type": SCENES[entry.scene].task,
                               "scene": {"generator": entry.scene, "seed": seed}, **self.defaults}
                    yield index, seed, parse_benchmark_mission(mapping, f"{self.source} entries[{index}] seed {seed}")

    def __len__(self) -> int:
        return sum(len(e.seeds) for e in self.entries)


def _seeds(value: Any) -> tuple[int, ...]:
    if not (isinstance(value, list) and value
            and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 9 for s in value)):
        raise Invalid("a non-empty list of seeds, integers 0-9")
    return tuple(value)


_DEFAULTS = {"speed_cap": number("m/s", above=0, required=False), "success_radius": number("m", above=0, required=False),
             "time_budget": number("s", above=0, required=False)}
_ENTRY = {"scene": text("a scene name, see `hil scene list`", required=False),
          "mission": text("a benchmark mission file, relative to the suite file", required=False),
          "seeds": Field("a non-empty list of seeds, integers 0-9", _seeds, required=False)}


def load_suite(path: str | os.PathLike[str]) -> Suite:
    """Read and check a suite file; a bare name means `missions/suites/NAME.yaml`."""
    path = Path(path)
    if path.suffix not in (".yaml", ".yml") and not path.exists():
        path = SUITES_DIR / f"{path}.yaml"
    source = str(path)
    mapping = load_yaml(path, "suite file")
    problems = Problems(source)
    if not isinstance(mapping, dict):
        problems.invalid("<top level>", "a mapping with name, entries", mapping)
        problems.raise_if_any()
    top = read_fields(mapping, {"name": text("the suite's name")}, "", problems, nested=("defaults", "entries"))
    defaults = read_fields(mapping.get("defaults") or {}, _DEFAULTS, "defaults.", problems)
    entries = _read_entries(mapping.get("entries"), path.parent, problems)
    problems.raise_if_any()
    return Suite(top["name"], {k: v for k, v in defaults.items() if v is not None}, entries, source)


def _read_entries(raw: Any, base: Path, problems: Problems) -> tuple[SuiteEntry, ...]:
    from missions.scenes import SCENES

    entries = []
    for where, item in mapping_entries(raw, "entries", "{scene or mission, seeds}", problems):
        reported = len(problems.lines)
        values = read_fields(item, _ENTRY, f"{where}.", problems)
        if len(problems.lines) > reported:
            continue
        scene, mission = values["scene"], values["mission"]
        if (scene is None) == (mission is None):
            problems.add(where, "expected exactly one of scene or mission")
            continue
        if scene is not None and scene not in SCENES:
            problems.invalid(f"{where}.scene", f"one of {', '.join(SCENES)}", scene)
            continue
        if scene is not None and "seeds" not in item:
            problems.add(f"{where}.seeds", "missing required field for a scene entry, expected a list of seeds 0-9")
            continue
        if mission is not None and not (base / mission).is_file():
            problems.invalid(f"{where}.mission", "an existing mission file, relative to the suite file", mission)
            continue
        seeds = values["seeds"] or (None,)
        entries.append(SuiteEntry(seeds=seeds, scene=scene, mission=base / mission if mission else None))
    return tuple(entries)
