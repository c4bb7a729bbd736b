"""The exchange loop: frames of sensor data out, PX4's actuator outputs in, on a thread of its own.

Lockstep (PX4 SITL): PX4's clock is the `time_usec` of the primary HIL_SENSOR, and after each one
PX4 runs its estimator and controllers once and answers with HIL_ACTUATOR_CONTROLS stamped with
that time. So the loop sends frame k, waits for the answer stamped k, applies it, and only then
computes frame k+1: neither side ever runs ahead, and a flight takes the same vehicle time
whatever the machine's speed. PX4 only starts answering once its output driver runs (about 0.1 s
of vehicle time after the first frame); until then frames go out at real time, and an answer
that does not come within ``reply_timeout_s`` wall seconds is counted as missed and the loop
goes on with the previous outputs (PX4 never deadlocks the simulator).

Without lockstep (a board in HITL runs on its own clock) frames go out paced to the wall clock
and answers are applied whenever they arrive.

``speed`` None lets lockstep run as fast as the pair can; a number never lets vehicle time run
faster than the wall clock times that factor. A loop that falls more than ``MAX_LAG_S`` of wall
time behind its pace starts pacing afresh from where it is, instead of racing to catch up.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable

from pymavlink.dialects.v20 import common as mavlink

from px4.external_physics.hil_messages import ActuatorControls, take_actuator_controls
from px4.external_physics.links import ByteLink
from px4.external_physics.simulator import HarnessSimulator

MAX_LAG_S = 0.25
# Vehicle seconds per wall second before PX4 first answers: it is still starting its modules.
BOOT_SPEED = 1.0
# Vehicle seconds per wall second while PX4 shuts down.
WIND_DOWN_SPEED = 10.0
# The loop thread's CPU clock is a system call (a few microseconds here, where a whole step of the harness's
# takes tens): it is read on one step in this many, at the boundaries of its parts.
PART_SAMPLE_EVERY = 16


@dataclass
class LoopStats:
    """How the exchange went: frames sent, answers applied, answers that never came in time, and the
    vehicle and wall time since PX4 first answered (their ratio is the real-time factor).

    Since PX4 first answered, the loop thread's CPU time is counted too: in unpaced lockstep PX4 waits
    while the harness works, so that CPU time over the wall time is the harness's share of each step; the
    rest is PX4's step and the waits. CPU time, not wall time, because on a shared machine a woken PX4 may
    preempt the harness inside its send, and that time is PX4's. The thread's whole CPU time is counted
    (``cpu_s`` up to the wall time ``cpu_wall``, ``cpu_frames`` frames after the first answer), with the
    whole harness process's (``process_s``: the event loop draining records into the sink, the garbage
    collector) beside it. One step in `PART_SAMPLE_EVERY` is also split into parts: building the next
    frame (physics step, sensor models, encoding), the socket calls (sending, and reading PX4's answer) and
    parsing and applying it; their sums over the sampled steps (``build_s``, ``socket_s``, ``parse_s``)
    apportion the whole."""

    frames: int = 0
    replies: int = 0
    missed_replies: int = 0
    falls_behind: int = 0
    first_reply_wall: float = 0.0
    first_reply_us: int = 0
    first_reply_frame: int = 0
    last_wall: float = 0.0
    last_us: int = 0
    cpu_s: float = 0.0
    process_s: float = 0.0
    cpu_wall: float = 0.0
    cpu_frames: int = 0
    build_s: float = 0.0
    socket_s: float = 0.0
    parse_s: float = 0.0

    @property
    def real_time_factor(self) -> float:
        wall = self.last_wall - self.first_reply_wall
        return (self.last_us - self.first_reply_us) * 1e-6 / wall if self.replies and wall > 0 else 0.0

    @property
    def harness_share(self) -> float:
        """The loop thread's CPU time over the wall time, since PX4 first answered."""
        wall = self.cpu_wall - self.first_reply_wall
        return self.cpu_s / wall if self.cpu_frames and wall > 0 else 0.0

    @property
    def process_share(self) -> float:
        """The same for the whole harness process (every thread)."""
        wall = self.cpu_wall - self.first_reply_wall
        return self.process_s / wall if self.cpu_frames and wall > 0 else 0.0

    def step_parts_us(self) -> dict[str, float]:
        """Microseconds per frame since PX4 first answered: the harness's parts (its CPU time per frame,
        apportioned as on the sampled steps) and the rest of the wall time (PX4's step, waits)."""
        busy = self.cpu_s / self.cpu_frames if self.cpu_frames else 0.0
        sampled = self.build_s + self.socket_s + self.parse_s
        parts = {name: busy * seconds / sampled if sampled else 0.0
                 for name, seconds in (("build", self.build_s), ("socket", self.socket_s), ("parse", self.parse_s))}
        wall = (self.last_wall - self.first_reply_wall) / max(self.frames - self.first_reply_frame, 1)
        parts["PX4 and waits"] = max(wall - busy, 0.0)
        return {name: seconds * 1e6 for name, seconds in parts.items()}


class SimulatorLoop:
    """Runs a `HarnessSimulator` against PX4 over a `ByteLink` until `stop()`.

    ``on_message(msg)`` gets every message from PX4 other than HIL_ACTUATOR_CONTROLS (on the loop's
    thread). `send()` writes other bytes on the same link from any thread. A link failure ends the
    loop and is kept in ``error``.
    """

    def __init__(self, simulator: HarnessSimulator, link: ByteLink, speed: float | None, lockstep: bool = True,
                 reply_timeout_s: float = 0.5, on_message: Callable[[object], None] | None = None):
        self.simulator = simulator
        self.link = link
        self.speed = speed
        self.lockstep = lockstep
        self.reply_timeout_s = reply_timeout_s
        self.on_message = on_message
        self.stats = LoopStats()
        self.error: Exception | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._parser = mavlink.MAVLink(None)
        self._parser.robust_parsing = True
        self._last_reply_us = -1
        self._sampled = False  # whether this step is split into parts
        self._cpu_mark = 0.0  # on a sampled step, the loop thread's CPU time when its current part began
        self._cpu_first = self._process_first = 0.0  # the thread's and the process's when PX4 first answered

    def start(self) -> "SimulatorLoop":
        self._thread = threading.Thread(target=self._run, name=f"harness-physics {self.link.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def wind_down(self) -> None:
        """Keep PX4's clock going without waiting for its answers, so that it can shut down quickly."""
        self.lockstep = False
        self.speed = max(self.speed or 0.0, WIND_DOWN_SPEED)

    def send(self, data: bytes) -> None:
        self.link.write(data)

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        try:
            self._exchange()
        except Exception as exc:  # kept for the owner to raise: a thread's traceback would go nowhere
            self.error = exc

    def _exchange(self) -> None:
        sim, link, stats = self.simulator, self.link, self.stats
        clock, cpu = time.monotonic, time.thread_time
        pace = self._pace_now()
        anchor_wall, anchor_us = clock(), sim.time_us
        while not self._stop.is_set():
            # A sampled step reads the CPU clock between its parts: each runs from one reading to the next, so
            # the loop's own bookkeeping is counted with them.
            self._sampled = stats.replies > 0 and stats.frames % PART_SAMPLE_EVERY == 0
            if self._sampled:
                start = cpu()
                stats.cpu_s, stats.cpu_wall = start - self._cpu_first, clock()
                stats.process_s = time.process_time() - self._process_first
                stats.cpu_frames = stats.frames - stats.first_reply_frame
                frame = sim.frame()
                self._cpu_mark = cpu()
                stats.build_s += self._cpu_mark - start
            else:
                frame = sim.frame()
            link.write(frame)  # counted with the socket calls, up to the end of the next read
            stats.frames += 1
            due = sim.time_us
            if self.lockstep and stats.replies:
                deadline = clock() + self.reply_timeout_s
                while self._last_reply_us < due:
                    left = deadline - clock()
                    if left <= 0:
                        stats.missed_replies += 1
                        break
                    self._read(left)
            if self._pace_now() != pace:
                pace = self._pace_now()
                anchor_wall, anchor_us = clock(), sim.time_us
            if pace is not None:  # (unpaced runs in lockstep: the wait for the reply read everything)
                target = anchor_wall + (sim.time_us - anchor_us) * 1e-6 / pace
                now = clock()
                if now - target > MAX_LAG_S:
                    stats.falls_behind += 1
                    anchor_wall, anchor_us = now, sim.time_us
                while now < target:
                    self._read(target - now)
                    now = clock()
                self._read(0.0)
            stats.last_wall, stats.last_us = clock(), sim.time_us

    def _read(self, timeout_s: float) -> None:
        data = self.link.read(timeout_s)
        if not self._sampled:
            self._receive(data)
            return
        read = time.thread_time()
        self.stats.socket_s += read - self._cpu_mark
        self._receive(data)
        self._cpu_mark = time.thread_time()
        self.stats.parse_s += self._cpu_mark - read

    def _pace_now(self) -> float | None:
        if self.lockstep and not self.stats.replies:
            return BOOT_SPEED
        return self.speed

    def _receive(self, data: bytes) -> None:
        # PX4's answers are read straight from their frames while nothing else is half-parsed; anything
        # else (and whatever follows it) goes through pymavlink's parser.
        while data and not self._parser.buf_len():
            controls, data = take_actuator_controls(data)
            if controls is None:
                break
            self._apply(controls)
        for msg in (self._parser.parse_buffer(data) if data else None) or ():
            if msg.get_msgId() == mavlink.MAVLINK_MSG_ID_HIL_ACTUATOR_CONTROLS:
                self._apply(ActuatorControls.from_message(msg))
            elif self.on_message is not None:
                self.on_message(msg)

    def _apply(self, controls: ActuatorControls) -> None:
        self.simulator.apply(controls)
        self._last_reply_us = controls.time_usec
        if not self.stats.replies:
            # The CPU time is counted from here: before, the loop only paces PX4's start-up.
            self.stats.first_reply_wall, self.stats.first_reply_us = time.monotonic(), self.simulator.time_us
            self.stats.first_reply_frame = self.stats.frames
            self._cpu_first, self._process_first = time.thread_time(), time.process_time()
        self.stats.replies += 1
