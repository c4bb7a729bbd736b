"""PX4 SITL as a target: find a PX4 build, run one headless instance per trial, stop it cleanly.

A PX4 SITL build is a `bin/px4` binary and the `etc/` folder of its start-up scripts (ROMFS). It is
run as PX4's own `make px4_sitl` runs it, with the **etc** folder as the positional argument:

    PX4_SYS_AUTOSTART=10040 PX4_SIMULATOR=sihsim PX4_SIM_MODEL=sihsim_quadx HEADLESS=1 \\
        px4 -d -i N -w WORKDIR .../etc

Airframe 10040 (`sihsim_quadx`) is the default: PX4's simulator-in-hardware (SIH) quadrotor, which
runs inside the `px4` binary and needs no Gazebo. Any other airframe of the build can be named by
its autostart id or model name (`10016` / `none_iris` waits for an external simulator on TCP
4560+N, as jMAVSim, Gazebo Classic and the harness's own simulator provide).

One trial, one PX4:

* a fresh working directory (parameters, dataman, logs start from scratch, nothing leaks from one
  trial into the next), removed afterwards once the flight logs and the console are copied out;
* its own `bin/` of symlinks in that directory. PX4's start-up script calls the module clients
  (`px4-param`, ...) by name from PATH, and PX4 puts the directory it was started from first on
  PATH. Builds copied without their symlinks (archives, CI artefacts) keep each client as a
  three-byte file that says "px4"; the harness's own `bin/` works for both;
* the vehicle's parameters set after the airframe's defaults and before any module starts, so
  SIH, the estimator and the controllers start as the profile's vehicle. PX4's rcS sources
  `px4-rc.simulator` from PATH right after the airframe file; the harness's `bin/` holds one that
  sets the parameters and then runs PX4's own (v1.14 and v1.16 alike; v1.16's PX4_PARAM_<NAME>
  variables come before the airframe, whose `param set-default` then overrides any value that
  equals PX4's compiled default, so they are not used);
* an instance number ``N`` no other process uses. PX4's start-up scripts derive everything from
  it: MAV_SYS_ID = 1 + N; the offboard/API link listens on UDP 14580+N and sends to 14540+N; the
  GCS link listens on 18570+N; its client socket and lock are /tmp/px4-sock-N and /tmp/px4_lock-N,
  machine-wide. So an instance is taken only when all its ports are free, under a lock file held
  for the lifetime of the run (parallel harness processes never pick the same one); instances
  above 9 all send to 14549, so only 0-9 exist;
* PX4_SIM_SPEED_FACTOR for faster-than-real-time flights (lockstep inside PX4);
* the console (stdout and stderr) kept line by line, so a failure quotes PX4's last words and the
  trial record keeps `px4-console.log`;
* waited for until it says its start-up script returned (or, with an external simulator, that it
  waits for one) for as long as it is alive, up to a cap of minutes, and not at all once it has
  died: a loaded machine slows a start, it does not fail it;
* stopped with SIGTERM, then SIGKILL after a grace period, on every exit including Ctrl-C, and
  killed by the kernel if the harness itself dies.

PX4 is found, in this order, from the ``px4_dir`` argument (`--px4-dir`), the PX4_DIR environment
variable, or a `px4` binary on PATH. A directory may be a PX4-Autopilot checkout, its build
directory (build/px4_sitl_default), a copy of the build's `bin/` and `etc/`, or the `bin/` itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Callable, Iterator, Mapping

from px4.params import PARAM_NAME
from px4.process import (
    LAST_WORDS_S,
    START_CAP_S,
    ChildProcess,
    Console,
    die_with_parent,
    free_udp_port,
    port_is_free,
    stop_process,
)

ENV_VAR = "PX4_DIR"
DEFAULT_AIRFRAME = "sihsim_quadx"  # autostart 10040
BUILD_SUBDIR = Path("build") / "px4_sitl_default"
MAX_INSTANCE = 9
STARTED_LINE = "Startup script returned successfully"
# With an external simulator, the start-up script waits (and so PX4 has not "started") until one connects.
WAITING_LINE = "Waiting for simulator to accept connection on TCP port"
START_FAILED = re.compile(r"Startup script returned with return value|Error: no autostart file|ERROR \[init\]")
# PX4 exits within about 2 s of SIGTERM; one waiting for an external simulator never does.
STOP_GRACE_S = 5.0
HOW_TO_GET_PX4 = (
    "PX4 SITL not found. Build PX4 (v1.14 or newer) from its public source (in a PX4-Autopilot checkout: "
    "`make px4_sitl_default`; the SIH model needs no Gazebo), then point the harness at it with "
    "--px4-dir DIR or the PX4_DIR environment variable (DIR: the checkout, its build/px4_sitl_default, "
    "or any folder holding the build's bin/ and etc/), or put the build's bin directory on PATH so that "
    "`px4` is found.")


class Px4NotFound(RuntimeError):
    """No usable PX4 SITL build; the message says how to point the harness at one."""


class SitlError(RuntimeError):
    """PX4 SITL did not come up, or died; the message carries the tail of its output."""


@dataclass(frozen=True)
class Airframe:
    """A PX4 SITL airframe: its autostart id and model name (etc/init.d-posix/airframes/<id>_<model>)."""

    autostart: int
    model: str

    @property
    def simulator(self) -> str | None:
        """PX4_SIMULATOR for this model: SIH runs inside PX4; others connect to an external simulator."""
        if self.model.startswith("sihsim"):
            return "sihsim"
        if self.model.startswith("gz_"):
            return "gz"
        return None

    @property
    def external_physics(self) -> bool:
        """Whether PX4 waits for a simulator on TCP 4560+N (HIL_SENSOR in, HIL_ACTUATOR_CONTROLS out)."""
        return self.simulator is None and not self.model.startswith("jmavsim")


@dataclass(frozen=True)
class Px4Build:
    """A PX4 SITL build: the `px4` binary and the `etc/` folder of its start-up scripts."""

    binary: Path
    etc: Path

    @classmethod
    def locate(cls, px4_dir: str | os.PathLike | None = None, env: Mapping[str, str] = os.environ,
               which: Callable[[str], str | None] = shutil.which) -> "Px4Build":
        """Find PX4 as the module docstring says; Px4NotFound with instructions otherwise."""
        tried: list[str] = []
        for origin, directory in (("--px4-dir", px4_dir), (ENV_VAR, env.get(ENV_VAR))):
            if not directory:
                continue
            base = Path(directory).expanduser()
            for candidate in (base / BUILD_SUBDIR / "bin" / "px4", base / "bin" / "px4", base / "px4"):
                build = cls._from_binary(candidate)
                if build is not None:
                    return build
            tried.append(f"{origin}={base} (no bin/px4 with etc/init.d-posix/rcS beside it)")
        on_path = which("px4")
        if on_path:
            build = cls._from_binary(Path(on_path))
            if build is not None:
                return build
            tried.append(f"px4 on PATH at {on_path} (no etc/init.d-posix/rcS beside its bin directory)")
        detail = f" Tried: {'; '.join(tried)}." if tried else ""
        raise Px4NotFound(HOW_TO_GET_PX4 + detail)

    @classmethod
    def _from_binary(cls, binary: Path) -> "Px4Build | None":
        binary = binary.absolute()
        if not (binary.is_file() and os.access(binary, os.X_OK)):
            return None
        # etc/ beside the bin/ it was named in, else beside the one a symlink (px4 on PATH) points into.
        for place in (binary, binary.resolve()):
            etc = place.parent.parent / "etc"
            if (etc / "init.d-posix" / "rcS").is_file():
                return cls(binary, etc)
        return None

    def airframes(self) -> dict[int, str]:
        """Every SITL airframe of this build: autostart id -> model name."""
        found = {}
        for path in (self.etc / "init.d-posix" / "airframes").iterdir():
            number, _, model = path.name.partition("_")
            if number.isdigit() and model and "." not in model:
                found[int(number)] = model
        return found

    def airframe(self, name: str | int = DEFAULT_AIRFRAME) -> Airframe:
        """The airframe named by autostart id (10040) or model name (sihsim_quadx); ValueError naming the choices."""
        frames = self.airframes()
        text = str(name).strip()
        if text.isdigit() and int(text) in frames:
            return Airframe(int(text), frames[int(text)])
        for number, model in frames.items():
            if model == text:
                return Airframe(number, model)
        quads = ", ".join(f"{n} {m}" for n, m in sorted(frames.items()) if m.startswith(("sihsim", "none")))
        raise ValueError(f"PX4 airframe {text!r} is not in {self.etc / 'init.d-posix' / 'airframes'} "
                         f"(by autostart id or model name; for example {quads})")

    def clients(self) -> list[str]:
        """The module client names of this build (px4-param, px4-commander, ...), symlinks or not."""
        return sorted(p.name for p in self.binary.parent.iterdir()
                      if p.name.startswith("px4-") and not p.name.endswith(".sh"))


@dataclass(frozen=True)
class SitlPorts:
    """The loopback ports and system id of PX4 SITL instance ``instance`` (rcS, px4-rc.mavlink)."""

    instance: int

    def __post_init__(self) -> None:
        if not 0 <= self.instance <= MAX_INSTANCE:
            raise ValueError(f"PX4 SITL instance must be 0-{MAX_INSTANCE} (PX4 sends every instance above "
                             f"{MAX_INSTANCE} to the same port 14549), got {self.instance}")

    @property
    def system_id(self) -> int:
        return 1 + self.instance

    @property
    def offboard_remote(self) -> int:
        """Where PX4 sends its offboard/API link: the port a MAVSDK client listens on."""
        return 14540 + self.instance

    @property
    def offboard_local(self) -> int:
        return 14580 + self.instance

    @property
    def gcs_local(self) -> int:
        return 18570 + self.instance

    @property
    def simulator_tcp(self) -> int:
        """The TCP port PX4 connects to when its airframe uses an external simulator."""
        return 4560 + self.instance

    @property
    def url(self) -> str:
        """The MAVSDK connection string for this instance (loopback only)."""
        return f"udpin://127.0.0.1:{self.offboard_remote}"

    def busy(self) -> list[str]:
        """The ports of this instance that another process holds now (PX4 binds 0.0.0.0)."""
        n = self.instance
        udp = [self.offboard_local, self.gcs_local, 14280 + n, 13030 + n, 19450 + n]
        held = [f"udp {p}" for p in udp if not port_is_free(p)]
        if not port_is_free(self.offboard_remote, host="127.0.0.1"):
            held.append(f"udp {self.offboard_remote}")
        if not port_is_free(self.simulator_tcp, socket.SOCK_STREAM):
            held.append(f"tcp {self.simulator_tcp}")
        return held


@contextlib.contextmanager
def claimed_instance(wanted: int | None = None, lock_dir: Path | None = None) -> Iterator[SitlPorts]:
    """An instance number no other process uses, held (by a lock file) for the block.

    ``wanted`` None takes the lowest free instance; a number takes that one or raises SitlError
    naming what holds it.
    """
    lock_dir = Path(lock_dir or tempfile.gettempdir())
    reasons = []
    for number in ([wanted] if wanted is not None else range(MAX_INSTANCE + 1)):
        ports = SitlPorts(number)
        handle = open(lock_dir / f"quad-hil-px4-{number}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            reasons.append(f"{number}: used by another harness process")
            continue
        busy = ports.busy()
        if busy:
            handle.close()
            reasons.append(f"{number}: {', '.join(busy)} in use")
            continue
        try:
            yield ports
        finally:
            handle.close()  # releases the lock
        return
    raise SitlError("no free PX4 SITL instance (" + "; ".join(reasons) + ")")


@dataclass(frozen=True)
class SitlOptions:
    """How to run one PX4 SITL trial."""

    instance: int | None = None  # None: the lowest free one
    speed: float = 1.0
    params: Mapping[str, float] = field(default_factory=dict)
    px4_dir: str | None = None
    airframe: str | int = DEFAULT_AIRFRAME
    # Wall seconds PX4 may take to start while it is alive (it is never waited for once it has died).
    start_cap_s: float = START_CAP_S
    # More MAVLink links, udpout://HOST:PORT each (an onboard agent's own), started once PX4 is up; SIH only.
    extra_links: tuple[str, ...] = ()


def sitl_command(build: Px4Build, workdir: Path, instance: int) -> list[str]:
    """The `px4` command line: the harness's bin/ in `workdir`, daemon mode, instance, the etc folder."""
    return [str(workdir / "bin" / "px4"), "-d", "-i", str(instance), "-w", str(workdir), str(build.etc)]


