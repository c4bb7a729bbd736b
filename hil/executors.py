"""Where campaign trials run: a local pool of worker processes, or a Ray cluster for many machines.

An executor takes the trials still to run and yields a `TrialDone` as each one completes, in
completion order; `stop()` ends everything in flight and leaves no process behind. Both executors
finish a trial the same way (`complete_trial`): the record is written under the campaign's
`.partial/` directory and renamed into `trials/` only once finished, so `trials/` only ever holds
complete records, whatever gets killed when.

Local pool: one process per worker, each running one trial at a time with its own built-in vehicle
(in-process lockstep, or a child simulator on a free loopback port) or PX4 SITL instance (each takes the
lowest instance no process holds). On Linux, workers are forked by multiprocessing's forkserver, a fresh
process each pool starts (and stops and reaps when it ends) that has imported the harness (WORKER_MODULES)
and nothing else, so no state leaks from the parent and a worker starts without paying the imports
(1-1.5 CPU-s each when spawned); elsewhere they are spawned. Workers ignore Ctrl-C (the parent decides), exit on SIGTERM through
their clean-up paths, and get SIGTERM from the kernel when their parent dies (`PR_SET_PDEATHSIG`): the
forkserver, which exits when `hil run` does, however it ends. So neither kill -9 of `hil run` nor Ctrl-C
leaves workers or simulators running.

Ray: each trial is a Ray task that records into a temporary directory on whichever machine runs
it and returns the record as a tar archive, unpacked here; no shared file system is needed. Tasks
carry the package and the files the campaign names (by content, not by path), so a node needs no
copy of either at the driver's paths; PX4 builds are each node's own (PX4_DIR where `ray start` ran).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import io
import logging
import multiprocessing
import multiprocessing.forkserver
import os
import queue
import shutil
import signal
import sys
import tarfile
import tempfile
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Protocol

from config.loading import read_bytes
from hil.campaign import TrialSpec
from hil.stop import LAND_ACCEPT_S, LANDING_GRACE_S, RETURN_ACCEPT_S, RETURN_GRACE_S
from hil.trial import run_trial_spec
from missions.export import MAX_SCENE_BYTES
from missions.load import load
from px4.process import die_with_parent
from records.atomic import WriteRefused, publish_directory, writing
from records.campaign_dir import PARTIAL_DIR, SCENES_DIR, TRIALS_DIR
from records.record import MANIFEST_NAME, read_manifest
from records.summary import Summary
from targets import KINDS

STOP_GRACE_S = 5.0  # a worker gets this long after SIGTERM to stop its simulator and exit
# A worker flying a vehicle that outlives it (hardware) gets this long to bring it down by the stop policy
# (hil.stop: two land tries, then a return, in vehicle seconds at 1x) before it is killed.
HARDWARE_STOP_GRACE_S = 2 * (LAND_ACCEPT_S + LANDING_GRACE_S) + RETURN_ACCEPT_S + RETURN_GRACE_S
_TRACKER_QUIET = "ignore::UserWarning:multiprocessing.resource_tracker"
FORKSERVER = sys.platform.startswith("linux")  # workers are forked by a forkserver, not spawned (`worker_context`)
# What the forkserver imports before it forks any worker: this module (`_worker_main`, the trial) and every
# target plugin, which `open_target` imports on a trial's first flight. Imports only: they start no Python
# thread, open no socket and compile no numba kernel (kernels build or load on their first call, in the worker).
# The native threads they leave (OpenBLAS's pools, pyarrow's jemalloc) are made safe to fork by their own
# libraries, as the fork start method has always needed.
WORKER_MODULES = [__name__, *dict.fromkeys(KINDS.values())]


class StopRequest:
    """Ctrl-C or SIGTERM to `hil run`, remembered. The KeyboardInterrupt a signal raises is lost when
    it lands in a finalizer (Python prints "Exception ignored in ..."; seen once under load in CI:
    the campaign then ran on to its end), so the pool also checks the request between its waits."""

    def __init__(self) -> None:
        self.requested = False

    def handler(self, signum, frame) -> None:
        """Install for SIGINT and SIGTERM: stop at once where the interrupt is raised, or at the next wait."""
        self.requested = True
        raise KeyboardInterrupt

    def check(self) -> None:
        """Raise KeyboardInterrupt if a stop was requested and the signal's own one went missing."""
        if self.requested:
            raise KeyboardInterrupt


