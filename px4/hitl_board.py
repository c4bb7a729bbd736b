"""PX4 as a flight controller on the desk in HITL mode: the stock SITL binary, started by the harness
with start-up scripts of its own, whose one MAVLink link runs on a serial cable at a board's baud rate.

    async with px4_hitl_board(BoardOptions(baud=921600)) as board:
        board.url                  # serial:///dev/pts/N:921600, the cable's free end
        # ... hand it to bridges.hitl_bench as any board's USB port

What the firmware runs is PX4's NuttX HITL start-up (ROMFS init.d/rcS, `SYS_HITL` > 0) done on POSIX:
`sensors start -h`, `commander start -h`, `pwm_out_sim start -m hil`, the airframe's controllers and
estimator, and one `mavlink start -d DEVICE -b BAUD`. No SIH, no sensor_*_sim module, no UDP link: the
sensors arrive as HIL_SENSOR / HIL_GPS on the serial line (MavlinkReceiver publishes them in HIL mode) and
the outputs leave as HIL_ACTUATOR_CONTROLS on it (Mavlink turns that stream on when commander reports
hil_state ON), with the one exception the clock forces, below.

The harness stands in for the two things only hardware has:

* **the USB port**: a pair of pseudo-terminals joined by a pump that carries at most BAUD/10 bytes a
  second each way (8N1), as a UART does, and drops what overflows its buffer (`SerialCable`); it counts
  bytes and drops each way;
* **the crystal**. The shipped binaries are lockstep builds (boards/px4/sitl/sitl.cmake turns on
  ENABLE_LOCKSTEP_SCHEDULER): hrt_absolute_time() is the lockstep scheduler's time
  (platforms/posix/src/px4/common/drv_hrt.cpp, hrt_absolute_time), which only px4_clock_settime moves,
  and only simulator modules call it (SimulatorMavlink::handle_message_hil_sensor, simulator_sih, the gz
  bridge, replay). Started without one, PX4 never gets a clock: measured, `mavlink start` returns 255
  (the instance never registers within its 100 ms) and every module waits. MavlinkReceiver's own
  HIL_SENSOR handler stamps samples with hrt_absolute_time() and does not set the clock. So the board
  starts `simulator_mavlink` as its clock: its TCP link carries HIL_SENSOR with id 0 and no field
  updated, stamped with the host's monotonic clock, CLOCK_RATE_HZ times a second, from a process of its
  own (`BoardHardware`). SimulatorMavlink::update_sensors publishes only the groups whose bits are set.

What the stock binary cannot do, and how the board gets around it: SimulatorMavlink's constructor builds its
simulated IMUs, and PX4Accelerometer / PX4Gyroscope advertise at construction "to keep instance numbering
in sync" (src/lib/drivers/accelerometer/PX4Accelerometer.cpp), so the clock module holds sensor_accel and
sensor_gyro instances 0-2 and the line's IMU (MavlinkReceiver, device id 1310988) lands on instance 3.
Commander requires data on instance 0 whatever else there is (HealthAndArmingChecks/checks/
accelerometerCheck.cpp and gyroCheck.cpp: `is_required = instance == 0 || ...`; without it: "Preflight
Fail: No valid data from Accel 0"), and instance 0 has the line IMU's device id 1310988 too, so
vehicle_angular_velocity / vehicle_acceleration, which take the first instance with the selected device
id, fly on it. Measured with a 2 Hz keep-alive there: PX4 armed, its vehicle_acceleration ran at 2.0 Hz
while the bench sent HIL_SENSOR at 242 Hz, HIL_ACTUATOR_CONTROLS came back at 2 Hz and the vehicle
flipped. So the board's hardware copies the accelerometer and gyroscope of every HIL_SENSOR that reaches
the board's end of the cable onto the clock link (`BoardClock.line`): instance 0 reads exactly what came
over the line, a tick (at most 1/CLOCK_RATE_HZ) later, and nothing when nothing came (a line without
HIL_SENSOR still leaves PX4 without an IMU). Magnetometer, barometer and GPS reach PX4 only through
MavlinkReceiver; the outputs leave on the line; `BoardClock.received` shows PX4 sent only HEARTBEAT,
COMMAND_LONG and HIL_ACTUATOR_CONTROLS on the clock link (simulator_mavlink's sender echoes the outputs
there too; the harness discards them).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import math
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tty
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Callable, Mapping

from pymavlink.dialects.v20 import common as mavlink

from px4.process import (
    START_CAP_S,
    ChildProcess,
    Console,
    die_with_parent,
    stop_process,
)
from px4.sitl import (
    START_FAILED,
    STARTED_LINE,
    Px4Build,
    SitlError,
    SitlPorts,
    _param_texts,
    claimed_instance,
    prepare_workdir,
)

DEFAULT_BAUD = 921600
BOARD_AIRFRAME = "none_iris"  # 10016: PX4's quad-X for an external simulator, as a HITL board is set up
# The crystal's tick: PX4's clock moves in steps of 1/CLOCK_RATE_HZ, finer than the 250 Hz IMU.
CLOCK_RATE_HZ = 2000.0
# What the cable holds each way before it drops: PX4's largest burst on the line (a log chunk of 11.5 kB with its
# telemetry) fits, as it does in a board's transmit buffer, which PX4 on NuttX never overfills (SerialCable).
LINE_BUFFER_BYTES = 65536
STOP_GRACE_S = 5.0
BITS_PER_BYTE = 10  # 8N1: a start bit, 8 data bits, a stop bit
# PX4's share of its line (mavlink -r; PX4 takes half the line by default on a serial port, 800 kB/s on USB).
LINK_SHARE = 0.8
RC_NAME = "rcS.hitl"
# What the board logs (topic, interval ms), read by PX4's logger from etc/logging/logger_topics.txt instead of its
# profile: PX4's POSIX build compiles its estimator replay topics and esc_status into the default profile at their
# full rates (12.8 MB for a 49 s flight, 250 kB a second against the line's 92 kB: its download took 245 s). These
# are the default profile's topics and intervals on a board (src/modules/logger/logged_topics.cpp),
# px4.ulog.DEFAULT_TOPICS among them, with sensor_combined at 10 Hz; instance 0 each, as a topic without one
# takes all its instances' places in the logger's table (it holds few).
LOGGED_TOPICS = (
    ("actuator_armed", 0), ("actuator_motors", 100), ("actuator_outputs", 100), ("battery_status", 200),
    ("esc_status", 250), ("estimator_status", 200), ("failsafe_flags", 0), ("home_position", 0),
    ("manual_control_setpoint", 200), ("mission_result", 0), ("navigator_mission_item", 0),
    ("position_setpoint_triplet", 200), ("sensor_baro", 1000), ("sensor_combined", 100), ("sensor_gps", 1000),
    ("sensor_mag", 1000), ("trajectory_setpoint", 200), ("vehicle_acceleration", 50), ("vehicle_air_data", 200),
    ("vehicle_angular_velocity", 20), ("vehicle_attitude", 50), ("vehicle_attitude_setpoint", 50),
    ("vehicle_command", 0), ("vehicle_command_ack", 0), ("vehicle_control_mode", 0), ("vehicle_global_position", 200),
    ("vehicle_gps_position", 100), ("vehicle_land_detected", 0), ("vehicle_local_position", 100),
    ("vehicle_local_position_setpoint", 100), ("vehicle_magnetometer", 200), ("vehicle_rates_setpoint", 20),
    ("vehicle_status", 0), ("vehicle_thrust_setpoint", 20), ("vehicle_torque_setpoint", 20),
)
MIRROR_FIELDS = 0x03F  # accelerometer and gyroscope: what the clock module's instance 0 gets from the line


def line_capacity(baud: int) -> float:
    """Bytes a second a serial line at `baud` carries (8N1)."""
    return baud / BITS_PER_BYTE


@dataclass(frozen=True)
class BoardOptions:
    """How to run PX4 as a HITL board."""

    baud: int = DEFAULT_BAUD
    params: Mapping[str, float] = field(default_factory=dict)  # set after the airframe, before any module
    px4_dir: str | None = None
    instance: int | None = None
    start_cap_s: float = START_CAP_S

    def __post_init__(self) -> None:
        if not (isinstance(self.baud, int) and 1200 <= self.baud <= 4_000_000):
            raise ValueError(f"baud rate: expected an integer 1200-4000000, got {self.baud!r}")


class SerialCable:
    """Two pseudo-terminals joined as a null-modem cable that carries `baud`/10 bytes a second each way.

    A pty alone moves bytes as fast as they are written whatever baud rate it is opened at; a UART does
    not. Bytes wait in a LINE_BUFFER_BYTES buffer per direction and leave at the line's rate; what does not fit
    is dropped and counted, as a serial driver drops it. The writer is never held: PX4 on NuttX asks its driver
    for the room left (FIONSPACE) and sends no more, but on Linux it cannot ask, and writes a log chunk (MAVSDK
    asks for 11.5 kB at a time) in one burst. A 4 kB buffer passed a third of each burst and MAVSDK asked again
    and again for the rest (a 13.8 MB ULog came at about 7 kB/s). A cable that blocked PX4's write() instead
    broke its estimate: during a download on the ground PX4's altitude climbed to 133 m at 30 m/s while the
    physics stayed at 0 m (presumably its MAVLink receiver, which publishes the line's barometer, GPS and
    magnetometer, waited on the blocked sender; the IMU comes through the clock module). The buffer holds such
    a burst.
    """

    def __init__(self, baud: int, buffer_bytes: int = LINE_BUFFER_BYTES,
                 delivered: Callable[[bytes], None] | None = None):
        self.baud = baud
        self.delivered = delivered  # called with the bytes that reached the `a` end (the board), as they do
        self.rate = line_capacity(baud)
        self.buffer_bytes = buffer_bytes
        self.a = self.b = ""
        self.carried = {"a>b": 0, "b>a": 0}
        self.dropped = {"a>b": 0, "b>a": 0}
        self._fds: list[int] = []
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "SerialCable":
        m1, s1 = os.openpty()
        m2, s2 = os.openpty()
        for fd in (s1, s2):
            tty.setraw(fd)  # MAVLink is binary: no echo, no line discipline
        for fd in (m1, m2):
            os.set_blocking(fd, False)
        self._fds = [m1, s1, m2, s2]
        self.a, self.b = os.ttyname(s1), os.ttyname(s2)
        self._thread = threading.Thread(target=self._pump, args=(m1, m2), name=f"cable {self.baud}", daemon=True)
        self._thread.start()
        return self

    def _pump(self, m1: int, m2: int) -> None:
        lanes = {m1: ("a>b", m2, bytearray()), m2: ("b>a", m1, bytearray())}
        credit = {m1: 0.0, m2: 0.0}
        last = time.monotonic()
        while True:
            waiting = any(buf for _, _, buf in lanes.values())
            ready, _, _ = select.select([m1, m2, self._stop_r], [], [], 0.0005 if waiting else None)
            if self._stop_r in ready:
                return
            for fd in (m1, m2):
                if fd not in ready:
                    continue
                name, _, buf = lanes[fd]
                with contextlib.suppress(BlockingIOError, OSError):  # nothing after all, or the far side closed
                    data = os.read(fd, 65536)
                    room = self.buffer_bytes - len(buf)
                    buf += data[:room]
                    self.dropped[name] += max(0, len(data) - room)
            now = time.monotonic()
            elapsed, last = now - last, now
            for fd, (name, peer, buf) in lanes.items():
                # Credit accrues only while bytes wait: an idle line does not save up a burst.
                credit[fd] = min(credit[fd] + elapsed * self.rate, float(len(buf))) if buf else 0.0
                n = int(credit[fd])
                if n <= 0:
                    continue
                try:
                    sent = os.write(peer, bytes(buf[:n]))
                except BlockingIOError:  # the far end stopped reading: the line's bytes are lost there
                    sent = n
                    self.dropped[name] += n
                else:
                    self.carried[name] += sent
                    if fd == m2 and self.delivered is not None:
                        self.delivered(bytes(buf[:sent]))
                del buf[:sent]
                credit[fd] -= sent

    def __exit__(self, *exc) -> None:
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        for fd in self._fds + [self._stop_r, self._stop_w]:
            with contextlib.suppress(OSError):
                os.close(fd)


class BoardClock:
    """The board's crystal for a lockstep PX4 (see the module docstring): a TCP server that PX4's
    simulator_mavlink connects to and that sends it only time, HIL_SENSOR id 0 with no field updated,
    stamped with the host's monotonic clock, CLOCK_RATE_HZ times a second."""

    def __init__(self, port: int, rate_hz: float = CLOCK_RATE_HZ):
        self.port = port
        self.period_s = 1.0 / rate_hz
        self.ticks = 0
        self.mirrored = 0
        self._imu: tuple | None = None  # the newest (accel, gyro) that crossed the line, not yet mirrored
        self._line_parser = mavlink.MAVLink(None)
        self._line_parser.robust_parsing = True
        self.received: dict[str, int] = {}  # what PX4 sent on the clock's link, by message type
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", port))
        self._server.listen(1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"board clock {port}", daemon=True)

    def start(self) -> "BoardClock":
        self._thread.start()
        return self

    def line(self, data: bytes) -> None:
        """Bytes that reached the board on its serial line: the IMU of each HIL_SENSOR among them goes out with
        the next tick as the clock module's instance 0 (see the module docstring)."""
        for msg in self._line_parser.parse_buffer(data) or ():
            if msg.get_msgId() == mavlink.MAVLINK_MSG_ID_HIL_SENSOR and msg.fields_updated & MIRROR_FIELDS:
                self._imu = ((msg.xacc, msg.yacc, msg.zacc), (msg.xgyro, msg.ygyro, msg.zgyro))

    def _run(self) -> None:
        self._server.settimeout(0.1)
        conn = None
        while conn is None and not self._stop.is_set():
            with contextlib.suppress(socket.timeout):
                conn, _ = self._server.accept()
        if conn is None:
            return
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.setblocking(False)
        packer = mavlink.MAVLink(None, srcSystem=1, srcComponent=51)
        parser = mavlink.MAVLink(None)
        parser.robust_parsing = True
        zero = (0.0,) * 3
        start = due = time.monotonic()
        with conn:
            while not self._stop.is_set():
                # time_usec 0 would read as "not started yet" (drv_hrt.cpp: px4_timestart_monotonic == 0).
                now_us = 1 + int((time.monotonic() - start) * 1e6)
                imu, self._imu = self._imu, None
                if imu is not None:
                    tick = mavlink.MAVLink_hil_sensor_message(now_us, *imu[0], *imu[1], *zero, 0.0, 0.0, 0.0, 0.0,
                                                              MIRROR_FIELDS, 0)
                    self.mirrored += 1
                else:
                    tick = mavlink.MAVLink_hil_sensor_message(now_us, *zero, *zero, *zero, 0.0, 0.0, 0.0, 0.0, 0, 0)
                try:
                    conn.sendall(tick.pack(packer))
                    data = conn.recv(4096)
                except (BlockingIOError, InterruptedError):
                    data = b""
                except OSError:
                    return  # PX4 went away
                for msg in parser.parse_buffer(data) or ():
                    self.received[msg.get_type()] = self.received.get(msg.get_type(), 0) + 1
                self.ticks += 1
                # Paced on the next tick's due time, not a fixed sleep, so the rate holds on a loaded machine.
                due += self.period_s
                time.sleep(max(0.0, due - time.monotonic()))
                due = max(due, time.monotonic() - self.period_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._server.close()


def rc_script(device: str, baud: int, params: Mapping[str, float]) -> str:
    """The board's start-up script: PX4's NuttX HITL start-up (ROMFS init.d/rcS with SYS_HITL 1) on POSIX,
    with the clock module first and the one MAVLink link on `device`. ValueError on a bad parameter."""
    lines = [
        "#!/bin/sh",
        "# The harness's HITL board: PX4's own modules, started as ROMFS init.d/rcS does with SYS_HITL = 1.",
        "set +e",
        ". px4-alias.sh",
        "set VEHICLE_TYPE none",
        'set LOGGER_ARGS ""',
        "set LOGGER_BUF 1000",
        "param select parameters.bson",
        "param set MAV_SYS_ID $((px4_instance+1))",
        "param set SYS_HITL 1",
        # The MavlinkReceiver's HIL sensors (mavlink_receiver.cpp: PX4Accelerometer(1310988), ...) as calibrated.
        "param set CAL_ACC0_ID 1310988",
        "param set CAL_GYRO0_ID 1310988",
        "param set CAL_MAG0_ID 197388",
        "param set CAL_MAG0_PRIO 50",
        "param set SENS_BOARD_X_OFF 0.000001",
        "param set-default COM_CPU_MAX -1",
        "param set-default COM_RAM_MAX -1",
        "param set-default COM_RC_IN_MODE 1",
        "param set-default EKF2_REQ_GPS_H 0.5",
        "param set-default MAV_PROTO_VER 2",
        "param set-default IMU_INTEG_RATE 250",
        # The board logs as a board does by default, from arming to disarming and on the logger's own schedule
        # (PX4's POSIX rcS logs from boot, polling ekf2_timestamps for replay), the topics of LOGGED_TOPICS: its log
        # comes back over the serial line after a flight.
        "param set-default SDLOG_MODE 0",
        "param set-default SDLOG_PROFILE 1",
        "param set-default SYS_FAILURE_EN 1",
        # A bench board is set up with a fence of its own, as the harness's pre-flight check asks of any board.
        "param set-default GF_ACTION 2",
        "param set-default GF_MAX_HOR_DIST 200",
        "param set-default GF_MAX_VER_DIST 100",
        f"param set SYS_AUTOSTART $(ls \"${{R}}etc/init.d-posix/airframes\" | sed -n 's/_{BOARD_AIRFRAME}$//p')",
        f'. "${{R}}etc/init.d-posix/airframes/$(param show -q SYS_AUTOSTART)_{BOARD_AIRFRAME}"',
    ]
    lines += [f"param set {name} {text}" for name, text in _param_texts(params)]
    lines += [
        "dataman start",
        "simulator_mavlink start -c $((4560+px4_instance))",
        "load_mon start",
        "rc_update start",
        "manual_control start",
        "sensors start -h",
        "commander start -h",
        "ekf2 start &",
        "pwm_out_sim start -m hil",
        '. "${R}etc/init.d/rc.vehicle_setup"',
        "navigator start",
        # No MAVLink FTP (-x): MAVSDK then downloads the parameters with PARAM_REQUEST_LIST. Over FTP it stalled
        # on chunk timeouts through the bench (148 of 725 chunks in 100 s on a loaded machine).
        f"mavlink start -d {device} -b {baud} -m onboard -r {int(LINK_SHARE * line_capacity(baud))}",
        '. "${R}etc/init.d/rc.logging"',
        "mavlink boot_complete",
    ]
    return "\n".join(lines) + "\n"


class BoardHardware:
    """The cable and the crystal in a process of their own (``python -m px4.hitl_board``), as a board's UART and
    clock run beside its firmware, not behind the harness: in the harness's process they would wait for its
    interpreter lock, behind the bench's own threads, and PX4 would read its sensors in bursts. The process
    asks for real-time scheduling (SCHED_FIFO) where it may, and stops when its stdin closes (also when the
    harness dies)."""

    def __init__(self, baud: int, clock_port: int):
        self.baud = baud
        self.clock_port = clock_port
        self.a = self.b = ""
        self.final: dict = {}  # what the cable carried and dropped and what the clock got, once stopped
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> "BoardHardware":
        self._proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "px4.hitl_board", str(self.baud), str(self.clock_port),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=functools.partial(die_with_parent, signal.SIGKILL))
        line = await self._proc.stdout.readline()
        if not line:
            await self._proc.wait()
            raise SitlError(f"the HITL board's cable and clock did not start (exit code {self._proc.returncode})")
        ends = json.loads(line)
        self.a, self.b = ends["a"], ends["b"]
        return self

    async def __aexit__(self, *exc) -> None:
        proc = self._proc
        if proc is None:
            return
        proc.stdin.close()
        try:
            line = await asyncio.wait_for(proc.stdout.readline(), 5.0)
            self.final = json.loads(line) if line else {}
        except asyncio.TimeoutError:
            proc.kill()
        await proc.wait()


