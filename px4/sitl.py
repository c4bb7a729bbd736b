"""PX4 SITL with the SIH model as a target: find a PX4 build, run it headless, stop it cleanly.

PX4 v1.14 runs its simulator-in-hardware (SIH) inside the `px4` binary itself, so SITL needs no
Gazebo: the SIH quadrotor is airframe 10040 (`sihsim_quadx`), chosen with the environment
variables PX4_SYS_AUTOSTART=10040 and PX4_SIMULATOR=sihsim, as `make px4_sitl sihsim_quadx` does.

One trial, one PX4:

* a fresh working directory (parameters, dataman and logs start from scratch, nothing leaks from
  one trial into the next), removed afterwards once its flight logs are copied out;
* an instance number ``i`` for parallel runs. PX4's start-up scripts (init.d-posix/rcS and
  px4-rc.mavlink) derive everything from it: MAV_SYS_ID = 1 + i; the offboard/API link listens on
  UDP 14580 + i and sends to 14540 + i (every instance above 9 sends to 14549, so only 0-9 are
  usable in parallel); the GCS link listens on 18570 + i; the client lock is per instance;
* PX4_SIM_SPEED_FACTOR for faster-than-real-time flights (measured: 2 / 5 / 10 gave 1.94x /
  4.77x / 9.1x, reference/README.md);
* ready when PX4 prints "Ready for takeoff!" (about 10 s after launch at speed 1); the profile's
  parameters (px4/sih.py) are applied before that with PX4's own `px4-param` client, so the
  vehicle is already the profile's when a client first connects;
* stopped with SIGTERM, then SIGKILL after a grace period, on every exit including Ctrl-C, and
  killed by the kernel if the harness itself dies.

PX4 is found, in this order, from the ``px4_dir`` argument (`--px4-dir`), the PX4_DIR
environment variable, or a `px4` binary on PATH. A directory may be a PX4-Autopilot checkout, its
build directory (build/px4_sitl_default) or the build's bin directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import AsyncIterator, Callable, Mapping

ENV_VAR = "PX4_DIR"
SIH_QUADX_AUTOSTART = 10040
BUILD_SUBDIR = Path("build") / "px4_sitl_default"
MAX_INSTANCE = 9
READY_LINE = "Ready for takeoff!"
STARTED_LINE = "Startup script returned successfully"
READY_TIMEOUT_S = 60.0
HOW_TO_GET_PX4 = (
    "PX4 SITL not found. Build PX4 v1.14 from its public source (in a PX4-Autopilot checkout: "
    "`make px4_sitl_default`; the SIH model needs no Gazebo), then point the harness at it with "
    "--px4-dir DIR or the PX4_DIR environment variable (DIR: the checkout, its build/px4_sitl_default "
    "or that build's bin directory), or put the build's bin directory on PATH so that `px4` is found.")


class Px4NotFound(RuntimeError):
    """No usable PX4 SITL build; the message says how to point the harness at one."""


class SitlError(RuntimeError):
    """PX4 SITL did not come up, or died; the message carries the tail of its output."""


@dataclass(frozen=True)
class Px4Build:
    """A PX4 SITL build: the `px4` binary and the root holding its `etc/` start-up files."""

    binary: Path
    rootfs: Path

    @property
    def param_client(self) -> Path:
        """PX4's client for the `param` command (a symlink to `px4` made by the build)."""
        return self.binary.parent / "px4-param"

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
        binary = binary.resolve()
        rootfs = binary.parent.parent
        if binary.is_file() and os.access(binary, os.X_OK) and (rootfs / "etc" / "init.d-posix" / "rcS").is_file():
            return cls(binary, rootfs)
        return None


@dataclass(frozen=True)
class SitlPorts:
    """The UDP ports and system id of PX4 SITL instance ``instance`` (px4-rc.mavlink, rcS)."""

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
    def url(self) -> str:
        """The MAVSDK connection string for this instance (loopback, DESIGN.md)."""
        return f"udpin://127.0.0.1:{self.offboard_remote}"


@dataclass(frozen=True)
class SitlOptions:
    """How to run one PX4 SITL SIH trial."""

    instance: int = 0
    speed: float = 1.0
    params: dict[str, float] = field(default_factory=dict)
    px4_dir: str | None = None
    ready_timeout_s: float = READY_TIMEOUT_S


def sitl_command(build: Px4Build, instance: int, workdir: Path) -> list[str]:
    """The `px4` command line: daemon mode (no interactive shell), instance, working directory, rootfs."""
    return [str(build.binary), "-d", "-i", str(instance), "-w", str(workdir), str(build.rootfs)]


