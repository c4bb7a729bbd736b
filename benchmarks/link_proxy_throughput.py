"""The link proxy's figures: throughput ceiling, delay accuracy, added latency (issue 5's benchmarks).

1. Throughput ceiling on one core: the proxy's whole per-frame path (split, decide, schedule, send
   on a real loopback socket, record row) driven in-process as fast as it goes, for a clean link and
   a 40 +- 10 ms / 5 % loss link (timers included). The receive syscall is not in it.
2. Delay accuracy: `hil link` in its own process with a fixed 20 ms delay, a sender process pacing
   ATTITUDE frames at 50, 500, 1000 and 2000 frames/s, the receiver here. |applied - configured| is
   measured from outside (send stamp to receive stamp, both CLOCK_MONOTONIC, minus 20 ms) and from
   the proxy's own "link" table (its send time minus its arrival time, minus the delay it drew).
3. Added latency: the same sender/receiver, direct and through a proxy with a clean profile.

    python benchmarks/link_proxy_throughput.py [--seconds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pymavlink.dialects.v20 import common as mavlink  # noqa: E402

from benchmarks.quick import parse_args  # noqa: E402
from bridges.link_proxy import LinkProxy, precise_event_loop  # noqa: E402
from profiles.link import DirectionSpec, FrameImpairment, Latency, LinkSpec, Loss  # noqa: E402
from px4.process import free_udp_port  # noqa: E402
from records.record import read_table  # noqa: E402

DELAY_MS = 20.0
GOAL_RATE, GOAL_P99_MS = 1000, 0.5


def _frame(index: int) -> bytes:
    mav = mavlink.MAVLink(None, srcSystem=1, srcComponent=1)
    return mavlink.MAVLink_attitude_message(index, 0.1, 0.2, 0.3, 0.0, 0.0, 0.0).pack(mav)


def throughput(frames: int) -> dict[str, float]:
    """Frames per second through the proxy's data path on one core."""
    results = {}
    impaired = LinkSpec(to_onboard=DirectionSpec(FrameImpairment(Latency("fixed", ms=40, jitter_ms=10), Loss(rate=0.05))))
    for name, spec in (("clean", LinkSpec()), ("40+-10ms 5% loss", impaired)):
        async def run() -> float:
            sink_port = free_udp_port()
            sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sink.bind(("127.0.0.1", sink_port))
            sink.setblocking(False)
            rows = []
            datagrams = [_frame(i) for i in range(256)]
            async with LinkProxy(f"udpin://127.0.0.1:{free_udp_port()}", f"udpout://127.0.0.1:{sink_port}", spec,
                                 sink=rows.append) as proxy:
                start = time.perf_counter()
                for i in range(frames):
                    proxy._arrived(proxy.fc, datagrams[i & 255])  # what the transport calls for each datagram
                    if i % 1000 == 999:
                        await asyncio.sleep(0)  # let due releases and socket writes run
                while proxy.pending:
                    await asyncio.sleep(0.001)
                elapsed = time.perf_counter() - start
            sink.close()
            return frames / elapsed
        with asyncio.Runner(loop_factory=precise_event_loop) as runner:
            results[name] = runner.run(run())
    return results


def _sender(port: int, rate: float, seconds: float, conn) -> None:
    """Paced frames to 127.0.0.1:port; sends back each frame's send time (monotonic ns)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    frames = [_frame(i) for i in range(int(rate * seconds))]
    stamps = []
    period = 1.0 / rate
    start = time.monotonic() + 0.2
    for i, frame in enumerate(frames):
        due = start + i * period
        left = due - time.monotonic()
        if left > 0:
            time.sleep(left)  # clock_nanosleep: ~0.1 ms late at worst, and no core spent spinning
        stamps.append(time.monotonic_ns())
        sock.sendto(frame, ("127.0.0.1", port))
    conn.send(stamps)


def _one_way(target_port: int, receive_port: int, rate: float, seconds: float) -> np.ndarray:
    """One-way delays (ms) of paced frames sent to target_port and received on receive_port."""
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", receive_port))
    rx.settimeout(1.0)
    parent, child = mp.Pipe()
    proc = mp.Process(target=_sender, args=(target_port, rate, seconds, child))
    proc.start()
    arrivals = {}
    try:
        while True:
            data = rx.recv(2048)
            now = time.monotonic_ns()
            arrivals[int.from_bytes(data[10:14], "little")] = now  # ATTITUDE time_boot_ms = frame index
    except socket.timeout:
        pass
    stamps = parent.recv()
    proc.join()
    rx.close()
    return np.array([(arrivals[i] - sent) / 1e6 for i, sent in enumerate(stamps) if i in arrivals])


def _proxy_process(listen_port: int, forward_port: int, profile: Path, record: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "hil", "link", "--listen", f"udpin://127.0.0.1:{listen_port}",
                             "--forward", f"udpout://127.0.0.1:{forward_port}", "--profile", str(profile),
                             "--record", str(record)], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    proc.stdout.readline()  # ready
    return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)


def _pct(values: np.ndarray) -> str:
    return f"p50 {np.percentile(values, 50):.3f} ms  p99 {np.percentile(values, 99):.3f} ms  (n={len(values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="seconds per paced run (default: 4)")
    parser.add_argument("--frames", type=int, default=100_000, help="frames for the throughput run")
    args = parse_args(parser, {'seconds': 2.0, 'frames': 20000})

    print("== throughput ceiling, one core (in-process data path incl. socket send and record row)")
    for name, fps in throughput(args.frames).items():
        print(f"  {name:18s} {fps:10.0f} frames/s")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        fixed = tmp / "fixed.yaml"
        fixed.write_text(f"name: fixed-{DELAY_MS:g}ms\nboth:\n  latency: {{kind: fixed, ms: {DELAY_MS}}}\n")
        clean = tmp / "clean.yaml"
        clean.write_text("name: clean\n")
        print(f"== delay accuracy, fixed {DELAY_MS:g} ms: |applied - configured|")
        for rate in (50, 500, 1000, 2000):
            listen, forward = free_udp_port(), free_udp_port()
            record = tmp / f"rec-{rate}"
            proxy = _proxy_process(listen, forward, fixed, record)
            outside = np.abs(_one_way(listen, forward, rate, args.seconds) - DELAY_MS)
            _stop(proxy)
            table = read_table(record, "link")
            inside = np.abs(table.applied_ms - table.planned_ms).to_numpy()
            print(f"  {rate:5d} frames/s  end to end: {_pct(outside)}")
            print(f"  {'':16s} proxy's own record: {_pct(inside)}")
            if rate == GOAL_RATE:
                print(f"  {'':16s} goal (issue 17): end to end p99 <= {GOAL_P99_MS:g} ms at {GOAL_RATE} frames/s")
        print("== added latency, clean profile vs direct (one way, 500 frames/s)")
        port = free_udp_port()
        direct = _one_way(port, port, 500, args.seconds)
        listen, forward = free_udp_port(), free_udp_port()
        proxy = _proxy_process(listen, forward, clean, tmp / "rec-clean")
        through = _one_way(listen, forward, 500, args.seconds)
        _stop(proxy)
        print(f"  direct         {_pct(direct)}")
        print(f"  through proxy  {_pct(through)}")
        print(f"  added          p50 {np.percentile(through, 50) - np.percentile(direct, 50):.3f} ms  "
              f"p99 {np.percentile(through, 99) - np.percentile(direct, 99):.3f} ms")


if __name__ == "__main__":
    main()