STOP = StopRequest()


@dataclass(frozen=True)
class TrialDone:
    """One finished trial: its summary, or the harness error that prevented a record."""

    trial_id: str
    summary: Summary | None
    error: str | None = None
    refused: bool = False  # the error is the machine refusing a write (records.atomic.WriteRefused)


class Executor(Protocol):
    def run(self, trials: list[TrialSpec], campaign_dir: Path) -> Iterator[TrialDone]: ...

    def stop(self) -> None: ...


def complete_trial(spec: TrialSpec, campaign_dir: Path) -> Summary:
    """Run one trial into `.partial/` and move the finished record into `trials/` in one rename."""
    partial = campaign_dir / PARTIAL_DIR / f"{spec.trial_id}.{os.getpid()}"
    with writing(f"the record of trial {spec.trial_id}", partial):
        summary = run_trial_spec(spec, partial, campaign_dir / SCENES_DIR)
    final = campaign_dir / TRIALS_DIR / spec.trial_id
    try:
        publish_directory(partial, final)
    except OSError:
        if not (final / MANIFEST_NAME).is_file():
            raise
        # A worker killed after publishing this trial and before saying so, which is why it ran again:
        # the published record stands and this copy goes.
        shutil.rmtree(partial, ignore_errors=True)
        return Summary.from_manifest(read_manifest(final), final / MANIFEST_NAME)
    return summary


# ---------------------------------------------------------------------------------------- local pool
_stopping = False  # a worker's SIGTERM came (`_stop_worker`)


def _stop_worker(signum: int, frame: FrameType | None) -> None:
    """SIGTERM: SystemExit unwinds the running trial; asyncio.run cancels its tasks, simulators are
    stopped on the way out. The task the exit interrupted is abandoned on purpose, so asyncio's
    "exception was never retrieved" report of it is silenced rather than printed as a traceback, and so is
    Python's "never awaited" of a trial the exit caught between its coroutine's creation and its start."""
    if frame is not None and frame.f_code is _stop_again.__code__:
        # The alarm of `_stop_again` came before its hook returned (a loaded machine deschedules a worker for
        # longer than the alarm's millisecond): raising here would be ignored again, so it comes once more.
        signal.setitimer(signal.ITIMER_REAL, 0.001)
        return
    global _stopping
    _stopping = True
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
    sys.exit(128 + signal.SIGTERM)


def _stop_again(unraisable) -> None:
    """A stop that landed where Python cannot raise (a weakref callback or a __del__ running when the
    signal came: Python prints "Exception ignored" and the worker runs on) is delivered again a
    millisecond later, by an alarm, so that it lands in the trial's own code. Re-sending SIGTERM
    would not do: its handler would run at once, inside this hook, where SystemExit is ignored too."""
    if isinstance(unraisable.exc_value, SystemExit):
        signal.setitimer(signal.ITIMER_REAL, 0.001)
        return
    # What the stop cut short fails again as it is collected (an event loop whose __init__ it interrupted, beside two
    # CPU burners: "Exception ignored in BaseEventLoop.__del__ ... no attribute '_ssock'" on `hil run`'s stderr).
    if not _stopping:
        sys.__unraisablehook__(unraisable)


