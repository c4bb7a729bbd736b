"""Hostile MAVLink against the built-in vehicle while a client keeps it hovering.

A fuzzer on a second link of a `hil sim` process sends random bytes, real frames with bytes flipped,
cut or spliced, and well-formed frames carrying absurd values (NaN, inf, 1e30, 2^31-1) in the
messages a ground station or companion sends; meanwhile MAVSDK holds the vehicle at 5 m. Then the
garbage stops and plain requests (PARAM_REQUEST_READ) must be answered at the first try.

Prints: bytes and frames sent, whether the process is alive, the hover error, requests answered at
the first try once the garbage stops (goal: 100 %), and the vehicle's resident memory before and
after (goal: RSS growth < 5 %).

    python benchmarks/mavlink_fuzz.py [--megabytes 1] [--speed 4] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import socket
import sys
import time
from pathlib import Path

import psutil
from pymavlink.dialects.v20 import common as mavlink

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.quick import parse_args  # noqa: E402
from bridges.mavsdk_vehicle import connect  # noqa: E402
from px4.process import free_udp_port  # noqa: E402
from targets.builtin import SimProcessOptions, builtin_vehicle  # noqa: E402

ABSURD = (math.nan, math.inf, -math.inf, 1e30, -1e30, float(2**31 - 1))
HOVER_ALT = 5.0


def absurd_frames(mav: mavlink.MAVLink, rng: random.Random, target: tuple[int, int]) -> list[bytes]:
    """Well-formed frames with values no flight controller should act on. (Not MANUAL_CONTROL or
    PARAM_SET: sticks at full deflection and a parameter set are legitimate inputs PX4 obeys.)"""
    x = rng.choice(ABSURD)
    big = rng.choice((2**31 - 1, -(2**31)))
    cmd = rng.choice((mavlink.MAV_CMD_NAV_TAKEOFF, mavlink.MAV_CMD_DO_REPOSITION, mavlink.MAV_CMD_SET_MESSAGE_INTERVAL,
                      mavlink.MAV_CMD_INJECT_FAILURE, mavlink.MAV_CMD_DO_CHANGE_SPEED))
    messages = [
        mavlink.MAVLink_command_long_message(*target, cmd, 0, x, x, x, x, x, x, x),
        mavlink.MAVLink_set_attitude_target_message(0, *target, 0, [x, x, x, x], x, x, x, x),
        mavlink.MAVLink_set_position_target_local_ned_message(0, *target, mavlink.MAV_FRAME_LOCAL_NED, 0,
                                                              x, x, x, x, x, x, x, x, x, x, x),
        mavlink.MAVLink_set_position_target_global_int_message(0, *target, mavlink.MAV_FRAME_GLOBAL_INT, 0,
                                                               big, big, x, x, x, x, x, x, x, x, x),
        mavlink.MAVLink_mission_item_int_message(*target, 0, mavlink.MAV_FRAME_GLOBAL_RELATIVE_ALT_INT,
                                                 mavlink.MAV_CMD_NAV_WAYPOINT, 0, 1, x, x, x, x, big, big, x),
    ]
    return [m.pack(mav) for m in messages]


def garbage(mav: mavlink.MAVLink, rng: random.Random, target: tuple[int, int]) -> bytes:
    kind = rng.random()
    if kind < 0.25:
        return rng.randbytes(rng.randint(1, 300))
    frame = bytearray(rng.choice(absurd_frames(mav, rng, target)))
    if kind < 0.5:
        return bytes(frame)
    if kind < 0.75:
        for _ in range(rng.randint(1, 4)):
            frame[rng.randrange(len(frame))] = rng.randrange(256)
        return bytes(frame)
    cut = rng.randrange(1, len(frame))
    return bytes(frame[:cut]) if rng.random() < 0.5 else bytes(frame[:cut]) + rng.randbytes(rng.randint(1, 40))


def first_try_answers(sock: socket.socket, vehicle_addr, mav: mavlink.MAVLink, target, count: int) -> int:
    """PARAM_REQUEST_READ `count` times, one at a time; how many got their PARAM_VALUE within 1 s."""
    parser = mavlink.MAVLink(None)
    parser.robust_parsing = True
    answered = 0
    for index in range(count):
        name = ("MPC_XY_VEL_MAX", "MIS_TAKEOFF_ALT", "COM_OF_LOSS_T")[index % 3]
        sock.sendto(mavlink.MAVLink_param_request_read_message(*target, name.encode(), -1).pack(mav), vehicle_addr)
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data, _ = sock.recvfrom(65535)
            except socket.timeout:
                break
            messages = parser.parse_buffer(data) or []
            if any(m.get_type() == "PARAM_VALUE" and m.param_id == name for m in messages):
                answered += 1
                break
    return answered


async def run(megabytes: float, speed: float, seed: int) -> None:
    rng = random.Random(seed)
    fuzz_port = free_udp_port()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", fuzz_port))
    mav = mavlink.MAVLink(None, srcSystem=255, srcComponent=190)
    async with builtin_vehicle(SimProcessOptions(speed=speed, extra_links=[f"udpout://127.0.0.1:{fuzz_port}"])) as sim:
        process = psutil.Process(sim.proc.pid)
        _, vehicle_addr = sock.recvfrom(65535)  # its first frame says where it listens
        vehicle = await connect(sim.url, timeout=10.0, speed_factor=speed)
        try:
            await vehicle.wait_armable(30.0)
            await vehicle.arm()
            await vehicle.takeoff(HOVER_ALT)
            rss_before = process.memory_info().rss
            target = (1, 1)
            sent_bytes = frames = 0
            worst = 0.0
            start = time.monotonic()
            while sent_bytes < megabytes * 1e6 and sim.failure() is None:
                chunk = garbage(mav, rng, target)
                sock.sendto(chunk, vehicle_addr)
                sent_bytes += len(chunk)
                frames += 1
                if frames % 200 == 0:
                    await asyncio.sleep(0.005)  # let telemetry in; the fuzzer keeps ~1-4 MB/s
                    worst = max(worst, abs(vehicle.state.altitude - HOVER_ALT))
            seconds = time.monotonic() - start
            alive = sim.failure() is None
            if alive:
                await asyncio.sleep(0.5)
                sock.setblocking(True)
                answered = await asyncio.to_thread(first_try_answers, sock, vehicle_addr, mav, target, 30)
                rss_after = process.memory_info().rss
            else:
                answered, rss_after = 0, rss_before
        finally:
            await vehicle.close()
    print(f"fuzz: {sent_bytes / 1e6:.2f} MB in {frames} datagrams over {seconds:.1f} s (seed {seed})")
    print(f"vehicle process alive: {alive}" + ("" if alive else f" -- {sim.failure()}"))
    print(f"hover error while fuzzed: max {worst:.2f} m from {HOVER_ALT:g} m")
    print(f"requests answered at the first try after the garbage: {answered}/30 (goal: 30/30)")
    print(f"vehicle RSS: {rss_before / 1e6:.1f} MB -> {rss_after / 1e6:.1f} MB "
          f"({100 * (rss_after / rss_before - 1):+.1f} %, goal < +5 %)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=1.0)
    parser.add_argument("--speed", type=float, default=4.0)
    parser.add_argument("--seed", type=int, default=1)
    args = parse_args(parser, {'megabytes': 0.25})
    asyncio.run(run(args.megabytes, args.speed, args.seed))


if __name__ == "__main__":
    main()
