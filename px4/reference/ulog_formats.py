"""PX4's ULog message formats of chosen topics, read from a flight log of a real PX4 build.

    python -m px4.reference.ulog_formats LOG.ulg --out px4/reference/px4_v1.16.1_sih_ulog_formats.json

writes, for every topic the file already lists (plus any given with --topic), its fields as PX4's
logger defines them (``[type, name]``, arrays as ``float[4]``, nested types by name) and the nested
formats they use. The built-in vehicle logs these topics in exactly these formats
(px4/sim/flight_log.py); tests/test_builtin_ulog.py holds a fresh PX4 log to the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pyulog import ULog


def _fields(log: ULog, name: str) -> list[list[str]]:
    return [[f"{ctype}[{size}]" if size else ctype, field] for ctype, size, field in log.message_formats[name].fields]


def formats_of(log: ULog, topics: list[str]) -> dict:
    """{"topics": {name: fields}, "formats": {nested type: fields}} for the topics (KeyError if one is absent)."""
    found = {name: _fields(log, name) for name in topics}
    nested: dict[str, list[list[str]]] = {}
    pending = [t for fields in found.values() for t, _ in fields]
    while pending:
        base = pending.pop().split("[")[0]
        if base in log.message_formats and base not in nested:
            nested[base] = _fields(log, base)
            pending += [t for t, _ in nested[base]]
    return {"topics": found, "formats": dict(sorted(nested.items()))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="a ULog PX4 wrote")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to update")
    parser.add_argument("--topic", action="append", default=[], help="one more topic to keep (repeatable)")
    args = parser.parse_args(argv)
    try:
        kept = json.loads(args.out.read_text())["topics"] if args.out.exists() else {}
    except (ValueError, KeyError, TypeError) as error:
        print(f"{args.out}: expected this tool's JSON with a 'topics' object ({error})", file=sys.stderr)
        return 2
    try:
        log = ULog(str(args.log))
    except Exception as error:  # pyulog raises what its parser meets: any of it means "not a ULog we can read"
        print(f"{args.log}: cannot be read as a ULog ({type(error).__name__}: {error})", file=sys.stderr)
        return 2
    topics = sorted(set(kept) | set(args.topic))
    missing = [t for t in topics if t not in log.message_formats]
    if missing:
        print(f"{args.log}: no format for {', '.join(missing)}", file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(formats_of(log, topics), indent=1) + "\n")
    print(f"{args.out}: {len(topics)} topics from {args.log} ({log.msg_info_dict.get('ver_sw', '?')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
