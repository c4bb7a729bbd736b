"""Records and the machine as hostile input, through the real `hil` command: broken trial records in a
finished campaign, two writers in one record directory, a full disk and a read-only one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from records.record import (MAX_MANIFEST_BYTES, TrialRecorder, UnreadableRecord, read_events, read_manifest,
                            read_table)

from .test_campaign import ROOT, _finish, hil, write_campaign

DEMO = ROOT / "missions" / "examples" / "demo_square.yaml"
EIGHT_TRIALS = {"missions": [{"scene": "forest", "configs": [0, 1]}], "repeats": 4}  # a few seconds in lockstep


def _stderr_line(result: subprocess.CompletedProcess) -> str:
    """The one line a refusal prints; fails on a traceback or on anything more."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def finished_campaign(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("campaign")
    campaign, out = write_campaign(root / "c.yaml", **EIGHT_TRIALS), root / "run"
    result = hil("run", str(campaign), "--out", str(out), "--no-progress", "--workers", "2")
    assert result.returncode == 0, result.stderr
    return out


def test_report_lists_the_unreadable_trials_with_why_and_reports_the_rest(finished_campaign, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(finished_campaign, out)
    truncated, binary, nested, missing, bad_table, *rest = sorted((out / "trials").iterdir())
    text = (truncated / "manifest.json").read_text()
    (truncated / "manifest.json").write_text(text[: len(text) // 3])
    (binary / "manifest.json").write_bytes(os.urandom(3000))
    (nested / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    (missing / "manifest.json").unlink()
    (bad_table / "tables" / "telemetry.parquet").write_bytes(os.urandom(5000))

    result = hil("report", str(out))
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("hil report: warning:")]
    assert len(warnings) == 5, result.stderr
    why = {"expected JSON": truncated, "expected UTF-8 text": binary, "levels of nesting": nested,
           "no manifest.json": missing, "expected a parquet table": bad_table}
    markdown, page = (out / "report.md").read_text(), (out / "report.html").read_text()
    for reason, trial in why.items():
        assert any(reason in line and trial.name in line for line in warnings), (reason, result.stderr)
        for report in (markdown, page):
            assert "Unreadable trial records" in report
            assert any(reason in line and trial.name in line for line in report.splitlines()), reason
    # The four trials whose manifests read are reported; the one with a broken table among them, without a page.
    assert f"{len(rest) + 1} trials:" in markdown
    pages = {path.stem for path in (out / "trials").glob("*.html")}
    assert pages == {trial.name for trial in rest}


def test_reading_a_record_is_bounded_in_size_and_nesting(tmp_path):
    record = tmp_path / "record"
    with TrialRecorder(record, config={}, target="t") as recorder:
        recorder.append("telemetry", {"north": 1.0})
        recorder.finish("success")
    manifest = read_manifest(record)
    (record / "manifest.json").write_text(json.dumps({**manifest, "pad": "x" * MAX_MANIFEST_BYTES}))
    with pytest.raises(UnreadableRecord, match="at most 8 MB"):
        read_manifest(record)
    (record / "manifest.json").write_text(json.dumps({**manifest, "deep": json.loads("[" * 200 + "]" * 200)}))
    with pytest.raises(UnreadableRecord, match="levels of nesting"):
        read_manifest(record)
    (record / "manifest.json").write_text(json.dumps({**manifest, "seed": 10**30}))
    with pytest.raises(UnreadableRecord, match="outside 64 bits"):
        read_manifest(record)
    with open(record / "events.jsonl", "a") as events:
        events.write("[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(UnreadableRecord, match=r"events.jsonl line \d+: expected at most"):
        read_events(record)
    pq.write_table(pa.table({"north": [[1.0, 2.0]]}), record / "tables" / "telemetry.parquet")
    with pytest.raises(UnreadableRecord, match="nested column 'north'"):
        read_table(record, "telemetry")


def _fly(record_dir: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "hil", "fly", str(DEMO), "--target", "lockstep", "--record-dir",
                             str(record_dir)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_flights_into_one_record_dir_one_flies_the_other_is_refused(tmp_path):
    record = tmp_path / "trial"
    flights = [_fly(record), _fly(record)]
    outputs = [_finish(flight, 120) for flight in flights]
    codes = [flight.returncode for flight in flights]
    assert sorted(codes) == [0, 2], outputs
    _, refused = outputs[codes.index(2)]
    assert len(refused.strip().splitlines()) == 1 and f"hil fly: {record}" in refused, refused
    manifest = read_manifest(record)
    assert manifest["status"] == "finished" and manifest["outcome"] == "success"
    kinds = [e["kind"] for e in read_events(record)]
    assert kinds.count("trial_started") == 1 and kinds.count("tlog_closed") == 1
    assert not (record / ".lock").exists()  # the claim goes with the recorder


def test_a_record_dir_being_written_is_refused_naming_its_writer(tmp_path):
    record = tmp_path / "trial"
    with TrialRecorder(record, config={}, target="t") as recorder:
        result = hil("fly", str(DEMO), "--target", "lockstep", "--record-dir", str(record))
        recorder.finish("success")
    assert result.returncode == 2 and f"{record} is taken by a trial recorder (pid {os.getpid()}" in _stderr_line(result)
    assert [e["kind"] for e in read_events(record)] == ["trial_started", "trial_finished"]


def test_an_existing_record_dir_is_a_usage_error(tmp_path):
    record = tmp_path / "trial"
    with TrialRecorder(record, config={}, target="t") as recorder:
        recorder.finish("success")
    before = (record / "manifest.json").read_bytes()
    result = hil("fly", str(DEMO), "--target", "lockstep", "--record-dir", str(record))
    assert result.returncode == 2 and str(record) in _stderr_line(result)
    assert (record / "manifest.json").read_bytes() == before


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MB tmpfs, and a way to remount it (bigger, read-only); skipped where mounting is not allowed."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command: the full and read-only disk tests mount a tmpfs")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(disk)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (it needs root or CAP_SYS_ADMIN): {mounted.stderr.strip()}")

    def remount(options: str) -> None:
        subprocess.run(["mount", "-o", f"remount,{options}", str(disk)], check=True)

    yield disk, remount
    subprocess.run(["umount", str(disk)], check=True)


def test_a_full_disk_stops_the_campaign_in_one_line_and_resume_finishes_it(small_disk, tmp_path):
    disk, remount = small_disk
    campaign, out = write_campaign(tmp_path / "c.yaml", **EIGHT_TRIALS), disk / "run"  # some 4 MB of records
    result = hil("run", str(campaign), "--out", str(out), "--no-progress", "--workers", "2")
    assert result.returncode == 4 and "no space left on device" in _stderr_line(result)
    assert f"hil run {out}" in result.stderr  # how to resume
    assert not list(disk.rglob("*.tmp")) and not (out / ".partial").exists()
    finished = {trial.name: read_manifest(trial)["started"] for trial in (out / "trials").iterdir()}
    assert 0 < len(finished) < 8 and all(read_manifest(out / "trials" / t)["status"] == "finished" for t in finished)

    remount("size=64m")
    resumed = hil("run", str(out), "--no-progress", "--workers", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert f"{8 - len(finished)} trials run" in resumed.stdout and f"{len(finished)} already finished" in resumed.stdout
    trials = list((out / "trials").iterdir())
    assert len(trials) == 8
    for trial in trials:
        assert [e["kind"] for e in read_events(trial)].count("trial_started") == 1
        if trial.name in finished:
            assert read_manifest(trial)["started"] == finished[trial.name]  # not flown again


def test_a_read_only_disk_is_one_line_for_every_verb_that_writes(small_disk, tmp_path):
    disk, remount = small_disk
    campaign, out = write_campaign(tmp_path / "c.yaml"), disk / "run"  # one trial
    assert hil("run", str(campaign), "--out", str(out), "--no-progress").returncode == 0
    remount("ro")
    for verb in (["run", str(campaign), "--out", str(disk / "new"), "--no-progress"],
                 ["run", str(out), "--no-progress"],
                 ["fly", str(DEMO), "--target", "lockstep", "--record-dir", str(disk / "record")],
                 ["report", str(out)]):
        result = hil(*verb)
        line = _stderr_line(result)
        assert result.returncode == 4 and "read-only file system" in line and str(disk) in line, (verb, line)
