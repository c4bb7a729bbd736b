"""The trial record: one directory per trial, written as the trial happens.

Layout::

    RECORD/
      manifest.json                      configuration, versions, seed, target, status, outcome, summary
      events.jsonl                       one JSON object per line, fsynced as it is written
      tables/telemetry/part-000001.parquet   while running: one part per flush (about one per second)
      tables/telemetry.parquet           after finish(): the parts merged, parts removed
      telemetry.tlog                     side files: binary logs a writer appends to (`side_file`)
      .lock                              while a recorder writes: its claim on the directory (records.claim)

One writer per directory: a recorder claims its directory and starts only in a new or empty one
(DirectoryTaken otherwise), so two trials never interleave their files and no record is overwritten.

Writing: the recorder's disk writes and fsyncs run on a thread of its own, one at a time in the order they were
asked for, so a trial's event loop never waits on the disk (an fsync took up to 0.4 s at a load of 8-16 on two
cores, and MAVSDK's telemetry, heartbeats and vehicle-clock deadlines waited with it). Called in a running event
loop, `event`, `append` and `flush` return at once and `await recorder.written()` waits until all recorded so far
is on disk; called outside one, they return once their writes are done, as if there were no thread. Either way an
event line is fsynced before the recorder's listeners are told of it, `finish` (and leaving the `with` block)
returns only once everything is on disk, and a write that failed is raised by the recorder's next call.

Durability: every file is written to a temporary name, fsynced and renamed into place, so a reader
(or a trial killed at any instant) sees either a complete file or none. A killed trial loses at most
the rows buffered since the last flush, and in an event loop what was still queued for the writer (no event its
listeners were told of); its manifest stays "running" (or "crashed" if the error was a Python exception), and
`read_table` concatenates its parts. Side files are the exception: appended
to in place, fsynced with every flush and closed at the end, so a killed trial's side file ends at
most a flush interval early, possibly in a torn last record, and a finished trial's is whole.

Every row and event carries `t_ns` from `records.clock.now_ns()`, this process's one clock,
unless the caller supplies its own, and, while a vehicle is attached (`vehicle_clock`), `t_vehicle_s`:
the vehicle's own clock at its latest snapshot, on which durations are measured (`records.clock`).

Reading (`read_manifest`, `read_events`, `read_table`) takes a record as hostile input: what it reads is
bounded in size and nesting, and a file no recorder would have written is one `UnreadableRecord` naming it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import functools
import importlib.metadata
import json
import os
import platform
import re
import traceback
from datetime import datetime, timezone
from pathlib import Path, PurePath
from types import TracebackType
from typing import Any, BinaryIO, Callable, Mapping, TextIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from records.atomic import write_atomically, writing
from records.claim import LOCK_FILE, DirectoryTaken, claim_directory
from records.clock import STAMP, now_ns

MANIFEST_NAME = "manifest.json"
EVENTS_NAME = "events.jsonl"
TABLES_DIR = "tables"
FORMAT_VERSION = 1
# Wall seconds between flushes: what a killed trial may lose of its tables (module docstring).
FLUSH_INTERVAL_S = 1.0

_ARROW_TYPES: dict[type, pa.DataType] = {
    bool: pa.bool_(),
    int: pa.int64(),
    float: pa.float64(),
    str: pa.string(),
}
# Reading a record is reading hostile input (another machine's, a crash's, a full disk's, an editor's):
# bounded in size and nesting, and whatever the recorder would not have written is one UnreadableRecord.
MAX_MANIFEST_BYTES = 8 << 20  # a manifest is kilobytes: a configuration and a summary
MAX_EVENTS_BYTES = 256 << 20  # some two million events
MAX_TABLE_BYTES = 1 << 30  # per file, uncompressed: some twelve hours of telemetry at 100 Hz
MAX_DEPTH = 64  # a manifest nests a handful of levels (a mission's airspace, its polygons, their points)
MAX_INT = 2**63
_TABLE_NAME = re.compile(r"[A-Za-z0-9_-]+")
_SIDE_FILE_NAME = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9]+")
# Distributions whose versions explain a record's behaviour. Looked up in package metadata rather
# than imported, so recording never pays for (or fails on) importing mavsdk.
_VERSIONED_PACKAGES = ("quad-hil", "mavsdk", "pymavlink", "numpy", "pandas", "pyarrow")


class UnreadableRecord(ValueError):
    """A record's file that is not what a recorder writes: too big, not UTF-8, not JSON, nested too deep, not
    a flat parquet table. The message names the file and what was wrong with it."""


class TrialRecorder:
    """Writes one trial record; use as a context manager and call `finish()` at the end.

    Leaving the `with` block through an exception (or without calling `finish()`) flushes what is
    buffered and marks the record "crashed" with the error text. Not thread-safe: one recorder
    belongs to one trial loop.

    `flush_interval_s` (wall seconds) bounds what a killed trial loses; math.inf writes the tables once, at
    `finish()` (or at a crash), for a record that is thrown away whole if its trial is killed.

    Column types are fixed by the first value seen in each column (bool, int, float or str); later
    ints are accepted into a float column, any other mismatch raises `TypeError` at `append`, so
    every part of a table has the same schema. A key missing from a row, or None, is stored as null.
    """

    def __init__(
        self,
        record_dir: str | os.PathLike[str],
        *,
        config: Mapping[str, Any],
        target: str,
        seed: int | None = None,
        flush_interval_s: float = FLUSH_INTERVAL_S,
    ) -> None:
        self.record_dir = Path(record_dir)
        # Told of every event (kind, fields) once it is on disk, on the thread that recorded it (in its event loop
        # if it has one): a live display follows the trial without the trial knowing it.
        self.listeners: list[Callable[[str, dict[str, Any]], None]] = []
        # The vehicle's clock (s) now, NaN while unknown: installed by whoever attaches a vehicle to the trial
        # (hil.session), so that rows and events carry vehicle time beside t_ns.
        self.vehicle_clock: Callable[[], float] | None = None
        self._config = dict(config)
        self._target = target
        self._seed = seed
        self._flush_interval_ns = flush_interval_s * 1e9  # a float: math.inf never flushes before finish()
        self._manifest: dict[str, Any] = {}
        self._events: TextIO | None = None
        self._buffers: dict[str, list[dict[str, Any]]] = {}
        self._column_types: dict[str, dict[str, type]] = {}
        self._good_shapes: dict[str, set[tuple[tuple, tuple]]] = {}  # (columns, value types) of rows kept as they came
        self._parts_written: dict[str, int] = {}
        self._side_files: list[BinaryIO] = []
        self._last_flush_ns = 0
        self._running = False
        self._claim = contextlib.ExitStack()  # the record directory's claim (records.claim), taken on entering
        # The one thread that writes (module docstring); its threads are joined at interpreter exit once their
        # queued writes are done, so even a trial that never left its `with` block loses nothing queued.
        self._writer = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="recorder")
        self._failed: BaseException | None = None  # a write that failed, raised by the next call

    def __enter__(self) -> TrialRecorder:
        with writing("a trial record", self.record_dir), contextlib.ExitStack() as claim:
            claim.enter_context(claim_directory(self.record_dir, "a trial recorder"))
            self._start()
            self._claim = claim.pop_all()  # held from here until the record is closed
        return self

    def _start(self) -> None:
        # Checked while holding the claim: a recorder that held it before has written its manifest by then.
        found = sorted(path.name for path in self.record_dir.iterdir() if path.name != LOCK_FILE)
        if found:
            raise DirectoryTaken(f"{self.record_dir} is not empty (it holds {', '.join(found[:3])}"
                                 f"{', ...' if len(found) > 3 else ''}); a trial record needs a directory of its own")
        (self.record_dir / TABLES_DIR).mkdir()
        self._manifest = {
            "format_version": FORMAT_VERSION,
            "status": "running",
            "target": self._target,
            "seed": self._seed,
            "config": self._config,
            "versions": dict(_versions()),
            "host": {"platform": platform.platform(), "machine": platform.machine(), "pid": os.getpid()},
            "started": _now(),
            "ended": None,
            "outcome": None,
            "summary": None,
            "error": None,
            "tables": None,
        }
        self._write_manifest()
        self._events = open(self.record_dir / EVENTS_NAME, "a", encoding="utf-8")
        self._running = True
        self._last_flush_ns = now_ns()
        self.event("trial_started", target=self._target, seed=self._seed)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # The claim goes whatever happens here: the disk that failed the trial may fail these writes too.
        with self._claim:
            if not self._running:
                return  # finished normally; a later exception must not un-finish a complete record
            if exc is None:
                error = "the trial ended without finish() being called"
            else:
                error = "".join(traceback.format_exception_only(exc)).strip()
            self.flush()
            self.event("trial_crashed", error=error)
            self._close(status="crashed", error=error)

    def append(self, table: str, row: Mapping[str, Any]) -> None:
        """Buffer one flat row for `table`; flushes all tables once the flush interval has passed."""
        # A lockstep trial appends some 350 rows a simulated second: the checks run once per table and flush
        # (a closed recorder's buffers are empty, so every append after it comes this way and is refused).
        buffer = self._buffers.get(table)
        if buffer is None:
            self._require_running()
            if not _TABLE_NAME.fullmatch(table):
                raise ValueError(f"table name {table!r} must be letters, digits, '_' or '-' (it becomes a path)")
            buffer = self._buffers[table] = []
        now = now_ns()
        stamped = {"t_ns": now, **row}
        if self.vehicle_clock is not None and STAMP not in row:  # a telemetry row carries its own
            stamped[STAMP] = self.vehicle_clock()
        buffer.append(self._conform(table, stamped))
        if now - self._last_flush_ns >= self._flush_interval_ns:
            self.flush()

    def flush_if_due(self) -> None:
        """Flush once the flush interval has passed since the last flush (a writer of a side file calls
        this as it writes, so its file is on disk within the interval even when no rows come)."""
        if now_ns() - self._last_flush_ns >= self._flush_interval_ns:
            self.flush()

    def flush(self) -> None:
        """Write every table's buffered rows as a new part file, and every side file to disk (in an event loop:
        queued for the writer, module docstring)."""
        self._require_running()
        for table, rows in self._buffers.items():
            if rows:
                self._write_part(table, rows)
        self._buffers = {}
        self._write(self._sync_side_files)
        self._last_flush_ns = now_ns()

    async def written(self) -> None:
        """Return once everything recorded so far is on disk (for a trial that reads its own record back)."""
        await asyncio.wrap_future(self._writer.submit(_nothing))
        self._raise_failed()

    def _sync_side_files(self) -> None:
        for side in self._side_files:
            if not side.closed:  # closed by its finalizer when the interpreter tears an unfinished trial down
                side.flush()
                os.fsync(side.fileno())

    def side_file(self, name: str) -> BinaryIO:
        """A new binary file in the record (`name` such as "telemetry.tlog") for a writer that appends
        whole records to it as the trial goes. The recorder flushes and fsyncs it with the tables
        (`flush`, at most a flush interval apart while rows come or `flush_if_due` is called) and closes
        it when the trial ends, finished or crashed; the writer only writes."""
        self._require_running()
        if not _SIDE_FILE_NAME.fullmatch(name) or name in (MANIFEST_NAME, EVENTS_NAME):
            raise ValueError(f"side file name {name!r} must be NAME.EXT of letters, digits, '_' or '-', and not "
                             f"{MANIFEST_NAME} or {EVENTS_NAME}")
        side = open(self.record_dir / name, "xb")
        self._side_files.append(side)
        return side

    def event(self, kind: str, **fields: Any) -> None:
        """Append one event line to events.jsonl, fsynced before the listeners are told (module docstring)."""
        self._require_running()
        assert self._events is not None
        stamps: dict[str, Any] = {"t_ns": now_ns()}
        if self.vehicle_clock is not None:
            vehicle_s = self.vehicle_clock()
            if vehicle_s == vehicle_s:  # not NaN, which JSON cannot carry
                stamps[STAMP] = vehicle_s
        line = json.dumps({**stamps, "kind": kind, **fields}, default=_jsonable) + "\n"
        self._write(functools.partial(_append_synced, self._events, line),
                    then=functools.partial(self._tell, kind, fields))

    def _tell(self, kind: str, fields: dict[str, Any]) -> None:
        for listener in self.listeners:
            listener(kind, fields)

    def finish(self, outcome: str, summary: Mapping[str, Any] | None = None) -> None:
        """Merge each table's parts and its rows still buffered into one file, and mark the record finished."""
        self._require_running()
        self._write(self._sync_side_files)
        self.event("trial_finished", outcome=outcome)
        self._wait_written()  # a write that failed is the trial's crash (__exit__), not a finished record
        tables_dir = self.record_dir / TABLES_DIR
        rows_per_table = {}
        # The rows still buffered go straight into the merged file, not through a part of their own first: a
        # lockstep trial lasts a second or two of wall time, and most of its tables would otherwise be written,
        # fsynced, read back and deleted once more.
        for table in {**self._parts_written, **self._buffers}:
            parts_dir = tables_dir / table
            parts = sorted(parts_dir.glob("part-*.parquet")) if table in self._parts_written else []
            pieces = [_read_parquet(part) for part in parts]
            rows = self._buffers.get(table)
            if rows:
                pieces.append(self._arrow(table, rows))
            if not pieces:
                continue  # a table whose only row was refused
            merged = _concat(pieces)
            write_atomically(tables_dir / f"{table}.parquet", lambda f: pq.write_table(merged, f))
            # Only now that the merged file is in place may the parts go; readers prefer the merged file.
            if parts:
                for leftover in parts_dir.iterdir():
                    leftover.unlink()
                parts_dir.rmdir()
            # Merged: were a later table's file to fail, the crash's flush must not write these rows again.
            self._buffers.pop(table, None)
            rows_per_table[table] = merged.num_rows
        self._buffers = {}  # empty, so that an append after the end is refused (`append`)
        self._manifest["tables"] = rows_per_table
        self._close(status="finished", outcome=outcome, summary=dict(summary or {}))

    def _require_running(self) -> None:
        if not self._running:
            raise RuntimeError(f"recorder for {self.record_dir} is not running (use it inside `with`, before finish())")

    def _conform(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        """Check a row against the table's column types, fixing a column's type on first sight."""
        # A row whose columns and value types were all found right before is right again (the
        # telemetry table's 100 rows a second are all alike); checking that takes two C-level passes.
        shape = (tuple(row), tuple(map(type, row.values())))
        known_good = self._good_shapes.setdefault(table, set())
        if shape in known_good:
            return row
        conformed = self._conform_each(table, row)
        # Only conversions change a value (numpy scalar, int into float, None dropped), and each changes
        # the shape: a row that keeps its shape was kept as it came.
        if (tuple(conformed), tuple(map(type, conformed.values()))) == shape:
            known_good.add(shape)
        return conformed

    def _conform_each(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        types = self._column_types.setdefault(table, {})
        conformed = {}
        for column, value in row.items():
            if isinstance(value, np.generic):
                value = value.item()
            if value is None:
                continue  # null; the column's type comes from its first real value
            kind = type(value)
            if kind not in _ARROW_TYPES:
                raise TypeError(
                    f"table {table!r} column {column!r}: expected bool, int, float or str, got {kind.__name__}"
                )
            known = types.setdefault(column, kind)
            if known is float and kind is int:
                value = float(value)
            elif known is not kind:
                raise TypeError(
                    f"table {table!r} column {column!r} holds {known.__name__} (its first value), "
                    f"got {kind.__name__} {value!r}"
                )
            conformed[column] = value
        return conformed

    def _arrow(self, table: str, rows: list[dict[str, Any]]) -> pa.Table:
        schema = pa.schema([(column, _ARROW_TYPES[kind]) for column, kind in self._column_types[table].items()])
        return pa.Table.from_pylist(rows, schema=schema)

    def _write_part(self, table: str, rows: list[dict[str, Any]]) -> None:
        arrow = self._arrow(table, rows)  # here: the writer must not read column types that append may change
        number = self._parts_written.get(table, 0) + 1
        self._write(functools.partial(_write_part_file, self.record_dir / TABLES_DIR / table, number, arrow))
        self._parts_written[table] = number

    def _write(self, job: Callable[[], object], then: Callable[[], None] | None = None) -> None:
        """`job` done on the writer thread after every write asked for before it, then `then` on this thread:
        in a running event loop, this returns at once and `then` runs in the loop once `job` is done; outside
        one, this returns once both are."""
        self._raise_failed()
        done = self._writer.submit(self._run, job)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            done.result()
            self._raise_failed()
            if then is not None:
                then()
            return
        if then is not None:
            asyncio.wrap_future(done, loop=loop).add_done_callback(lambda written: written.result() and then())

    def _run(self, job: Callable[[], object]) -> bool:
        """On the writer thread: whether `job` wrote; its error is kept for the recorder's next call to raise."""
        try:
            job()
        except Exception as error:
            self._failed = self._failed or error
            return False
        return True

    def _raise_failed(self) -> None:
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def _wait_written(self) -> None:
        """Everything queued is on disk when this returns (the thread's own wait, also in an event loop)."""
        self._writer.submit(_nothing).result()
        self._raise_failed()

    def _close(self, status: str, **fields: Any) -> None:
        self._running = False
        self._writer.shutdown(wait=True)  # everything queued written, the crash's events too
        self._raise_failed()
        assert self._events is not None
        self._events.close()
        self._sync_side_files()  # whatever a writer added since the last flush
        for side in self._side_files:
            side.close()
        self._manifest.update(status=status, ended=_now(), **fields)
        self._write_manifest()
        # Safe to drop while held: whoever claims the directory next finds this record in it and stops.
        (self.record_dir / LOCK_FILE).unlink()
        self._claim.close()

    def _write_manifest(self) -> None:
        text = json.dumps(self._manifest, indent=2, default=_jsonable) + "\n"
        write_atomically(self.record_dir / MANIFEST_NAME, lambda f: f.write(text.encode("utf-8")))


def _nothing() -> None:
    """A write job that marks its place in the queue: done once every job before it is."""


def _append_synced(file: TextIO, line: str) -> None:
    file.write(line)
    file.flush()
    os.fsync(file.fileno())


def _write_part_file(parts_dir: Path, number: int, arrow: pa.Table) -> None:
    parts_dir.mkdir(exist_ok=True)
    write_atomically(parts_dir / f"part-{number:06d}.parquet", lambda f: pq.write_table(arrow, f))


def read_manifest(record_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The record's manifest as a dict; UnreadableRecord if the file is not one (FileNotFoundError if missing)."""
    return read_json_object(Path(record_dir) / MANIFEST_NAME, MAX_MANIFEST_BYTES)


def read_json_object(path: Path, limit: int) -> dict[str, Any]:
    """A JSON object file of at most `limit` bytes, read as a manifest is; UnreadableRecord if it is not one."""
    value = _parse_json(_read_text(path, limit), path)
    if not isinstance(value, dict):
        raise UnreadableRecord(f"{path}: expected a JSON object, got a {type(value).__name__}")
    return value


def read_events(record_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every event in the order written. A torn last line (killed mid-write) is skipped."""
    path = Path(record_dir) / EVENTS_NAME
    # Only newline-terminated lines were completely written.
    complete = _read_text(path, MAX_EVENTS_BYTES).split("\n")[:-1]
    return [_parse_json(line, f"{path} line {number}") for number, line in enumerate(complete, 1) if line]


def read_table(record_dir: str | os.PathLike[str], name: str) -> pd.DataFrame:
    """One table of a record: the merged file of a finished trial, else its parts in order."""
    tables_dir = Path(record_dir) / TABLES_DIR
    merged = tables_dir / f"{name}.parquet"
    if merged.exists():
        return _read_parquet(merged).to_pandas()
    parts = sorted((tables_dir / name).glob("part-*.parquet"))
    if not parts:
        raise FileNotFoundError(f"{record_dir} has no table {name!r}")
    return _concat_parts(parts).to_pandas()


def _concat_parts(parts: list[Path]) -> pa.Table:
    return _concat([_read_parquet(part) for part in parts])


def _concat(pieces: list[pa.Table]) -> pa.Table:
    # Columns first seen in a later piece are null in earlier ones; types never differ (see _conform).
    return pa.concat_tables(pieces, promote_options="default")


def _read_text(path: Path, limit: int) -> str:
    with open(path, "rb") as file:
        raw = file.read(limit + 1)
    if len(raw) > limit:
        raise UnreadableRecord(f"{path}: expected at most {limit >> 20} MB, got a larger file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnreadableRecord(f"{path}: expected UTF-8 text, got byte 0x{raw[error.start]:02x} at offset "
                               f"{error.start} (a binary file?)") from None


def _parse_json(text: str, source: str | Path) -> Any:
    try:
        value = json.loads(text, parse_int=_int64)
    except RecursionError:  # the parser recursed as deep as Python allows before MAX_DEPTH could be checked
        raise UnreadableRecord(f"{source}: expected at most {MAX_DEPTH} levels of nesting, got deeper") from None
    except ValueError as error:
        raise UnreadableRecord(f"{source}: expected JSON, got {error}") from None
    containers = [value] if isinstance(value, (dict, list)) else []
    for _ in range(MAX_DEPTH):  # level by level, not recursively: deep nesting is what is guarded against
        containers = [child for item in containers for child in (item.values() if isinstance(item, dict) else item)
                      if isinstance(child, (dict, list))]
        if not containers:
            return value
    raise UnreadableRecord(f"{source}: expected at most {MAX_DEPTH} levels of nesting, got deeper")


def _int64(text: str) -> int:
    # Beyond 64 bits an integer overflows wherever a table or an array is made of it.
    number = int(text)
    if not -MAX_INT <= number < MAX_INT:
        raise ValueError(f"an integer outside 64 bits ({text[:24]}...)")
    return number


def _read_parquet(path: Path) -> pa.Table:
    """One parquet file of a table; UnreadableRecord unless it is a flat table of at most MAX_TABLE_BYTES."""
    try:
        with pq.ParquetFile(path) as file:
            metadata = file.metadata
            size = max(path.stat().st_size, sum(metadata.row_group(i).total_byte_size  # uncompressed
                                                for i in range(metadata.num_row_groups)))
            if size > MAX_TABLE_BYTES:
                raise UnreadableRecord(f"{path}: expected a table of at most {MAX_TABLE_BYTES >> 20} MB, got "
                                       f"{size >> 20} MB")
            nested = [field.name for field in file.schema_arrow if pa.types.is_nested(field.type)]
            if nested:
                raise UnreadableRecord(f"{path}: expected a flat table, got nested column {nested[0]!r}")
            return file.read()
    except UnreadableRecord:
        raise
    except (ValueError, OSError) as error:
        if isinstance(error, OSError) and error.errno is not None:  # the machine's error, not the file's bytes
            raise
        # pyarrow says "corrupt" with an ArrowInvalid (a ValueError) or an OSError of no errno.
        raise UnreadableRecord(f"{path}: expected a parquet table, got {str(error).splitlines()[0]}") from None


def _now() -> dict[str, Any]:
    # Both clocks read together, so monotonic t_ns values in the record can be placed in wall time.
    return {"wall_clock": datetime.now(timezone.utc).isoformat(), "monotonic_ns": now_ns()}


@functools.lru_cache(maxsize=1)
def _versions() -> dict[str, str | None]:
    # Read once per process (callers copy it): a campaign worker records hundreds of trials, and reading
    # the installed packages' metadata cost several milliseconds a trial.
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for package in _VERSIONED_PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _jsonable(value: Any) -> Any:
    """JSON fallback for the few non-JSON types a configuration or summary commonly holds."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f"cannot record {type(value).__name__} as JSON")
