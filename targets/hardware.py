"""A flight controller that is already running, on its connection string: a real aircraft (every
safety gate applies), a SITL someone else started, or, with `physics="harness"`, a board on the bench
in HITL mode whose physics the harness closes over its serial port.

`px4-hitl` is PX4 started by the harness as such a board (`px4.hitl_board`: the stock binary, its one
MAVLink link on a serial cable at the board's baud rate, SYS_HITL = 1); past its start it takes the same
path as a board on the desk: the bench's checks, its physics, the arming gate.

Nothing is reconfigured here: the trial sets, journals and restores what it changes, and nothing
arms without the trial's own explicit option (a HITL board refuses arming unless
``options.allow_arming``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from bridges.hitl_bench import SERIAL_LINK_TABLE, hitl_bench
from bridges.truth import truth_of
from bridges.vehicle import VehicleError
from profiles.library import load_vehicle_profile
from px4.external_physics.simulator import SimulatorOptions, px4_params_for
from px4.hitl_board import DEFAULT_BAUD, BoardOptions, HitlBoard, px4_hitl_board
from targets.connection import connected
from targets.px4_sitl import physics_truth
from targets.spec import PX4_HITL, OpenTarget, TargetOptions, TargetSpec

BOARD_SETTLE_S = 120.0


@contextlib.asynccontextmanager
async def open_target(spec: TargetSpec, options: TargetOptions) -> AsyncIterator[OpenTarget]:
    """The flight controller on ``spec.url`` (or the harness's PX4 HITL board), in real time."""
    if spec.kind == PX4_HITL:
        # The profile's airframe geometry is the board's configuration, set once as a lab sets up its board.
        board = BoardOptions(baud=spec.baud or DEFAULT_BAUD, px4_dir=options.px4_dir,
                             params=px4_params_for(load_vehicle_profile(options.profile)))
        async with px4_hitl_board(board, keep_in=options.keep_in) as px4:
            async with _on_the_bench(px4.url, spec.name, options, px4) as opened:
                yield opened
        return
    if options.physics == "harness":
        async with _on_the_bench(spec.url, spec.name, options) as opened:
            yield opened
        return
    async with connected(spec.url, options, speed=1.0) as (vehicle, proxy):
        yield OpenTarget(vehicle, spec.name, hardware=True, link=proxy)


@contextlib.asynccontextmanager
async def _on_the_bench(url: str, name: str, options: TargetOptions,
                        board: HitlBoard | None = None) -> AsyncIterator[OpenTarget]:
    """A board in HITL mode on its serial port `url`, flown on the harness's physics; the serial line's figures
    go to the record (``options.sink``, table SERIAL_LINK_TABLE) when the block ends. A `board` the harness
    started is waited for while it is alive, as any process the harness starts, and adds the IMU rate PX4 itself
    measured (px4_imu_rate_hz) to the line's figures."""
    simulator = SimulatorOptions(profile=options.profile, speed=1.0, seed=options.seed,
                                 perturbation=options.perturbation)
    async with hitl_bench(url, simulator, arm_allowed=options.allow_arming) as bench:
        try:
            async with connected(bench.url, options, board, speed=1.0) as (vehicle, proxy), \
                    truth_of(vehicle, physics_truth(bench.simulator)):
                if board is not None:
                    # A board the harness has just powered up: its estimator needs the bench's sensors for a few
                    # seconds before it reports a position, as one on the desk has had them since it was plugged in.
                    await board.while_alive(vehicle.wait_until(lambda s: s.t_ns > 0, BOARD_SETTLE_S, "its first position"),
                                            VehicleError, "reported its first position", BOARD_SETTLE_S)
                yield OpenTarget(vehicle, name, hardware=True, failure=board.failure if board else lambda: None,
                                 pid=board.proc.pid if board else None, simulator=bench.simulator,
                                 link=proxy)
        finally:
            if options.sink is not None:
                row = bench.line.summary()
                if board is not None and board.proc.poll() is None:
                    row["px4_imu_rate_hz"] = await board.imu_rate_hz()
                options.sink(SERIAL_LINK_TABLE, row)
