"""Link profiles: what a link does to MAVLink frames (the types), and the YAML files that describe them
(profiles/links/). The model that applies a profile to frames is bridges/impairment.py.

A profile looks like this::

    name: telemetry-radio-57600
    description: SiK-style 57600 baud radio
    seed: 7                      # optional, default 0; the trial's seed may override it
    malformed: pass              # pass | drop: bytes that are not a MAVLink frame
    crc_check: true              # verify checksums when splitting frames (off for private dialects)
    both:                        # applies to both directions ...
      bandwidth_bps: 57600
      preserve_order: true
      latency: {kind: normal, ms: 20, std_ms: 5}
      loss: {model: gilbert_elliott, p_good_bad: 0.01, p_bad_good: 0.2, loss_bad: 0.7}
    to_vehicle:                  # ... and each direction may override any part of it
      messages:                  # per message (name or id): latency, loss, duplicate, reorder, corrupt
        SET_POSITION_TARGET_LOCAL_NED: {loss: {rate: 0.1}}
    to_onboard: {}

Direction keys: latency, loss, duplicate, reorder, reorder_ms, corrupt, corrupt_bytes,
bandwidth_bps, bits_per_byte, queue_limit_ms, preserve_order, outages (list of [start_s, end_s]),
messages. Latency kinds: fixed (ms), uniform (min_ms, max_ms), normal (ms, std_ms), trace
(trace_ms: list, or trace_file: a text file of one value per line, relative to the profile), each
with optional jitter_ms. Probabilities are in [0, 1].

A bad file raises one `ConfigError` listing every problem, one per line, as
``FILE: FIELD.PATH: expected WHAT, got VALUE``. Nothing half-loaded is ever returned.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pymavlink.dialects.v20 import all as dialect

from config.errors import ConfigError
from config.loading import load_yaml, read_text

LATENCY_KINDS = ("fixed", "uniform", "normal", "trace")
LOSS_MODELS = ("bernoulli", "gilbert_elliott")
DIRECTIONS = ("to_vehicle", "to_onboard")
# A MAVLink 2 frame is at most 280 bytes (header, 255 of payload, checksum, signature): no more to corrupt.
MAX_FRAME_BYTES = 280


@dataclass(frozen=True)
class Latency:
    """One-way delay in milliseconds, drawn per frame; never below zero."""

    kind: str = "fixed"  # fixed | uniform | normal | trace
    ms: float = 0.0  # fixed: the delay; normal: the mean
    min_ms: float = 0.0  # uniform
    max_ms: float = 0.0  # uniform
    std_ms: float = 0.0  # normal
    trace_ms: tuple[float, ...] = ()  # trace: used in order, cycled
    jitter_ms: float = 0.0  # added uniform +-jitter_ms on top of any kind

    @property
    def mean_ms(self) -> float:
        """The configured mean (before clipping at zero), for reports."""
        if self.kind == "uniform":
            return 0.5 * (self.min_ms + self.max_ms)
        if self.kind == "trace":
            return sum(self.trace_ms) / len(self.trace_ms) if self.trace_ms else 0.0
        return self.ms


@dataclass(frozen=True)
class Loss:
    """Frame loss. Gilbert-Elliott: in the good state frames are lost with `loss_good`, in the bad
    state with `loss_bad`; after each frame the state flips with `p_good_bad` / `p_bad_good`."""

    model: str = "bernoulli"
    rate: float = 0.0  # bernoulli
    p_good_bad: float = 0.0
    p_bad_good: float = 1.0
    loss_good: float = 0.0
    loss_bad: float = 1.0

    @property
    def mean_rate(self) -> float:
        """Long-run fraction of frames lost."""
        if self.model == "bernoulli":
            return self.rate
        total = self.p_good_bad + self.p_bad_good
        bad = self.p_good_bad / total if total > 0 else 0.0
        return bad * self.loss_bad + (1.0 - bad) * self.loss_good


@dataclass(frozen=True)
class FrameImpairment:
    """What may happen to each frame, independently of the others."""

    latency: Latency = Latency()
    loss: Loss = Loss()
    duplicate: float = 0.0
    reorder: float = 0.0
    reorder_ms: float = 0.0
    corrupt: float = 0.0
    corrupt_bytes: int = 1


@dataclass(frozen=True)
class DirectionSpec:
    """One direction of a link."""

    frames: FrameImpairment = FrameImpairment()
    by_message: Mapping[int, FrameImpairment] = field(default_factory=dict)
    bandwidth_bps: float = 0.0  # 0: unlimited
    bits_per_byte: float = 10.0  # 8N1 UART framing: a start and a stop bit per byte
    queue_limit_ms: float = 0.0  # 0: unlimited
    preserve_order: bool = False
    outages: tuple[tuple[float, float], ...] = ()  # (start, end) seconds after t0


@dataclass(frozen=True)
class LinkSpec:
    """Both directions of a link plus how unparseable bytes are treated."""

    name: str = "clean"
    to_vehicle: DirectionSpec = DirectionSpec()
    to_onboard: DirectionSpec = DirectionSpec()
    malformed: str = "pass"  # pass | drop
    crc_check: bool = True
    seed: int = 0

    def direction(self, name: str) -> DirectionSpec:
        return self.to_vehicle if name == "to_vehicle" else self.to_onboard


def link_for_trial(name_or_path: str | None, seed: int, outages: tuple[tuple[float, float], ...] = (),
                   jitter_ms: float = 0.0) -> LinkSpec | None:
    """The link a trial runs on: a profile (seeded) with a mission's comms-loss windows added to both
    directions as outages and `jitter_ms` (the trial's perturbation) added to every latency's jitter; an
    ideal link carrying only the outages when there is no profile (no jitter: an ideal link stays ideal);
    None when there is neither (no impairment at all)."""
    if name_or_path is None and not outages:
        return None
    spec = load_link_profile(name_or_path) if name_or_path else LinkSpec(name="comms-loss")
    jitter_ms = jitter_ms if name_or_path else 0.0

    def direction(part: DirectionSpec) -> DirectionSpec:
        return dataclasses.replace(part, outages=part.outages + tuple(outages), frames=_jittered(part.frames, jitter_ms),
                                   by_message={k: _jittered(v, jitter_ms) for k, v in part.by_message.items()})

    return dataclasses.replace(spec, seed=seed, to_vehicle=direction(spec.to_vehicle),
                               to_onboard=direction(spec.to_onboard))


def _jittered(frames: FrameImpairment, jitter_ms: float) -> FrameImpairment:
    if jitter_ms == 0.0:
        return frames
    return dataclasses.replace(frames, latency=dataclasses.replace(
        frames.latency, jitter_ms=frames.latency.jitter_ms + jitter_ms))


LINKS_DIR = Path(__file__).resolve().parent / "links"
_TOP_KEYS = ("name", "description", "seed", "malformed", "crc_check", "both") + DIRECTIONS
_FRAME_KEYS = ("latency", "loss", "duplicate", "reorder", "reorder_ms", "corrupt", "corrupt_bytes")
_DIRECTION_KEYS = _FRAME_KEYS + ("bandwidth_bps", "bits_per_byte", "queue_limit_ms", "preserve_order", "outages",
                                 "messages")
_LATENCY_KEYS = ("kind", "ms", "min_ms", "max_ms", "std_ms", "trace_ms", "trace_file", "jitter_ms")
_LOSS_KEYS = ("model", "rate", "p_good_bad", "p_bad_good", "loss_good", "loss_bad")
_MSG_IDS = {cls.msgname: msgid for msgid, cls in dialect.mavlink_map.items()}


def link_profile_path(name_or_path: str | Path) -> Path:
    """A profile name (e.g. "wifi") from profiles/links/, or a path to a YAML file."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return path
    return LINKS_DIR / f"{name_or_path}.yaml"


def load_link_profile(name_or_path: str | Path) -> LinkSpec:
    """Load and validate a link profile; raise ConfigError naming every problem."""
    path = link_profile_path(name_or_path)
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in LINKS_DIR.glob("*.yaml")))
        raise ConfigError([f"{path}: expected a link profile name or file, got none there (built-in profiles: "
                           f"{known})"])
    return parse_link_profile(load_yaml(path, "link profile"), source=str(path), base_dir=path.parent)