def sitl_environment(airframe: Airframe, speed: float, base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment that selects the airframe, headless, at ``speed`` times real time."""
    if not (math.isfinite(speed) and speed > 0):
        raise ValueError(f"speed factor must be a finite number > 0, got {speed}")
    env = {k: v for k, v in base.items() if not k.startswith(("PX4_SIM", "PX4_SYS_AUTOSTART", "PX4_PARAM_"))}
    env.update(PX4_SYS_AUTOSTART=str(airframe.autostart), PX4_SIM_MODEL=airframe.model, HEADLESS="1")
    if airframe.simulator:
        env["PX4_SIMULATOR"] = airframe.simulator
    if speed != 1.0:
        # rcS also lengthens the data-link, RC and offboard loss timeouts by this factor.
        env["PX4_SIM_SPEED_FACTOR"] = repr(float(speed))
    return env


def _param_texts(params: Mapping[str, float]) -> list[tuple[str, str]]:
    """(name, value as PX4's `param set` reads it) for each parameter; ValueError on a bad one."""
    texts = []
    for name, value in params.items():
        if not PARAM_NAME.match(str(name)):
            raise ValueError(f"parameter name {name!r}: expected a PX4 name (A-Z, 0-9, _; at most 16 characters)")
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"parameter {name}: expected a finite number, got {value!r}")
        # An integer parameter refuses "1.0"; a float one takes "1".
        texts.append((name, str(int(number)) if number.is_integer() and abs(number) < 2**31 else repr(number)))
    return texts


def params_script(params: Mapping[str, float]) -> str:
    """The harness's `px4-rc.simulator`: one `param set` per parameter in PX4's shell syntax, then PX4's
    own script; ValueError on a bad parameter."""
    lines = ["# Sourced by rcS after the airframe file: the harness's parameters, then PX4's simulator start."]
    lines += [f"param set {name} {text}" for name, text in _param_texts(params)]
    lines.append('. "${R}etc/init.d-posix/px4-rc.simulator"')
    return "\n".join(lines) + "\n"


def prepare_workdir(build: Px4Build, workdir: Path, params: Mapping[str, float]) -> None:
    """The harness's `bin/` in `workdir`: px4 and its clients as symlinks, and the parameters script."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "px4").symlink_to(build.binary.resolve())
    alias = build.binary.parent / "px4-alias.sh"
    if alias.is_file():
        (bin_dir / "px4-alias.sh").symlink_to(alias.resolve())
    for name in build.clients():
        (bin_dir / name).symlink_to("px4")
    (bin_dir / "px4-rc.simulator").write_text(params_script(params))


def find_ulogs(workdir: Path) -> list[Path]:
    """Flight logs PX4 wrote under a working directory (log/<date>/<time>.ulg), oldest first."""
    return sorted((workdir / "log").rglob("*.ulg"), key=lambda p: (p.stat().st_mtime, p.name))


@dataclass
class SitlProcess(ChildProcess):
    """A running PX4 SITL: where to connect, what runs, its flight logs, and what it said if it died."""

    ports: SitlPorts
    airframe: Airframe
    workdir: Path

    @property
    def url(self) -> str:
        return self.ports.url

    @property
    def instance(self) -> int:
        return self.ports.instance

    @property
    def output(self) -> list[str]:
        """The recent console lines."""
        return list(self.console.lines)

    def ulogs(self) -> list[Path]:
        return find_ulogs(self.workdir)


@contextlib.asynccontextmanager
async def px4_sitl(options: SitlOptions, keep_in: Path | None = None) -> AsyncIterator[SitlProcess]:
    """Run PX4 SITL for a block; on exit stop it and copy its ULogs (``keep_in/ulog/``) and console
    (``keep_in/px4-console.log``) into a trial record when ``keep_in`` is given.

    Raises Px4NotFound (with instructions) before starting anything when there is no PX4 build,
    ValueError for an unknown airframe or a bad parameter, and SitlError the moment PX4 dies or says its
    start-up failed, or when it is alive but has not run its start-up script after ``options.start_cap_s``
    wall seconds. An airframe with external physics is yielded as soon as PX4 waits for its simulator on
    ``ports.simulator_tcp``.
    """
    build = Px4Build.locate(options.px4_dir)
    airframe = build.airframe(options.airframe)
    env = sitl_environment(airframe, options.speed)
    params_script(options.params)  # refuse a bad parameter before anything starts
    with claimed_instance(options.instance) as ports:
        workdir = Path(tempfile.mkdtemp(prefix=f"px4-sitl-{ports.instance}-"))
        try:
            prepare_workdir(build, workdir, options.params)
            proc = subprocess.Popen(sitl_command(build, workdir, ports.instance), env=env, cwd=workdir,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True,
                                    preexec_fn=functools.partial(die_with_parent, signal.SIGKILL))
            console = Console(proc.stdout, workdir / "px4-console.log")
            sitl = SitlProcess(f"PX4 SITL instance {ports.instance}", proc, console, ports=ports, airframe=airframe,
                               workdir=workdir)
            try:
                await _wait_started(sitl, options.start_cap_s)
                for url in options.extra_links:
                    await _start_link(sitl, url)
                yield sitl
            finally:
                await stop_process(proc, STOP_GRACE_S, group=True)
                console.close()
                if keep_in is not None:
                    _keep_logs(sitl, keep_in)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)


async def _wait_started(sitl: SitlProcess, cap_s: float) -> None:
    external = sitl.airframe.external_physics
    ready = re.escape(WAITING_LINE if external else STARTED_LINE)
    line = await sitl.while_alive(sitl.console.first(f"{ready}|{START_FAILED.pattern}"), SitlError,
                                  "said it waits for its simulator" if external else "run its start-up script",
                                  cap_s)
    if START_FAILED.search(line):
        await asyncio.sleep(LAST_WORDS_S)
        raise SitlError(sitl.failure() or f"{sitl.name} failed to start airframe {sitl.airframe.autostart} "
                        f"({sitl.airframe.model})" + sitl.console.tail())
    port = re.search(r"port (\d+)", line) if external else None
    if port is not None and int(port.group(1)) != sitl.ports.simulator_tcp:
        # Nothing would ever connect: said now rather than after the whole start-up cap.
        raise SitlError(f"{sitl.name} waits for its simulator on TCP port {port.group(1)}, not on its own "
                        f"{sitl.ports.simulator_tcp}" + sitl.console.tail())


async def _start_link(sitl: SitlProcess, url: str) -> None:
    """One more MAVLink instance in the running PX4 (`mavlink start` through its module client): onboard mode,
    sending to HOST:PORT of `url` (udpout://HOST:PORT) from a free local port, as PX4's own API link does."""
    if sitl.airframe.external_physics:
        raise ValueError("a MAVLink link of its own (an onboard agent's) is added to PX4 SITL with SIH only")
    found = re.fullmatch(r"udpout://([^:/\s]+):(\d{1,5})", url)
    if found is None:
        raise ValueError(f"an extra PX4 link: expected udpout://HOST:PORT, got {url}")
    host, port = found.groups()
    command = [str(sitl.workdir / "bin" / "px4-mavlink"), "--instance", str(sitl.instance), "start", "-u",
               str(free_udp_port()), "-o", port, "-t", host, "-m", "onboard", "-r", "4000000"]
    proc = await asyncio.create_subprocess_exec(*command, cwd=sitl.workdir, stdin=subprocess.DEVNULL,
                                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output, _ = await sitl.while_alive(proc.communicate(), SitlError, f"answered `mavlink start` for {url}")
    if proc.returncode != 0:
        raise SitlError(f"PX4 SITL instance {sitl.instance} refused `mavlink start` for {url}: "
                        f"{output.decode(errors='replace').strip()}" + sitl.console.tail())


def _keep_logs(sitl: SitlProcess, record_dir: Path) -> None:
    record_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(sitl.console.path, record_dir / "px4-console.log")
    logs = sitl.ulogs()
    if logs:
        (record_dir / "ulog").mkdir(exist_ok=True)
        for log in logs:
            shutil.copy2(log, record_dir / "ulog" / log.name)
