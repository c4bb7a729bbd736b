"""The recorder's disk writes run on its own thread: a stuck disk never stops the trial's event loop, and the
record is still whole after finish, a SIGTERM (the safe stop) and a SIGKILL mid-trial."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pyarrow.parquet as pq

from records.record import TrialRecorder, read_events, read_manifest, read_table

REPO_ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}


def ticks(record: Path) -> list[int]:
    return [event["i"] for event in read_events(record) if event["kind"] == "tick"]


async def test_a_stuck_fsync_never_stops_the_event_loop(tmp_path: Path, monkeypatch) -> None:
    loop_thread = threading.get_ident()
    stuck, release = threading.Event(), threading.Event()
    on_loop: list[int] = []
    real_fsync = os.fsync

    def stuck_disk(fd: int) -> None:
        # The disk of a loaded machine at its worst, held until the test lets go; the loop's own thread is
        # never held (a recorder that fsyncs there fails below at once instead of hanging the test).
        if threading.get_ident() == loop_thread:
            on_loop.append(fd)
        else:
            stuck.set()
            release.wait(120)
        real_fsync(fd)

    told: list[str] = []
    with TrialRecorder(tmp_path / "trial", config={}, target="sim", flush_interval_s=0.0) as rec:
        rec.listeners.append(lambda kind, fields: told.append(kind))
        await rec.written()
        monkeypatch.setattr(os, "fsync", stuck_disk)
        rec.event("first")
        assert on_loop == []
        await asyncio.wait_for(asyncio.to_thread(stuck.wait), 60)
        for i in range(20):  # every append flushes a part (interval 0), each queued behind the stuck fsync
            rec.append("telemetry", {"i": i})
            rec.event("tick", i=i)
            await asyncio.sleep(0.01)  # the loop turns while the disk is stuck
        assert on_loop == []
        assert told == ["trial_started"]  # nothing still queued is told: listeners hear of events on disk
        release.set()
        await rec.written()
        assert told == ["trial_started", "first"] + ["tick"] * 20
        rec.finish("success")
    assert ticks(tmp_path / "trial") == list(range(20))
    assert read_table(tmp_path / "trial", "telemetry")["i"].tolist() == list(range(20))
    assert read_manifest(tmp_path / "trial")["status"] == "finished"


# A trial in an event loop whose disk is stuck until the stop request comes (hil.stop.Interrupts, as `hil fly`
# installs it): everything it recorded is still queued when SIGTERM arrives, and the safe stop's finish writes it.
STOPPED_TRIAL = textwrap.dedent(
    """
    import asyncio, os, sys, threading
    from hil.stop import Interrupts
    from records.record import TrialRecorder

    disk = threading.Event()
    real_fsync = os.fsync
    told = []

    async def main(record_dir):
        Interrupts(asyncio.current_task(), say=print).install(asyncio.get_running_loop())
        with TrialRecorder(record_dir, config={}, target="sim", flush_interval_s=0.0) as rec:
            # The main thread (the loop's) is never held: a recorder that fsyncs there has no backlog, and fails.
            os.fsync = lambda fd: (threading.current_thread() is threading.main_thread() or disk.wait(),
                                   real_fsync(fd))
            rec.listeners.append(lambda kind, fields: kind == "tick" and told.append(fields["i"]))
            i = 0
            try:
                while True:
                    rec.event("tick", i=i)
                    rec.append("telemetry", {"i": i})
                    i += 1
                    if i == 50:
                        print("ready", flush=True)
                    await asyncio.sleep(0.001)
            except asyncio.CancelledError:
                print("told", len(told), "recorded", i, flush=True)
                disk.set()
                rec.event("aborted")
                rec.finish("aborted")

    asyncio.run(main(sys.argv[1]))
    """
)


def test_sigterm_writes_everything_queued_before_the_process_ends(tmp_path: Path) -> None:
    record = tmp_path / "trial"
    child = subprocess.Popen([sys.executable, "-c", STOPPED_TRIAL, str(record)], env=ENV,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "ready\n", child.stderr.read() if child.stderr else ""
        child.send_signal(signal.SIGTERM)
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    assert child.returncode == 0, err
    told, recorded = (int(word) for word in out.split("told ")[1].split()[::2])
    assert told == 0 and recorded >= 50  # all of it was still queued when the stop request came
    assert read_manifest(record)["status"] == "finished"
    assert ticks(record) == list(range(recorded))
    assert [e["kind"] for e in read_events(record)][-2:] == ["aborted", "trial_finished"]
    assert read_table(record, "telemetry")["i"].tolist() == list(range(recorded))


# An event loop's trial killed once its listener has been told of 20 events: those 20 are on disk, whatever
# was still queued may be lost, and what is on disk ends at a whole line and whole parts.
KILLED_TRIAL = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from records.record import TrialRecorder

    told = []

    def tell(kind, fields):
        if kind == "tick":
            told.append(fields["i"])
            print(fields["i"], flush=True)

    async def main(record_dir):
        with TrialRecorder(record_dir, config={}, target="sim", flush_interval_s=0.0) as rec:
            rec.listeners.append(tell)
            i = 0
            while len(told) < 20:
                for _ in range(5):
                    rec.event("tick", i=i)
                    rec.append("telemetry", {"i": i})
                    i += 1
                await asyncio.sleep(0.001)
            os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main(sys.argv[1]))
    """
)


def test_sigkill_mid_trial_keeps_every_event_a_listener_was_told(tmp_path: Path) -> None:
    record = tmp_path / "trial"
    done = subprocess.run([sys.executable, "-c", KILLED_TRIAL, str(record)], env=ENV, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    told = [int(line) for line in done.stdout.split()]
    written = ticks(record)
    assert len(told) >= 20 and written[:len(told)] == told
    assert written == list(range(len(written)))
    assert (record / "events.jsonl").read_bytes().endswith(b"\n")
    assert read_manifest(record)["status"] == "running"
    parts = sorted((record / "tables" / "telemetry").glob("part-*.parquet"))
    for part in parts:
        pq.read_metadata(part)  # a part under its final name is complete
    rows = read_table(record, "telemetry")["i"].tolist()
    assert rows == list(range(len(rows)))
