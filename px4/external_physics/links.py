"""The byte links the simulator talks to PX4 over: PX4 SITL's TCP connection, or a serial line.

PX4 SITL is the TCP *client*: started with an external-physics airframe it keeps trying to connect
to 127.0.0.1:4560+N until a simulator accepts. A board in HITL mode is reached over its USB or
telemetry serial port (any pyserial URL). Both are read and written from the simulator's own
thread with blocking calls and a timeout, which is what lets the lockstep exchange go as fast as
PX4 answers, without an event loop between each message and its reply.
"""

from __future__ import annotations

import asyncio
import math
import select
import socket
import struct
import threading
from typing import Protocol

# Reads waiting at least this long (a lockstep loop's wait for PX4's answer) use the kernel's receive timeout.
KERNEL_TIMEOUT_MIN_S = 0.05


class SimulatorLinkError(RuntimeError):
    """PX4 (or the board) did not connect, or the link failed; the message names the port."""


class ByteLink(Protocol):
    """A two-way byte stream to PX4; `read` returns b"" when nothing came within the timeout."""

    name: str

    def write(self, data: bytes) -> None: ...

    def read(self, timeout_s: float) -> bytes: ...

    def close(self) -> None: ...


class SocketLink:
    """PX4 SITL's accepted TCP connection."""

    def __init__(self, sock: socket.socket, name: str):
        self.name = name
        self._sock = sock
        self._lock = threading.Lock()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each frame goes out at once
        sock.setblocking(True)
        self._timeout_ms = 0  # the socket's receive timeout (SO_RCVTIMEO); 0 is none

    def write(self, data: bytes) -> None:
        with self._lock:
            try:
                self._sock.sendall(data)
            except OSError as exc:
                raise SimulatorLinkError(f"{self.name}: PX4 closed the simulator connection ({exc.strerror})") from exc

    def read(self, timeout_s: float) -> bytes:
        try:
            if timeout_s >= KERNEL_TIMEOUT_MIN_S:
                # One system call per answer: the kernel's receive timeout bounds a blocking recv, set only
                # when it changes (whole milliseconds, so that a lockstep loop's reply waits all share one).
                timeout_ms = math.ceil(timeout_s * 1000.0)
                if timeout_ms != self._timeout_ms:
                    self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                                          struct.pack("@ll", timeout_ms // 1000, timeout_ms % 1000 * 1000))
                    self._timeout_ms = timeout_ms
                data = self._sock.recv(65536)
            elif timeout_s > 0.0:
                # The kernel counts its timeout in scheduler ticks (up to 10 ms): short waits (a paced
                # loop's) are select's.
                ready, _, _ = select.select([self._sock], [], [], timeout_s)
                if not ready:
                    return b""
                data = self._sock.recv(65536)
            else:
                data = self._sock.recv(65536, socket.MSG_DONTWAIT)
        except BlockingIOError:  # nothing within the timeout
            return b""
        except OSError as exc:
            raise SimulatorLinkError(f"{self.name}: simulator connection failed ({exc.strerror})") from exc
        if not data:
            raise SimulatorLinkError(f"{self.name}: PX4 closed the simulator connection")
        return data

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()


class SerialLink:
    """A serial port (a device path with its baud rate, or any pyserial URL)."""

    def __init__(self, device: str, baud: int):
        import serial  # pyserial

        self.name = f"{device} at {baud} baud"
        try:
            self._port = serial.serial_for_url(device, baudrate=baud, timeout=0, write_timeout=2.0)
        except (serial.SerialException, ValueError) as exc:
            raise SimulatorLinkError(f"{device}: cannot open serial port: {exc}") from exc
        self._lock = threading.Lock()
        try:
            self._fd: int | None = self._port.fileno()
        except Exception:  # URL handlers without a file descriptor (socket://, loop://, ...)
            self._fd = None

    def write(self, data: bytes) -> None:
        with self._lock:
            try:
                self._port.write(data)
            except Exception as exc:
                raise SimulatorLinkError(f"{self.name}: write failed ({exc})") from exc

    def read(self, timeout_s: float) -> bytes:
        if self._fd is not None:
            ready, _, _ = select.select([self._fd], [], [], timeout_s)
            if not ready:
                return b""
            return self._port.read(max(1, self._port.in_waiting))
        self._port.timeout = timeout_s
        return self._port.read(max(1, self._port.in_waiting))

    def close(self) -> None:
        self._port.close()


async def accept_px4(port: int, host: str = "127.0.0.1") -> SocketLink:
    """Listen on host:port and take PX4's simulator connection, once it comes: the caller bounds the wait by
    PX4's life (ChildProcess.while_alive), cancelling this when PX4 dies. SimulatorLinkError naming the port
    if it cannot be listened on."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            server.bind((host, port))
        except OSError as exc:
            raise SimulatorLinkError(f"cannot listen for PX4 on TCP {host}:{port}: {exc.strerror}") from exc
        server.listen(1)
        server.setblocking(False)
        while True:
            try:
                conn, _ = server.accept()
                return SocketLink(conn, f"TCP {host}:{port}")
            except BlockingIOError:
                pass
            await asyncio.sleep(0.01)
    finally:
        server.close()
