# mcsa: `make demo` and `make test` work on a fresh machine (they create .venv and install everything).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# An unpinned torch pulls a multi-GB CUDA build on the project's machines; 2.13.0 is a local CPU wheel.
TORCH_SPEC ?= torch==2.13.0
EXTRAS ?= rdp,data,dask,bench,test
# Numba keys each cached kernel on its own file only: a kernel whose jitted callee in another file changed would load
# the stale machine code. So the cache folder is named after a checksum of every tracked source file that mentions jit
# (an edit to any kernel starts a fresh folder; `make test` removes the older ones).
JIT_SUM := $(shell git ls-files -z '*.py' 2>/dev/null | xargs -0 grep -l -E '\bjit\b|njit' 2>/dev/null | xargs cat 2>/dev/null | cksum | cut -d' ' -f1)
NUMBA_CACHE_ROOT := $(CURDIR)/.numba_cache
export NUMBA_CACHE_DIR ?= $(NUMBA_CACHE_ROOT)/$(JIT_SUM)
PYTEST_ARGS ?= -n 2

.PHONY: demo test lint check contracts types bench bench-smoke install clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)

# experiments/ is a separate distribution (the paper experiments; `pip install mcsa` ships none of
# them) whose suites register with the harness through the mcsa.suites entry point.
$(VENV)/.installed: $(BIN)/activate pyproject.toml experiments/pyproject.toml
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[$(EXTRAS)]"
	$(BIN)/python -m pip install --quiet --no-deps -e ./experiments
	touch $@

install: $(VENV)/.installed

# --brief: one line per estimator on stdout (the full tables go to the folders' summary.md); --progress: the bar
# on stderr even when logged (make demo 2>&1 | tee demo.log), so two minutes of runs are never silent.
demo: install
	$(BIN)/mcsa bench run --suite quick --out demo-results --replicates 5 --force --brief --progress
	$(BIN)/mcsa bench run --suite cross-quick --out demo-results-cross --force --brief --progress

lint: install
	$(BIN)/ruff check .

# The layering of DESIGN.md (.ci/contracts.py: samplers imports no family, the harness no kind, benchmarks no
# experiments, no circle) and the type check (mypy over samplers/ and trf/, configured in pyproject.toml).
check: contracts types

contracts: install
	$(BIN)/python .ci/contracts.py

types: install
	$(BIN)/mypy

# Every benchmark script in benchmarks/, one table each (tens of minutes); bench-smoke: tiny sizes (CI, ~2 min).
bench: install
	$(BIN)/python -m benchmarks

bench-smoke: install
	$(BIN)/python -m benchmarks --smoke

test: install
	@find $(NUMBA_CACHE_ROOT) -mindepth 1 -maxdepth 1 -type d ! -name '$(JIT_SUM)' -exec rm -rf {} + 2>/dev/null || true
	$(BIN)/python -m pytest $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .numba_cache demo-results demo-results-cross .pytest_cache
