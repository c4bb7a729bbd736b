"""The fast tier (`make test-fast`) keeps checking every package as tests come and go: each package the
project installs is imported by a module of the tier, and every module the tier names exists."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

from .conftest import FAST_MODULES, TESTS


def installed_packages() -> set[str]:
    """The project's top-level packages, as installed (`make` installs again when pyproject.toml changes)."""
    return set(importlib.metadata.distribution("quad-hil").read_text("top_level.txt").split())


def imported(path: Path) -> set[str]:
    """The top-level names a module imports (absolute imports only: relative ones are the tests' own)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_module_the_fast_tier_names_is_there():
    assert sorted(name for name in FAST_MODULES if not (TESTS / name).is_file()) == []


def test_every_package_is_checked_by_the_fast_tier():
    packages = installed_packages()
    assert {"hil", "px4", "missions"} <= packages  # the include list was read, not an empty set
    covered = set().union(*(imported(TESTS / name) for name in FAST_MODULES if (TESTS / name).is_file()))
    missing = sorted(packages - covered)
    assert not missing, (f"no module of the fast tier imports {', '.join(missing)}: add one that checks its core "
                         "in seconds to FAST_MODULES in tests/conftest.py")
