"""What a link does to each frame: a seeded, clock-agnostic impairment model.

Given a frame and the time it arrived, `DirectionModel.decide()` says what happens to it: dropped
(and why), or released at some time, possibly corrupted, possibly twice. It never reads a clock
and never sleeps: times are plain seconds on whatever clock the caller runs, so the same model
drives

- the link proxy (`bridges/link_proxy.py`), in wall-clock time, and
- an in-process vehicle stepped in simulated time (lockstep), through `ImpairedChannel`, which
  pairs a model with a `DelayLine` and is advanced with the simulation clock.

Same profile, same seed, same arrival times: same fates and release times, on either clock.

Per direction, applied in this order (each frame draws from one seeded generator per direction):

1. outage windows (seconds after `t0`): everything arriving inside one is dropped;
2. loss: Bernoulli, or Gilbert-Elliott (a good and a bad state with their own loss rates);
3. bandwidth: frames are serialized one after another at `bandwidth_bps` with `bits_per_byte`
   (10 for a UART's 8N1), waiting in a FIFO; a frame that would wait longer than
   `queue_limit_ms` is dropped, as a radio's full buffer drops;
4. latency after serialization: fixed, uniform, normal or a trace of values, plus uniform jitter;
5. reordering: with probability `reorder`, a frame is held `reorder_ms` longer, so later frames
   overtake it; otherwise `preserve_order` keeps releases in arrival order (a serial radio never
   reorders; a Wi-Fi/UDP path with jitter does);
6. corruption: with probability `corrupt`, `corrupt_bytes` random bytes get one random bit flipped;
7. duplication: with probability `duplicate`, the frame is released twice.

Per message id, the per-frame parts (latency, loss, reordering, corruption, duplication) may be
replaced by `DirectionSpec.by_message`; bandwidth, queue and outages belong to the link itself.
"""

from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass

from profiles.link import DirectionSpec, FrameImpairment, Latency, Loss


@dataclass(frozen=True)
class Decision:
    """The fate of one frame. `releases` holds (time, bytes) per copy, empty when dropped."""

    fate: str  # passed | delayed | dropped | corrupted | duplicated
    reason: str  # why it was dropped ("outage", "loss", "queue"), else ""
    drawn_ms: float  # the latency drawn from the configured distribution (NaN when dropped first)
    planned_ms: float  # first release minus arrival: serialization, queueing, latency, reordering
    releases: tuple[tuple[float, bytes], ...]


class _GilbertElliott:
    """The two-state loss chain (one per message class, so classes do not share bursts)."""

    def __init__(self, loss: Loss):
        self.loss = loss
        self.bad = False

    def lost(self, rng: random.Random) -> bool:
        spec = self.loss
        lost = rng.random() < (spec.loss_bad if self.bad else spec.loss_good)
        flip = spec.p_bad_good if self.bad else spec.p_good_bad
        if rng.random() < flip:
            self.bad = not self.bad
        return lost


