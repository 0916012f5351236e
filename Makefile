# orbitree: `make run` runs the flagship mission on the simulated world; `make test` runs the tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
MISSION ?= missions/sirom_dock.yaml

# pip's output (and the build backend's warnings) go to .venv/pip.log, shown only if it fails.
PIP = $(BIN)/python -m pip install --quiet --disable-pip-version-check
QUIET = > $(VENV)/pip.log 2>&1 || { cat $(VENV)/pip.log; exit 1; }

.PHONY: run test install install-test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip $(QUIET)

# the simulated world's kernels (contact model, sim camera, wrist sensor, the arm's kinematics and
# SVD: orbitree/runtime/warm.py) are compiled by numba once per install (~35 s), here rather than in
# the first run or test that builds a contact model, a camera or an arm
WARM = $(BIN)/python -m orbitree.runtime.warm

$(VENV)/.installed-run: pyproject.toml | $(BIN)/python
	@echo "installing orbitree into $(VENV) (log: $(VENV)/pip.log)"
	@$(PIP) -e . $(QUIET)
	@echo "compiling the contact model's and the sim camera's kernels (numba, once)"
	@$(WARM)
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	@echo "installing orbitree with its test extras into $(VENV) (log: $(VENV)/pip.log)"
	@$(PIP) -e ".[test]" $(QUIET)
	@echo "compiling the contact model's and the sim camera's kernels (numba, once)"
	@$(WARM)
	touch $@ $(VENV)/.installed-run

install: $(VENV)/.installed-run

install-test: $(VENV)/.installed-test

run: $(VENV)/.installed-run
	$(BIN)/orbitree run $(MISSION) --realtime --view terminal

# the suite on two worker processes (pytest-xdist), each test file whole on one worker: the UR
# emulator tests of a file serve on loopback addresses chosen per test and must not run side by side
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -q -n 2 --dist loadfile

lint: $(VENV)/.installed-test
	$(BIN)/python -m pip install --quiet ruff
	$(BIN)/ruff check .

bench: $(VENV)/.installed-run
	$(BIN)/python benchmarks/tick_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
