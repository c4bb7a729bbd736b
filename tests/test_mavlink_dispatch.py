"""The built-in vehicle's MAVLink handlers are found by the message ids they name, never by their method names,
and each protocol is a member object of the server that owns its state and its message ids."""

import ast
from pathlib import Path

import pytest
from pymavlink.dialects.v20 import common as mavlink

from px4.sim.mavlink_dispatch import handler_table, handles
from px4.sim.mavlink_server import MavlinkServer
from px4.sim.realtime import SimOptions, build_vehicle


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


def _defined_names(tree: ast.Module) -> set[str]:
    """What a module defines for itself: its functions, classes, module names, class fields and `self.` attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and ast.unparse(node.value) == "self":
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return names


def _private_reads(path: Path, defined: dict[Path, set[str]], through_self: bool) -> list[str]:
    """`x._name` in `path` where `_name` is another px4/sim module's (`self._name` too if `through_self`: a mixin
    reading its host's state). Names no module of px4/sim defines are a library's (pymavlink's `_pack`)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    own = defined[path]
    others = set().union(*(names for other, names in defined.items() if other != path))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")):
            continue
        if node.attr in own or node.attr not in others:
            continue
        if ast.unparse(node.value) in ("self", "cls") and not through_self:
            continue
        found.append(f"{path.relative_to(SIM.parents[1])}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_part_of_the_built_in_vehicle_reads_another_parts_private_names():
    """Each part is handed what it needs of another (an object's public names, a callable) instead of reading its
    `_names`: in px4/sim no `other._name` of another module, and in the MAVLink parts no `self._name` either (a
    mixin reading the server's state, as telemetry, commands, offboard and missions did)."""
    defined = {path: _defined_names(ast.parse(path.read_text(), filename=str(path))) for path in SIM.glob("*.py")}
    reads = [line for path in sorted(defined) for line in _private_reads(path, defined, through_self=False)]
    reads += [line for path in sorted(SIM.glob("mavlink_*.py")) for line in _private_reads(path, defined, True)]
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
