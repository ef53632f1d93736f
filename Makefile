# platobench — `make install`, `make test`, `make test-floors`, `make demo`, `make bench`. Every target works from a fresh clone.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.platobench-installed
FLOORS ?= .venv-floors
FLOORS_STAMP := $(FLOORS)/.platobench-installed
PYTEST_ARGS ?=
# pytest-xdist workers: one per core of the 2-core build machines; each worker takes whole test files
# (`loadfile`), so a module's fixtures are built once; `calibrate` hands out single tests (`load`): its cells
# are independent and one file holds them all. WORKERS=0 runs the suite in one process.
WORKERS ?= 2
XDIST   := -n $(WORKERS) --dist loadfile

.PHONY: install test test-fast test-random test-floors calibrate calibrate-full demo board bench lint clean

install: $(STAMP)  ## venv + Python deps + Debian demo data + prepared demo weights

$(STAMP): pyproject.toml requirements-demo.txt scripts/install_python.sh scripts/install_system.sh scripts/install_npm.sh
	bash scripts/install_system.sh
	bash scripts/install_npm.sh
	bash scripts/install_python.sh $(VENV)
	$(PY) -m platobench prepare
	touch $@

test: install  ## the whole suite, slow real-model tests included (what CI runs)
	$(PY) -m pytest -q $(XDIST) --durations=30 $(PYTEST_ARGS)

test-random: install  ## the whole suite in a random order (pytest-randomly prints its seed; PYTEST_ARGS=-p\ randomly\ --randomly-seed=N replays it)
	$(PY) -m pytest -q $(XDIST) -p randomly $(PYTEST_ARGS)

test-fast: install  ## skip the tests marked slow
	$(PY) -m pytest -q $(XDIST) -m "not slow and not calibration and not calibration_full" $(PYTEST_ARGS)

calibrate: install  ## the sentinel calibration: one cell per interval scheme, the permutation test's size (CI, after test)
	$(PY) -m pytest -q -n $(WORKERS) --dist load -m calibration $(PYTEST_ARGS)

# By hand, whenever a statistic, interval scheme or metric changes: every cell on 1,000 datasets, then the
# code's digest into docs/statistics.md (a test of `make test` fails while the page is older than the code).
calibrate-full: install  ## every calibration cell on 1,000 datasets (about 40 min on 2 cores), then stamp docs/statistics.md
	rm -f build/calibration-full.jsonl && mkdir -p build
	PLATOBENCH_CALIBRATION_LOG=$(CURDIR)/build/calibration-full.jsonl \
		$(PY) -m pytest -q -n $(WORKERS) --dist load -m calibration_full --durations=0 $(PYTEST_ARGS)
	cat build/calibration-full.jsonl
	$(PY) -m platobench.metrics.calibration --stamp docs/statistics.md

# The floors venv shares the Debian data and the prepared demo weights ($PLATOBENCH_HOME) of `make install`.
$(FLOORS_STAMP): pyproject.toml requirements-demo.txt scripts/install_python.sh scripts/floors.py
	bash scripts/install_python.sh $(FLOORS) --floors
	touch $@

# Its own hypothesis example database: the one `make test` writes is in a newer hypothesis's format.
test-floors: install $(FLOORS_STAMP)  ## the fast suite with the lowest version of every requirement (CI, after test)
	HYPOTHESIS_STORAGE_DIRECTORY=$(FLOORS)/.hypothesis $(FLOORS)/bin/python -m pytest -q $(XDIST) -m "not slow and not calibration and not calibration_full" $(PYTEST_ARGS)

demo: install  ## the main job on the offline demo (a slice of the offline board): no network, no GPU
	$(PY) -m platobench run --pairs demo --settings demo --out results/offline
	$(PY) -m platobench leaderboard --results results --out leaderboard

board: install  ## the whole offline board (every ladder model and baseline, both datasets): the committed records
	$(PY) -m platobench run --pairs offline --settings offline --out results/offline
	$(PY) -m platobench run --pairs offline --settings heldout --out results/offline
	$(PY) -m platobench leaderboard --results results --out leaderboard

bench: install  ## performance benchmarks (figures go to benchmarks/BENCHMARKS.md)
	$(PY) benchmarks/layer_grid.py
	$(PY) benchmarks/gram_floor.py
	$(PY) benchmarks/large_n.py
	$(PY) benchmarks/grid_at_n.py
	$(PY) benchmarks/permutation_null.py
	$(PY) benchmarks/extract.py
	$(PY) benchmarks/store.py
	$(PY) benchmarks/cli_startup.py
	$(PY) benchmarks/encoders.py
	$(PY) benchmarks/zeroshot.py
	$(PY) benchmarks/theory.py
	$(PY) benchmarks/jepa_train.py

lint:
	$(VENV)/bin/ruff check platobench tests benchmarks

clean:
	rm -rf $(VENV) $(FLOORS) .pytest_cache build *.egg-info
