"""A virtual serial cable: two pseudo-terminals whose bytes are copied to each other.

A single pty has one device path and one master file descriptor, but MAVSDK and pyserial both want a
device path. Two ptys joined master-to-master give two paths that behave like the two ends of a
null-modem cable, so the serial MAVLink path (flight controller on one end, companion on the other)
can be exercised for real on a machine without serial hardware: `hil sim --link serial://...` on
one end, a MAVSDK `serial://...` connection on the other.
"""

from __future__ import annotations

import os
import select
import threading
import tty


class PtyPair:
    """Two connected pseudo-terminals; use as a context manager. `a` and `b` are device paths."""

    def __init__(self) -> None:
        self._fds: list[int] = []
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None
        self.a = self.b = ""
        self.bytes_copied = 0
        self.bytes_dropped = 0  # the far end was not reading

    def __enter__(self) -> "PtyPair":
        m1, s1 = os.openpty()
        m2, s2 = os.openpty()
        for fd in (s1, s2):
            tty.setraw(fd)  # no echo, no line discipline: MAVLink is binary
        for fd in (m1, m2):
            # A cable to a device that stopped reading loses bytes; it never blocks the sender.
            os.set_blocking(fd, False)
        self._masters = (m1, m2)
        self._fds = [m1, s1, m2, s2]
        self.a, self.b = os.ttyname(s1), os.ttyname(s2)
        self._thread = threading.Thread(target=self._pump, name="pty-pair", daemon=True)
        self._thread.start()
        return self

    def _pump(self) -> None:
        m1, m2 = self._masters
        peer = {m1: m2, m2: m1}
        while True:
            ready, _, _ = select.select([m1, m2, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            for fd in ready:
                try:
                    data = os.read(fd, 65536)
                except (BlockingIOError, OSError):  # nothing there after all, or the slave side closed
                    continue
                if data:
                    try:
                        self.bytes_copied += os.write(peer[fd], data)
                    except BlockingIOError:
                        self.bytes_dropped += len(data)

    def __exit__(self, *exc) -> None:
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        for fd in self._fds + [self._stop_r, self._stop_w]:
            try:
                os.close(fd)
            except OSError:
                pass
