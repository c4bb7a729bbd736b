"""Start-up waits on the process, not on a stopwatch: a vehicle the harness started is waited for while it
is alive and starting, however long a busy machine makes that, and given up the moment it dies.

The vehicle's process is SIGSTOPped as it is spawned and let go PAUSE_S later (longer than any of the
old fixed timeouts: 15 s for `hil fly`, 20 s for a campaign trial), or SIGKILLed while it starts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from bridges.vehicle import VehicleConnectionError
from px4.process import START_CAP_S, ChildProcess, Console
from targets import TargetOptions, open_target
from targets.builtin import SimProcessOptions, builtin_vehicle

from .conftest import BUILTIN_SPEED, SPEED
from .px4_builds import MAIN_BUILD, needs_px4

PAUSE_S = 20.0


class _Held:
    """Signals sent to the next vehicle process the harness spawns: SIGSTOP at once, then `later` after
    `after_s` wall seconds. `sent_at` is when `later` went."""

    def __init__(self, later: signal.Signals, after_s: float):
        self.later, self.after_s = later, after_s
        self.pid: int | None = None
        self.sent_at: float | None = None
        self.timer: threading.Timer | None = None

    def spawned(self, pid: int) -> None:
        self.pid = pid
        os.kill(pid, signal.SIGSTOP)
        self.timer = threading.Timer(self.after_s, self._send)
        self.timer.start()

    def _send(self) -> None:
        self.sent_at = time.monotonic()
        with contextlib.suppress(ProcessLookupError):  # a test that failed early has stopped it already
            os.kill(self.pid, self.later)


@pytest.fixture
def hold_vehicle(monkeypatch):
    """`hold_vehicle(later, after_s)`: the next `hil sim` or `px4` the harness starts is stopped as it is
    spawned and sent `later` after `after_s`."""
    held: list[_Held] = []
    real = subprocess.Popen

    class Popen(real):
        def __init__(self, args, *rest, **options):
            super().__init__(args, *rest, **options)
            vehicle = isinstance(args, list) and (args[1:4] == ["-m", "hil", "sim"] or Path(args[0]).name == "px4")
            if vehicle and held and held[-1].pid is None:
                held[-1].spawned(self.pid)

    monkeypatch.setattr(subprocess, "Popen", Popen)

    def hold(later: signal.Signals, after_s: float) -> _Held:
        held.append(_Held(later, after_s))
        return held[-1]

    yield hold
    for one in held:
        if one.timer is not None:
            one.timer.cancel()
        if one.pid is not None and one.sent_at is None:
            with contextlib.suppress(ProcessLookupError):  # a test that failed early: let it take its SIGTERM
                os.kill(one.pid, signal.SIGCONT)


@pytest.mark.parametrize("target", ["sim", pytest.param("px4-sitl", marks=needs_px4)])
async def test_a_vehicle_stopped_longer_than_any_old_timeout_still_comes_up_and_arms(hold_vehicle, target):
    held = hold_vehicle(signal.SIGCONT, PAUSE_S)
    # connect_timeout_s is for flight controllers the harness did not start; here it must not cut the wait.
    options = TargetOptions(speed=BUILTIN_SPEED if target == "sim" else SPEED, px4_dir=MAIN_BUILD,
                            connect_timeout_s=1.0)
    async with open_target(target, options) as opened:
        assert held.sent_at is not None, "the vehicle was up before it was let go"
        await opened.vehicle.wait_armable(30.0)
        await opened.vehicle.arm()
        await opened.vehicle.disarm()
        assert opened.failure() is None


async def test_a_builtin_vehicle_that_dies_starting_is_reported_at_once_with_its_words():
    started = time.monotonic()
    with pytest.raises(VehicleConnectionError, match="(?s)built-in vehicle exited with code 2.*"
                                                     "unknown vehicle profile 'no-such-profile'"):
        async with open_target("sim", TargetOptions(profile="no-such-profile")):
            pass
    assert time.monotonic() - started < START_CAP_S / 5


async def test_a_builtin_vehicle_killed_while_stopped_is_reported_the_moment_it_dies(hold_vehicle):
    held = hold_vehicle(signal.SIGKILL, 3.0)
    with pytest.raises(VehicleConnectionError, match="built-in vehicle exited with code -9"):
        async with builtin_vehicle(SimProcessOptions(speed=SPEED)):
            pass
    assert time.monotonic() - held.sent_at < 2.0


async def test_a_process_alive_but_never_ready_is_given_up_at_the_cap_with_its_last_lines():
    proc = subprocess.Popen([sys.executable, "-c", "print('starting', flush=True); import time; time.sleep(60)"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    process = ChildProcess("stuck thing", proc, Console(proc.stdout))
    try:
        await process.while_alive(process.console.first("starting"), RuntimeError, "said it was starting")
        with pytest.raises(RuntimeError, match=r"(?s)stuck thing is running but had not said ready after 1 s.*"
                                               r"starting"):
            await process.while_alive(process.console.first("ready"), RuntimeError, "said ready", cap_s=1.0)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
        process.console.close()


async def test_a_wait_ends_with_the_line_it_waited_for():
    proc = subprocess.Popen([sys.executable, "-c", "print('ready at last', flush=True); import time; time.sleep(60)"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    process = ChildProcess("thing", proc, Console(proc.stdout))
    try:
        line = await process.while_alive(process.console.first("ready"), RuntimeError, "said ready")
        assert line == "ready at last"
        assert await process.console.first("ready") == line, "a line already read counts"
    finally:
        proc.kill()
        proc.wait()
        process.console.close()
