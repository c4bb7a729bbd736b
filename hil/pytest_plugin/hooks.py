"""The plugin's hooks: parametrizing HIL tests over targets, profiles and repetitions, naming the trial
record in a failure's report, and the pass-rate summary of repeated runs."""

from __future__ import annotations

import hashlib
import inspect
import re

import pytest

from hil.pytest_plugin.config import CONFIG, target_kind
from hil.pytest_plugin.fixtures import RECORD


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    """An async HIL test runs on pytest-asyncio's loop whatever the project's asyncio_mode (strict is
    pytest-asyncio's default, where an unmarked async test fails only after the vehicle is up): a
    coroutine test marked `hil` or taking a `hil_*` fixture gets the asyncio mark before collection."""
    if not (inspect.iscoroutinefunction(obj) and collector.funcnamefilter(name)):
        return
    marks = {mark.name for mark in getattr(obj, "pytestmark", [])}
    uses_hil = "hil" in marks or any(p.startswith("hil_") for p in inspect.signature(obj).parameters)
    if uses_hil and "asyncio" not in marks:
        pytest.mark.asyncio(obj)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("hil")
    if marker is None or "hil_vehicle" not in metafunc.fixturenames:
        return
    profiles = marker.kwargs.get("profiles")
    if profiles:
        metafunc.parametrize("hil_profile", list(profiles), ids=[re.sub(r"\W+", "_", p) for p in profiles])
    cfg = metafunc.config.stash[CONFIG]
    if len(cfg.targets) > 1:
        # A test made for some kinds of target is generated only for those (not generated and skipped);
        # one that fits none of the chosen targets still runs once and says why it skips.
        kinds = marker.kwargs.get("targets")
        targets = [t for t in cfg.targets if not kinds or target_kind(cfg.entry(t).target) in kinds] or cfg.targets
        metafunc.parametrize("hil_target", targets, ids=targets)
    repeat = cfg.repeat
    if repeat > 1:
        metafunc.parametrize("hil_repeat", range(repeat), ids=[f"run{i}" for i in range(repeat)])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    report = outcome.get_result()
    record = item.stash.get(RECORD, None)
    if report.when == "call":
        item._hil_call_passed = report.passed
        if record is not None and record.rows:
            # What the test flew, as the test ended: the pass-rate summary counts runs that flew it to the last
            # bit as one observation, and the JUnit XML (the teardown report's properties) keeps it.
            flight = [("hil_flight", flight_digest(record.rows)), ("hil_snapshots", str(len(record.rows)))]
            report.user_properties.extend(flight)
            item.user_properties.extend(flight)
    if record is not None and report.failed:
        lines = [f"trial record: {record.path}"]
        if record.failed:
            lines.append("failed metrics: " + ", ".join(f"{m} = {record.metrics[m]:.4g}" for m in record.failed))
        report.sections.append(("hil", "\n".join(lines)))


def flight_digest(rows: list[dict]) -> str:
    """A flight's telemetry to the last bit (every snapshot's values, which repr writes exactly; not its harness
    stamps), as 16 hex digits: two runs with the same digest flew the same flight."""
    values = repr([[value for name, value in row.items() if name != "t_ns"] for row in rows])
    return hashlib.blake2b(values.encode(), digest_size=8).hexdigest()


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    cfg = config.stash.get(CONFIG, None)
    if cfg is None or cfg.repeat <= 1:
        return
    import pandas as pd

    from reports.stats import flakiness, observations

    rows = []
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        if report.when == "call" and "[" in report.nodeid and "run" in report.nodeid:
            case = re.sub(r"-?run\d+(?=\]|-)", "", report.nodeid).replace("[]", "")
            flight = dict(report.user_properties)
            rows.append({"case": case, "success": float(report.passed),
                         "snapshots": float(flight.get("hil_snapshots", "nan")), "flight": flight.get("hil_flight")})
    if not rows:
        return
    # A run without telemetry (no hil_vehicle) is its own observation, as a campaign trial that never flew.
    table = flakiness(observations(pd.DataFrame(rows), ["case"], ["snapshots", "flight"]), ["case"])
    varied = f"each run perturbed from --hil-seed {cfg.seed}" if cfg.perturb else "perturbation off"
    terminalreporter.section(f"HIL pass rates over {cfg.repeat} runs (95 % Wilson interval over distinct flights; "
                             f"{varied})")
    for row in table.itertuples():
        mark = "  flaky" if row.flaky else ""
        copies = f" of {row.trials} runs: identical runs count once" if row.trials > row.n else ""
        if row.n == 1 and row.trials > 1:
            rate = f"{row.pass_rate:6.0%} (1 observation: {row.trials} identical runs, no interval)"
        else:
            rate = f"{row.pass_rate:6.0%} [{row.low:.0%}, {row.high:.0%}]  n={row.n}{copies}"
        terminalreporter.write_line(f"{rate}  {row.case}{mark}")
