"""What HITL costs on the serial line: bytes a second each way, computed from the frames and rates, and measured
on PX4 as a HITL board (px4-hitl) at 921600 baud; what share of a 921600 and a 57600 baud line that is.

    PX4_DIR=../shared/px4/v1.16.1 .venv/bin/python benchmarks/hitl_link.py [SECONDS]

Without PX4_DIR only the computed figures are printed.
"""

from __future__ import annotations

import asyncio
import os
import sys

from bridges.hitl_bench import BITS_PER_BYTE, LINE_HEADROOM, LineNeed, hitl_bench
from px4.external_physics.simulator import SimulatorOptions

BAUDS = (921600, 57600)


def _shares(label: str, up: float, down: float) -> None:
    for baud in BAUDS:
        capacity = baud / BITS_PER_BYTE
        print(f"  {label} at {baud:>6} baud ({capacity:>6.0f} B/s): to the board {up / capacity:6.1%}, "
              f"back {down / capacity:6.1%} of the line")


async def _measure(seconds: float) -> dict:
    from bridges.mavsdk_vehicle import connect_started
    from px4.hitl_board import BoardOptions, px4_hitl_board

    async with px4_hitl_board(BoardOptions(px4_dir=os.environ["PX4_DIR"])) as board:
        async with hitl_bench(board.url, SimulatorOptions()) as bench:
            vehicle = await connect_started(bench.url, board)
            try:
                await vehicle.sleep(seconds)  # on the board's clock
                row = bench.line.summary()
                row["px4_imu_rate_hz"] = await board.imu_rate_hz()
            finally:
                await vehicle.close()
    row["cable"] = board.hardware.final
    return row


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    need = LineNeed.of(SimulatorOptions())
    print(f"computed: HIL_SENSOR {need.imu_hz:g} Hz x {need.sensor_frame} B + HIL_GPS {need.gps_hz:g} Hz x "
          f"{need.gps_frame} B = {need.up:.0f} B/s to the board; HIL_ACTUATOR_CONTROLS {need.imu_hz:g} Hz x "
          f"{need.controls_frame} B = {need.down:.0f} B/s back (HITL may take {LINE_HEADROOM:.0%} of a line)")
    _shares("computed", need.up, need.down)
    if not os.environ.get("PX4_DIR"):
        print("PX4_DIR not set: no measurement on a PX4 HITL board")
        return
    row = asyncio.run(_measure(seconds))
    print(f"measured on PX4 over {row['wall_s']:.1f} s at 921600 baud: {row['up_B_s']:.0f} B/s to the board, "
          f"{row['down_B_s']:.0f} B/s back (PX4's other telemetry included); HIL_SENSOR sent "
          f"{row['hil_sensor_sent_hz']:.1f} Hz ({row['hil_sensor_skipped']} frames skipped by a late host); PX4's "
          f"vehicle_acceleration rate {row['px4_imu_rate_hz']:.1f} Hz (the line IMU as the clock module's instance 0 "
          f"reads it: px4/hitl_board.py); board frames lost {row['frames_dropped']} of "
          f"{row['frames_received']}; cable drops {row['cable'].get('dropped')}")
    _shares("measured", row["up_B_s"], row["down_B_s"])
    print(f"ratio measured/computed: to the board {row['up_B_s'] / need.up:.2f}, back {row['down_B_s'] / need.down:.2f}")


if __name__ == "__main__":
    main()
