"""Reading a YAML configuration file as hostile input: every file may be wrong, huge, nested, binary.

`load_yaml` returns plain Python data or raises `ConfigError` naming the file, the place and what
was expected, within bounded time and memory:

* only a regular file is read (`open_regular`): a FIFO would block the reader forever, a device
  such as /dev/zero never ends, a directory has no text;
* at most MAX_BYTES are read (a configuration file is kilobytes);
* the bytes must be UTF-8 (the error gives the offset of the first byte that is not);
* at most MAX_DEPTH levels of nesting (deeper structures would exhaust Python's stack);
* at most MAX_NODES values once aliases are expanded: YAML anchors are allowed for reuse, but a
  "billion laughs" document (a few lines that expand into gigabytes wherever the data is walked)
  is refused while it is parsed;
* a key that appears twice in one mapping is an error (PyYAML silently keeps the last one);
* integers outside the 64-bit range are refused (they overflow wherever a float is made of them).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from config.errors import ConfigError
from config.fields import did_you_mean

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 500_000
MAX_INT = 2**63


def load_yaml(path: str | Path, what: str, max_bytes: int = MAX_BYTES) -> Any:
    """The data of a YAML file (`what` names it in errors, e.g. "campaign file")."""
    return parse_yaml(read_text(path, what, max_bytes), str(path))


def read_text(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_BYTES) -> str:
    """A file's text, refused with one `ConfigError` naming it when unreadable, not a regular file, over
    `max_bytes` or not UTF-8."""
    raw = read_bytes(path, what, max_bytes)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError([f"{path}: expected a {what} in UTF-8 text, got byte 0x{raw[error.start]:02x} at "
                           f"offset {error.start} (a binary file?)"]) from None


def read_bytes(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_BYTES) -> bytes:
    """A file's bytes, refused with one `ConfigError` naming it when unreadable, not a regular file or over
    `max_bytes`."""
    try:
        with open_regular(path, what) as handle:
            # One byte past the bound, not the size stat gave: the file may grow while it is read.
            raw = handle.read(max_bytes + 1)
    except OSError as error:
        raise ConfigError([f"{path}: expected a readable {what}, got {error.strerror or error}"]) from None
    if len(raw) > max_bytes:
        raise ConfigError([f"{path}: expected a {what} of at most {max_bytes // 1024} kB, got a larger file"])
    return raw


def open_regular(path: str | os.PathLike[str], what: str) -> BinaryIO:
    """`path` opened for reading in binary, once it is known to be a regular file; a `ConfigError` naming
    it and what it is otherwise (OSError when it cannot be opened at all).

    The path is looked at before it is opened, because opening a device acts on it (opening a serial
    port resets the board behind it), and what was opened is looked at again, because the path may have
    been replaced in between; O_NONBLOCK keeps the open itself from waiting on a FIFO swapped in.
    """
    _expect_regular(os.stat(path), path, what)
    handle = open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK))
    try:
        _expect_regular(os.fstat(handle.fileno()), path, what)
    except ConfigError:
        handle.close()
        raise
    return handle


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _expect_regular(status: os.stat_result, path: str | os.PathLike[str], what: str) -> None:
    if not stat.S_ISREG(status.st_mode):
        kind = next((name for test, name in _KINDS if test(status.st_mode)), "not a regular file")
        raise ConfigError([f"{path}: expected a {what} (a regular file), got {kind}"])


def parse_yaml(text: str, source: str) -> Any:
    """Parse YAML text with the limits above; `source` names it in errors."""
    try:
        loader = _BoundedLoader(text)  # the reader refuses control characters (NUL...) already here
    except yaml.YAMLError as error:
        raise ConfigError([f"{source}: {describe_yaml_error(error)}"]) from None
    try:
        return loader.get_single_data()
    except _Refused as refused:
        raise ConfigError([f"{source}: {refused}"]) from None
    except yaml.YAMLError as error:
        raise ConfigError([f"{source}: {describe_yaml_error(error)}"]) from None
    except RecursionError:
        raise ConfigError([f"{source}: expected at most {MAX_DEPTH} levels of nesting, got deeper"]) from None
    finally:
        loader.dispose()


def describe_yaml_error(error: yaml.YAMLError) -> str:
    """Where a YAML syntax error is, in the ``expected ..., got ...`` form of every other problem."""
    mark = getattr(error, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "<document>"
    problem = getattr(error, "problem", None) or str(error)
    return f"{where}: expected valid YAML, got a syntax error ({problem})"


class _Refused(Exception):
    """A structural limit was exceeded; the message says where and what was expected."""


def _line(node: yaml.Node) -> str:
    return f"line {node.start_mark.line + 1}"


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the limits of the module docstring."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded: dict[int, int] = {}  # id(node) -> values it stands for, aliases expanded

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                event = self.peek_event()
                raise _Refused(f"line {event.start_mark.line + 1}: expected at most {MAX_DEPTH} levels of "
                               "nesting, got deeper")
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if id(node) not in self._expanded:  # an alias returns a node already counted
            if isinstance(node, yaml.SequenceNode):
                size = 1 + sum(self._expanded[id(child)] for child in node.value)
            elif isinstance(node, yaml.MappingNode):
                size = 1 + sum(self._expanded[id(k)] + self._expanded[id(v)] for k, v in node.value)
            else:
                size = 1
            if size > MAX_NODES:
                raise _Refused(f"{_line(node)}: expected at most {MAX_NODES} values with YAML aliases (*name) "
                               f"expanded, got more (aliases that multiply?)")
            self._expanded[id(node)] = size
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, yaml.Node] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # an unhashable key; PyYAML reports it with its own message
                    continue
                if first is not None:
                    raise _Refused(f"{_line(key_node)}: key {key!r} appears twice in one mapping (first at "
                                   f"{_line(first)}); expected each key once")
                seen[key] = key_node
        return super().construct_mapping(node, deep)

    def construct_yaml_int(self, node):
        value = super().construct_yaml_int(node)
        if abs(value) >= MAX_INT:
            raise _Refused(f"{_line(node)}: expected an integer within 64 bits, got one with "
                           f"{len(str(abs(value)))} digits")
        return value


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)


def packaged(name: str | os.PathLike[str], folder: Path, what: str) -> str | os.PathLike[str] | Path:
    """A bare name (no folder, no .yaml) is a file shipped with the package in `folder`
    (``demo_square`` is ``folder/demo_square.yaml``); anything else is a path, returned as it is.
    An unknown name is a ConfigError listing the shipped ones, with a did-you-mean."""
    text = os.fspath(name)
    if "/" in text or os.sep in text or text.endswith((".yaml", ".yml")) or os.path.exists(text):
        return name
    shipped = {p.stem: p for p in folder.glob("*.yaml")}
    if text in shipped:
        return shipped[text]
    raise ConfigError([f"{text}: no such {what} file, and no packaged {what} of that name "
                       f"({did_you_mean(text, shipped)}packaged: {', '.join(sorted(shipped))})"])
