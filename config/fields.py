"""Reading the fields of a configuration file with errors a user can act on.

Every configuration file (missions, suites, fault schedules, campaigns, vehicle, link and compute
profiles) is validated with these pieces, so every error has the same shape,
``FILE: FIELD.PATH: expected WHAT, got VALUE``, with a did-you-mean for unknown fields, and every
problem in a file is collected before anything is raised (a user fixes a file in one pass; nothing
half-validated is returned).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from config.errors import ConfigError


class Invalid(Exception):
    """Raised by a field parser; the message says what was expected."""


@dataclass(frozen=True)
class Field:
    """How to read one YAML field: what it should be, and a parser that raises `Invalid`."""

    expect: str
    parse: Callable[[Any], Any]
    required: bool = True
    default: Any = None


class Problems:
    """Collects error lines for one source so they can all be reported at once."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, path: str, message: str) -> None:
        """Record a problem at a field path (e.g. ``waypoints[2].alt``)."""
        self.lines.append(f"{self.source}: {path}: {message}")

    def invalid(self, path: str, expectation: str, value: Any) -> None:
        """Record a value that is not what `expectation` describes."""
        self.add(path, f"expected {expectation}, got {shown(value)}")

    def raise_if_any(self) -> None:
        """Raise one `ConfigError` holding every problem recorded so far."""
        if self.lines:
            raise ConfigError(self.lines)


def shown(value: Any, limit: int = 40) -> str:
    """A value as an error message quotes it: its repr, cut to `limit` characters (a file may hold megabytes)."""
    text = repr(value) if not isinstance(value, (list, dict)) or len(value) < 100 else f"<{type(value).__name__} of {len(value)}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_number(value: Any) -> bool:
    """A finite int or float; YAML's booleans are not numbers here (Python would treat them as 1/0)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def number(
    meaning: str,
    *,
    above: float | None = None,
    at_least: float | None = None,
    at_most: float | None = None,
    required: bool = True,
    default: float | None = None,
) -> Field:
    """A finite number with optional bounds; `meaning` (units) goes into every message."""
    if above is not None:
        expect = f"a number > {above:g} ({meaning})"
    elif at_least is not None:
        expect = f"a number >= {at_least:g} ({meaning})"
    else:
        expect = f"a number ({meaning})"

    def parse(value: Any) -> float:
        if not is_number(value):
            raise Invalid(expect)
        if (above is not None and value <= above) or (at_least is not None and value < at_least):
            raise Invalid(expect)
        if at_most is not None and value > at_most:
            raise Invalid(f"a number <= {at_most:g} ({meaning}; sanity limit)")
        return float(value)

    return Field(expect, parse, required, default)


def integer(meaning: str, *, at_least: int, at_most: int | None = None, required: bool = True,
            default: int | None = None) -> Field:
    """A whole number in a range."""
    upper = f" and <= {at_most}" if at_most is not None else ""
    expect = f"an integer >= {at_least}{upper} ({meaning})"

    def parse(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid(expect)
        if value < at_least or (at_most is not None and value > at_most):
            raise Invalid(expect)
        return value

    return Field(expect, parse, required, default)


def choice(options: tuple[str, ...], *, required: bool = True, default: str | None = None) -> Field:
    """One of a fixed set of strings."""
    expect = "one of " + ", ".join(options)

    def parse(value: Any) -> str:
        if isinstance(value, bool):
            # YAML 1.1 reads unquoted off/on/yes/no as booleans, a trap for options like "off".
            raise Invalid(f"{expect} (quote the value: YAML reads unquoted off/on/yes/no as true/false)")
        if value not in options:
            raise Invalid(expect)
        return value

    return Field(expect, parse, required, default)


def text(meaning: str, *, required: bool = True, default: str | None = None) -> Field:
    """A non-empty string."""
    expect = f"a non-empty string ({meaning})"

    def parse(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise Invalid(expect)
        return value

    return Field(expect, parse, required, default)


def flag(meaning: str, default: bool) -> Field:
    """An optional true/false."""
    expect = f"true or false ({meaning})"

    def parse(value: Any) -> bool:
        if not isinstance(value, bool):
            raise Invalid(expect)
        return value

    return Field(expect, parse, required=False, default=default)


def read_fields(
    mapping: Mapping[Any, Any],
    fields: Mapping[str, Field],
    prefix: str,
    problems: Problems,
    nested: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Parse the scalar fields of one mapping, recording unknown, missing and invalid ones.

    `prefix` is the field path of the mapping itself including its trailing dot (``""`` at the top
    level). `nested` names fields the caller reads itself; they are allowed but not parsed here. A field
    that is absent gets its default; one that is invalid is left out (callers test for it), so a caller
    that reads on before `raise_if_any` uses ``.get``.
    """
    allowed = sorted([*fields, *nested])
    for key in mapping:
        if key not in allowed:
            problems.add(f"{prefix}{key}", f"unknown field ({did_you_mean(str(key), allowed)}allowed: "
                                           f"{', '.join(allowed)})")
    values: dict[str, Any] = {}
    for key, field in fields.items():
        if key not in mapping:
            if field.required:
                problems.add(f"{prefix}{key}", f"missing required field, expected {field.expect}")
            values[key] = field.default
            continue
        try:
            values[key] = field.parse(mapping[key])
        except Invalid as invalid:
            problems.invalid(f"{prefix}{key}", str(invalid), mapping[key])
    return values


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """``"did you mean X? "`` for the known word closest to a mistyped one, or "" when none is close."""
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"did you mean {close[0]}? " if close else ""


def mapping_entries(entries: Any, field: str, shape: str, problems: Problems) -> Iterator[tuple[str, dict]]:
    """(path, entry) for each mapping of a list field; a list that is not one, or an entry that is not a
    mapping, is reported (`shape` says what a mapping holds, e.g. "{north, east, alt}") and skipped."""
    if not isinstance(entries, list) or not entries:
        problems.invalid(field, f"a non-empty list of {shape}", entries)
        return
    for index, entry in enumerate(entries):
        path = f"{field}[{index}]"
        if isinstance(entry, dict):
            yield path, entry
        else:
            problems.invalid(path, f"a mapping {shape}", entry)
