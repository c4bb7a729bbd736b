"""The built-in vehicle's flight logs: a ULog of its own states per flight, kept as PX4 keeps them.

PX4 logs from arming to disarming by default (SDLOG_MODE 0); its SITL start-up script sets
SDLOG_MODE 1, which also logs from boot until the first disarm. Both are honoured here. Logs go to
``<root>/log/YYYY-MM-DD/HH_MM_SS.ulg`` (UTC), where PX4 SITL writes them, so MAVLink FTP, the log
protocol (LOG_REQUEST_LIST / LOG_REQUEST_DATA / LOG_ERASE) and Flight Review-style tools find them.
Topic and field names follow PX4's uORB messages, so tools that read PX4 logs (px4/ulog.py among
them) read these; the values are the simulation's truth, timestamps its clock in microseconds.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from px4.modes import FlightMode
from px4.sim.autopilot import Autopilot
from px4.ulog_writer import ULogWriter

# Samples per second of vehicle time (PX4's default logger profile logs attitude and position about so).
FAST_HZ = 50.0
SLOW_HZ = 5.0
FLUSH_EVERY_S = 1.0

TOPICS = {
    "vehicle_local_position": [("uint64_t", "timestamp"), ("float", "x"), ("float", "y"), ("float", "z"),
                               ("float", "vx"), ("float", "vy"), ("float", "vz"), ("float", "heading")],
    "vehicle_global_position": [("uint64_t", "timestamp"), ("double", "lat"), ("double", "lon"), ("float", "alt")],
    "vehicle_attitude": [("uint64_t", "timestamp"), ("float[4]", "q")],
    "vehicle_angular_velocity": [("uint64_t", "timestamp"), ("float[3]", "xyz")],
    "actuator_outputs": [("uint64_t", "timestamp"), ("uint32_t", "noutputs"), ("float[16]", "output")],
    "vehicle_status": [("uint64_t", "timestamp"), ("uint8_t", "arming_state"), ("uint8_t", "nav_state"),
                       ("bool", "failsafe")],
    "vehicle_land_detected": [("uint64_t", "timestamp"), ("bool", "landed")],
    "battery_status": [("uint64_t", "timestamp"), ("float", "voltage_v"), ("float", "remaining")],
}
FAST = ("vehicle_local_position", "vehicle_attitude", "vehicle_angular_velocity", "actuator_outputs")
# vehicle_status.nav_state values of PX4 for the built-in vehicle's modes.
NAV_STATE = {FlightMode.MANUAL: 0, FlightMode.ALTCTL: 1, FlightMode.POSCTL: 2, FlightMode.MISSION: 3,
             FlightMode.HOLD: 4, FlightMode.RTL: 5, FlightMode.ACRO: 10, FlightMode.OFFBOARD: 14,
             FlightMode.STABILIZED: 15, FlightMode.TAKEOFF: 17, FlightMode.LAND: 18, FlightMode.READY: 4}
ARMING_STATE_DISARMED, ARMING_STATE_ARMED = 1, 2


@dataclass(frozen=True)
class LogFile:
    """A log on disk as the log protocol lists it."""

    path: Path
    size: int
    time_utc: int  # seconds since 1970 when it was started


class FlightLogger:
    """Writes a ULog while the vehicle is armed (and from boot with SDLOG_MODE 1). Call `update()` often."""

    def __init__(self, autopilot: Autopilot, root: Path, info: dict[str, tuple[str, object]]):
        self.ap = autopilot
        self.log_dir = Path(root) / "log"
        self.info = info
        self.writer: ULogWriter | None = None
        self._next_fast = self._next_slow = self._next_flush = 0.0
        self._was_armed = False
        self._boot_log_pending = int(autopilot.params["SDLOG_MODE"]) == 1 if "SDLOG_MODE" in autopilot.params else False

    @property
    def logging(self) -> bool:
        return self.writer is not None

    def update(self) -> str | None:
        """Start, sample or end the current log; returns the "[logger] <path>" text when one starts."""
        armed = self.ap.armed
        started = None
        if self.writer is None and (armed and not self._was_armed or self._boot_log_pending):
            started = self._start()
            self._boot_log_pending = False
        elif self.writer is not None and self._was_armed and not armed:
            self._stop()
        self._was_armed = armed
        if self.writer is not None:
            self._sample()
        return started

    def say(self, severity: int, text: str) -> None:
        """Keep a text the pilot was told (PX4 logs its STATUSTEXTs as logged strings)."""
        if self.writer is not None:
            self.writer.log(severity, self._now_us(), text)

    def close(self) -> None:
        if self.writer is not None:
            self._stop()

    def files(self) -> list[LogFile]:
        """The logs on disk, oldest first (the one being written included, as PX4 lists it)."""
        logs = sorted(self.log_dir.glob("*/*.ulg"))
        out = []
        for path in logs:
            try:
                stamp = dt.datetime.strptime(f"{path.parent.name} {path.stem}", "%Y-%m-%d %H_%M_%S")
                started = int(stamp.replace(tzinfo=dt.timezone.utc).timestamp())
                out.append(LogFile(path, path.stat().st_size, started))
            except (ValueError, OSError):
                continue  # not one of ours (an FTP upload, say), or gone meanwhile
        return out

    def erase(self) -> None:
        """LOG_ERASE: remove every finished log (never the one being written)."""
        current = self.writer.path if self.writer is not None else None
        for log in self.files():
            if log.path != current:
                log.path.unlink(missing_ok=True)

    # ------------------------------------------------------------------ internals
    def _now_us(self) -> int:
        return int(self.ap.time_s * 1e6)

    def _start(self) -> str:
        now = dt.datetime.now(dt.timezone.utc)
        folder = self.log_dir / now.strftime("%Y-%m-%d")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / now.strftime("%H_%M_%S.ulg")
        n = 1
        while path.exists():  # two flights within a second
            path = folder / now.strftime(f"%H_%M_%S_{n}.ulg")
            n += 1
        params = self.ap.params
        values = {name: ("int32_t" if params.spec(name).is_int else "float", params[name]) for name in params}
        info = dict(self.info, time_ref_utc=("int32_t", 0))
        self.writer = ULogWriter(path, self._now_us(), info=info, parameters=values, topics=TOPICS)
        self._next_fast = self._next_slow = self._next_flush = self.ap.time_s
        return f"[logger] ./log/{folder.name}/{path.name}"

    def _stop(self) -> None:
        assert self.writer is not None
        self._sample(force=True)
        self.writer.close()
        self.writer = None

    def _sample(self, force: bool = False) -> None:
        ap, w, now = self.ap, self.writer, self.ap.time_s
        assert w is not None
        t = self._now_us()
        if force or now >= self._next_fast:
            self._next_fast = max(self._next_fast + 1.0 / FAST_HZ, now)
            d = ap.dyn
            w.write("vehicle_local_position", [t, *d.pos, *d.vel, d.yaw])
            w.write("vehicle_attitude", [t, *d.q])
            w.write("vehicle_angular_velocity", [t, *d.omega])
            motors = ap.motor_commands
            outputs = motors + [0.0] * (16 - len(motors))
            w.write("actuator_outputs", [t, len(motors), *outputs[:16]])
        if force or now >= self._next_slow:
            self._next_slow = max(self._next_slow + 1.0 / SLOW_HZ, now)
            lat, lon, alt = ap.origin.to_global(*ap.position)
            w.write("vehicle_global_position", [t, lat, lon, alt])
            w.write("vehicle_status", [t, ARMING_STATE_ARMED if ap.armed else ARMING_STATE_DISARMED,
                                       NAV_STATE.get(ap.mode, 4), ap.failsafe])
            w.write("vehicle_land_detected", [t, ap.landed])
            remaining = ap.battery_remaining
            w.write("battery_status", [t, 4 * (3.5 + 0.7 * remaining), remaining])
        if now >= self._next_flush:
            self._next_flush = now + FLUSH_EVERY_S
            w.flush()

