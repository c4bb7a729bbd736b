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
import os
import re
from pathlib import Path

from records.atomic import write_atomically


def state_dir() -> Path:
    """Where the harness keeps state that must survive a crash."""
    return Path(os.environ.get("HIL_STATE_DIR") or Path.home() / ".local" / "state" / "quad-hil")


class ParamJournal:
    """Originals of changed parameters for one flight controller; every write is atomic and fsynced."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._originals: dict[str, float] = self._read()

    @classmethod
    def for_vehicle(cls, vehicle_id: str) -> "ParamJournal":
        """The journal of the flight controller called `vehicle_id` (a hardware uid or connection string)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", vehicle_id).strip("_") or "vehicle"
        return cls(state_dir() / "param-journals" / f"{safe}.json")

    def _read(self) -> dict[str, float]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise RuntimeError(f"{self.path}: unreadable parameter journal ({exc}); it lists parameters a crashed "
                               "run left changed: inspect it, restore them by hand, then delete it") from exc
        return {str(k): float(v) for k, v in data.get("originals", {}).items()}

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


async def restore_pending(vehicle, journal: ParamJournal) -> dict[str, float]:
    """Put back what an interrupted run left changed (call before anything else); returns what was restored."""
    restored = {}
    for name, value in journal.pending().items():
        await vehicle.set_param(name, value)
        journal.forget(name)
        restored[name] = value
    return restored
