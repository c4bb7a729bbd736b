"""The parameter protocol as PX4 speaks it: the list streamed a few per tick with _HASH_CHECK after
it, reads by name or index, sets echoed back, int32 values encoded bytewise in the float field.
"""

from __future__ import annotations

import struct

from pymavlink.dialects.v20 import common as mavlink

from px4.params import HASH_CHECK, ParamError
from px4.sim.autopilot import Autopilot
from px4.sim.mavlink_dispatch import handles
from px4.sim.mavlink_link import Link

PARAMS_PER_TICK = 5  # per 4 ms of vehicle time: the list takes ~0.7 s, as on PX4
HASH_CHECK_INDEX = 65535  # PX4 sends _HASH_CHECK after the list with index -1 as uint16


def _param_wire_value(value: float, is_int: bool) -> float:
    """PX4 sends int32 parameters bytewise inside the float field (PARAM_ENCODE_BYTEWISE)."""
    if is_int:
        return struct.unpack("<f", struct.pack("<i", int(value)))[0]
    return value


def _is_int_type(param_type: int) -> bool:
    return param_type in (mavlink.MAV_PARAM_TYPE_INT32, mavlink.MAV_PARAM_TYPE_UINT32, mavlink.MAV_PARAM_TYPE_INT16,
                          mavlink.MAV_PARAM_TYPE_UINT16, mavlink.MAV_PARAM_TYPE_INT8, mavlink.MAV_PARAM_TYPE_UINT8)


def _param_from_wire(value: float, param_type: int) -> float:
    if _is_int_type(param_type):
        return float(struct.unpack("<i", struct.pack("<f", value))[0])
    return value


# Parameter -> the one whose value caps it, where PX4's module writes the capped value back.
WRITTEN_BACK = {"MPC_XY_CRUISE": "MPC_XY_VEL_MAX"}
# After a set, when the module has taken it up: a cycle of PX4's position controller and its parameter
# update, well within the second after which the written-back value was read (not measured closer).
WRITE_BACK_S = 0.1


class ParamProtocol:
    """Answers PARAM_REQUEST_LIST / _READ and PARAM_SET.

    A member of `MavlinkServer` (px4/sim/mavlink_server.py), as PX4's mavlink module holds its parameter
    manager: it is handed the autopilot and the server's links (a set is echoed on every one) and keeps
    its own state, the parameters still to send on each link and when a constrained value is written back.
    """

    def __init__(self, autopilot: Autopilot, links: list[Link]) -> None:
        self.ap = autopilot
        self.links = links
        self._param_queues: dict[Link, list[int]] = {}
        self.write_back_due_s = float("inf")

    # ---- parameters
    def _param_value(self, index: int):
        store = self.ap.params
        name = store.name_at(index)
        spec = store.spec(name)
        ptype = mavlink.MAV_PARAM_TYPE_INT32 if spec.is_int else mavlink.MAV_PARAM_TYPE_REAL32
        return mavlink.MAVLink_param_value_message(name.encode(), _param_wire_value(store[name], spec.is_int), ptype,
                                                   len(store), index)

    def _hash_check(self):
        return mavlink.MAVLink_param_value_message(HASH_CHECK.encode(),
                                                   _param_wire_value(self.ap.params.hash_check(), True),
                                                   mavlink.MAV_PARAM_TYPE_UINT32, len(self.ap.params), HASH_CHECK_INDEX)

    @handles(mavlink.MAVLINK_MSG_ID_PARAM_REQUEST_LIST)
    def _on_param_request_list(self, link: Link, msg) -> None:
        # PX4 ends the list with _HASH_CHECK (index -1): a client with the same hash may keep its cache.
        self._param_queues[link] = list(range(len(self.ap.params))) + [HASH_CHECK_INDEX]

    def pump(self, link: Link) -> None:
        # Paced so a list request does not flood a slow radio link in one burst.
        queue = self._param_queues.get(link, [])
        batch, self._param_queues[link] = queue[:PARAMS_PER_TICK], queue[PARAMS_PER_TICK:]
        for index in batch:
            link.send(self._hash_check() if index == HASH_CHECK_INDEX else self._param_value(index))

    def _param_index(self, param_id: str, param_index: int) -> int | None:
        store = self.ap.params
        if param_index >= 0:
            return param_index if param_index < len(store) else None
        return store.index(param_id) if param_id in store else None

    @handles(mavlink.MAVLINK_MSG_ID_PARAM_REQUEST_READ)
    def _on_param_request_read(self, link: Link, msg) -> None:
        name = msg.param_id.rstrip("\x00") if isinstance(msg.param_id, str) else msg.param_id.decode().rstrip("\x00")
        if name == HASH_CHECK:
            link.send(self._hash_check())
            return
        index = self._param_index(name, msg.param_index)
        if index is None:
            self.ap.say(mavlink.MAV_SEVERITY_WARNING, f"unknown parameter {name}")
            return
        link.send(self._param_value(index))

    @handles(mavlink.MAVLINK_MSG_ID_PARAM_SET)
    def _on_param_set(self, link: Link, msg) -> None:
        name = msg.param_id.rstrip("\x00") if isinstance(msg.param_id, str) else msg.param_id.decode().rstrip("\x00")
        store = self.ap.params
        if name not in store:
            self.ap.say(mavlink.MAV_SEVERITY_WARNING, f"unknown parameter {name}")
            return
        if _is_int_type(msg.param_type) != store.spec(name).is_int:
            return  # PX4 v1.16.1 ignores a set of the wrong type without a word (measured: no PARAM_VALUE)
        try:
            # PX4 takes a value outside the parameter's documented range (measured: MPC_XY_CRUISE 1000 and -5
            # both echoed and read back); only what is no number at all is refused here.
            store.take(name, _param_from_wire(msg.param_value, msg.param_type))
        except ParamError as exc:
            self.ap.say(mavlink.MAV_SEVERITY_WARNING, str(exc))
        self.ap.apply_params()
        # PX4 always answers a set with the value now stored: a client sees a refusal as an unchanged value.
        for each in self.links:
            each.send(self._param_value(store.index(name)))
        if any(name in pair for pair in WRITTEN_BACK.items()):
            self.write_back_due_s = self.ap.time_s + WRITE_BACK_S

    def write_back(self) -> None:
        """The value a PX4 module constrains and writes back once it has read the set (PX4's position controller:
        a cruise speed above MPC_XY_VEL_MAX becomes MPC_XY_VEL_MAX; measured, 1000 reads back 12.0 a second
        later, while MAVSDK's get_param_float right after its set still reads 1000)."""
        if self.ap.time_s < self.write_back_due_s:
            return
        self.write_back_due_s = float("inf")
        store = self.ap.params
        for param, limit in WRITTEN_BACK.items():
            if param in store and limit in store and store[param] > store[limit]:
                store.take(param, store[limit])
                self.ap.apply_params()
