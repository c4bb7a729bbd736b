"""The campaign report in a real headless browser (Debian's chromium, installed by `make test`): it
renders without a console error, its interactive plots draw, and a failed trial's page is reachable
from the overview and draws what a PX4 engineer debugs with: the flight against its setpoints, the
map, the actuator outputs and the message log. The overview and every page load one Plotly file."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reports.render import write_report
from reports.results import load_results

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# As root on a closed network: no sandbox, no background connections (they are refused, many at a time).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=8000"]

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium: `make test` installs Debian's chromium "
                                                         "where the machine allows (apt-get install chromium)")


def open_page(url: str, profile: Path, screenshot: Path | None = None) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran, and every console message it logged."""
    extra = [f"--screenshot={screenshot}", "--window-size=1400,1600"] if screenshot else ["--dump-dom"]
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url], capture_output=True,
                          text=True, timeout=120)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def test_the_report_renders_in_a_browser_and_a_failed_trial_is_one_click_away(tmp_path):
    campaign = tmp_path / "c.yaml"
    campaign.write_text(yaml.safe_dump({"name": "browser", "missions": [{"scene": "forest", "configs": [0]}],
                                        "targets": ["lockstep"], "planners": ["straight", "avoid"]}))
    run = subprocess.run([sys.executable, "-m", "hil", "run", str(campaign), "--out", str(tmp_path / "run"),
                          "--no-progress"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    results = load_results(tmp_path / "run")
    assert set(results["outcome"]) >= {"success"} and (results["outcome"] != "success").any()
    _, page = write_report(results, tmp_path / "report")

    # One copy of Plotly in the folder, and the overview and the pages load that one file.
    folder = page.parent
    scripts = [path for path in folder.rglob("*.js") if "plotly" in path.name]
    assert [p.relative_to(folder) for p in scripts] == [Path("report_files/plotly.min.js")], scripts
    pages = sorted((folder / "trials").glob("*.html"))
    assert len(pages) == len(results)
    for html_file in (page, *pages):
        text = html_file.read_text()
        sources = re.findall(r"<script src='([^']+)'>", text)
        assert [(html_file.parent / s).resolve() for s in sources] == [scripts[0].resolve()], (html_file, sources)
        assert len(text) < 1_000_000, f"{html_file.name} carries {len(text)} bytes: Plotly inline again?"

    dom, console = open_page(page.as_uri(), tmp_path / "profile1")
    assert not console, console
    assert "Trials that did not succeed" in dom and "main-svg" in dom  # Plotly drew the timing histogram
    failed = results.loc[results["outcome"] != "success", "trial_id"].iloc[0]
    link = re.search(rf"href=\"(trials/{re.escape(failed)}\.html)\"", dom)
    assert link, f"no link to {failed} in the overview"

    trial_dom, console = open_page((page.parent / link.group(1)).as_uri(), tmp_path / "profile2")
    assert not console, console
    assert "collision" in trial_dom  # the reason is there
    for plot in ("flight", "map", "actuators", "battery", "timing"):  # each drawn by Plotly into its div
        drawn = re.search(rf"<div id=\"{plot}\"[^>]*>(.*?)</div>\s*<script", trial_dom, re.S)
        assert drawn and "main-svg" in drawn.group(1), f"plot {plot!r} not drawn"
    flight = re.search(r"<div id=\"flight\".*?</div>\s*<script", trial_dom, re.S).group(0)
    for trace in ("north planner command", "vn setpoint (vehicle)", "roll setpoint", "p setpoint"):
        assert trace in flight, f"no {trace!r} trace in the flight plot"
    assert "SERVO_OUTPUT_RAW" in trial_dom and "output 4" in trial_dom  # four motors' outputs
    messages = re.search(r"<table id=\"message-log\">(.*?)</table>", trial_dom, re.S)
    assert messages and "Armed by external command" in messages.group(1) and "verdict" in messages.group(1)
    assert "Not in this record: a ground truth" in trial_dom  # no truth on lockstep: said, not drawn
    params = re.search(r"<table id=\"params\">(.*?)</table>", trial_dom, re.S)  # what differs from PX4's defaults
    assert params and "PX4 default" in params.group(1) and "SIH_IXX" not in params.group(1)  # the same inertia
    shot = tmp_path / "trial.png"
    open_page((page.parent / link.group(1)).as_uri(), tmp_path / "profile3", screenshot=shot)
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one
