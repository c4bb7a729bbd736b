"""Which MAVLink messages each protocol of the built-in vehicle handles: a handler names its message ids
(`@handles`), and the server looks an arriving message's id up in the table `handler_table` builds, so a
method's name never decides what it is sent.
"""

from __future__ import annotations

from typing import Callable


def handles(*msg_ids: int) -> Callable:
    """Mark a method `(self, link, msg)` as the handler of the MAVLink messages with these ids."""

    def mark(method: Callable) -> Callable:
        method.handles = msg_ids
        return method

    return mark


def handler_table(*protocols: object) -> dict[int, Callable]:
    """Message id -> bound handler, from every `@handles` method of each protocol object's class and its
    bases. An id claimed by two methods is refused when the server is built, naming both."""
    table: dict[int, Callable] = {}
    for protocol in protocols:
        cls = type(protocol)
        for name in dir(cls):
            for msg_id in getattr(getattr(cls, name), "handles", ()):
                if msg_id in table:
                    raise TypeError(f"MAVLink message {msg_id} is handled by both {table[msg_id].__name__} and {name}")
                table[msg_id] = getattr(protocol, name)
    return table
