"""QGroundControl .params files: read as QGC writes them; anything else refused naming file, line and column."""

from __future__ import annotations

import pytest

from config.errors import ConfigError
from px4.params_file import MAX_PROBLEMS, read_params_file

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
    ("1\t1\tMPC_XY_CRUISE\tfast\t9", "8.Value: expected a finite number.*got 'fast'"),
    ("1\t1\tCOM_OBL_RC_ACT\t1.5\t6", "8.Value: expected an integer.*got '1.5'"),
    ("1\t1\tMPC_XY_CRUISE\tnan\t9", "8.Value: expected a finite number"),
    ("1\t1\tMPC_XY_CRUISE\t5\t4", "8.Type: expected 9 \\(REAL32: PX4's type of MPC_XY_CRUISE\\), got '4'"),
    ("1\t1\tMPC_XY_CRUISE\t5\t6", "8.Type: expected 9 \\(REAL32"),
    ("1\t1\tA_NAME_FAR_TOO_LONG_FOR_PX4\t5\t9", "8.Name: expected a PX4 parameter name"),
    ("1\t1\tMPC_XY_CRUISE\t5", "8: expected 5 tab-separated columns .*got 4"),
    ("1\t1\tSYS_AUTOSTART\t1\t6", "9.Name: expected each parameter once \\(first on line 8\\), got 'SYS_AUTOSTART'"),
    # PX4 would store these and fly something else; the harness names them before anything starts.
    ("1\t1\tMPC_XY_CRUSE\t5\t9", "8.Name: expected a parameter of PX4 1.16.1 \\(did you mean MPC_XY_CRUISE\\?\\), "
                                   "got 'MPC_XY_CRUSE'"),
    ("1\t1\tMPC_XY_CRUISE\t500\t9", "8.Value: expected MPC_XY_CRUISE within \\[0, 20\\] m/s \\(its range in PX4\\), "
                                      "got '500'"),
    ("1\t1\tEKF2_NOAID_TOUT\t2147483648\t6", "8.Value: expected an integer within \\[-2147483648, 2147483647\\]"),
    ("1\t1\tMPC_Z_P\t1e39\t9", "8.Value: expected a finite number within"),
    ("1\tx\tMPC_XY_CRUISE\t5\t9", "8.Component-Id: expected a MAVLink id"),
    # QGroundControl saves every component's parameters in one file; the harness sets the autopilot's alone.
    ("1\t100\tCAM_TRIGGER\t3\t6", "8.Component-Id: expected 1 \\(the autopilot.*got component 100 on 1 line"),
])
def test_a_broken_line_names_the_file_line_and_column(tmp_path, line, expected):
    path = tmp_path / "bad.params"
    lines = QGC.splitlines()
    path.write_text("\n".join(lines[:7] + [line] + lines[9:]) + "\n")
    with pytest.raises(ConfigError, match=f"{path}: line {expected}"):
        read_params_file(path)


def test_every_problem_is_named_at_once_and_another_version_is_named_where_it_matters(tmp_path):
    path = tmp_path / "old.params"
    path.write_text(QGC.replace("1.16.1", "1.14.0") + "1\t1\tMPC_XY_CRUSE\t5\t9\n1\t100\tCAM_A\t1\t6\n"
                    "1\t100\tCAM_B\t1\t6\n")
    with pytest.raises(ConfigError) as refused:
        read_params_file(path)
    assert refused.value.problems == (
        f"{path}: line 11.Name: expected a parameter of PX4 1.16.1 (did you mean MPC_XY_CRUISE? the file says PX4 "
        "1.14.0; names are checked against PX4 1.16.1's), got 'MPC_XY_CRUSE'",
        f"{path}: line 12.Component-Id: expected 1 (the autopilot: the harness sets no other component's parameters), "
        "got component 100 on 2 line(s): [12, 13]; delete them, or save the autopilot's parameters alone")
    path.write_text(QGC.replace("1.16.1", "1.14.0"))  # every line right for 1.16.1 too
    assert read_params_file(path)["MPC_XY_CRUISE"] == 7.5


def test_another_stack_is_refused_at_its_header_and_garbage_after_enough_problems(tmp_path):
    path = tmp_path / "ardupilot.params"
    path.write_text(QGC.replace("PX4 Pro", "ArduPilot") + "1\t1\tWPNAV_SPEED\t500\t9\n")
    with pytest.raises(ConfigError, match=f"^{path}: line 3.Stack: expected a PX4 parameter file .*got 'ArduPilot'$"):
        read_params_file(path)
    path.write_text("junk\n" * 100_000)
    with pytest.raises(ConfigError) as refused:
        read_params_file(path)
    assert len(refused.value.problems) == MAX_PROBLEMS + 1
    assert refused.value.problems[-1].endswith(f"stopped reading after {MAX_PROBLEMS} problems: expected a PX4 "
                                               "parameter file")


def test_binary_huge_missing_and_special_files_are_refused(tmp_path):
    binary = tmp_path / "x.params"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    with pytest.raises(ConfigError, match="in UTF-8 text, got byte 0x89"):
        read_params_file(binary)
    huge = tmp_path / "huge.params"
    huge.write_bytes(b"#" * (5 * 1024 * 1024))
    with pytest.raises(ConfigError, match="of at most 4096 kB, got a larger file"):
        read_params_file(huge)
    with pytest.raises(ConfigError, match="expected a readable QGroundControl .params file, got No such file"):
        read_params_file(tmp_path / "missing.params")
    with pytest.raises(ConfigError, match="/dev/zero: expected a QGroundControl .params file \\(a regular file\\), got a "
                                          "character device"):
        read_params_file("/dev/zero")
