"""Campaign files: what to run, and its expansion into trials.

A campaign is the cross-join missions x vehicle profiles x targets x link profiles x fault profiles
x planners, with `repeats` trials per combination, each with its own seed::

    name: demo
    seed: 7                      # trial seeds derive from it (stable across runs and machines)
    repeats: 2                   # trials per combination
    missions:
      - {scene: forest, configs: [0, 1], rule: flyingtrust}
      - {scene: maze, configs: all, rule: flightbench}
      - {mission: ../../missions/examples/benchmark/field_survey.yaml}   # a mission file (any format hil fly takes)
      - {suite: flightbench}   # a suite: its scene entries as scenes (judged by the rule of the suite's
                               # name, else flyingtrust, unless `rule` says), its mission files as missions
    profiles: [default, 0.60kg-EMAX]     # names, or {library: flyingtrust} for the whole library
    targets: [lockstep]                  # lockstep | sim | px4-sitl[:N][+harness] | a connection string
    links: [none]                        # link profile names (profiles/links), none = ideal link
    faults: [none]                       # fault profile files, none = no faults
    planners: [straight]                 # straight | avoid | module:Class (onboard.planner.Planner) | ros2
                                         # (an external ROS 2 node; options: {ros2: {topics: bridge|mavros,
                                         # namespace: /uav1, domain_id: 0-232}}; onboards local, real-time targets)
    computes: [none]                     # compute profiles (profiles/compute), none = as fast as this machine
    onboards: [local]                    # where planners run: local (in the harness) or an onboard agent's
                                         # HOST:PORT (`hil agent` on the companion computer; sim or px4-sitl;
                                         # the token in HIL_ONBOARD_TOKEN); on hardware the board's own link:
                                         # "HOST:PORT via serial:///dev/ttyTHS1:921600"
    rate_hz: 10                          # planner loop (and depth sensor) rate, vehicle time
    speed: 10                            # speed factor of real-time simulated targets
    physics: default                     # px4-sitl: default (SIH) | harness (the harness's physics as PX4's
                                         # simulator); a px4-sitl[:N]+harness target flies the harness's physics
    gates: [collision, success<0.8]      # what makes `hil run` exit 1, judged on the results (config.gates, reports.gates)
    perturb:                             # what differs between repeats (profiles.perturbation); on by default when
      sensor_noise: true                 # repeats > 1, `perturb: off` for identical repeats. Each trial's own
      wind_m_s: 1.0                      # sensor-noise and gust seed; steady wind up to 1 m/s from anywhere;
      gust_m_s: 0.5                      # gusts (standard deviation per axis); the start up to 0.3 m and 5 deg
      position_m: 0.3                    # off; latency jitter added to the link profile (none on an ideal link)
      heading_deg: 5
      link_jitter_ms: 2

A target's physics is its name's own (`px4-sitl+harness`: PX4 SITL on the harness's physics), else the
campaign's `physics:`, so one campaign flies the built-in vehicle, PX4 SIH and PX4 on the harness's physics (and a
board on the bench) side by side; each trial's record names its target as the campaign writes it, and the report
compares them (`reports.compare`).

A scene entry is a navigation task for the planners: each planner flies from the scene's start to its
goal. A mission entry (a mission file, or a suite's mission files, with `seeds` replacing the scene's)
flies the mission's route on the autopilot, as `hil fly` does, with its airspace, fault schedule,
comms-loss windows (cut on the simulated link), stage labels and success rule; it is not crossed
with the planners (its planner column says `autopilot`). A relative mission path is taken from the
campaign file's folder.

Repeats are samples: each trial draws its perturbation from its own seed, and its record's config keeps
the draw (`perturbation`) with what its target could not apply and why (`targets.spec.perturbation_gaps`:
PX4 SIH takes none of it, PX4 on the harness's physics all but the spawn offset). Repeats that still
fly identically (perturbation off, or a target that applies none) are one observation in the report.

The file is validated as a whole; a bad one raises `ConfigError` listing every problem as
``FILE: FIELD.PATH: expected WHAT, got VALUE``. Expansion orders trials scene by scene so workers
taking trials in order keep reusing the scene they have just built.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import re
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bridges.physics_faults import physics_refusal
from config.errors import ConfigError
from config.fields import (
    Field,
    Problems,
    choice,
    integer,
    mapping_entries,
    number,
    read_fields,
    text,
)
from config.gates import Gate, parse_gate
from config.loading import load_yaml, packaged
from hil.rules import RULES
from missions.faults import load_fault_profile
from missions.load import load
from missions.scenes import CONFIGURATIONS, SCENES
from missions.suite import load_suite
from onboard.agent.protocol import TOKEN_ENV, OnboardEntry, token_from_env
from onboard.planner import PlannerLoadError, planner_class
from onboard.ros2.topics import OPTION_FIELDS, ROS2, Ros2Endpoint, is_ros2
from profiles.compute import ComputeProfileError, load_compute_profile
from profiles.library import library_profiles, load_vehicle_profile
from profiles.link import load_link_profile
from profiles.perturbation import OFF, Perturb, Perturbation, read_perturb
from profiles.vehicle import ProfileError
from px4.sih import sitl_params
from targets.spec import (
    LOCKSTEP,
    PX4_HITL,
    PX4_SITL,
    SIM,
    TargetSpec,
    perturbation_gaps,
)

NONE = "none"
LOCAL = "local"  # a planner run in the harness's own process
# A campaign directory of a million trial records is past what one file system directory and one
# results table serve well; a larger matrix is several campaigns.
MAX_TRIALS = 1_000_000


@dataclass(frozen=True)
class PlannerChoice:
    """A planner class (``module:Class``) and whether it needs the virtual depth sensor; or, with `ros2`,
    an external ROS 2 node (`spec` is then its name)."""

    spec: str
    sensor: bool
    ros2: Ros2Endpoint | None = None


# Short names for the onboard reference planners; any other name is a module:Class given a sensor.
PLANNERS = {
    "straight": PlannerChoice("onboard.planners.straight:StraightLine", sensor=False),
    "avoid": PlannerChoice("onboard.planners.avoid:OccupancyPlanner", sensor=True),
}


def planner_choice(name: str) -> PlannerChoice:
    """What a campaign's planner name means (a short name, ``module:Class`` or a ROS 2 node's name)."""
    if is_ros2(name):
        return PlannerChoice(name, sensor=True, ros2=Ros2Endpoint.parse(name))
    return PLANNERS.get(name, PlannerChoice(name, sensor=True))


@dataclass(frozen=True)
class MissionSpec:
    """One mission family: a scene with its configurations and success rule (a navigation task for the
    planners), or a mission file (`mission`, its route flown by the autopilot) on its scene seeds."""

    scene: str
    configs: tuple[int, ...]
    rule: str
    mission: str = ""  # a mission file; configs are then its scene seeds


# How the planner column names a mission file's trials: the autopilot flies the route.
AUTOPILOT = "autopilot"
MISSION_RULE = "mission"  # the mission file's own success rule


@dataclass(frozen=True)
class TrialSpec:
    """Everything that defines one trial; `trial_id` names its record directory."""

    trial_id: str
    campaign: str
    scene: str
    config: int
    rule: str
    profile: str
    target: str
    link: str
    fault: str
    planner: str
    compute: str
    rate_hz: float
    repeat: int
    seed: int
    speed: float
    physics: str = "default"  # px4-sitl and HITL boards: SIH inside PX4 or the harness's physics
    mission: str = ""  # a mission file flown on the autopilot (config: its scene seed); "": a scene task
    onboard: str = LOCAL  # where the planner runs: local, or an onboard agent's HOST:PORT
    perturbation: Perturbation = Perturbation()  # this repeat's draw from the campaign's `perturb:`
    # Whether the trial may arm a flight controller the harness does not own (a HITL board, hardware): the run's
    # own --arm, never the campaign file's.
    arm: bool = False

    def as_config(self) -> dict[str, Any]:
        """The resolved configuration for the trial manifest."""
        return {**asdict(self), "perturbation": self.perturbation.as_config()}

    @property
    def case(self) -> tuple[str, ...]:
        """The test case this trial repeats (everything but the repeat index and seed)."""
        return (self.scene, str(self.config), self.rule, self.profile, self.target, self.link, self.fault,
                self.planner, self.compute, self.onboard)


@dataclass(frozen=True)
class Campaign:
    """A validated campaign file."""

    name: str
    seed: int
    repeats: int
    missions: tuple[MissionSpec, ...]
    profiles: tuple[str, ...]
    targets: tuple[str, ...]
    links: tuple[str, ...]
    faults: tuple[str, ...]
    planners: tuple[str, ...]
    computes: tuple[str, ...]
    rate_hz: float
    speed: float
    source: str
    physics: str = "default"
    onboards: tuple[str, ...] = (LOCAL,)
    gates: tuple[Gate, ...] = ()
    perturb: Perturb = OFF

    def trials(self) -> list[TrialSpec]:
        """The cross-join, scene-major, with a stable id and seed per trial."""
        out = []
        for mission in self.missions:
            # A mission file's route is flown by the autopilot: one planner (no compute, no board) per trial.
            planners = ((AUTOPILOT, NONE, LOCAL),) if mission.mission else itertools.product(
                self.planners, self.computes, self.onboards)
            for config, profile, target, link, fault, (planner, compute, onboard), repeat in itertools.product(
                    mission.configs, self.profiles, self.targets, self.links, self.faults, tuple(planners),
                    range(self.repeats)):
                # A trial whose planner runs in the harness keeps the id it had before boards existed.
                board = () if onboard == LOCAL else (f"on-{onboard}",)
                parts = (mission.scene, f"c{config}", mission.rule, _stem(profile), target, link, _stem(fault),
                         planner, compute, *board, f"r{repeat}")
                trial_id = "__".join(_safe(p) for p in parts)
                seed = trial_seed(self.seed, trial_id)
                physics = target_physics(target, self.physics)
                gaps = perturbation_gaps(TargetSpec.parse(target), physics, linked=link != NONE)
                out.append(TrialSpec(
                    trial_id=trial_id, campaign=self.name, scene=mission.scene, config=config, rule=mission.rule,
                    profile=profile, target=target, link=link, fault=fault, planner=planner, compute=compute,
                    rate_hz=self.rate_hz, repeat=repeat, seed=seed, speed=self.speed, physics=physics,
                    mission=mission.mission, onboard=onboard, perturbation=self.perturb.draw(seed).without(gaps)))
        return out


def target_physics(target: str, physics: str) -> str:
    """The physics `target` flies in a campaign whose `physics:` is `physics`: the harness's on the HITL bench
    (px4-hitl flies nothing else), else its name's own (px4-sitl+harness), else the campaign's."""
    spec = TargetSpec.parse(target)
    return "harness" if spec.kind == PX4_HITL else spec.physics or physics


def _stem(entry: str) -> str:
    """A profile or fault named by a YAML file goes into trial ids by its file's stem; a name as it is."""
    return Path(entry).stem if entry.endswith((".yaml", ".yml")) else entry


