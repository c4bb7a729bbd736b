"""What the vehicle tells the pilot: the autopilot's queued texts as STATUSTEXT messages, each also written
to the flight log, and sent at once when a reply must follow its reason (a refusal before its ack).
"""

from __future__ import annotations

from pymavlink.dialects.v20 import common as mavlink

from px4.sim.autopilot import Autopilot
from px4.sim.flight_log import FlightLogger
from px4.sim.mavlink_link import Link

TEXT_CHUNK = 50  # bytes of STATUSTEXT.text


class StatusTexts:
    """The autopilot's text queue as STATUSTEXT messages on the server's links.

    A member of `MavlinkServer` (px4/sim/mavlink_server.py), handed the autopilot, the flight logger and the
    links; it keeps the id of the last text sent in chunks."""

    def __init__(self, autopilot: Autopilot, logger: FlightLogger, links: list[Link]) -> None:
        self.ap = autopilot
        self.logger = logger
        self.links = links
        self._text_id = 0

    def messages(self) -> list:
        """Queued texts as STATUSTEXT messages; a text over 50 bytes goes in MAVLink 2 chunks."""
        out = []
        while self.ap.statustexts:
            severity, text = self.ap.statustexts.popleft()
            self.logger.say(severity, text)
            data = text.encode()
            if len(data) <= TEXT_CHUNK:
                out.append(mavlink.MAVLink_statustext_message(severity, data, 0, 0))
                continue
            self._text_id = self._text_id % 65535 + 1
            chunks = [data[i:i + TEXT_CHUNK] for i in range(0, len(data), TEXT_CHUNK)]
            if len(chunks[-1]) == TEXT_CHUNK:
                chunks.append(b"")  # the receiver knows the text ended from a short chunk
            out += [mavlink.MAVLink_statustext_message(severity, c, self._text_id, n) for n, c in enumerate(chunks)]
        return out

    def flush(self) -> None:
        """Send queued texts now on every link (so a refusal's reason arrives before its ack)."""
        for msg in self.messages():
            for link in self.links:
                link.send(msg)
