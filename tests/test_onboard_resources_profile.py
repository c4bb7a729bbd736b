"""Resource sampler (psutil, and jtop through a MOCKED jtop module: no Jetson here) and `hil profile`."""

from __future__ import annotations

import sys
import types


from hil.cli import main
from records.record import TrialRecorder
from onboard.resources import ResourceSampler
from profiles.compute import load_compute_profile


class ListRecorder:
    def __init__(self):
        self.rows = []

    def append(self, table, row):
        self.rows.append((table, row))


async def test_psutil_sampler_records_cpu_per_core_and_memory(monkeypatch):
    monkeypatch.setitem(sys.modules, "jtop", None)  # make sure a real jtop is not picked up
    recorder = ListRecorder()
    async with ResourceSampler(recorder, interval_s=0.01) as sampler:
        row = sampler.sample()
    assert sampler.source == "psutil"
    assert "cpu0_pct" in row and row["mem_used_mb"] > 0 and row["process_rss_mb"] > 0


async def test_jtop_numbers_are_recorded_when_jetson_stats_is_installed(monkeypatch):
    """jtop is MOCKED here: a fake module with jetson-stats' `jtop` class shape (start, stats, close)."""

    class FakeJtop:
        closed = False

        def start(self):
            pass

        @property
        def stats(self):
            return {"GPU": 41.0, "EMC": 12, "Power TOT": 7315, "Temp GPU": 48.5, "uptime": "1 day", "fan": None}

        def close(self):
            FakeJtop.closed = True

    monkeypatch.setitem(sys.modules, "jtop", types.SimpleNamespace(jtop=FakeJtop))
    async with ResourceSampler(ListRecorder()) as sampler:
        row = sampler.sample()
    assert sampler.source == "jtop+psutil"
    assert row["jtop_gpu"] == 41.0 and row["jtop_emc"] == 12.0 and row["jtop_power_tot"] == 7315.0
    assert "jtop_uptime" not in row and "cpu0_pct" in row
    assert FakeJtop.closed


def _record(path, plan_ms: float, map_ms: float) -> None:
    with TrialRecorder(path, config={}, target="test") as recorder:
        for cycle in range(20):
            for stage, ms in (("map", map_ms), ("plan", plan_ms), ("sense", 1.0)):
                recorder.append("timing", {"cycle": cycle, "stage": stage, "dur_ns": int(ms * 1e6),
                                           "emulated_ns": int(ms * 2e6), "t_vehicle": cycle * 0.1})
        recorder.finish("success")


def test_hil_profile_prints_a_table5_like_table_with_ratios_and_saves_a_profile(tmp_path, capsys):
    _record(tmp_path / "desktop", plan_ms=2.0, map_ms=1.0)
    _record(tmp_path / "board", plan_ms=7.0, map_ms=5.0)
    saved = tmp_path / "my_board.yaml"
    assert main(["timing", str(tmp_path / "desktop"), str(tmp_path / "board"), "--save", "my_board",
                 "--out", str(saved)]) == 0
    text = capsys.readouterr().out
    lines = {line.split()[0]: line for line in text.splitlines() if line.startswith(("T_", "sense"))}
    assert set(lines) == {"T_map", "T_plan", "T_tot", "sense"}
    assert lines["T_plan"].split()[-1] == "3.50x" and lines["T_map"].split()[-1] == "5.00x"
    assert lines["T_tot"].split()[-1] == "4.00x" and lines["sense"].split()[-1] == "1.00x"
    profile = load_compute_profile(saved)
    assert profile.factors == {"map": 5.0, "plan": 3.5, "control": 1.0}
    assert main(["profile", str(tmp_path / "desktop"), "--emulated"]) == 0  # the old name, an alias
    assert "4.000" in capsys.readouterr().out  # plan, emulated at 2x


def test_hil_timing_names_a_directory_that_is_not_a_record(tmp_path, capsys):
    assert main(["timing", str(tmp_path)]) == 2
    assert "no table 'timing'" in capsys.readouterr().err