def trial_seed(campaign_seed: int, trial_id: str) -> int:
    """A 31-bit seed from the campaign seed and the trial's identity (not Python's salted hash)."""
    return zlib.crc32(f"{campaign_seed}:{trial_id}".encode()) & 0x7FFFFFFF


def _safe(text: str) -> str:
    # A trial id is a directory name: keep it readable, but no separators or shell-hostile characters.
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-")


CAMPAIGNS_DIR = Path(__file__).resolve().parent / "campaigns"  # packaged campaigns, loadable by name


def load_campaign(path: str | Path) -> Campaign:
    """Read and validate a campaign file, or a packaged campaign by name (``demo``)."""
    path = packaged(path, CAMPAIGNS_DIR, "campaign")
    return parse_campaign(load_yaml(path, "campaign file"), str(path))


_FIELDS: dict[str, Field] = {
    "name": text("the campaign's name"),
    "seed": integer("campaign seed", at_least=0, required=False, default=0),
    "repeats": integer("trials per combination", at_least=1, at_most=MAX_TRIALS, required=False, default=1),
    "speed": number("speed factor of real-time simulated targets", above=0, required=False, default=1.0),
    "rate_hz": number("planner loop rate, Hz of vehicle time", above=0, required=False, default=10.0),
    "physics": choice(("default", "harness"), required=False, default="default"),
}
_LISTS = ("missions", "profiles", "targets", "links", "faults", "planners", "computes", "onboards", "gates", "perturb")