def _hardware_main(baud: int, clock_port: int) -> None:
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
    clock = BoardClock(clock_port)
    with SerialCable(baud, delivered=clock.line) as cable:
        clock.start()
        print(json.dumps({"a": cable.a, "b": cable.b}), flush=True)
        sys.stdin.read()  # until the harness closes it, or dies
        clock.stop()
    print(json.dumps({"carried": cable.carried, "dropped": cable.dropped, "clock_ticks": clock.ticks, "mirrored": clock.mirrored,
                      "clock_received": clock.received}), flush=True)


@dataclass
class HitlBoard(ChildProcess):
    """A running PX4 HITL board: its serial port's free end, its cable and clock, its working directory."""

    ports: SitlPorts
    workdir: Path
    hardware: BoardHardware

    @property
    def url(self) -> str:
        """The board's serial port as the harness opens it (the cable's far end)."""
        return f"serial://{self.hardware.b}:{self.hardware.baud}"

    @property
    def instance(self) -> int:
        return self.ports.instance

    async def shell(self, module: str, *args: str) -> str:
        """What `px4-MODULE ARGS` prints through PX4's client socket. Some commands (`mavlink status`) print
        on PX4's own console instead: read `console` for those."""
        proc = await asyncio.create_subprocess_exec(
            str(self.workdir / "bin" / f"px4-{module}"), "--instance", str(self.instance), *args,
            cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = await self.while_alive(proc.communicate(), SitlError, f"answered `{module} {' '.join(args)}`", 60.0)
        return out.decode(errors="replace")


    async def imu_rate_hz(self) -> float:
        """The rate PX4 measured of the IMU it flies on (`sensors status`, vehicle_acceleration): the HIL_SENSOR
        frames it consumed a second. NaN when it does not say."""
        found = re.search(r"\[vehicle_acceleration\] selected sensor: \d+, rate: ([\d.]+) Hz",
                          await self.shell("sensors", "status"))
        return float(found.group(1)) if found else math.nan


def _board_etc(build: Px4Build, workdir: Path) -> Path:
    """The board's ROMFS in `workdir`: the build's, plus the logger's topic list (LOGGED_TOPICS). PX4 links
    `etc` in its working directory to the folder it is given, and the build's is shared."""
    etc = workdir / "romfs"
    etc.mkdir()
    for part in build.etc.iterdir():
        (etc / part.name).symlink_to(part.resolve())
    (etc / "logging").mkdir()
    (etc / "logging" / "logger_topics.txt").write_text("".join(f"{name} {ms} 0\n" for name, ms in LOGGED_TOPICS))
    return etc


@contextlib.asynccontextmanager
async def px4_hitl_board(options: BoardOptions = BoardOptions(), keep_in: Path | None = None
                         ) -> AsyncIterator[HitlBoard]:
    """Run PX4 as a HITL board for a block; on exit stop it, then its clock and cable, and copy its console into
    ``keep_in`` when given. Px4NotFound, ValueError and SitlError as `px4.sitl.px4_sitl`."""
    build = Px4Build.locate(options.px4_dir)
    build.airframe(BOARD_AIRFRAME)  # refuse a build without it before anything starts
    _param_texts(options.params)
    with claimed_instance(options.instance) as ports:
        workdir = Path(tempfile.mkdtemp(prefix=f"px4-hitl-{ports.instance}-"))
        try:
            async with BoardHardware(options.baud, ports.simulator_tcp) as hardware:
                prepare_workdir(build, workdir, {})
                (workdir / RC_NAME).write_text(rc_script(hardware.a, options.baud, options.params))
                command = [str(workdir / "bin" / "px4"), "-d", "-i", str(ports.instance), "-s", RC_NAME,
                           "-w", str(workdir), str(_board_etc(build, workdir))]
                env = {k: v for k, v in os.environ.items()
                       if not k.startswith(("PX4_SIM", "PX4_SYS_AUTOSTART", "PX4_PARAM_"))}
                proc = subprocess.Popen(command, env=env, cwd=workdir, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=functools.partial(die_with_parent, signal.SIGKILL))
                console = Console(proc.stdout, workdir / "px4-console.log")
                board = HitlBoard(f"PX4 HITL board (instance {ports.instance})", proc, console, ports=ports,
                                  workdir=workdir, hardware=hardware)
                try:
                    pattern = f"{re.escape(STARTED_LINE)}|{START_FAILED.pattern}"
                    line = await board.while_alive(console.first(pattern), SitlError, "run its start-up script",
                                                   options.start_cap_s)
                    if START_FAILED.search(line):
                        raise SitlError(f"{board.name} failed to start" + console.tail())
                    yield board
                finally:
                    # The clock ticks on while PX4 shuts down: without time its modules never return.
                    await stop_process(proc, STOP_GRACE_S, group=True)
                    console.close()
                    if keep_in is not None:
                        # Its console only: a board's log is not on the harness's disk, it comes over the line.
                        keep_in.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(console.path, keep_in / "px4-console.log")
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    _hardware_main(int(sys.argv[1]), int(sys.argv[2]))
