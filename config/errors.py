"""The one error of configuration files."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration file (or value) is invalid. `problems` holds one line per error, each naming
    the file, the field path and what was expected; str() joins them."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))
