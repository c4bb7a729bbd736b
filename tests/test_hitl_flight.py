"""A mission flown on PX4 as a HITL board (issue 32's done-when): `hil fly <mission> --target px4-hitl --arm`, the
path a lab takes with a board on the desk, on v1.16.1 and on every PX4_SMOKE_DIRS build; and a HIL test of the
pytest plugin flown on the board as on any bench board (`--hil-target px4-hitl --hil-arm`).

The board has no lockstep: each flight takes its mission's time in real time plus PX4's start, its estimator's
settling and the ULog's download over the serial line (about 34 kB/s, and the board logs about 23 kB a flight
second), over a minute. So the mission is demo_square made small (tests/missions/short_square.yaml), and the builds'
boards fly side by side, each its own PX4 on its own pseudo-terminal, instead of one after the other. Every wait
inside `hil fly` is on the board's own clock or bounded by its process (a loaded machine stretches the run, it does
not fail it); the subprocesses' timeout is only a net for a hung harness.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pyulog import ULog

from records.record import read_events, read_table

from .px4_builds import MAIN_BUILD, SMOKE_BUILDS, needs_px4
from .test_pytest_plugin import HOVER_TEST

ROOT = Path(__file__).resolve().parents[1]
MISSION = ROOT / "tests" / "missions" / "short_square.yaml"
_PLAN = yaml.safe_load(MISSION.read_text())
ALTITUDE_M, WAYPOINTS = _PLAN["start"]["alt"], len(_PLAN["waypoints"])
NET_S = 1800.0  # wall seconds: a harness that hangs, not a slow machine (that stretches the board's clock too)


@needs_px4
@pytest.mark.slow
def test_hil_fly_flies_a_mission_on_the_hitl_board_of_every_build(tmp_path):
    """On each build, the trial succeeds through the hardware path (pre-flight gates, the parameter journal, --arm);
    PX4's console shows one MAVLink link, on the pseudo-terminal at 921600 baud, and no simulator but the clock
    module; the serial line carried the sensors within its capacity; and the board's ULog of the flight came back
    over that line."""
    builds = [MAIN_BUILD, *SMOKE_BUILDS]
    # Each record and output named after its build, which an assertion's message then shows. The output goes to a
    # file: a pipe read only after the other flight ends could fill and stall a harness whose board flies on.
    records = [tmp_path / f"record-{i}-{Path(build).name}" for i, build in enumerate(builds)]
    outputs = [tmp_path / f"{record.name}.txt" for record in records]
    flights = []
    try:
        for build, record, output in zip(builds, records, outputs):
            with output.open("w") as out:
                flights.append(subprocess.Popen([sys.executable, "-m", "hil", "fly", str(MISSION), "--target",
                                                 "px4-hitl", "--arm", "--px4-dir", build, "--record-dir", str(record)],
                                                cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT))
        for flight in flights:
            flight.wait(timeout=NET_S)
    finally:
        for flight in flights:
            if flight.poll() is None:
                flight.kill()
                flight.wait()
    for build, flight, output, record in zip(builds, flights, outputs, records):
        assert flight.returncode == 0, (build, output.read_text()[-6000:])
        _check_flight(record)


def _check_flight(record: Path) -> None:
    events = read_events(record)
    kinds = [e["kind"] for e in events]
    assert kinds[-1] == "trial_finished" and events[-1]["outcome"] == "success", events[-3:]
    assert kinds.count("mission_item_reached") >= WAYPOINTS and "landed" in kinds

    console = (record / "px4-console.log").read_text()
    links = re.findall(r"\[mavlink\] mode: \w+, data rate: \d+ B/s on (\S+) @ (\d+)B", console)
    assert len(links) == 1 and links[0][0].startswith("/dev/pts/") and links[0][1] == "921600", links
    assert not re.search(r"udp|simulator_sih|sensor_\w+_sim|gz_bridge", console, re.IGNORECASE)

    # PX4's estimate stays with the vehicle to the end, the log's download after the landing included (a cable
    # that held PX4's writes sent it to 133 m on the ground then: px4.hitl_board.SerialCable).
    telemetry = read_table(record, "telemetry")
    assert -telemetry["down"].min() < ALTITUDE_M + 3.0, -telemetry["down"].min()
    line = read_table(record, "serial_link").iloc[-1]
    assert line["baud"] == 921600 and 0 < line["up_B_s"] < line["capacity_B_s"]
    assert line["down_B_s"] < line["capacity_B_s"] and line["hil_sensor_sent_hz"] > 50

    kept = [e for e in events if e["kind"] == "ulog_kept"]
    assert kept, [e for e in events if e["kind"] == "ulog_unavailable"]
    ulog = Path(kept[0]["path"])
    # The download, not a copy of the board's disk: the harness keeps only the board's console.
    assert ulog.parent == record / "ulog" and [p.name for p in ulog.parent.glob("*.ulg")] == [ulog.name]
    assert kept[0]["method"] == "altitude-fit", kept  # aligned with the harness's clock on PX4's own altitude
    flown = ULog(str(ulog), ["vehicle_local_position"]).get_dataset("vehicle_local_position")
    assert max(-flown.data["z"]) > ALTITUDE_M - 1.0  # the mission's climb, in PX4's own estimate


@needs_px4
@pytest.mark.slow
def test_the_pytest_plugin_flies_the_hitl_board_only_with_hil_arm(pytester, monkeypatch):
    """Without --hil-arm a HIL test on px4-hitl is skipped before the board starts, as on any board; with it, the
    test flies (arms through the bench's gate, takes off and hovers on the board's estimate) and the record has
    the serial line's figures."""
    monkeypatch.setenv("PX4_DIR", MAIN_BUILD)
    pytester.makepyfile(test_hover=HOVER_TEST.format(bound="0.6"))
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    records = pytester.path / "records"
    skipped = pytester.runpytest_subprocess("--hil-target", "px4-hitl", "--hil-record-dir", str(records), "-rs")
    skipped.assert_outcomes(skipped=1)
    assert "add --hil-arm" in skipped.stdout.str()
    flown = pytester.runpytest_subprocess("--hil-target", "px4-hitl", "--hil-arm", "--hil-record-dir", str(records),
                                          "-p", "no:randomly", timeout=NET_S)
    flown.assert_outcomes(passed=1)
    [record] = [d for d in records.iterdir() if (d / "events.jsonl").exists()]
    line = read_table(record, "serial_link").iloc[-1]
    assert line["baud"] == 921600 and line["hil_sensor_sent_hz"] > 50
