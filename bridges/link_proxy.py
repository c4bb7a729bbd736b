"""The MAVLink-aware link-impairment proxy: flight controller <-> proxy <-> onboard side.

::

    autopilot  --(fc_url: udpin / serial)-->  LinkProxy  --(onboard_url: udpout / udpin / serial)-->  MAVSDK
               <--------- to_vehicle --------            <------------------ to_vehicle ----------

Bytes from either side are split into MAVLink frames (`bridges.mavlink_frames`); each frame gets its
fate from the direction's `DirectionModel` (`bridges.impairment`) and is sent on at its release
time. Every frame's arrival, planned release, actual send time and fate goes to `sink` as one
row (the "link" table of a trial record), so a report can put the delay applied next to the delay
asked for. Bytes that are not frames are counted and passed or dropped per `LinkSpec.malformed`.

Timing: releases are scheduled on the event loop's clock (`time.monotonic`). The default asyncio
loop waits in epoll, whose timeout has 1 ms granularity, so a release can be up to 1 ms late; run
the proxy on `precise_event_loop()` (select(), microsecond timeouts) when the delay accuracy
matters, as `hil link` does. A frame due at once (no impairment) is forwarded inline, without
going through the timer.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections import Counter
from typing import Any, Callable

from bridges.impairment import DelayLine, DirectionModel, direction_seed
from bridges.mavlink_frames import Frame, FrameSplitter
from bridges.transport import open_transport, parse_url
from profiles.link import DIRECTIONS, LinkSpec

Row = dict[str, Any]
NAN = float("nan")


def precise_event_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose timers fire within tens of microseconds (select() instead of epoll)."""
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


class _Side:
    """One end of the proxy: its transport and the splitter for the bytes arriving on it."""

    def __init__(self, url: str, check_crc: bool):
        self.url = url
        # A UDP datagram always ends a frame; a serial read may end mid-frame.
        self.datagrams = parse_url(url).scheme in ("udpin", "udpout")
        self.splitter = FrameSplitter(check_crc=check_crc)
        self.transport = None

    def split(self, data: bytes) -> list[Frame]:
        frames = self.splitter.feed(data)
        if self.datagrams:
            frames += self.splitter.flush()
        return frames


