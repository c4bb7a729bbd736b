"""The trial record survives what trials do: run long, crash, get killed."""

from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import records.record
from records.record import TrialRecorder, read_events, read_manifest, read_table

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG = {"mission": "missions/examples/demo_square.yaml", "profile": "x500"}


def recorder(record_dir: Path, flush_interval_s: float = 60.0) -> TrialRecorder:
    return TrialRecorder(record_dir, config=CONFIG, target="sim", seed=7, flush_interval_s=flush_interval_s)


def part_files(record_dir: Path, table: str) -> list[Path]:
    return sorted((record_dir / "tables" / table).glob("part-*.parquet"))


def test_manifest_is_written_at_start(tmp_path: Path) -> None:
    with recorder(tmp_path / "trial") as rec:
        manifest = read_manifest(rec.record_dir)
        assert manifest["status"] == "running"
        assert (manifest["config"], manifest["seed"], manifest["target"]) == (CONFIG, 7, "sim")
        assert manifest["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
        assert "numpy" in manifest["versions"]
        assert manifest["started"]["monotonic_ns"] <= time.monotonic_ns()
        rec.finish("success")


def test_rows_are_flushed_as_parts_once_the_interval_passes(tmp_path: Path) -> None:
    interval = 0.2
    with recorder(tmp_path / "trial", flush_interval_s=interval) as rec:
        rec.append("telemetry", {"north": 0.0})
        assert part_files(rec.record_dir, "telemetry") == []
        time.sleep(interval * 1.5)
        rec.append("telemetry", {"north": 1.0})
        assert len(part_files(rec.record_dir, "telemetry")) == 1
        assert read_table(rec.record_dir, "telemetry")["north"].tolist() == [0.0, 1.0]

        rec.append("telemetry", {"north": 2.0})
        rec.flush()
        assert len(part_files(rec.record_dir, "telemetry")) == 2
        rec.finish("success")


def test_an_infinite_interval_writes_the_tables_once_at_finish(tmp_path: Path, monkeypatch) -> None:
    hours = itertools.count(step=3600 * 10**9)  # the recorder's clock runs an hour a reading
    monkeypatch.setattr(records.record, "now_ns", lambda: next(hours))
    with recorder(tmp_path / "trial", flush_interval_s=math.inf) as rec:
        for north in range(5):
            rec.append("telemetry", {"north": float(north)})
            rec.flush_if_due()
        assert not (rec.record_dir / "tables" / "telemetry").exists()
        rec.finish("success")
    assert read_table(tmp_path / "trial", "telemetry")["north"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_finish_merges_parts_and_records_outcome(tmp_path: Path) -> None:
    with recorder(tmp_path / "trial") as rec:
        for i in range(5):
            rec.append("telemetry", {"i": i, "north": i * 0.5})
            rec.append("setpoints", {"i": i, "label": f"wp{i}", "armed": i % 2 == 0})
            if i % 2:
                rec.flush()
        rec.finish("success", {"path_length_m": 12.5})

    record = tmp_path / "trial"
    assert not (record / "tables" / "telemetry").exists()
    assert (record / "tables" / "telemetry.parquet").is_file()
    telemetry = read_table(record, "telemetry")
    setpoints = read_table(record, "setpoints")
    assert telemetry["i"].tolist() == list(range(5))
    assert telemetry["t_ns"].is_monotonic_increasing
    assert setpoints["label"].tolist() == [f"wp{i}" for i in range(5)]
    assert setpoints["armed"].tolist() == [i % 2 == 0 for i in range(5)]
    manifest = read_manifest(record)
    assert manifest["status"] == "finished"
    assert manifest["outcome"] == "success"
    assert manifest["summary"] == {"path_length_m": 12.5}
    assert manifest["tables"] == {"telemetry": 5, "setpoints": 5}
    assert [e["kind"] for e in read_events(record)] == ["trial_started", "trial_finished"]


def test_rows_never_flushed_go_into_the_merged_table_and_a_finished_record_takes_no_more(tmp_path: Path) -> None:
    # finish() writes rows still buffered straight into the merged file, with no part of their own.
    with recorder(tmp_path / "trial") as rec:
        rec.append("telemetry", {"i": 0})
        with pytest.raises(TypeError):
            rec.append("refused", {"i": object()})
        rec.finish("success")
        for table in ("telemetry", "refused", "new"):
            with pytest.raises(RuntimeError, match="not running"):
                rec.append(table, {"i": 1})
    record = tmp_path / "trial"
    assert read_table(record, "telemetry")["i"].tolist() == [0]
    assert not (record / "tables" / "telemetry").exists()
    assert read_manifest(record)["tables"] == {"telemetry": 1}


def test_column_types_stay_stable_across_parts(tmp_path: Path) -> None:
    with recorder(tmp_path / "trial") as rec:
        rec.append("telemetry", {"north": 1.5, "count": 1})
        rec.flush()
        rec.append("telemetry", {"north": 2, "count": 2, "mode": "hold"})  # int into a float column
        with pytest.raises(TypeError, match="count"):
            rec.append("telemetry", {"count": 2.5})
        rec.flush()
        schemas = [pq.read_schema(part) for part in part_files(rec.record_dir, "telemetry")]
        assert schemas[0].field("north").type == schemas[1].field("north").type
        assert str(schemas[1].field("count").type) == "int64"
        rec.finish("success")
    table = read_table(tmp_path / "trial", "telemetry")
    assert table["north"].tolist() == [1.5, 2.0]
    assert table["mode"].isna().tolist() == [True, False]  # a column that appears later is null before


def test_rows_alike_to_earlier_ones_are_checked_as_strictly(tmp_path: Path) -> None:
    # Rows shaped like one already taken skip the column-by-column check (recorder._conform): those
    # that differ in any column's type are still converted or refused.
    import numpy as np

    with recorder(tmp_path / "trial") as rec:
        for k in range(3):
            rec.append("telemetry", {"north": 0.5 * k, "count": k, "mode": "hold"})
        rec.append("telemetry", {"north": 7, "count": np.int64(8), "mode": None})  # converted, null
        with pytest.raises(TypeError, match="count"):
            rec.append("telemetry", {"north": 1.0, "count": 2.5, "mode": "hold"})
        with pytest.raises(TypeError, match="mode"):
            rec.append("telemetry", {"north": 1.0, "count": 2, "mode": 3})
        rec.append("telemetry", {"north": 9.0, "count": 10, "mode": "land"})
        rec.finish("success")
    table = read_table(tmp_path / "trial", "telemetry")
    assert table["north"].tolist() == [0.0, 0.5, 1.0, 7.0, 9.0]
    assert table["count"].tolist() == [0, 1, 2, 8, 10] and str(table["count"].dtype) == "int64"
    assert table["mode"].tolist()[:3] == ["hold"] * 3 and table["mode"].isna().tolist()[3]


def test_caller_timestamps_are_kept_and_missing_ones_filled(tmp_path: Path) -> None:
    before = time.monotonic_ns()
    with recorder(tmp_path / "trial") as rec:
        rec.append("telemetry", {"t_ns": 42, "north": 0.0})
        rec.append("telemetry", {"north": 1.0})
        rec.event("note", t_ns=43, text="given")
        rec.finish("success")
    t_ns = read_table(tmp_path / "trial", "telemetry")["t_ns"].tolist()
    assert t_ns[0] == 42 and before <= t_ns[1] <= time.monotonic_ns()
    note = next(e for e in read_events(tmp_path / "trial") if e["kind"] == "note")
    assert note["t_ns"] == 43


def test_exception_marks_crashed_and_keeps_buffered_rows(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="motor 3 lost"):
        with recorder(tmp_path / "trial") as rec:
            rec.append("telemetry", {"north": 1.0})
            raise RuntimeError("motor 3 lost")
    manifest = read_manifest(tmp_path / "trial")
    assert manifest["status"] == "crashed"
    assert "motor 3 lost" in manifest["error"]
    assert read_table(tmp_path / "trial", "telemetry")["north"].tolist() == [1.0]
    assert read_events(tmp_path / "trial")[-1]["kind"] == "trial_crashed"


def test_leaving_without_finish_is_not_a_finished_trial(tmp_path: Path) -> None:
    with recorder(tmp_path / "trial"):
        pass
    manifest = read_manifest(tmp_path / "trial")
    assert manifest["status"] == "crashed" and "finish()" in manifest["error"]


def test_an_existing_record_is_never_overwritten(tmp_path: Path) -> None:
    with recorder(tmp_path / "trial") as rec:
        rec.finish("success")
    with pytest.raises(FileExistsError):
        with recorder(tmp_path / "trial"):
            pass
    assert read_manifest(tmp_path / "trial")["status"] == "finished"


def test_events_are_durable_as_soon_as_written(tmp_path: Path) -> None:
    with recorder(tmp_path / "trial") as rec:
        rec.event("mode_change", mode="OFFBOARD", armed=True)
        events = read_events(rec.record_dir)  # read back while the trial is still running
        assert events[-1]["kind"] == "mode_change"
        assert events[-1]["mode"] == "OFFBOARD" and events[-1]["armed"] is True
        assert events[0]["t_ns"] <= events[-1]["t_ns"]
        rec.finish("success")


KILLED_TRIAL = textwrap.dedent(
    """
    import os, signal, sys, time
    from records.record import TrialRecorder

    record_dir, flushed_rows, buffered_rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    with TrialRecorder(record_dir, config={}, target="sim", flush_interval_s=0.02) as rec:
        for i in range(flushed_rows):
            rec.append("telemetry", {"i": i, "north": float(i)})
            time.sleep(0.002)  # long enough that several interval flushes happen on the way
        rec.flush()
        rec.event("about_to_die", rows=flushed_rows)
        for i in range(flushed_rows, flushed_rows + buffered_rows):
            rec.append("telemetry", {"i": i, "north": float(i)})
        os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_sigkill_mid_trial_leaves_a_readable_record(tmp_path: Path) -> None:
    record = tmp_path / "trial"
    flushed_rows, buffered_rows = 40, 5
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", KILLED_TRIAL, str(record), str(flushed_rows), str(buffered_rows)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr

    assert read_manifest(record)["status"] in {"running", "crashed"}
    assert not (record / "tables" / "telemetry.parquet").exists()
    parts = part_files(record, "telemetry")
    assert len(parts) > 1  # interval flushes happened before the explicit one
    for part in parts:
        pq.read_metadata(part)  # every part that has its final name is a complete parquet file

    # A torn write in progress at the kill leaves only a .tmp file, which readers ignore.
    (record / "tables" / "telemetry" / "part-999999.parquet.tmp").write_bytes(b"PAR1 torn")
    rows = read_table(record, "telemetry")["i"].tolist()
    # Every flushed row is there, in order; rows after the last flush may or may not be.
    assert rows == list(range(len(rows)))
    assert flushed_rows <= len(rows) <= flushed_rows + buffered_rows

    events = read_events(record)
    assert events[-1] == {**events[-1], "kind": "about_to_die", "rows": flushed_rows}


def test_events_file_with_a_torn_last_line_is_readable(tmp_path: Path) -> None:
    with recorder(tmp_path / "trial") as rec:
        rec.event("first")
        rec.finish("success")
    with open(tmp_path / "trial" / "events.jsonl", "a") as events:
        events.write(json.dumps({"t_ns": 1, "kind": "torn"})[:10])
    assert [e["kind"] for e in read_events(tmp_path / "trial")] == ["trial_started", "first", "trial_finished"]
