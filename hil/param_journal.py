"""A journal, on disk, of every flight-controller parameter the harness has changed and not yet restored.

The original value is written (and fsynced) *before* the parameter is changed, and forgotten only
after it has been put back. So whatever happens to the harness (an exception, Ctrl-C, kill -9, a
power cut on the laptop), the next run against the same flight controller finds what is still
changed and restores it before doing anything else.

One journal file per flight controller, named by its hardware id (AUTOPILOT_VERSION uid) where it
has one, so it follows the vehicle from one port or cable to another. The directory is
$HIL_STATE_DIR, or ~/.local/state/quad-hil.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from bridges.vehicle import VehicleError
from config.errors import ConfigError
from px4.params import PARAM_NAME
from records.atomic import write_atomically

MAX_JOURNAL_BYTES = 1 << 20  # a journal holds a few dozen names; anything larger is not one


class JournalError(ConfigError):
    """A parameter journal that cannot be trusted; the message names the file and what is wrong."""


def state_dir() -> Path:
    """Where the harness keeps state that must survive a crash."""
    return Path(os.environ.get("HIL_STATE_DIR") or Path.home() / ".local" / "state" / "quad-hil")


class ParamJournal:
    """Originals of changed parameters for one flight controller; every write is atomic and fsynced."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._originals: dict[str, float] = self._read()

    @classmethod
    def for_vehicle(cls, vehicle_id: str) -> ParamJournal:
        """The journal of the flight controller called `vehicle_id` (a hardware uid or connection string)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", vehicle_id).strip("_") or "vehicle"
        return cls(state_dir() / "param-journals" / f"{safe}.json")

    def _read(self) -> dict[str, float]:
        try:
            data = json.loads(self.path.read_bytes()[:MAX_JOURNAL_BYTES + 1].decode())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            raise self._error(f"unreadable ({exc})") from None
        originals = data.get("originals") if isinstance(data, dict) else None
        if not isinstance(originals, dict):
            raise self._error('expected a JSON object {"originals": {NAME: VALUE, ...}}')
        read = {}
        for name, value in originals.items():
            if not PARAM_NAME.match(name):
                raise self._error(f"originals.{name[:40]!r}: expected a PX4 parameter name (A-Z, 0-9, _; <= 16)")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise self._error(f"originals.{name}: expected a finite number, got {value!r:.40}")
            read[name] = float(value)
        return read

    def _error(self, what: str) -> JournalError:
        return JournalError([f"{self.path}: parameter journal {what}. It lists parameters a crashed run left changed "
                             "on this flight controller: restore them by hand (QGroundControl), then delete the file"])

    def _write(self) -> None:
        if not self._originals:
            self.path.unlink(missing_ok=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"originals": self._originals}, indent=1, sort_keys=True).encode()
        write_atomically(self.path, lambda f: f.write(text))

    def record(self, name: str, original: float) -> None:
        """Before changing `name`: remember its original (the first one, if it is changed twice)."""
        if name not in self._originals:
            self._originals[name] = float(original)
            self._write()

    def forget(self, name: str) -> None:
        """After `name` has been restored."""
        if self._originals.pop(name, None) is not None:
            self._write()

    def pending(self) -> dict[str, float]:
        """Parameters still changed: name -> value to restore."""
        return dict(self._originals)


class JournalRestoreRefused(VehicleError):
    """What a crashed run left changed cannot be put back: the harness refuses to fly this flight
    controller until someone has looked (a safety refusal, not a broken set-up)."""


async def restore_pending(vehicle, journal: ParamJournal) -> dict[str, float]:
    """Put back what an interrupted run left changed (call before anything else); returns what was restored.

    A parameter the flight controller refuses names the journal, so a journal from another vehicle
    (or another firmware) is found instead of failing every later run with a bare timeout.
    """
    restored = {}
    for name, value in journal.pending().items():
        try:
            await vehicle.set_param(name, value)
        except VehicleError as exc:
            raise JournalRestoreRefused(f"cannot restore {name} = {value:g} from the parameter journal {journal.path} ({exc}); "
                               "if this flight controller has no such parameter the journal is another vehicle's: "
                               "restore that vehicle, or delete the entry") from None
        journal.forget(name)
        restored[name] = value
    return restored


async def keep_journal(vehicle, recorder) -> dict[str, float]:
    """Give a flight controller the harness does not own its durable journal (`vehicle.journal`, kept
    per hardware id), first restoring what an interrupted run left changed; returns what was
    restored, also recorded as the event "params_restored_after_crash"."""
    vehicle.journal = ParamJournal.for_vehicle(await vehicle.identity())
    restored = await restore_pending(vehicle, vehicle.journal)
    if restored:
        recorder.event("params_restored_after_crash", params=restored, journal=str(vehicle.journal.path))
    return restored
