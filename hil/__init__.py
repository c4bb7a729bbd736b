"""Orchestration: trial loops, the judge, campaigns, safety, the `hil` CLI and the pytest plugin.

`version()` is the installed harness's version (`hil --version`, the pytest plugin's JUnit properties).
"""


def version() -> str:
    """The installed quad-hil's version (the source tree's when it is not installed)."""
    import importlib.metadata  # 20-30 ms that every `hil` command but --version would pay on import

    try:
        return importlib.metadata.version("quad-hil")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"
