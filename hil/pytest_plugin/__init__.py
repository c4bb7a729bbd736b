"""The pytest plugin: HIL tests get a connected, healthy `Vehicle` on whatever target the command line names.

    pytest tests/hil                                   # the targets of the ini option hil_targets (default: sim)
    pytest tests/hil --hil-target sim --hil-target px4-sitl   # every test on both, same assertions
    pytest tests/hil --hil-target px4-sitl --hil-profile 1.40kg-EMAX
    pytest tests/hil --hil-target serial:///dev/ttyACM0:921600 --hil-arm   # a flight controller on the bench
    pytest tests/hil --hil-repeat 10                   # pass rate with a 95 % interval per test, each run
                                                       # perturbed (--hil-seed N; --hil-perturb off: identical
                                                       # runs, which count as one observation)
    pytest tests/hil --hil-env lab.yaml --hil-target bench     # a target named in the lab file

Fixtures: `hil_vehicle` (connected, armable, telemetry recorded into the test's trial record),
`hil_mission` (fly a mission file on it), `hil_navigation` (fly a scene with a planner, judged as
campaign trials are), `hil_faults` (inject a fault and check it showed),
`hil_link` (the impairment proxy in use, if any), `hil_expect` (assert a metric; a failure names
the metric and the record). A flight controller the harness did not start (a connection string) is
connected once per session (`hil_bench`); each test gets a fresh `Vehicle` on that connection, its
marker's parameters set through the parameter journal, and leaves the board landed, disarmed, with
its parameters restored and its faults cleared. Mark tests with `@pytest.mark.hil(...)` to choose targets, profiles,
a link profile and vehicle parameters. All durations in these fixtures are vehicle time.
"""

from hil.pytest_plugin.config import (HilConfig, pytest_addoption, pytest_configure, pytest_load_initial_conftests,
                                      target_kind)
from hil.pytest_plugin.fixtures import (hil_bench, hil_config, hil_expect, hil_faults, hil_link, hil_mission,
                                        hil_navigation, hil_profile, hil_recorder, hil_repeat, hil_target, hil_vehicle)
from hil.pytest_plugin.hooks import (pytest_generate_tests, pytest_pycollect_makeitem, pytest_runtest_makereport,
                                     pytest_terminal_summary)
from hil.pytest_plugin.target import LinkUnderTest

__all__ = ["HilConfig", "LinkUnderTest", "hil_bench", "hil_config", "hil_expect", "hil_faults", "hil_link", "hil_mission",
           "hil_navigation", "hil_profile", "hil_recorder", "hil_repeat", "hil_target", "hil_vehicle", "pytest_addoption",
           "pytest_configure", "pytest_generate_tests", "pytest_load_initial_conftests", "pytest_pycollect_makeitem",
           "pytest_runtest_makereport", "pytest_terminal_summary", "target_kind"]
