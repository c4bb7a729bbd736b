"""Finding vehicle profiles: the shipped ones by name, or any profile file by path.

Where profiles live: ``profiles/vehicles/*.yaml``. A file is either one profile (found by its
file name) or a library, a mapping whose ``profiles`` is a list (``flyingtrust.yaml``: all 36
platforms of FLYINGTRUST's Table I, found by each entry's ``name``). Names match regardless of
case, spaces and underscores.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, Mapping

from config.errors import ConfigError
from config.loading import load_yaml
from profiles.vehicle import profile_from_mapping, ProfileError, VehicleProfile

VEHICLES_DIR = Path(__file__).resolve().parent / "vehicles"


def _profile_key(name: str) -> str:
    # Names are matched the way people type them: case, spaces and underscores do not matter,
    # so "0.55kg-Quadrotor 1" finds "0.55kg-Quadrotor-1".
    return re.sub(r"[\s_]+", "-", name.strip()).lower()


def _display_path(path: Path) -> str:
    # Name shipped files the way a reader finds them in the repository.
    try:
        return str(path.resolve().relative_to(VEHICLES_DIR.parent.parent))
    except ValueError:
        return str(path)


def _read_yaml(path: Path) -> Any:
    try:
        return load_yaml(path, "vehicle profile")
    except ConfigError as exc:
        raise ProfileError(list(exc.problems)) from None


def _library_profiles(path: Path, data: Mapping[str, Any]) -> list[VehicleProfile]:
    """Every profile of a library file (a mapping whose ``profiles`` is a list), all validated."""
    source = _display_path(path)
    entries = data["profiles"]
    if not isinstance(entries, list) or not entries:
        raise ProfileError(f"{source}: profiles: expected a non-empty list of profiles")
    profiles: list[VehicleProfile] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(entries):
        where = f"{source}: profiles[{index}]"
        if not isinstance(entry, dict):
            raise ProfileError(f"{where}: expected a mapping of fields, got {type(entry).__name__}")
        if isinstance(entry.get("name"), str):
            where += f" ({entry['name']})"
        profile = profile_from_mapping(entry, where)
        key = _profile_key(profile.name)
        if key in seen:
            raise ProfileError(f"{where}: name: {profile.name!r} already used by profiles[{seen[key]}]")
        seen[key] = index
        profiles.append(profile)
    return profiles


def _shipped() -> dict[str, Path | VehicleProfile]:
    """Every shipped profile by key: single-profile files by path (loaded on demand), library entries loaded."""
    found: dict[str, Path | VehicleProfile] = {}
    for path in sorted(VEHICLES_DIR.glob("*.yaml")):
        library = _library_file(path, path.stat().st_mtime_ns)
        if library is None:
            found[_profile_key(path.stem)] = path
        else:
            for profile in library:
                found[_profile_key(profile.name)] = profile
    return found


@functools.lru_cache(maxsize=32)
def _library_file(path: Path, mtime_ns: int) -> tuple[VehicleProfile, ...] | None:
    # Parsing the 36-platform library takes ~100 ms, and campaigns load a profile per trial: keep
    # each file's parse until it changes on disk (mtime in the key).
    data = _read_yaml(path)
    if isinstance(data, dict) and "profiles" in data:
        return tuple(_library_profiles(path, data))
    return None


def library_profiles(category: str | None = None) -> list[VehicleProfile]:
    """The profiles of the shipped library files (FLYINGTRUST's Table I), optionally of one category."""
    profiles = [p for p in _shipped().values() if isinstance(p, VehicleProfile)]
    return [p for p in profiles if category is None or p.category == category]


def list_vehicle_profiles() -> list[str]:
    """Names of the profiles shipped in ``profiles/vehicles`` (single files and library entries)."""
    return sorted((p.name if isinstance(p, VehicleProfile) else p.stem for p in _shipped().values()),
                  key=_profile_key)


def load_vehicle_profile(name_or_path: str | Path) -> VehicleProfile:
    """Load a profile by name (a shipped file's stem or a library entry) or from a YAML file path."""
    text = str(name_or_path)
    is_name = isinstance(name_or_path, str) and "/" not in text and "\\" not in text \
        and not text.endswith((".yaml", ".yml"))
    if is_name:
        shipped = _shipped()
        found = shipped.get(_profile_key(text))
        if found is None:
            names = ", ".join(list_vehicle_profiles()) or "none"
            raise ProfileError(f"unknown vehicle profile {text!r} (available: {names}; "
                               "`hil profiles list` shows them as a table)")
        if isinstance(found, VehicleProfile):
            return found
        path = found
    else:
        path = Path(name_or_path)  # a missing file, or one that is not a regular file, is named by the reader
    source = _display_path(path)
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: expected a mapping of fields, got {type(data).__name__}")
    if "profiles" in data:
        raise ProfileError(f"{source}: a library of {len(data['profiles'] or [])} profiles; "
                           "load one of them by name instead")
    data = dict(data)
    data.setdefault("name", path.stem)
    return profile_from_mapping(data, source)
