"""Where campaign trials run: a local pool of worker processes, or a Ray cluster for many machines.

An executor takes the trials still to run and yields a `TrialDone` as each one completes, in
completion order; `stop()` ends everything in flight and leaves no process behind. Both executors
finish a trial the same way (`complete_trial`): the record is written under the campaign's
`.partial/` directory and renamed into `trials/` only once finished, so `trials/` only ever holds
complete records, whatever gets killed when.

Local pool: one process per worker (spawned, so no state leaks from the parent), each running one
trial at a time with its own built-in vehicle (in-process lockstep, or a child simulator on a free
loopback port) or PX4 SITL instance (the worker's slot number is its instance). Workers ignore
Ctrl-C (the parent decides), exit on SIGTERM through their clean-up paths, and get SIGTERM from the
kernel if the parent dies (`PR_SET_PDEATHSIG`), so neither kill -9 of `hil run` nor Ctrl-C leaves
workers or simulators running.

Ray: each trial is a Ray task that records into a temporary directory on whichever machine runs
it and returns the record as a tar archive, unpacked here; no shared file system is needed.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import queue
import signal
import sys
import tarfile
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol

from hil.campaign import TrialSpec
from records.atomic import publish_directory
from reports.results import TRIALS_DIR

PARTIAL_DIR = ".partial"
SCENES_DIR = "scenes"
STOP_GRACE_S = 5.0  # a worker gets this long after SIGTERM to stop its simulator and exit


@dataclass(frozen=True)
class TrialDone:
    """One finished trial: its summary, or the harness error that prevented a record."""

    trial_id: str
    summary: dict[str, Any] | None
    error: str | None = None


class Executor(Protocol):
    def run(self, trials: list[TrialSpec], campaign_dir: Path) -> Iterator[TrialDone]: ...

    def stop(self) -> None: ...


def complete_trial(spec: TrialSpec, campaign_dir: Path, slot: int = 0) -> dict[str, Any]:
    """Run one trial into `.partial/` and move the finished record into `trials/` in one rename."""
    from hil.trial import run_trial_spec

    partial = campaign_dir / PARTIAL_DIR / f"{spec.trial_id}.{os.getpid()}"
    summary = run_trial_spec(spec, partial, campaign_dir / SCENES_DIR, slot)
    publish_directory(partial, campaign_dir / TRIALS_DIR / spec.trial_id)
    return summary


# ---------------------------------------------------------------------------------------- local pool
def _worker_main(slot: int, campaign_dir: Path, tasks: multiprocessing.Queue, results: multiprocessing.Queue) -> None:
    from px4.process import die_with_parent

    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # SystemExit unwinds the running trial: asyncio cancels it, simulators are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    while (spec := tasks.get()) is not None:
        try:
            results.put(TrialDone(spec.trial_id, complete_trial(spec, campaign_dir, slot)))
        except Exception:  # a harness bug in one trial must not stop the campaign
            results.put(TrialDone(spec.trial_id, None, traceback.format_exc(limit=5)))


class LocalPool:
    """`workers` processes on this machine."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._processes: list[multiprocessing.Process] = []

    def run(self, trials: list[TrialSpec], campaign_dir: Path) -> Iterator[TrialDone]:
        if not trials:
            return
        context = multiprocessing.get_context("spawn")
        tasks, results = context.Queue(), context.Queue()
        for spec in trials:
            tasks.put(spec)
        count = min(self.workers, len(trials))
        for _ in range(count):
            tasks.put(None)
        self._processes = [context.Process(target=_worker_main, args=(slot, campaign_dir, tasks, results),
                                           name=f"hil-worker-{slot}", daemon=True) for slot in range(count)]
        for process in self._processes:
            process.start()
        remaining = len(trials)
        while remaining:
            try:
                done = results.get(timeout=1.0)
            except queue.Empty:
                if not any(p.is_alive() for p in self._processes):
                    raise RuntimeError("every campaign worker exited with trials left (see the errors above)")
                continue
            remaining -= 1
            yield done
        for process in self._processes:
            process.join()

    def stop(self) -> None:
        """SIGTERM every worker, wait for it to clean up, SIGKILL what is left."""
        for process in self._processes:
            if process.is_alive():
                process.terminate()
        for process in self._processes:
            process.join(STOP_GRACE_S)
            if process.is_alive():
                process.kill()
                process.join()
        self._processes = []


# ------------------------------------------------------------------------------------------------ ray
def run_packed(spec: TrialSpec) -> tuple[dict[str, Any], bytes]:
    """Run one trial in a temporary directory and return its summary and the record as a tar archive."""
    from hil.trial import run_trial_spec

    # Scene facts are cached per machine, shared by every trial that machine runs.
    cache = Path(tempfile.gettempdir()) / "hil-scene-facts"
    with tempfile.TemporaryDirectory(prefix="hil-trial-") as scratch:
        record = Path(scratch) / spec.trial_id
        summary = run_trial_spec(spec, record, cache)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
            archive.add(record, arcname=spec.trial_id)
    return summary, buffer.getvalue()


def unpack(archive: bytes, campaign_dir: Path, trial_id: str) -> None:
    """Unpack a record archive into `.partial/`, then publish it into `trials/`."""
    partial_root = campaign_dir / PARTIAL_DIR / f"ray-{trial_id}"
    partial_root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        tar.extractall(partial_root, filter="data")
    publish_directory(partial_root / trial_id, campaign_dir / TRIALS_DIR / trial_id)
    partial_root.rmdir()


class RayExecutor:
    """Trials as Ray tasks on the cluster at `address` ("local" starts a private one-machine cluster)."""

    def __init__(self, address: str, cpus_per_trial: float = 1.0) -> None:
        self.address = address
        self.cpus_per_trial = cpus_per_trial
        self._pending: list = []

    def run(self, trials: list[TrialSpec], campaign_dir: Path) -> Iterator[TrialDone]:
        import ray

        if not ray.is_initialized():
            ray.init(address=None if self.address == "local" else self.address, include_dashboard=False,
                     log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}})
        remote = ray.remote(num_cpus=self.cpus_per_trial, max_retries=0)(run_packed)
        owner = {}
        for spec in trials:
            ref = remote.remote(spec)
            owner[ref] = spec.trial_id
        self._pending = list(owner)
        while self._pending:
            ready, self._pending = ray.wait(self._pending, num_returns=1)
            trial_id = owner.pop(ready[0])
            try:
                summary, archive = ray.get(ready[0])
            except Exception as exc:  # the task failed remotely; the trial stays to be run again
                yield TrialDone(trial_id, None, f"{type(exc).__name__}: {exc}")
                continue
            unpack(archive, campaign_dir, trial_id)
            yield TrialDone(trial_id, summary)

    def stop(self) -> None:
        import ray

        if ray.is_initialized():
            for ref in self._pending:
                ray.cancel(ref, force=True)
            self._pending = []
            ray.shutdown()