def parse_campaign(data: Any, source: str = "<string>") -> Campaign:
    """Validate a parsed campaign mapping; raise `ConfigError` with every problem."""
    problems = Problems(source)
    if not isinstance(data, dict):
        problems.invalid("<top level>", "a mapping of campaign fields", data)
        raise ConfigError(problems.lines)
    values = read_fields(data, _FIELDS, "", problems, nested=_LISTS)
    missions = _missions(data.get("missions"), problems, Path(source).parent)
    profiles = _profiles(data.get("profiles", ["default"]), problems)
    targets = _names(data.get("targets", [LOCKSTEP]), "targets", problems, _target_problem)
    links = _names(data.get("links", [NONE]), "links", problems, _link_problem)
    faults = _names(data.get("faults", [NONE]), "faults", problems, _fault_problem)
    planners = _planners(data.get("planners", ["straight"]), problems)
    computes = _names(data.get("computes", [NONE]), "computes", problems, _compute_problem)
    onboards = _names(data.get("onboards", [LOCAL]), "onboards", problems, _onboard_problem)
    gates = _gates(data.get("gates", []), problems)
    perturb = read_perturb(data.get("perturb"), values.get("repeats") or 1, problems)
    valid = {t: target_physics(t, values.get("physics") or "default") for t in targets if not _target_problem(t)}
    _check_boards_can_connect(onboards, valid, problems)
    if any(is_ros2(p) for p in planners):
        _check_ros2_can_run(targets, onboards, problems)
    if any(t.startswith(PX4_SITL) and physics != "harness" for t, physics in valid.items()):
        _check_px4_can_fly(profiles, problems)  # SIH's limits; the harness's physics flies any profile
    _check_faults_reach_px4(faults, valid, problems)
    if values.get("physics") == "harness" and not any(t.startswith(PX4_SITL) or "://" in t for t in targets):
        problems.add("physics", "expected default unless a target is px4-sitl or a flight controller on the bench "
                                "(the harness's physics drives PX4; the built-in vehicle has its own)")
    count = math.prod((sum(len(m.configs) for m in missions), len(profiles), len(targets), len(links), len(faults),
                       len(planners), len(computes), len(onboards), values.get("repeats") or 1))
    if count > MAX_TRIALS:
        problems.add("<top level>", f"expected at most {MAX_TRIALS:,} trials (missions x configs x profiles x targets "
                                    f"x links x faults x planners x computes x onboards x repeats), got {count:,}")
    if not problems.lines:
        return Campaign(name=values["name"], seed=values["seed"], repeats=values["repeats"], missions=missions,
                        profiles=profiles, targets=targets, links=links, faults=faults, planners=planners,
                        computes=computes, rate_hz=values["rate_hz"], speed=values["speed"], source=source,
                        physics=values["physics"], onboards=onboards, gates=gates, perturb=perturb)
    raise ConfigError(problems.lines)