class DirectionModel:
    """Decides the fate of every frame in one direction. Pure apart from its own seeded state."""

    def __init__(self, spec: DirectionSpec, seed: int | str, t0: float = 0.0):
        self.spec = spec
        self.t0 = t0
        self._rng = random.Random(seed)
        self._busy_until = -float("inf")  # when the serializer is free again
        self._last_release = -float("inf")
        self._trace_pos: dict[int, int] = {}
        self._chains: dict[int, _GilbertElliott] = {}

    def decide(self, t: float, data: bytes, msgid: int = -1) -> Decision:
        """The fate of `data` (message `msgid`, -1 if unknown) arriving at time `t` (seconds)."""
        spec = self.spec
        rng = self._rng
        rules = spec.by_message.get(msgid, spec.frames)
        nan = float("nan")
        since = t - self.t0
        for start, end in spec.outages:
            if start <= since < end:
                return Decision("dropped", "outage", nan, nan, ())
        if self._lost(rules, msgid):
            return Decision("dropped", "loss", nan, nan, ())
        sent = t
        if spec.bandwidth_bps > 0:
            begin = max(t, self._busy_until)
            if spec.queue_limit_ms > 0 and (begin - t) * 1000.0 > spec.queue_limit_ms:
                return Decision("dropped", "queue", nan, nan, ())
            self._busy_until = sent = begin + len(data) * spec.bits_per_byte / spec.bandwidth_bps
        drawn = self._draw_latency(rules.latency, msgid)
        release = sent + drawn / 1000.0
        if rules.reorder > 0 and rng.random() < rules.reorder:
            release += rules.reorder_ms / 1000.0
        elif spec.preserve_order:
            release = max(release, self._last_release)
            self._last_release = release
        fate = "delayed" if release > t else "passed"
        if rules.corrupt > 0 and rng.random() < rules.corrupt:
            data = self._corrupt(data, rules.corrupt_bytes)
            fate = "corrupted"
        copies = ((release, data),)
        if rules.duplicate > 0 and rng.random() < rules.duplicate:
            copies = ((release, data), (release, data))
            fate = "duplicated" if fate != "corrupted" else fate
        return Decision(fate, "", drawn, (release - t) * 1000.0, copies)

    def _lost(self, rules: FrameImpairment, msgid: int) -> bool:
        loss = rules.loss
        if loss.model == "bernoulli":
            return loss.rate > 0 and self._rng.random() < loss.rate
        key = msgid if msgid in self.spec.by_message else -1
        chain = self._chains.get(key)
        if chain is None:
            chain = self._chains[key] = _GilbertElliott(loss)
        return chain.lost(self._rng)

    def _draw_latency(self, lat: Latency, msgid: int) -> float:
        rng = self._rng
        if lat.kind == "fixed":
            value = lat.ms
        elif lat.kind == "uniform":
            value = rng.uniform(lat.min_ms, lat.max_ms)
        elif lat.kind == "normal":
            value = rng.gauss(lat.ms, lat.std_ms)
        else:
            key = msgid if msgid in self.spec.by_message else -1
            pos = self._trace_pos.get(key, 0)
            value = lat.trace_ms[pos % len(lat.trace_ms)]
            self._trace_pos[key] = pos + 1
        if lat.jitter_ms > 0:
            value += rng.uniform(-lat.jitter_ms, lat.jitter_ms)
        return max(0.0, value)

    def _corrupt(self, data: bytes, count: int) -> bytes:
        if not data:
            return data
        out = bytearray(data)
        for _ in range(count):
            out[self._rng.randrange(len(out))] ^= 1 << self._rng.randrange(8)
        return bytes(out)


class DelayLine:
    """Frames waiting for their release time, released in time order (ties in arrival order)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, object]] = []
        self._order = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, release: float, item: object) -> None:
        heapq.heappush(self._heap, (release, next(self._order), item))

    def next_due(self) -> float | None:
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> list[tuple[float, object]]:
        """Every (release time, item) due at or before `now`."""
        out = []
        heap = self._heap
        while heap and heap[0][0] <= now:
            release, _, item = heapq.heappop(heap)
            out.append((release, item))
        return out


def direction_seed(seed: int, direction: str) -> str:
    """Each direction's generator seed: independent directions, reproducible from one number."""
    return f"{seed}:{direction}"


class ImpairedChannel:
    """One direction of an impaired link for an in-process caller driving its own clock.

    The lockstep vehicle puts every frame (or message) it would send in with `send(t, ...)` and
    takes out what the link delivers with `deliver(t)`, both in simulated seconds::

        channel = ImpairedChannel(spec.to_vehicle, direction_seed(spec.seed, "to_vehicle"))
        channel.send(sim_t, payload, msgid)
        for payload in channel.deliver(sim_t):
            vehicle.receive(payload)

    `decisions` keeps every decision with its arrival time, for the same "link" table the proxy
    writes.
    """

    def __init__(self, spec: DirectionSpec, seed: int | str, t0: float = 0.0, keep_decisions: bool = True):
        self.model = DirectionModel(spec, seed, t0)
        self.line = DelayLine()
        self.decisions: list[tuple[float, int, Decision]] | None = [] if keep_decisions else None

    def send(self, t: float, data: bytes, msgid: int = -1) -> Decision:
        decision = self.model.decide(t, data, msgid)
        if self.decisions is not None:
            self.decisions.append((t, msgid, decision))
        for release, copy in decision.releases:
            self.line.push(release, copy)
        return decision

    def deliver(self, t: float) -> list[bytes]:
        return [item for _, item in self.line.pop_due(t)]  # type: ignore[misc]