class LinkProxy:
    """Forward MAVLink between two connection strings through an impairment model.

    `fc_url` faces the flight controller (frames arriving there travel "to_onboard"), `onboard_url`
    faces the companion computer (frames arriving there travel "to_vehicle"). Use as an async
    context manager, or `await start()` / `close()`.

    `speed` is the vehicle's simulation speed factor: the model runs on vehicle time (wall x speed),
    so a simulator at 4x feels the configured 40 ms, not 160 ms, and every delay recorded is in
    vehicle time. 1 for hardware.
    """

    def __init__(self, fc_url: str, onboard_url: str, spec: LinkSpec, sink: Callable[[Row], None] | None = None,
                 speed: float = 1.0):
        if not speed > 0:
            raise ValueError(f"speed factor must be > 0, got {speed}")
        self.spec = spec
        self.sink = sink
        self.speed = speed
        self.fc = _Side(fc_url, spec.crc_check)
        self.onboard = _Side(onboard_url, spec.crc_check)
        self.fates: Counter[tuple[str, str]] = Counter()  # (direction, fate) -> frames
        self._line = DelayLine()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")
        self._models: dict[str, DirectionModel] = {}

    async def start(self) -> "LinkProxy":
        t0 = time.monotonic() * self.speed
        self._models = {d: DirectionModel(self.spec.direction(d), direction_seed(self.spec.seed, d), t0)
                        for d in DIRECTIONS}
        self.fc.transport = await open_transport(self.fc.url, lambda data: self._arrived(self.fc, data))
        try:
            self.onboard.transport = await open_transport(self.onboard.url,
                                                          lambda data: self._arrived(self.onboard, data))
        except Exception:
            self.fc.transport.close()
            raise
        return self

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        for side in (self.fc, self.onboard):
            if side.transport is not None:
                side.transport.close()
                side.transport = None

    async def __aenter__(self) -> "LinkProxy":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        self.close()

    @property
    def pending(self) -> int:
        """Frames waiting for their release time."""
        return len(self._line)

    def summary(self) -> dict[str, Any]:
        """Counts for a manifest or a log line."""
        out: dict[str, Any] = {f"{d}.{fate}": n for (d, fate), n in sorted(self.fates.items())}
        for name, side in (("from_vehicle", self.fc), ("from_onboard", self.onboard)):
            stats = side.splitter.stats
            out[f"{name}.frames"] = stats.frames
            out[f"{name}.malformed_chunks"] = stats.malformed_chunks
            out[f"{name}.malformed_bytes"] = stats.malformed_bytes
        return out

    # ------------------------------------------------------------------ data path
    def _arrived(self, side: _Side, data: bytes) -> None:
        # One clock read for both: the release is planned from `now`, the delay applied is measured from
        # `arrival_ns`, and a pre-emption between two reads would show as a frame sent early.
        arrival_ns = time.monotonic_ns()
        now = arrival_ns / 1e9
        direction, out = ("to_onboard", self.onboard) if side is self.fc else ("to_vehicle", self.fc)
        model = self._models[direction]
        for frame in side.split(data):
            if frame.malformed:
                if self.spec.malformed == "drop":
                    self._record(direction, frame, "dropped", "malformed", arrival_ns)
                    continue
                # Passed malformed bytes keep their place in the stream: no impairment, no reordering.
                self._send(out, frame.data)
                self._record(direction, frame, "passed", "malformed", arrival_ns, sent_ns=time.monotonic_ns(),
                             planned_ms=0.0, drawn_ms=0.0)
                continue
            decision = model.decide(now * self.speed, frame.data, frame.msgid)
            if not decision.releases:
                self._record(direction, frame, "dropped", decision.reason, arrival_ns)
                continue
            for copy, (release, payload) in enumerate(decision.releases):
                release /= self.speed  # vehicle time -> the wall clock the event loop runs on
                entry = (direction, frame, decision.fate, arrival_ns, decision.drawn_ms, decision.planned_ms,
                         copy, out, payload, release)
                if release <= now and not self._line:
                    self._release(entry)
                else:
                    self._line.push(release, entry)
        self._arm_timer()

    def _arm_timer(self) -> None:
        due = self._line.next_due()
        if due is None or due >= self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = due
        self._timer = asyncio.get_running_loop().call_at(due, self._on_timer)

    def _on_timer(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        for _, entry in self._line.pop_due(time.monotonic()):
            self._release(entry)
        self._arm_timer()

    def _release(self, entry: tuple) -> None:
        direction, frame, fate, arrival_ns, drawn_ms, planned_ms, copy, out, payload, release = entry
        self._send(out, payload)
        self._record(direction, frame, fate, "", arrival_ns, sent_ns=time.monotonic_ns(), drawn_ms=drawn_ms,
                     planned_ms=planned_ms, copy=copy)

    @staticmethod
    def _send(side: _Side, payload: bytes) -> None:
        if side.transport is not None:
            side.transport.send(payload)

    def _record(self, direction: str, frame: Frame, fate: str, reason: str, arrival_ns: int, sent_ns: int | None = None,
                drawn_ms: float = NAN, planned_ms: float = NAN, copy: int = 0) -> None:
        if copy == 0:
            self.fates[(direction, fate)] += 1
        if self.sink is None:
            return
        self.sink({
            "direction": direction, "msgid": frame.msgid, "seq": frame.seq, "sysid": frame.sysid, "size": len(frame.data),
            "fate": fate, "reason": reason, "copy_no": copy, "arrival_ns": arrival_ns, "sent_ns": sent_ns,
            "drawn_ms": drawn_ms, "planned_ms": planned_ms,
            "applied_ms": (sent_ns - arrival_ns) / 1e6 * self.speed if sent_ns is not None else NAN,
        })