def sitl_environment(speed: float, base: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment that selects the SIH quadrotor, headless, at ``speed`` times real time."""
    if not speed > 0:
        raise ValueError(f"speed factor must be > 0, got {speed}")
    env = dict(base)
    env.update(PX4_SYS_AUTOSTART=str(SIH_QUADX_AUTOSTART), PX4_SIMULATOR="sihsim", PX4_SIM_MODEL="sihsim_quadx",
               PX4_SIM_SPEED_FACTOR=repr(float(speed)), HEADLESS="1")
    return env


def param_commands(build: Px4Build, instance: int, params: Mapping[str, float]) -> list[list[str]]:
    """One `px4-param --instance N set NAME VALUE` client call per parameter."""
    return [[str(build.param_client), "--instance", str(instance), "set", name, repr(float(value))]
            for name, value in params.items()]


def find_ulogs(workdir: Path) -> list[Path]:
    """Flight logs PX4 wrote under a working directory (log/<date>/<time>.ulg), oldest first."""
    return sorted((workdir / "log").rglob("*.ulg"), key=lambda p: (p.stat().st_mtime, p.name))


@dataclass
class SitlProcess:
    """A running PX4 SITL: where to connect, its flight logs, and what it said if it died."""

    ports: SitlPorts
    proc: subprocess.Popen
    workdir: Path
    output: deque[str]

    @property
    def url(self) -> str:
        return self.ports.url

    def failure(self) -> str | None:
        """None while running; otherwise the exit code and the tail of PX4's output."""
        code = self.proc.poll()
        if code is None:
            return None
        return f"PX4 SITL exited with code {code}" + _tail(self.output)

    def ulogs(self) -> list[Path]:
        return find_ulogs(self.workdir)


def _tail(lines: deque[str], n: int = 15) -> str:
    tail = list(lines)[-n:]
    return "".join(f"\n  {line}" for line in tail)


async def _read_output(proc: subprocess.Popen, lines: deque[str], seen: asyncio.Event, pattern: re.Pattern,
                       started: asyncio.Event) -> None:
    # PX4 writes its console to stdout; read it off the event loop so a quiet PX4 blocks nothing.
    loop = asyncio.get_running_loop()
    while True:
        raw = await loop.run_in_executor(None, proc.stdout.readline)
        if not raw:
            return
        line = raw.decode(errors="replace").rstrip()
        lines.append(line)
        if STARTED_LINE in line:
            started.set()
        if pattern.search(line):
            seen.set()


@contextlib.asynccontextmanager
async def px4_sitl(options: SitlOptions, ulog_dest: Path | None = None) -> AsyncIterator[SitlProcess]:
    """Run PX4 SITL SIH for a block; on exit stop it and copy its flight logs to ``ulog_dest``.

    Raises Px4NotFound (with instructions) before starting anything when there is no PX4 build,
    and SitlError when PX4 dies or is not ready within ``options.ready_timeout_s`` wall seconds.
    """
    # Imported here: hil.targets imports this module to offer the px4-sitl target.
    from hil.targets import die_with_parent, stop_process

    build = Px4Build.locate(options.px4_dir)
    ports = SitlPorts(options.instance)
    workdir = Path(tempfile.mkdtemp(prefix=f"px4-sitl-{options.instance}-"))
    output: deque[str] = deque(maxlen=400)
    proc = subprocess.Popen(sitl_command(build, options.instance, workdir), env=sitl_environment(options.speed),
                            cwd=workdir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    ready, started = asyncio.Event(), asyncio.Event()
    reader = asyncio.create_task(_read_output(proc, output, ready, re.compile(re.escape(READY_LINE)), started))
    sitl = SitlProcess(ports, proc, workdir, output)
    try:
        await _wait_ready(sitl, build, options, started, ready)
        yield sitl
    finally:
        await stop_process(proc)
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
        if proc.stdout is not None:
            proc.stdout.close()
        if ulog_dest is not None:
            ulog_dest.mkdir(parents=True, exist_ok=True)
            for log in find_ulogs(workdir):
                shutil.copy2(log, ulog_dest / log.name)
        shutil.rmtree(workdir, ignore_errors=True)


async def _wait_ready(sitl: SitlProcess, build: Px4Build, options: SitlOptions, started: asyncio.Event,
                      ready: asyncio.Event) -> None:
    async def until(event: asyncio.Event, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + options.ready_timeout_s
        while not event.is_set():
            if sitl.failure():
                await asyncio.sleep(0.2)  # let the output reader catch PX4's last words before quoting them
                raise SitlError(sitl.failure())
            if loop.time() > deadline:
                raise SitlError(f"PX4 SITL instance {options.instance} not {what} after "
                                f"{options.ready_timeout_s:g} s" + _tail(sitl.output))
            await asyncio.sleep(0.05)

    await until(started, "started")
    for command in param_commands(build, options.instance, options.params):
        result = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=10)
        if result.returncode != 0:
            raise SitlError(f"setting {command[-2]}={command[-1]} on PX4 failed: "
                            f"{(result.stdout + result.stderr).strip()[-300:]}")
    await until(ready, "ready for takeoff")
