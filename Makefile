# Two commands on a fresh machine: `make run` (fly the demo on the built-in vehicle) and `make test`.
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
# PX4 SITL builds for the PX4 half of the tests: PX4_DIR runs the whole behaviour suite, PX4_SMOKE_DIRS
# (colon-separated) a smoke subset. Point them at your own builds; by default the ones beside this
# repository are used when they are there. Unset, the PX4 tests skip and say how to get a build.
PX4_DIR ?= $(firstword $(wildcard $(CURDIR)/../shared/px4/v1.16.1))
PX4_SMOKE_DIRS ?= $(firstword $(wildcard $(CURDIR)/../shared/px4/v1.14.0))
export PX4_DIR PX4_SMOKE_DIRS
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast test-py310 bench clean chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# tests/test_ray.py runs a campaign on a local Ray cluster: ray (about 250 MB) goes into the test environment
# only; where it cannot be installed, that test skips and says so.
RAY_STAMP := $(VENV)/.ray-installed
$(RAY_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[ray]' || echo "ray could not be installed: tests/test_ray.py will skip"
	touch $(RAY_STAMP)

# MAVProxy for the whole conformance suite (benchmarks/conformance.py); without it its cases are left out and
# the benchmark says so.
CONFORMANCE_STAMP := $(VENV)/.conformance-installed
$(CONFORMANCE_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[conformance]' || echo "MAVProxy could not be installed: the conformance benchmark leaves its cases out"
	touch $(CONFORMANCE_STAMP)

run: $(STAMP)
	$(VENV)/bin/hil fly missions/examples/demo_square.yaml --speed 2
	$(VENV)/bin/hil run hil/campaigns/demo.yaml --out runs/demo
	$(VENV)/bin/hil report runs/demo
	@if [ -n "$(PX4_DIR)" ]; then \
		$(VENV)/bin/hil run hil/campaigns/demo-px4.yaml --out runs/demo-px4 && $(VENV)/bin/hil report runs/demo-px4; \
	else echo "PX4_DIR not set: skipping the built-in vehicle against PX4 SITL campaign (hil/campaigns/demo-px4.yaml)"; fi

# Two workers (one per core of the CI machine), whole test files per worker. PX4 instances and built-in
# vehicles claim their own ports, so files run side by side. The suite is bound by CPU (PX4, the built-in
# vehicles and the `hil` processes the tests start; benchmarks/test_suite.py prints the share of each): with two
# workers the machine is idle about a tenth of the run, and three ran it in 27.1 min against two's 28.5 (which
# built the compiled kernels first) on the same quiet machine, with six failures against one. `make test TEST_WORKERS=3` runs three. -rfER lists
# failures, errors and PX4 reruns by name (a test that needs reruns often shows it).
TEST_WORKERS ?= 2
# TEST_ARGS: more pytest options (benchmarks/test_suite.py adds a JUnit XML file to time each file).
TEST_ARGS ?=
test: $(STAMP) $(RAY_STAMP) chromium
	$(PY) -m pytest -q -rfER -n $(TEST_WORKERS) --dist loadfile --durations=15 $(TEST_ARGS)
	@$(MAKE) --no-print-directory test-py310

# The inner loop of a change: the fast tier, the core of every package without flying (tests/conftest.py's
# FAST_MODULES), in about two minutes on two cores. It is in addition to `make test`, which CI runs.
test-fast: $(STAMP)
	$(PY) -m pytest -q -rfE -m fast -n $(TEST_WORKERS) --dist loadfile --durations=10 $(TEST_ARGS)

# The onboard side on the Python companion computers ship (3.10: JetPack 6, ROS 2 Humble), in a virtual
# environment of its own. Python 3.10 from PATH, else pyenv's, else one uv installs; without any, it says
# so and skips.
VENV310 := .venv310
ONBOARD_TESTS := tests/test_onboard_units.py tests/test_lockstep.py tests/test_onboard_mavlink.py tests/test_ros2_bridge.py \
	tests/test_onboard_agent.py::test_strangers_and_broken_jobs_are_refused_and_the_agent_keeps_serving \
	tests/test_onboard_agent.py::test_offset_and_drift_are_recovered_from_exchanges_with_uneven_delays
FIND_PY310 := python3.10 -c 'import sys; print(sys.executable)' 2>/dev/null || \
	ls "$$(pyenv root 2>/dev/null)"/versions/3.10.*/bin/python3.10 2>/dev/null | tail -1 | grep . || \
	{ $(PY) -m pip install --quiet uv && $(VENV)/bin/uv python install 3.10 && $(VENV)/bin/uv python find 3.10; } 2>/dev/null
# The environment is installed again only when pyproject.toml changes (its stamp), as .venv is.
STAMP310 := $(VENV310)/.installed
test-py310: $(STAMP)
	@py=$$($(FIND_PY310)); \
	if [ -z "$$py" ]; then echo "no Python 3.10 here and uv could not install one: the onboard tests on 3.10 are skipped"; exit 0; fi; \
	echo "== the onboard side on $$($$py --version) ($$py)"; \
	[ -x $(VENV310)/bin/python ] || $$py -m venv $(VENV310); \
	{ [ $(STAMP310) -nt pyproject.toml ] || { $(VENV310)/bin/python -m pip install --quiet --upgrade pip && \
	  $(VENV310)/bin/python -m pip install --quiet -e '.[test]' && touch $(STAMP310); }; } && \
	timeout 900 $(VENV310)/bin/python -m pytest -q -p no:cacheprovider -o faulthandler_timeout=300 $(ONBOARD_TESTS)

# Debian's chromium for the report's browser test, installed where the machine allows it (root and
# apt); elsewhere that one test skips and says why.
chromium:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		{ apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && \
		  apt-get install -y -q chromium >/dev/null 2>&1; }; }; } || \
		echo "chromium could not be installed: the report's browser test will skip"

# Every benchmark, CI-sized (`--quick`: under 15 minutes on 2 cores); `make bench BENCH_ARGS=` for the
# full figures a closing note quotes. Each prints its figures, its goal and how long it took.
BENCH_ARGS ?= --quick
bench: $(STAMP) $(CONFORMANCE_STAMP)
	@for script in benchmarks/*.py; do \
		[ "$$script" = benchmarks/quick.py ] && continue; \
		echo "== $$script $(BENCH_ARGS)"; start=$$(date +%s); \
		$(PY) $$script $(BENCH_ARGS) || exit 1; \
		echo "   ($$(( $$(date +%s) - start )) s)"; \
	done

clean:
	rm -rf $(VENV) $(VENV310) runs .pytest_cache
