"""Orchestration: trial loops, the judge, campaigns, safety, the `hil` CLI and the pytest plugin.

`version()` is the installed harness's version (`hil --version`, the pytest plugin's JUnit properties).
"""

import importlib.metadata


def version() -> str:
    """The installed quad-hil's version (the source tree's when it is not installed)."""
    try:
        return importlib.metadata.version("quad-hil")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"
