"""Parameter files in QGroundControl's format (`.params`), which PX4 users save and load.

One parameter per line, tab-separated, after `#` comment lines:

    # Onboard parameters for Vehicle 1
    #
    # Stack: PX4 Pro
    # Vehicle: Multi-Rotor
    # Version: 1.16.1
    #
    # Vehicle-Id Component-Id Name Value Type
    1	1	MPC_XY_CRUISE	5.000000000000000000	9
    1	1	COM_OBL_RC_ACT	0	6

Type is the MAVLink MAV_PARAM_TYPE (6 INT32, 9 REAL32; PX4 uses only these two). The file is hostile
input, checked against what the harness knows of PX4 (`px4.params`: PX4's table and the ranges of the
parameters it acts on) before anything starts. Every problem is one ``FILE: line N.COLUMN: expected
WHAT, got VALUE`` line of a `ConfigError` (the columns named as the header names them), and nothing is
half-loaded:

* a file from another stack (``# Stack:`` other than PX4) is refused at its header;
* every name is one of PX4's, with a did-you-mean; a file from another PX4 version (``# Version:``) is
  read when every line is right for the harness's PX4 too, and its version is named where one is not;
* every Type is the parameter's own, an INT32 value fits 32 bits, a value is within its range;
* every line is the autopilot's (Component-Id 1).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from config.fields import Problems, did_you_mean, shown
from config.loading import read_text
from px4.params import PX4_TABLE, ParamStore

INT32, REAL32 = 6, 9
TYPES = {str(INT32): "INT32", str(REAL32): "REAL32"}
INT32_RANGE = (-2**31, 2**31 - 1)
REAL32_MAX = 3.4028234663852886e38  # the largest finite float32: beyond it a REAL32 is infinity
AUTOPILOT = 1  # MAV_COMP_ID_AUTOPILOT1
MAX_BYTES = 4 * 1024 * 1024  # PX4 has ~900 parameters (~50 kB); anything far larger is not a parameter file
# A file with this many problems is not a parameter file with a few mistakes; reading on would only
# make the error longer (and a did-you-mean costs a search through PX4's ~900 names).
MAX_PROBLEMS = 100
COLUMNS = ("Vehicle-Id", "Component-Id", "Name", "Value", "Type")
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,15}$")
HEADER = re.compile(r"^#\s*(Stack|Version):\s*(.*?)\s*$")


def read_params_file(path: str | Path) -> dict[str, float]:
    """NAME -> value from a QGroundControl `.params` file (integers as floats, as MAVLink carries them);
    `ConfigError` listing every problem."""
    problems = Problems(str(path))
    px4 = ParamStore()
    params: dict[str, float] = {}
    first_line: dict[str, int] = {}
    other_components: dict[int, list[int]] = {}
    version = PX4_TABLE.release
    for number, line in enumerate(read_text(path, "QGroundControl .params file", MAX_BYTES).splitlines(), start=1):
        where = f"line {number}"
        if len(problems.lines) >= MAX_PROBLEMS:
            problems.add(where, f"stopped reading after {MAX_PROBLEMS} problems: expected a PX4 parameter file")
            break
        header = HEADER.match(line.strip())
        if header and header[1] == "Stack" and "PX4" not in header[2]:
            problems.invalid(f"{where}.Stack", "a PX4 parameter file (# Stack: PX4 Pro)", header[2])
            break
        if header and header[1] == "Version" and header[2]:
            version = header[2].split()[0]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = [field.strip() for field in (line.split("\t") if "\t" in line else line.split())]
        if len(fields) != len(COLUMNS):
            problems.add(where, f"expected {len(COLUMNS)} tab-separated columns ({' '.join(COLUMNS)}), "
                                f"got {len(fields)}")
            continue
        vehicle, component, name, value, kind = fields
        ids = [_mavlink_id(text) for text in (vehicle, component)]
        for column, text, parsed in zip(COLUMNS, (vehicle, component), ids):
            if parsed is None:
                problems.invalid(f"{where}.{column}", "a MAVLink id (a whole number from 0 to 255)", text)
        if None in ids:
            continue
        if ids[1] != AUTOPILOT:
            other_components.setdefault(ids[1], []).append(number)
            continue
        if not NAME.match(name):
            problems.invalid(f"{where}.Name", "a PX4 parameter name (letters, digits, _; at most 16 characters)", name)
            continue
        if name not in px4:
            hint = did_you_mean(name.upper(), px4)
            if version != PX4_TABLE.release:
                hint += f"the file says PX4 {version}; names are checked against PX4 {PX4_TABLE.release}'s"
            problems.invalid(f"{where}.Name", f"a parameter of PX4 {PX4_TABLE.release}"
                                              + (f" ({hint.strip()})" if hint else ""), name)
            continue
        spec = px4.spec(name)
        own = str(INT32 if spec.is_int else REAL32)
        if kind != own:
            problems.invalid(f"{where}.Type", f"{own} ({TYPES[own]}: PX4's type of {name})", kind)
            continue
        parsed_value = _value(value, spec.is_int)
        if parsed_value is None:
            problems.invalid(f"{where}.Value", f"an integer within [{INT32_RANGE[0]}, {INT32_RANGE[1]}] (INT32)"
                             if spec.is_int else f"a finite number within +-{REAL32_MAX:.4g} (REAL32)", value)
            continue
        # Out of range is an error, not a warning. PX4 itself stores an out-of-range PARAM_SET and its
        # modules constrain the value where they use it, so the flight would fly another value than the
        # file says, and nothing would say so; QGroundControl's editor refuses such a value, and so does
        # the built-in vehicle. A lab user who loads a file means every value in it.
        if not spec.min <= parsed_value <= spec.max:
            problems.invalid(f"{where}.Value", f"{name} within [{spec.min:g}, {spec.max:g}] {spec.unit}".rstrip()
                             + " (its range in PX4)", value)
            continue
        if name in params:
            problems.invalid(f"{where}.Name", f"each parameter once (first on line {first_line[name]})", name)
            continue
        params[name], first_line[name] = parsed_value, number
    # Another component's lines are an error, not skipped: QGroundControl saves every component's
    # parameters in one file (a camera's as component 100, a gimbal's as 154), the harness sets the
    # autopilot's alone, and lines that silently did nothing would leave a user believing the camera
    # was set up. One problem per component names its lines: what to delete.
    for component, lines in other_components.items():
        problems.add(f"line {lines[0]}.Component-Id",
                     f"expected {AUTOPILOT} (the autopilot: the harness sets no other component's parameters), got "
                     f"component {component} on {len(lines)} line(s): {shown(lines, 60)}; delete them, or save "
                     "the autopilot's parameters alone")
    problems.raise_if_any()
    return params


def _mavlink_id(text: str) -> int | None:
    return int(text) if re.fullmatch(r"[0-9]{1,3}", text) and int(text) <= 255 else None


def _value(text: str, is_int: bool) -> float | None:
    """A Value column as its type holds it, or None when it is not one."""
    try:
        value = int(text) if is_int else float(text)
    except ValueError:
        return None
    if is_int:
        return float(value) if INT32_RANGE[0] <= value <= INT32_RANGE[1] else None
    return value if math.isfinite(value) and abs(value) <= REAL32_MAX else None
