"""Byte transports named by one string, for MAVLink endpoints that are not MAVSDK.

The built-in vehicle and the link proxy speak MAVLink over these. The strings follow MAVSDK's
connection URLs so one name means the same port everywhere:

- ``udpin://HOST:PORT``   bind HOST:PORT, answer whoever sent last (several peers are kept);
- ``udpout://HOST:PORT``  send to HOST:PORT from an ephemeral port (PX4 SITL's "-o" side);
- ``serial:///dev/ttyUSB0:921600``  a serial device at a baud rate;
- any pyserial URL (``loop://``, ``socket://HOST:PORT``, ``rfc2217://...``, ``spy://...``),
  after pyserial's own handlers, with ``?baud=N`` if the rate matters.

Defaults bind to loopback; a wildcard or outside address is used only when the caller names one.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass
from typing import Callable, Protocol
from urllib.parse import parse_qs, urlsplit

Receiver = Callable[[bytes], None]

PYSERIAL_SCHEMES = ("loop", "socket", "rfc2217", "spy", "alt", "hwgrep", "cp2110")


class TransportError(ValueError):
    """A connection string that cannot be parsed or opened."""


class Transport(Protocol):
    """Bytes out with `send`; bytes in are handed to the receiver given at open time."""

    url: str

    def send(self, data: bytes) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Endpoint:
    """A parsed connection string."""

    scheme: str  # udpin | udpout | serial | pyserial
    host: str = ""
    port: int = 0
    device: str = ""
    baud: int = 57600
    url: str = ""


def parse_url(url: str) -> Endpoint:
    """Parse a connection string; raise TransportError naming what is wrong."""
    if "://" not in url:
        raise TransportError(f"connection string {url!r}: expected SCHEME://..., e.g. udpin://127.0.0.1:14540 "
                             "or serial:///dev/ttyACM0:921600")
    scheme, rest = url.split("://", 1)
    if scheme in ("udpin", "udpout", "udp"):
        host, sep, port = rest.rpartition(":")
        if not sep or not port.isdigit():
            raise TransportError(f"connection string {url!r}: expected {scheme}://HOST:PORT")
        if scheme == "udp":  # MAVSDK's old spelling: udp://:14540 listens
            scheme = "udpin"
        return Endpoint(scheme, host or "127.0.0.1", int(port), url=url)
    if scheme == "serial":
        device, sep, baud = rest.rpartition(":")
        if not sep or not baud.isdigit():
            device, baud = rest, "57600"
        if not device:
            raise TransportError(f"connection string {url!r}: expected serial:///dev/DEVICE:BAUD")
        return Endpoint("serial", device=device, baud=int(baud), url=url)
    if scheme in PYSERIAL_SCHEMES:
        query = parse_qs(urlsplit(url).query)
        baud = int(query.get("baud", ["57600"])[0])
        return Endpoint("pyserial", device=url, baud=baud, url=url)
    raise TransportError(f"connection string {url!r}: unknown scheme {scheme!r}; expected udpin, udpout, serial "
                         f"or a pyserial URL ({', '.join(PYSERIAL_SCHEMES)})")


def loopback_by_default(url: str) -> str:
    """`url` with a listening UDP address that names no host bound to 127.0.0.1 instead of every interface.

    MAVSDK reads ``udpin://:14540`` (and the old ``udp://:14540``) as 0.0.0.0; the harness listens
    beyond loopback only where a connection string says 0.0.0.0 (or an address) explicitly.
    """
    with contextlib.suppress(TransportError):
        endpoint = parse_url(url)
        if endpoint.scheme == "udpin" and url.split("://", 1)[1].startswith(":"):
            return f"udpin://127.0.0.1:{endpoint.port}"
    return url


class _UdpProtocol(asyncio.DatagramProtocol):
    def __init__(self, owner: "UdpTransport") -> None:
        self.owner = owner

    def datagram_received(self, data: bytes, addr) -> None:
        self.owner._received(data, addr)

    def error_received(self, exc: Exception) -> None:
        # ICMP port-unreachable while the peer is not up yet; the next send simply tries again.
        pass


class UdpTransport:
    """UDP in the udpin (server) or udpout (client) role."""

    # A MAVLink frame never spans datagrams: a reader may drop a partial frame at each one's end.
    datagrams = True

    MAX_PEERS = 8

    def __init__(self, endpoint: Endpoint, receiver: Receiver):
        self.url = endpoint.url
        self.endpoint = endpoint
        self._receiver = receiver
        self._transport: asyncio.DatagramTransport | None = None
        # udpout has its one fixed peer; udpin learns its peers from what arrives.
        self.peers: list[tuple[str, int]] = [(endpoint.host, endpoint.port)] if endpoint.scheme == "udpout" else []

    async def open(self) -> "UdpTransport":
        loop = asyncio.get_running_loop()
        if self.endpoint.scheme == "udpin":
            local = (self.endpoint.host, self.endpoint.port)
        else:
            local = ("0.0.0.0" if self.endpoint.host in ("0.0.0.0", "") else "127.0.0.1", 0)
            if self.endpoint.host not in ("127.0.0.1", "localhost", "0.0.0.0"):
                local = ("0.0.0.0", 0)
        try:
            self._transport, _ = await loop.create_datagram_endpoint(lambda: _UdpProtocol(self), local_addr=local)
        except OSError as exc:
            raise TransportError(f"{self.url}: cannot bind {local[0]}:{local[1]}: {exc.strerror}") from exc
        return self

    @property
    def local_address(self) -> tuple[str, int]:
        assert self._transport is not None
        return self._transport.get_extra_info("sockname")[:2]

    def _received(self, data: bytes, addr) -> None:
        if self.endpoint.scheme == "udpin" and addr not in self.peers:
            self.peers.append(addr)
            del self.peers[:-self.MAX_PEERS]
        self._receiver(data)

    def send(self, data: bytes) -> None:
        if self._transport is None:
            return
        for peer in self.peers:
            self._transport.sendto(data, peer)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None


class SerialTransport:
    """A pyserial port; a reader thread hands bytes to the event loop (pyserial has no asyncio API)."""

    datagrams = False  # a byte stream: a frame may arrive in pieces

    def __init__(self, endpoint: Endpoint, receiver: Receiver):
        self.url = endpoint.url
        self.endpoint = endpoint
        self._receiver = receiver
        self._port = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped_writes = 0

    async def open(self) -> "SerialTransport":
        import serial  # pyserial

        loop = asyncio.get_running_loop()
        try:
            # write_timeout=0: a full output buffer drops bytes, as a radio does, instead of stalling
            # the caller's event loop (the vehicle's physics, every other link).
            self._port = serial.serial_for_url(self.endpoint.device, baudrate=self.endpoint.baud, timeout=0.05,
                                               write_timeout=0)
        except (serial.SerialException, ValueError) as exc:
            raise TransportError(f"{self.url}: cannot open serial port: {exc}") from exc

        def pump() -> None:
            while not self._stop.is_set():
                try:
                    data = self._port.read(max(1, self._port.in_waiting))
                except (serial.SerialException, OSError, TypeError):
                    break  # port closed or device gone
                if data:
                    loop.call_soon_threadsafe(self._receiver, data)

        self._thread = threading.Thread(target=pump, name=f"serial-reader {self.endpoint.device}", daemon=True)
        self._thread.start()
        return self

    def send(self, data: bytes) -> None:
        if self._port is not None:
            try:
                self._port.write(data)
            except Exception:  # buffer full (dropped, as on a radio) or device gone (reads report it)
                self.dropped_writes += 1

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        if self._port is not None:
            self._port.close()
            self._port = None


async def open_transport(url: str, receiver: Receiver) -> UdpTransport | SerialTransport:
    """Open the transport a connection string names."""
    endpoint = parse_url(url)
    if endpoint.scheme in ("udpin", "udpout"):
        return await UdpTransport(endpoint, receiver).open()
    return await SerialTransport(endpoint, receiver).open()
