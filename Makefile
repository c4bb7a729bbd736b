# Two commands on a fresh machine: `make run` (fly the demo on the built-in vehicle) and `make test`.
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/hil fly missions/examples/demo_square.yaml --speed 2
	$(VENV)/bin/hil run hil/campaigns/demo.yaml --out runs/demo
	$(VENV)/bin/hil report runs/demo

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	@for script in benchmarks/*.py; do echo "== $$script"; $(PY) $$script || exit 1; done

clean:
	rm -rf $(VENV) runs .pytest_cache
