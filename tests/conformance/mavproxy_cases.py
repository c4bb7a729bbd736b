"""MAVProxy driven as a user drives it: commands typed at its prompt (here written to its standard input,
with pauses), its console read back, on the ground-station link; a pymavlink listener on the API link
watches the altitude."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pymavlink.dialects.v20 import common as mavlink

from px4.modes import FlightMode, decode_custom_mode

from ..mavlink_client import Client
from .suite import Target, blocking, case

MAVPROXY = Path(sys.executable).with_name("mavproxy.py")


class MavProxy:
    """A MAVProxy process on `url`, its console lines collected as they come."""

    def __init__(self, url: str, workdir: str):
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            [sys.executable, str(MAVPROXY), f"--master={url}", "--no-state", "--nowait"], cwd=workdir,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())

    def type(self, command: str) -> None:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def wait_for(self, pattern: str, seconds: float) -> str | None:
        """The first console line matching `pattern` within `seconds` (wall), else None."""
        deadline = time.monotonic() + seconds
        seen = 0
        while time.monotonic() < deadline:
            for line in self.lines[seen:]:
                if re.search(pattern, line):
                    return line
            seen = len(self.lines)
            time.sleep(0.1)
        return None

    def wait_ready(self) -> None:
        """Until MAVProxy has the vehicle's parameters, as a user waits before typing: before that its own
        parameter download competes with what is typed (a mission upload stalled past PX4's 5 s timeout)."""
        self.wait_for(r"Detected vehicle|online system", 30.0)
        self.wait_for(r"Received \d+ parameters", 90.0)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# A QGC WPL 110 file as QGroundControl and Mission Planner save one: item 0 is home, then a take-off, two
# waypoints and a return, altitudes relative to home.
def qgc_wpl(lat: float, lon: float, alt: float) -> str:
    rows = [(0, 1, 0, 16, lat, lon, alt), (1, 0, 3, 22, lat, lon, 10), (2, 0, 3, 16, lat + 1e-4, lon, 10),
            (3, 0, 3, 16, lat + 1e-4, lon + 1e-4, 10), (4, 0, 3, 20, 0, 0, 0)]
    return "QGC WPL 110\n" + "".join(f"{seq}\t{cur}\t{frame}\t{cmd}\t0\t0\t0\t0\t{x:.7f}\t{y:.7f}\t{z:.2f}\t1\n"
                                     for seq, cur, frame, cmd, x, y, z in rows)


def _ready(target: Target) -> tuple[Client, tuple[float, float, float]]:
    """A listener on the API link once the vehicle is armable, and where it is (lat, lon, AMSL m)."""
    watcher = Client(target.api_url)
    watcher.wait_armable(20.0)
    pos = watcher.recv("GLOBAL_POSITION_INT", 5.0)
    return watcher, (pos.lat / 1e7, pos.lon / 1e7, pos.alt / 1000)


@case("MAVProxy: wp load of a QGC WPL file", "MAVProxy")
@blocking
def wp_load(target: Target) -> dict:
    watcher, (lat, lon, alt) = _ready(target)
    with tempfile.TemporaryDirectory() as work:
        Path(work, "mission.txt").write_text(qgc_wpl(lat, lon, alt))
        proxy = MavProxy(target.gcs_url, work)
        try:
            proxy.wait_ready()
            # Typed again when nothing came back, as a user does: a MAVProxy slowed by a loaded machine can stall
            # between items past the autopilot's 5 s, which then drops the upload without a word (both do).
            for _ in range(2):
                proxy.type("wp load mission.txt")
                ack = proxy.wait_for(r"Got MISSION_ACK", 20.0)
                if ack is not None:
                    break
            time.sleep(1.0)
            return {"MISSION_ACK": ack, "said Invalid item": any("Invalid item" in line for line in proxy.lines)}
        finally:
            proxy.close()
            watcher.close()


@case("MAVProxy: arm throttle, takeoff 5 (metres above sea level, below the vehicle)", "MAVProxy", speed=2.0,
      tolerance={"highest m": 1.0},
      known={"texts": "PX4 v1.16.1 itself said 'Already higher than takeoff altitude' in 3 of 5 runs of this case "
                      "(and to the one pymavlink NAV_TAKEOFF with param7 5 tried), and stayed down in all; the built-in "
                      "vehicle says it every time"})
@blocking
def takeoff_below(target: Target) -> dict:
    watcher, _ = _ready(target)
    with tempfile.TemporaryDirectory() as work:
        proxy = MavProxy(target.gcs_url, work)
        try:
            proxy.wait_ready()
            proxy.type("arm throttle")
            armed = watcher.recv("HEARTBEAT", 30.0, lambda m: m.base_mode & mavlink.MAV_MODE_FLAG_SAFETY_ARMED)
            proxy.type("takeoff 5")
            # A loaded MAVProxy takes its time to send it: what follows is timed from the mode it sets.
            takeoff = watcher.recv("HEARTBEAT", 30.0, lambda m: m.get_srcComponent() == 1
                                   and decode_custom_mode(m.custom_mode) == FlightMode.TAKEOFF)
            heights = [m.relative_alt / 1000 for m in watcher.collect(8.0 / target.speed + 2, {"GLOBAL_POSITION_INT"})]
            # PX4 ends each text with a tab (its events' separator), which no ground station shows.
            said = [t.rstrip("\t") for t in watcher.texts if "takeoff alt" in t.lower() or "higher" in t.lower()]
            return {"armed": armed is not None, "in Takeoff": takeoff is not None,
                    "highest m": round(max(heights, default=float("nan")), 1),
                    "texts": said}
        finally:
            proxy.close()
            watcher.close()
