"""Targets as plugins: one `open_target` brings any kind up in a known state and tears it down."""

from __future__ import annotations

import os

import pytest

from targets import KINDS, OpenTarget, TargetOptions, TargetSpec, open_target
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import SPEED


def test_every_target_name_parses_to_a_kind_with_a_plugin():
    for name, kind in (("sim", "sim"), ("lockstep", "lockstep"), ("px4-sitl", "px4-sitl"), ("px4-sitl:3", "px4-sitl"),
                       ("udpin://127.0.0.1:14540", "hardware"), ("serial:///dev/ttyACM0:921600", "hardware")):
        spec = TargetSpec.parse(name)
        assert spec.kind == kind and spec.name == name and spec.kind in KINDS
    assert TargetSpec.parse("px4-sitl:3").instance == 3
    assert not TargetSpec.parse("udpin://127.0.0.1:14540").simulated
    for bad in ("simulator", "px4-sitl:x", "tcp//nowhere"):
        with pytest.raises(ValueError, match="expected"):
            TargetSpec.parse(bad)


def test_target_options_refuse_what_no_target_can_take():
    with pytest.raises(ValueError, match="speed factor"):
        TargetOptions(speed=float("nan"))
    with pytest.raises(ValueError, match="physics"):
        TargetOptions(physics="gazebo")


async def test_the_builtin_vehicle_comes_up_with_its_boot_parameters_and_is_stopped_after():
    options = TargetOptions(speed=SPEED, params={"MPC_XY_VEL_MAX": 7.5})
    async with open_target("sim", options) as opened:
        assert isinstance(opened, OpenTarget) and opened.name == "sim" and not opened.hardware
        assert await opened.vehicle.get_param("MPC_XY_VEL_MAX") == pytest.approx(7.5)
        assert opened.failure() is None
        failure = opened.failure
    assert "exited" in failure(), "the vehicle process is stopped when the block ends"


async def test_the_builtin_vehicle_runs_in_a_session_of_its_own_as_px4_sitl_does():
    # Not in the harness's: the kernel shares the CPU between sessions first (autogroup), and a vehicle that
    # shared the harness's share with CPU burners started from the same shell fell behind where PX4 did not.
    async with builtin_vehicle(SimProcessOptions(speed=SPEED)) as sim:
        assert os.getsid(sim.proc.pid) == sim.proc.pid != os.getsid(0)


async def test_a_link_profile_puts_the_impairment_between_target_and_vehicle_on_every_target_kind():
    for kind in ("sim", "lockstep"):
        rows: list[tuple[str, dict]] = []
        options = TargetOptions(speed=SPEED, link="flightbench_25_50ms", sink=lambda table, row: rows.append((table, row)))
        async with open_target(kind, options) as opened:
            await opened.vehicle.wait_armable(30.0)
            link_rows = [row for table, row in rows if table == "link"]
            # Frames cross the link while the target is up (not only when it is closed).
            assert link_rows, f"{kind}: no frame went through the link model"
            sent = [row["applied_ms"] for row in link_rows if row["fate"] != "dropped"]
            assert 25.0 <= sorted(sent)[len(sent) // 2] <= 50.0, f"{kind}: frames did not take the profile's 25-50 ms"
            summary = opened.link.summary()
            assert sum(n for key, n in summary.items() if key.startswith("to_onboard.")) > 0


async def test_a_running_flight_controller_is_reached_on_its_connection_string_as_hardware():
    # A built-in vehicle someone else started stands in for the flight controller: the target must
    # treat it as a real aircraft (hardware) and leave it running.
    async with builtin_vehicle(SimProcessOptions(speed=SPEED)) as sim:
        async with open_target(sim.url, TargetOptions(speed=SPEED)) as opened:
            assert opened.hardware and opened.name == sim.url
            assert opened.vehicle.speed_factor == 1.0, "a running flight controller is flown in real time"
            await opened.vehicle.wait_armable(30.0)
        assert sim.failure() is None, "closing the target leaves a flight controller it did not start running"