def _missions(entries: Any, problems: Problems, base_dir: Path) -> tuple[MissionSpec, ...]:
    out = []
    for path, entry in mapping_entries(entries, "missions", "{scene, configs, rule}, {mission, seeds} or {suite, rule}",
                                       problems):
        if "mission" in entry or "suite" in entry:
            out += _mission_files(path, entry, problems, base_dir)
            continue
        read_fields(entry, {}, f"{path}.", problems, nested=("scene", "configs", "rule"))
        scene, rule = entry.get("scene"), entry.get("rule", "flyingtrust")
        if scene not in SCENES:
            problems.invalid(f"{path}.scene", "a scene name (" + ", ".join(SCENES) + ")", scene)
        if rule not in RULES:
            problems.invalid(f"{path}.rule", "one of " + ", ".join(RULES), rule)
        configs = entry.get("configs", "all")
        if configs == "all":
            configs = list(range(CONFIGURATIONS))
        valid = isinstance(configs, list) and configs and all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c < CONFIGURATIONS for c in configs)
        if not valid:
            problems.invalid(f"{path}.configs", f"'all' or a list of integers 0-{CONFIGURATIONS - 1}", configs)
            continue
        out.append(MissionSpec(scene, tuple(configs), rule))
    return tuple(out)


def _mission_files(path: str, entry: dict, problems: Problems, base_dir: Path) -> list[MissionSpec]:
    """A `{mission: FILE, seeds}` or `{suite: NAME, rule}` entry, each mission loaded (validated) once now."""
    if "suite" in entry:
        read_fields(entry, {}, f"{path}.", problems, nested=("suite", "rule"))
        try:
            suite = load_suite(_relative(entry["suite"], base_dir))
        except ConfigError as error:
            problems.lines += [f"{problems.source}: {path}.suite: {line}" for line in error.problems]
            return []
        # A suite named after a benchmark's rule (flyingtrust, flightbench) is judged by it unless told.
        rule = entry.get("rule", suite.name if suite.name in RULES else "flyingtrust")
        if rule not in RULES:
            problems.invalid(f"{path}.rule", "one of " + ", ".join(RULES), rule)
            return []
        specs = []
        for item in suite.entries:
            if item.scene is not None:
                specs.append(MissionSpec(item.scene, tuple(s for s in item.seeds if s is not None) or (0,), rule))
            else:
                specs.append(MissionSpec(Path(item.mission).stem, tuple(-1 if s is None else s for s in item.seeds),
                                         MISSION_RULE, str(item.mission)))
        return specs
    read_fields(entry, {}, f"{path}.", problems, nested=("mission", "seeds"))
    file = _relative(entry["mission"], base_dir) if isinstance(entry["mission"], str) else None
    seeds = entry.get("seeds")
    if seeds is not None and not (isinstance(seeds, list) and seeds and all(
            isinstance(c, int) and not isinstance(c, bool) and 0 <= c < CONFIGURATIONS for c in seeds)):
        problems.invalid(f"{path}.seeds", f"a list of scene seeds 0-{CONFIGURATIONS - 1}", seeds)
        return []
    if file is None:
        problems.invalid(f"{path}.mission", "a mission file's path", entry["mission"])
        return []
    try:
        load(file)  # validated now: a broken mission file stops the campaign before any trial
    except ConfigError as error:
        problems.lines += [f"{problems.source}: {path}.mission: {line}" for line in error.problems]
        return []
    return [MissionSpec(Path(file).stem, tuple(seeds) if seeds else (-1,), MISSION_RULE, str(file))]


