"""The built-in vehicle's MAVLink handlers are found by the message ids they name, never by their method names,
and each protocol is a member object of the server that owns its state and its message ids."""

import ast
from pathlib import Path

import pytest
from pymavlink.dialects.v20 import common as mavlink

from px4.sim.mavlink_dispatch import handler_table, handles
from px4.sim.mavlink_server import MavlinkServer
from px4.sim.realtime import SimOptions, build_vehicle

from .test_autopilot_parts import _private_reads as private_reads_of_other_objects


def test_a_message_id_claimed_twice_is_refused_naming_both_handlers():
    class TwoMissionProtocols:
        @handles(mavlink.MAVLINK_MSG_ID_MISSION_ITEM_INT)
        def take_item(self, link, msg):
            pass

        @handles(mavlink.MAVLINK_MSG_ID_MISSION_ITEM, mavlink.MAVLINK_MSG_ID_MISSION_ITEM_INT)
        def take_item_again(self, link, msg):
            pass

    with pytest.raises(TypeError, match="take_item and take_item_again"):
        handler_table(TwoMissionProtocols())


def test_every_handler_takes_the_messages_it_names_and_the_older_forms_go_to_the_int_handlers():
    _, server = build_vehicle(SimOptions())
    try:
        table = handler_table(server, *server.protocols)
        names = {mavlink.mavlink_map[msg_id].msgname: handler.__name__ for msg_id, handler in table.items()}
        assert names["MISSION_ITEM"] == names["MISSION_ITEM_INT"] == "_on_mission_item_int"
        assert names["MISSION_REQUEST"] == names["MISSION_REQUEST_INT"] == "_on_mission_request_int"
        # Each other handler is named after the one message it takes, so a misspelt id cannot hide.
        singles = {name: method for name, method in names.items() if name not in ("MISSION_ITEM", "MISSION_REQUEST")}
        assert all(method == "_on_" + name.lower() for name, method in singles.items()), singles
        assert {"COMMAND_LONG", "PARAM_SET", "FILE_TRANSFER_PROTOCOL", "SET_POSITION_TARGET_LOCAL_NED",
                "HEARTBEAT", "TIMESYNC"} <= set(names)
    finally:
        server.close()


SIM = Path(__file__).resolve().parents[1] / "px4" / "sim"


def _defined_names(path: Path) -> set[str]:
    """The names a module gives its own objects: its functions and classes and the attributes it sets on `self`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return ({node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
            | {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
               and isinstance(node.ctx, ast.Store) and ast.unparse(node.value) == "self"})


def _host_reads(path: Path, others: set[str]) -> list[str]:
    """`self._name` in `path` where `_name` is another module's of px4/sim: a mixin reading its host's state."""
    own = _defined_names(path)
    return [f"{path.name}:{node.lineno}: {ast.unparse(node)}" for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "self" and node.attr.startswith("_")
            and not node.attr.startswith("__") and node.attr not in own and node.attr in others]


def test_no_mavlink_part_reads_another_parts_private_names():
    """Each MAVLink part is handed what it needs of another (an object's public names, a callable): no `x._name`
    that its own module does not define, and no `self._name` that another module of px4/sim defines (a mixin
    reading the server's state, as telemetry, commands, offboard and missions did: 14 such reads before)."""
    parts = sorted(SIM.glob("mavlink_*.py"))
    defined = {path: _defined_names(path) for path in SIM.glob("*.py")}
    reads = [hit for path in parts for hit in private_reads_of_other_objects(path, own_only=False)]
    for path in parts:
        reads += _host_reads(path, set().union(*(names for other, names in defined.items() if other != path)))
    assert not reads, "private names read across parts:\n" + "\n".join(reads)


def test_each_protocol_is_a_member_object_that_owns_its_message_ids():
    """The server mixes nothing in: it owns the links and HEARTBEAT, PING and TIMESYNC, and each message family
    goes to the one member object that keeps that protocol's state."""
    assert MavlinkServer.__bases__ == (object,)
    _, server = build_vehicle(SimOptions())
    try:
        owners = {"MISSION_": server.missions, "PARAM_": server.params, "FILE_TRANSFER_PROTOCOL": server.files,
                  "LOG_": server.files, "COMMAND_": server.commands, "SET_MODE": server.commands,
                  "MANUAL_CONTROL": server.commands, "SET_POSITION_TARGET_": server.offboard,
                  "SET_ATTITUDE_TARGET": server.offboard, "FOLLOW_TARGET": server.offboard}
        table = handler_table(server, *server.protocols)
        wrong = {}
        for msg_id, handler in table.items():
            name = mavlink.mavlink_map[msg_id].msgname
            owner = next((part for prefix, part in owners.items() if name.startswith(prefix)), server)
            if handler.__self__ is not owner:
                wrong[name] = type(handler.__self__).__name__
        assert not wrong, f"handled by the wrong part: {wrong}"
        assert {mavlink.mavlink_map[i].msgname for i, h in table.items() if h.__self__ is server} == {
            "HEARTBEAT", "PING", "TIMESYNC"}
        for part in server.protocols:
            assert type(part).__bases__ == (object,), type(part).__name__
            assert set(handler_table(part).values()) <= set(table.values())  # each part's own ids, no other's
    finally:
        server.close()