def parse_link_profile(data: Any, source: str = "<string>", base_dir: Path = Path(".")) -> LinkSpec:
    """Validate a profile already parsed from YAML."""
    return _Parser(source, base_dir).profile(data)


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge of two mappings: nested mappings merge, anything else in `override` wins."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


class _Parser:
    """Collects every problem in one pass, so a user fixes a file in one go."""

    def __init__(self, source: str, base_dir: Path):
        self.source = source
        self.base_dir = base_dir
        self.problems: list[str] = []

    def problem(self, path: str, expected: str, got: Any) -> None:
        self.problems.append(f"{self.source}: {path}: expected {expected}, got {got!r}")

    def profile(self, data: Any) -> LinkSpec:
        if not isinstance(data, Mapping):
            raise ConfigError([f"{self.source}: expected a mapping of profile fields, got {type(data).__name__}"])
        self.unknown_keys(data, _TOP_KEYS, "")
        name = data.get("name", Path(self.source).stem)
        if not isinstance(name, str) or not name:
            self.problem("name", "a non-empty string", name)
        seed = data.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool):
            self.problem("seed", "an integer", seed)
        malformed = data.get("malformed", "pass")
        if malformed not in ("pass", "drop"):
            self.problem("malformed", "'pass' or 'drop'", malformed)
        crc_check = data.get("crc_check", True)
        if not isinstance(crc_check, bool):
            self.problem("crc_check", "true or false", crc_check)
        both = data.get("both", {}) or {}
        if not isinstance(both, Mapping):
            self.problem("both", "a mapping of direction settings", both)
            both = {}
        own = {}
        for direction in DIRECTIONS:
            own[direction] = data.get(direction, {}) or {}
            if not isinstance(own[direction], Mapping):
                self.problem(direction, "a mapping of direction settings", own[direction])
                own[direction] = {}
        # Each section is checked on its own first, so a problem is reported once, under the key
        # where it is written; the merged directions can then only add problems of the combination.
        self.direction(both, "both")
        for direction in DIRECTIONS:
            if own[direction]:
                self.direction(own[direction], direction)
        if self.problems:
            raise ConfigError(self.problems)
        directions = {d: self.direction(_merge(both, own[d]), d) for d in DIRECTIONS}
        if self.problems:
            raise ConfigError(self.problems)
        return LinkSpec(name=name, to_vehicle=directions["to_vehicle"], to_onboard=directions["to_onboard"],
                        malformed=malformed, crc_check=crc_check, seed=seed)

    def unknown_keys(self, data: Mapping, allowed: tuple[str, ...], path: str) -> None:
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f"one of {', '.join(allowed)}" + (f" (did you mean {close[0]!r}?)" if close else "")
                self.problem(f"{path}{key}", hint, key)

    def direction(self, data: Mapping[str, Any], path: str) -> DirectionSpec:
        self.unknown_keys(data, _DIRECTION_KEYS, f"{path}.")
        frames = self.frame_rules(data, path)
        by_message: dict[int, FrameImpairment] = {}
        messages = data.get("messages", {}) or {}
        if not isinstance(messages, Mapping):
            self.problem(f"{path}.messages", "a mapping of message name or id to settings", messages)
            messages = {}
        for key, rules in messages.items():
            msgid = self.message_id(key, f"{path}.messages")
            if not isinstance(rules, Mapping):
                self.problem(f"{path}.messages.{key}", "a mapping of latency, loss, ... settings", rules)
                continue
            self.unknown_keys(rules, _FRAME_KEYS, f"{path}.messages.{key}.")
            # A message's own settings start from the direction's per-frame settings.
            merged = _merge({k: data[k] for k in _FRAME_KEYS if k in data}, rules)
            rule = self.frame_rules(merged, f"{path}.messages.{key}")
            if msgid is not None:
                by_message[msgid] = rule
        spec = DirectionSpec(
            frames=frames, by_message=by_message,
            bandwidth_bps=self.number(data, "bandwidth_bps", path, 0.0, lo=0.0),
            bits_per_byte=self.number(data, "bits_per_byte", path, 10.0, lo=1.0),
            queue_limit_ms=self.number(data, "queue_limit_ms", path, 0.0, lo=0.0),
            preserve_order=self.boolean(data, "preserve_order", path, False),
            outages=self.outages(data.get("outages", []), f"{path}.outages"))
        return spec

    def frame_rules(self, data: Mapping[str, Any], path: str) -> FrameImpairment:
        return FrameImpairment(
            latency=self.latency(data.get("latency", {}) or {}, f"{path}.latency"),
            loss=self.loss(data.get("loss", {}) or {}, f"{path}.loss"),
            duplicate=self.number(data, "duplicate", path, 0.0, lo=0.0, hi=1.0),
            reorder=self.number(data, "reorder", path, 0.0, lo=0.0, hi=1.0),
            reorder_ms=self.number(data, "reorder_ms", path, 0.0, lo=0.0),
            corrupt=self.number(data, "corrupt", path, 0.0, lo=0.0, hi=1.0),
            corrupt_bytes=int(self.number(data, "corrupt_bytes", path, 1, lo=1, hi=MAX_FRAME_BYTES, integer=True)))

    def latency(self, data: Any, path: str) -> Latency:
        if not isinstance(data, Mapping):
            self.problem(path, "a mapping with kind: fixed | uniform | normal | trace", data)
            return Latency()
        self.unknown_keys(data, _LATENCY_KEYS, f"{path}.")
        kind = data.get("kind", "fixed")
        if kind not in LATENCY_KINDS:
            self.problem(f"{path}.kind", f"one of {', '.join(LATENCY_KINDS)}", kind)
            return Latency()
        lat = Latency(kind=kind, ms=self.number(data, "ms", path, 0.0, lo=0.0),
                      min_ms=self.number(data, "min_ms", path, 0.0, lo=0.0),
                      max_ms=self.number(data, "max_ms", path, 0.0, lo=0.0),
                      std_ms=self.number(data, "std_ms", path, 0.0, lo=0.0),
                      trace_ms=self.trace(data, path) if kind == "trace" else (),
                      jitter_ms=self.number(data, "jitter_ms", path, 0.0, lo=0.0))
        if kind == "uniform" and lat.max_ms < lat.min_ms:
            self.problem(f"{path}.max_ms", f"a number >= min_ms ({lat.min_ms})", lat.max_ms)
        return lat

    def trace(self, data: Mapping[str, Any], path: str) -> tuple[float, ...]:
        if "trace_file" in data:
            file = self.base_dir / str(data["trace_file"])
            try:
                values = [float(v) for v in read_text(file, "latency trace file").split()]
            except ValueError as exc:  # a ConfigError (unreadable, not a regular file, too large) names the file
                got = str(exc) if isinstance(exc, ConfigError) else f"{file}: {exc}"
                self.problem(f"{path}.trace_file", "a readable file of one latency (ms) per line", got)
                return ()
        else:
            values = data.get("trace_ms")
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in values):
            self.problem(f"{path}.trace_ms", "a non-empty list of latencies >= 0 (ms), or trace_file", values)
            return ()
        return tuple(float(v) for v in values)

    def loss(self, data: Any, path: str) -> Loss:
        if not isinstance(data, Mapping):
            self.problem(path, "a mapping with model: bernoulli | gilbert_elliott", data)
            return Loss()
        self.unknown_keys(data, _LOSS_KEYS, f"{path}.")
        model = data.get("model", "bernoulli")
        if model not in LOSS_MODELS:
            self.problem(f"{path}.model", f"one of {', '.join(LOSS_MODELS)}", model)
            return Loss()
        prob = {"lo": 0.0, "hi": 1.0}
        return Loss(model=model, rate=self.number(data, "rate", path, 0.0, **prob),
                    p_good_bad=self.number(data, "p_good_bad", path, 0.0, **prob),
                    p_bad_good=self.number(data, "p_bad_good", path, 1.0, **prob),
                    loss_good=self.number(data, "loss_good", path, 0.0, **prob),
                    loss_bad=self.number(data, "loss_bad", path, 1.0, **prob))

    def outages(self, data: Any, path: str) -> tuple[tuple[float, float], ...]:
        windows = []
        if not isinstance(data, list):
            self.problem(path, "a list of [start_s, end_s] windows", data)
            return ()
        for i, window in enumerate(data):
            ok = (isinstance(window, (list, tuple)) and len(window) == 2
                  and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in window)
                  and 0 <= window[0] < window[1])
            if not ok:
                self.problem(f"{path}[{i}]", "[start_s, end_s] with 0 <= start < end", window)
                continue
            windows.append((float(window[0]), float(window[1])))
        return tuple(windows)

    def message_id(self, key: Any, path: str) -> int | None:
        if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < 2 ** 24:
            return key
        if isinstance(key, str) and key in _MSG_IDS:
            return _MSG_IDS[key]
        close = difflib.get_close_matches(str(key), list(_MSG_IDS), n=1)
        self.problem(f"{path}.{key}", "a MAVLink message name or id" + (f" (did you mean {close[0]!r}?)" if close else ""),
                     key)
        return None

    def number(self, data: Mapping[str, Any], key: str, path: str, default: float, lo: float = -math.inf,
               hi: float = math.inf, integer: bool = False) -> float:
        value = data.get(key, default)
        kind = "an integer" if integer else "a number"
        valid = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) \
            and lo <= value <= hi and (not integer or float(value).is_integer())
        if not valid:
            bounds = f" in [{lo:g}, {hi:g}]" if math.isfinite(hi) else f" >= {lo:g}"
            self.problem(f"{path}.{key}", kind + bounds, value)
            return default
        return float(value)

    def boolean(self, data: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            self.problem(f"{path}.{key}", "true or false", value)
            return default
        return value