def _relative(name: str, base_dir: Path) -> str:
    """A path relative to the campaign file's folder when it names a file there; else as given (a packaged name)."""
    candidate = base_dir / name
    return str(candidate) if candidate.exists() else name


def _profiles(entries: Any, problems: Problems) -> tuple[str, ...]:
    if not isinstance(entries, list) or not entries:
        problems.invalid("profiles", "a non-empty list of profile names or {library: NAME}", entries)
        return ()
    names: list[str] = []
    for index, entry in enumerate(entries):
        path = f"profiles[{index}]"
        if isinstance(entry, dict) and set(entry) == {"library"}:
            found = [p.name for p in library_profiles() if _library_of(p) == entry["library"]]
            if not found:
                problems.invalid(f"{path}.library", "the name of a shipped profile library (e.g. flyingtrust)",
                                 entry["library"])
            names += found
            continue
        if not isinstance(entry, str):
            problems.invalid(path, "a profile name or {library: NAME}", entry)
            continue
        try:
            load_vehicle_profile(entry)
        except ProfileError as exc:
            problems.add(path, str(exc))
            continue
        names.append(entry)  # a library name, or a profile file: the trial loads it again from here
    return tuple(dict.fromkeys(names))


def _check_px4_can_fly(profiles: tuple[str, ...], problems: Problems) -> None:
    """Every profile must be one PX4 SITL's SIH can reproduce (px4.sih refuses the others, saying why)."""
    for index, name in enumerate(profiles):
        try:
            sitl_params(load_vehicle_profile(name))
        except ValueError as exc:
            problems.add(f"profiles[{index}]", f"not flyable on px4-sitl: {exc}")


