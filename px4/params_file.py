"""Parameter files in QGroundControl's format (`.params`), which PX4 users save and load.

One parameter per line, tab-separated, after `#` comment lines:

    # Onboard parameters for Vehicle 1
    # Vehicle-Id Component-Id Name Value Type
    1	1	MPC_XY_CRUISE	5.000000000000000000	9
    1	1	COM_OBL_RC_ACT	0	6

Type is the MAVLink MAV_PARAM_TYPE (6 INT32, 9 REAL32; PX4 uses only these two). A line that is
not of that shape is an error naming the file, the line and the field; nothing is half-loaded.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

INT32, REAL32 = 6, 9
MAX_BYTES = 4 * 1024 * 1024  # PX4 has ~900 parameters (~50 kB); anything far larger is not a parameter file
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,15}$")


class ParamsFileError(ValueError):
    """A parameter file that cannot be used; the message names the file, line and field."""


def read_params_file(path: str | Path) -> dict[str, float]:
    """NAME -> value from a QGroundControl `.params` file (integers as floats, as MAVLink carries them)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ParamsFileError(f"{path}: {size} bytes; a parameter file is expected to be under {MAX_BYTES} bytes")
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParamsFileError(f"{path}: not UTF-8 text (byte {exc.start}); expected a QGroundControl .params file") from None
    except OSError as exc:
        raise ParamsFileError(f"{path}: cannot read it ({exc.strerror})") from None
    params: dict[str, float] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        where = f"{path}:{number}"
        if len(fields) != 5:
            raise ParamsFileError(f"{where}: {len(fields)} fields; expected 5 (vehicle id, component id, name, "
                                  "value, type), tab-separated")
        name, value, kind = fields[2].strip(), fields[3].strip(), fields[4].strip()
        if not NAME.match(name):
            raise ParamsFileError(f"{where}: name {name[:40]!r}: expected a PX4 parameter name (letters, digits, _; "
                                  "at most 16 characters)")
        if kind not in (str(INT32), str(REAL32)):
            raise ParamsFileError(f"{where}: {name}: type {kind[:20]!r}; expected 6 (INT32) or 9 (REAL32)")
        try:
            number_value = int(value) if kind == str(INT32) else float(value)
        except ValueError:
            expected = "an integer" if kind == str(INT32) else "a number"
            raise ParamsFileError(f"{where}: {name}: value {value[:40]!r}; expected {expected}") from None
        if not math.isfinite(number_value) or abs(number_value) > 2**31:
            raise ParamsFileError(f"{where}: {name}: value {value[:40]!r}; expected a finite number within int32 range")
        if name in params:
            raise ParamsFileError(f"{where}: {name} appears twice")
        params[name] = float(number_value)
    return params