def stop_on_sigterm() -> None:
    """A worker's signals: SIGTERM ends it (`_stop_worker`), wherever it lands; Ctrl-C is the parent's."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_worker)
    signal.signal(signal.SIGALRM, _stop_worker)
    sys.unraisablehook = _stop_again


def _leave_forkserver() -> None:
    """Close the forkserver's "alive" pipe that a forked worker inherits: the forkserver exits once every
    holder of its write end has, so a worker holding one would keep it, and so itself, alive after kill -9
    of `hil run` (the worker waits for `PR_SET_PDEATHSIG` from the forkserver). Workers fork nothing."""
    server = multiprocessing.forkserver._forkserver
    if server._forkserver_alive_fd is not None:
        os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = None


def _worker_main(slot: int, campaign_dir: Path, environment: dict[str, str], tasks: multiprocessing.Queue,
                 results: multiprocessing.Queue) -> None:
    _leave_forkserver()
    die_with_parent()
    if not multiprocessing.parent_process().is_alive():  # the pool died before that: no signal would come
        return
    stop_on_sigterm()
    # A forked worker has the forkserver's environment, as it was when the forkserver started: the pool's
    # is the one a spawned worker would have (PX4_DIR, HIL_STATE_DIR, ... as they are now).
    os.environ.clear()
    os.environ.update(environment)
    while (spec := tasks.get()) is not None:
        try:
            results.put((slot, TrialDone(spec.trial_id, complete_trial(spec, campaign_dir))))
        except WriteRefused as refused:
            results.put((slot, TrialDone(spec.trial_id, None, str(refused), refused=True)))
        except Exception:  # a harness bug in one trial must not stop the campaign
            results.put((slot, TrialDone(spec.trial_id, None, traceback.format_exc(limit=5))))


def worker_context() -> multiprocessing.context.BaseContext:
    """The forkserver's context on Linux, WORKER_MODULES preloaded; spawn elsewhere. macOS has a forkserver,
    but forking a process that loaded its system frameworks (numpy's Accelerate, libdispatch) is unsafe
    there, which is why spawn is Python's default on it, and its workers could not die with their parent
    (PR_SET_PDEATHSIG is Linux's); Windows has no fork."""
    if not FORKSERVER:
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    # Read when the forkserver starts, on this process's first worker; later calls change nothing.
    context.set_forkserver_preload(WORKER_MODULES)
    return context


def _end_forkserver() -> None:
    """Stop this process's forkserver and reap it once the pool's workers have ended (it reaped them): its CPU time
    and theirs then count as this process's children's, as spawned workers' did (`time hil run`, a benchmark's
    RUSAGE_CHILDREN), and its imports (a few hundred MB) go with it. A next pool starts a new one."""
    if FORKSERVER:
        multiprocessing.forkserver._forkserver._stop()


def _drain(results: multiprocessing.Queue) -> list[tuple[int, TrialDone]]:
    arrived = []
    with contextlib.suppress(queue.Empty):
        while True:
            arrived.append(results.get_nowait())
    return arrived


@dataclass
class _Worker:
    """One worker process, its own task queue, and the trial it was handed (None: idle)."""

    process: multiprocessing.Process
    tasks: multiprocessing.Queue
    trial: TrialSpec | None = None


class LocalPool:
    """`workers` processes on this machine, each handed one trial at a time.

    The pool knows which trial every worker holds, so a worker that dies (killed by the OOM killer,
    a stray kill -9, a segfault in a native library) costs no trial: its trial is run again once on
    a fresh worker, and a trial that kills its worker twice is reported as a harness error.
    """

    def __init__(self, workers: int, stop_grace_s: float = STOP_GRACE_S) -> None:
        """`stop_grace_s`: how long a worker gets after SIGTERM (HARDWARE_STOP_GRACE_S when it flies hardware)."""
        self.workers = max(1, workers)
        self.stop_grace_s = stop_grace_s
        self._pool: dict[int, _Worker] = {}

    def run(self, trials: list[TrialSpec], campaign_dir: Path) -> Iterator[TrialDone]:
        if not trials:
            return
        # If `hil run` itself is killed, the resource tracker frees the queues' semaphores and warns
        # about each one; that clean-up is its job, so the warning is noise (workers inherit the flag).
        if _TRACKER_QUIET not in sys.warnoptions:
            sys.warnoptions.append(_TRACKER_QUIET)
        context = worker_context()
        results = context.Queue()
        pending = list(reversed(trials))  # popped from the end: campaign order
        died_once: set[str] = set()
        slots = iter(range(1 << 30))

        def start_worker() -> None:
            slot, tasks = next(slots), context.Queue()
            # What is still queued for a worker is worthless once the pool stops; without this, the
            # exit joins the queue's feeder thread, and a run interrupted under load once hung there.
            tasks.cancel_join_thread()
            process = context.Process(target=_worker_main, args=(slot, campaign_dir, dict(os.environ), tasks, results),
                                      name=f"hil-worker-{slot}", daemon=True)
            process.start()
            self._pool[slot] = _Worker(process, tasks)

        for _ in range(min(self.workers, len(trials))):
            start_worker()
        remaining = len(trials)
        while remaining:
            STOP.check()
            for worker in self._pool.values():
                if worker.trial is None and pending:
                    worker.trial = pending.pop()
                    worker.tasks.put(worker.trial)
            try:
                arrived = [results.get(timeout=0.5)]
            except queue.Empty:
                # A worker may have sent its result and then died: read what is in the pipe before
                # deciding that a dead worker's trial was lost.
                lost = self._forget_dead_workers()
                arrived = _drain(results)
                finished = {done.trial_id for _, done in arrived}
                for spec, how in lost:
                    if spec.trial_id in finished:
                        continue
                    if spec.trial_id in died_once:
                        remaining -= 1
                        yield TrialDone(spec.trial_id, None, f"its worker process died twice running it ({how})")
                    else:
                        died_once.add(spec.trial_id)
                        print(f"hil run: a worker died ({how}) running {spec.trial_id}; running it again",
                              file=sys.stderr, flush=True)
                        pending.append(spec)
                busy = sum(worker.trial is not None for worker in self._pool.values())
                for _ in range(min(self.workers, busy + len(pending)) - len(self._pool)):
                    start_worker()
            for slot, done in arrived:
                if slot in self._pool:
                    self._pool[slot].trial = None
                remaining -= 1
                yield done
        for worker in self._pool.values():
            worker.tasks.put(None)
        for worker in self._pool.values():
            worker.process.join()
        self._pool = {}
        _end_forkserver()

    def _forget_dead_workers(self) -> list[tuple[TrialSpec, str]]:
        """Drop every worker that has died; the trials they held, each with how its worker ended."""
        lost = []
        for slot, worker in list(self._pool.items()):
            if worker.process.is_alive():
                continue
            del self._pool[slot]
            code = worker.process.exitcode
            if worker.trial is not None:
                lost.append((worker.trial, f"signal {signal.Signals(-code).name}" if code is not None and code < 0
                             else f"exit code {code}"))
        return lost

    def stop(self) -> None:
        """SIGTERM every worker, wait for it to clean up, SIGKILL what is left."""
        processes = [worker.process for worker in self._pool.values()]
        for process in processes:
            if process.is_alive():
                process.terminate()
        if self.stop_grace_s > STOP_GRACE_S and any(p.is_alive() for p in processes):
            print(f"waiting up to {self.stop_grace_s:.0f} s for the trial in flight to bring its vehicle down",
                  file=sys.stderr, flush=True)
        for process in processes:
            process.join(self.stop_grace_s)
            if process.is_alive():
                process.kill()
                process.join()
        self._pool = {}
        _end_forkserver()


# ------------------------------------------------------------------------------------------------ ray
FILE_FIELDS = ("mission", "profile", "link", "fault", "compute")  # trial fields that may name a file by path
RAY_WAIT_S = 0.5  # how often the driver looks up from waiting on the cluster for a stop request
# numba's cache holds only beside the source files it was compiled from (it checks their modification times), and
# the copy Ray unpacks on a node is new: the package ships without its caches and each node compiles once.
RAY_EXCLUDES = ["__pycache__/"]


@dataclass(frozen=True)
class Shipment:
    """The files a campaign's trials name by path, carried by content to whichever machine runs a trial.

    Files sit under one folder named by their digest, each at its absolute path on the driver, so that a mission's
    scene file named relative to the mission is found beside it again."""

    digest: str
    files: dict[str, bytes]  # path under the folder -> content
    names: dict[str, str]  # a trial's field value as the campaign names it -> path under the folder


def shipment(trials: list[TrialSpec]) -> Shipment:
    """Read every file the trials name: mission files and their scene files, profile, link, fault and compute files.
    A value that is no file here is a packaged name, which the shipped package resolves on the worker."""
    named = {value for spec in trials for value in (getattr(spec, field) for field in FILE_FIELDS)
             if Path(value).is_file()}
    scenes = {load(mission).scene for mission in {spec.mission for spec in trials if spec.mission}}
    named |= {scene.file for scene in scenes if scene is not None and scene.file is not None}
    names = {value: Path(os.path.abspath(value)).relative_to("/").as_posix() for value in named}
    # A scene file is the largest a trial names; each loader applies its own bound again on the worker.
    files = {layout: read_bytes(value, "file a trial names", MAX_SCENE_BYTES) for value, layout in names.items()}
    digest = hashlib.sha256()
    for layout in sorted(files):
        digest.update(f"{layout}\0{len(files[layout])}\0".encode() + files[layout])
    return Shipment(digest.hexdigest()[:16], files, names)


def unpack_shipment(shipped: Shipment, cache: Path) -> dict[str, str]:
    """Write the shipped files under `cache` once per machine; where each name is read here."""
    root = cache / shipped.digest
    if not root.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpacking-", dir=cache))
        for layout, content in shipped.files.items():
            (staging / layout).parent.mkdir(parents=True, exist_ok=True)
            (staging / layout).write_bytes(content)
        try:
            staging.rename(root)
        except OSError:  # another trial on this machine unpacked the same files first
            shutil.rmtree(staging, ignore_errors=True)
    return {value: str(root / layout) for value, layout in shipped.names.items()}


def run_packed(spec: TrialSpec, shipped: Shipment) -> tuple[Summary, bytes]:
    """Run one trial in a temporary directory and return its summary and the record as a tar archive."""
    # Scene facts and shipped files are cached per machine, shared by every trial that machine runs.
    cache = Path(tempfile.gettempdir())
    local = unpack_shipment(shipped, cache / "hil-shipped")
    here = dataclasses.replace(spec, **{field: local[getattr(spec, field)] for field in FILE_FIELDS
                                        if getattr(spec, field) in local})
    with tempfile.TemporaryDirectory(prefix="hil-trial-") as scratch:
        record = Path(scratch) / spec.trial_id
        summary = run_trial_spec(here, record, cache / "hil-scene-facts", named=spec)
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


def shipped_modules(trials: list[TrialSpec]) -> list[str]:
    """The folders (or files) of the packages a trial imports: quad-hil's own, and a `module:Class` planner's."""
    names = (importlib.metadata.distribution("quad-hil").read_text("top_level.txt") or "").split()
    names += [spec.planner.partition(":")[0].split(".")[0] for spec in trials if ":" in spec.planner]
    places = []
    for name in dict.fromkeys(names):
        found = importlib.util.find_spec(name)
        if found is not None:  # e.g. a ROS 2 node's name, which is no module
            places.append(found.submodule_search_locations[0] if found.submodule_search_locations else found.origin)
    return places


class RayExecutor:
    """Trials as Ray tasks on the cluster at `address` ("local" starts a private one-machine cluster).

    A task brings what it needs: the package (and a `module:Class` planner's) as Ray `py_modules`, and the files
    the trials name as a `Shipment`. A node provides Python with the package's dependencies, and its own
    environment (PX4_DIR for px4-sitl trials, HIL_ONBOARD_TOKEN) from where its `ray start` ran."""

    def __init__(self, address: str, cpus_per_trial: float = 1.0) -> None:
        self.address = address
        self.cpus_per_trial = cpus_per_trial
        self._pending: list = []

    def run(self, trials: list[TrialSpec], campaign_dir: Path) -> Iterator[TrialDone]:
        if not trials:
            return
        if self.address == "local":
            # A one-machine cluster needs no network: without this, Ray binds its ports on every interface.
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray

        if not ray.is_initialized():
            # Ray's INFO lines (one per package it uploads) would break up the progress bar; its warnings stay.
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING,
                     runtime_env={"py_modules": shipped_modules(trials), "excludes": RAY_EXCLUDES})
        remote = ray.remote(num_cpus=self.cpus_per_trial, max_retries=0)(run_packed)
        shipped = ray.put(shipment(trials))
        owner = {remote.remote(spec, shipped): spec.trial_id for spec in trials}
        self._pending = list(owner)
        while self._pending:
            STOP.check()
            ready, self._pending = ray.wait(self._pending, num_returns=1, timeout=RAY_WAIT_S)
            if not ready:
                continue
            trial_id = owner.pop(ready[0])
            try:
                summary, archive = ray.get(ready[0])
            except Exception as exc:  # the task failed remotely; the trial stays to be run again
                yield TrialDone(trial_id, None, f"{type(exc).__name__}: {exc}")
                continue
            with writing(f"the record of trial {trial_id}", campaign_dir):
                unpack(archive, campaign_dir, trial_id)
            yield TrialDone(trial_id, summary)

    def stop(self) -> None:
        import ray

        if ray.is_initialized():
            for ref in self._pending:
                ray.cancel(ref, force=True)
            self._pending = []
            ray.shutdown()