def _check_faults_reach_px4(faults: tuple[str, ...], targets: dict[str, str], problems: Problems) -> None:
    """On the harness's physics (PX4 SITL on it, the HITL bench) a fault reaches PX4 only through what it reads: one
    the physics cannot make real is refused before any trial arms, not found unsupported mid-flight."""
    on_physics = [target for target, physics in targets.items() if physics == "harness"]
    if not on_physics:
        return
    for index, name in enumerate(faults):
        if name == NONE or _fault_problem(name):
            continue
        for place, spec in enumerate(load_fault_profile(name)):
            refused = physics_refusal(spec)
            if refused:
                problems.add(f"faults[{index}]", f"{name}: faults[{place}] ({spec.describe()}) cannot reach PX4 on "
                                                 f"the harness's physics ({', '.join(on_physics)}): {refused}")


def _library_of(profile) -> str:
    # Library entries are FLYINGTRUST's Table I (category real/virtual); single files are "custom".
    return "flyingtrust" if profile.category in ("real", "virtual") else profile.category


def _names(entries: Any, field: str, problems: Problems, problem_of) -> tuple[str, ...]:
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list) or not entries or not all(isinstance(e, str) and e for e in entries):
        problems.invalid(field, "a non-empty list of names", entries)
        return ()
    for index, entry in enumerate(entries):
        problem = problem_of(entry)
        if problem:
            problems.add(f"{field}[{index}]", problem)
    return tuple(dict.fromkeys(entries))


def _target_problem(name: str) -> str | None:
    try:
        TargetSpec.parse(name)
    except ValueError as exc:
        return str(exc)
    return None


def _link_problem(name: str) -> str | None:
    if name == NONE:
        return None

    try:
        load_link_profile(name)
    except (ConfigError, OSError, ValueError) as exc:
        return f"expected none or a link profile: {exc}"
    return None


def _fault_problem(name: str) -> str | None:
    if name == NONE:
        return None

    try:
        load_fault_profile(name)
    except (ConfigError, OSError, ValueError) as exc:
        return f"expected none or a fault profile file: {exc}"
    return None


_PLANNER_EXPECTED = (f"{', '.join(PLANNERS)}, a planner class as module:Class, {ROS2} or "
                     f"{{{ROS2}: {{{', '.join(OPTION_FIELDS)}}}}} (an external ROS 2 node)")


def _planners(entries: Any, problems: Problems) -> tuple[str, ...]:
    """Planner names; a `{ros2: {topics, namespace, domain_id}}` entry becomes its endpoint's name."""
    if isinstance(entries, str):
        entries = [entries]
    if not isinstance(entries, list) or not entries:
        problems.invalid("planners", "a non-empty list of planners", entries)
        return ()
    names = []
    for index, entry in enumerate(entries):
        path = f"planners[{index}]"
        if isinstance(entry, dict) and set(entry) == {ROS2} and isinstance(entry[ROS2], dict):
            before = len(problems.lines)
            options = read_fields(entry[ROS2], OPTION_FIELDS, f"{path}.{ROS2}.", problems)
            if len(problems.lines) == before:
                names.append(Ros2Endpoint(**options).name)
        elif isinstance(entry, str) and entry:
            problem = _planner_problem(entry)
            if problem:
                problems.add(path, problem)
            names.append(entry)
        else:
            problems.invalid(path, _PLANNER_EXPECTED, entry)
    return tuple(dict.fromkeys(names))


