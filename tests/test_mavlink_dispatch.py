"""The built-in vehicle's MAVLink handlers are found by the message ids they name, never by their method names."""

import pytest
from pymavlink.dialects.v20 import common as mavlink

from px4.sim.mavlink_dispatch import handler_table, handles
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
        table = handler_table(server, server.params, server.files)
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
