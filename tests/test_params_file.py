"""QGroundControl .params files: read as QGC writes them; anything else refused naming file, line and field."""

from __future__ import annotations

import pytest

from px4.params_file import ParamsFileError, read_params_file

QGC = """# Onboard parameters for Vehicle 1
#
# Stack: PX4 Pro
# Vehicle: Multi-Rotor
# Version: 1.16.1 
#
# Vehicle-Id Component-Id Name Value Type
1\t1\tCOM_OBL_RC_ACT\t0\t6
1\t1\tMPC_XY_CRUISE\t7.500000000000000000\t9
1\t1\tSYS_AUTOSTART\t10040\t6
"""


def test_a_qgroundcontrol_file_reads_with_its_types(tmp_path):
    path = tmp_path / "vehicle.params"
    path.write_text(QGC)
    assert read_params_file(path) == {"COM_OBL_RC_ACT": 0.0, "MPC_XY_CRUISE": 7.5, "SYS_AUTOSTART": 10040.0}


@pytest.mark.parametrize("line, expected", [
    ("1\t1\tMPC_XY_CRUISE\tfast\t9", "8: .*MPC_XY_CRUISE.*value 'fast'.*expected a number"),
    ("1\t1\tCOM_OBL_RC_ACT\t1.5\t6", "8: .*COM_OBL_RC_ACT.*expected an integer"),
    ("1\t1\tMPC_XY_CRUISE\tnan\t9", "8: .*expected a finite number"),
    ("1\t1\tMPC_XY_CRUISE\t5\t4", "8: .*type '4'.*expected 6 \\(INT32\\) or 9 \\(REAL32\\)"),
    ("1\t1\tA_NAME_FAR_TOO_LONG_FOR_PX4\t5\t9", "8: .*expected a PX4 parameter name"),
    ("1\t1\tMPC_XY_CRUISE\t5", "8: 4 fields; expected 5"),
    ("1\t1\tSYS_AUTOSTART\t1\t6", "9: SYS_AUTOSTART appears twice"),
])
def test_a_broken_line_names_the_file_line_and_field(tmp_path, line, expected):
    path = tmp_path / "bad.params"
    lines = QGC.splitlines()
    path.write_text("\n".join(lines[:7] + [line] + lines[9:]) + "\n")
    with pytest.raises(ParamsFileError, match=f"{path}:{expected}"):
        read_params_file(path)


def test_binary_huge_and_missing_files_are_refused(tmp_path):
    binary = tmp_path / "x.params"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(ParamsFileError, match="not UTF-8"):
        read_params_file(binary)
    huge = tmp_path / "huge.params"
    huge.write_bytes(b"#" * (5 * 1024 * 1024))
    with pytest.raises(ParamsFileError, match="bytes; a parameter file is expected to be under"):
        read_params_file(huge)
    with pytest.raises(ParamsFileError, match="cannot read it"):
        read_params_file(tmp_path / "missing.params")