def _gates(entries: Any, problems: Problems) -> tuple[Gate, ...]:
    if not isinstance(entries, list):
        problems.invalid("gates", "a list of gates (e.g. [collision, success<0.8])", entries)
        return ()
    gates = []
    for index, entry in enumerate(entries):
        try:
            gates.append(parse_gate(entry))
        except ValueError as exc:
            problems.add(f"gates[{index}]", str(exc))
    return tuple(gates)


def _check_boards_can_connect(onboards: tuple[str, ...], targets: dict[str, str], problems: Problems) -> None:
    """An onboard agent needs a MAVLink link of its own to the flight controller: the harness opens one on the
    built-in vehicle and on PX4 SITL with SIH (``HOST:PORT``); on hardware the board has its own, which the entry
    names (``HOST:PORT via URL``). `targets`: each valid target's physics."""

    boarded = (SIM, PX4_SITL)
    # PX4 SITL on the harness's physics opens no link for a board: a kind of its own, not boarded.
    kinds = {t: TargetSpec.parse(t).kind for t in targets}
    kinds = {t: f"{kind} on the harness's physics" if kind == PX4_SITL and targets[t] == "harness" else kind
             for t, kind in kinds.items()}
    for index, name in enumerate(onboards):
        if name == LOCAL:
            continue
        try:
            problem = OnboardEntry.parse(name).target_problem(kinds, boarded)
        except ValueError:
            continue  # reported with the entry
        if problem:
            problems.add(f"onboards[{index}]", problem)


def _check_ros2_can_run(targets: tuple[str, ...], onboards: tuple[str, ...], problems: Problems) -> None:
    """A ROS 2 node runs on wall time beside the harness's bridge: a real-time target, the planner not on a board,
    and a DDS backend here."""
    from onboard.ros2.rclpy_backend import rclpy_available

    if importlib.util.find_spec("cyclonedds") is None and not rclpy_available():
        problems.add("planners", "expected the ROS 2 extra installed for a ros2 planner (pip install "
                                 "'quad-hil[ros2]'), or ROS 2's rclpy")
    if LOCKSTEP in targets:
        problems.add("targets", "expected no lockstep target with a ros2 planner: a ROS 2 node runs on wall time "
                                "and lockstep runs as fast as it can (use sim with a speed factor)")
    if any(o != LOCAL for o in onboards):
        problems.add("onboards", "expected only local with a ros2 planner: the harness runs the ROS 2 bridge, and "
                                 "the node itself can be anywhere on the DDS domain")


def _planner_problem(name: str) -> str | None:
    if name in PLANNERS or name == ROS2:
        return None
    if ":" not in name:
        return f"expected {_PLANNER_EXPECTED}, got {name!r}"

    try:
        planner_class(name)
    except PlannerLoadError as exc:
        return str(exc)
    return None


def _compute_problem(name: str) -> str | None:
    if name == NONE:
        return None

    try:
        load_compute_profile(name)
    except (ComputeProfileError, OSError, ValueError) as exc:
        return f"expected none or a compute profile: {exc}"
    return None


def _onboard_problem(name: str) -> str | None:
    if name == LOCAL:
        return None

    try:
        OnboardEntry.parse(name)
    except ValueError as exc:
        return f"expected local, an onboard agent's HOST:PORT, or HOST:PORT via URL: {exc}"
    if token_from_env() is None:
        return f"expected {TOKEN_ENV} set to the agent's token (the agent serves only a harness presenting it)"
    return None
