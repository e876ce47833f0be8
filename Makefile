# minitrain: install / demo / test / bench / soak / gpu-check / lint / clean.
# Every target that runs code first makes sure .venv exists and is up to date with pyproject.toml.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=
BENCH_ARGS ?=
SOAK_ARGS ?=
# Only the folders that exist (ruff fails on a missing path).
LINT_PATHS := $(wildcard minitrain tests benchmarks examples docs/*.py)

.PHONY: install test demo fuzz bench soak gpu-check lint clean notebooks dist wheel-check docs docs-serve docs-check

install: $(STAMP)

# Re-runs only when pyproject.toml changes (or .venv is gone).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || { echo "creating $(VENV) with $(PYTHON)"; $(PYTHON) -m venv $(VENV); }
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/pip install -e '.[dev,examples]'
	@if command -v dot >/dev/null 2>&1; then \
		echo "graphviz: $$(command -v dot) found"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "graphviz: installing Debian package graphviz (for the dot program)"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz; } \
			|| echo "note: apt-get install graphviz failed; graphs can be built but not rendered"; \
	else \
		echo "note: Graphviz's dot is missing; install it (Debian: sudo apt-get install graphviz, macOS: brew install graphviz) to render graphs"; \
	fi
	@touch $@

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

demo: install
	$(BIN)/python examples/train_digits.py

# The property tests with many more examples each, new ones every run (hypothesis's "fuzz"
# profile, tests/conftest.py); `make test` runs them with a few dozen, the same every run.
fuzz: install
	HYPOTHESIS_PROFILE=fuzz $(BIN)/python -m pytest tests -k properties $(PYTEST_ARGS)

# Re-execute the notebooks top to bottom and store them with their outputs.
notebooks: install
	$(BIN)/python examples/notebooks/execute.py

# Every benchmark against PyTorch (about 5 minutes on 2 quiet cores), then benchmarks/results.json
# and README.md's performance section, generated from it. BENCH_ARGS="--only conv,training" reruns
# some modules (their rows replace theirs in the file); BENCH_ARGS=--no-write only prints.
bench: install
	$(BIN)/python benchmarks/run.py $(BENCH_ARGS)

# 20 000 training steps each of the char LM and the small CNN, in fresh processes, memory sampled
# along the way (about 25 minutes on 2 quiet cores); writes benchmarks/soak.json and soak.png and
# fails when memory grows after warm-up. SOAK_ARGS=--quick: 1000 steps each, into runs/soak/.
soak: install
	$(BIN)/python -m benchmarks.soak $(SOAK_ARGS)

# The cuda test cases on a real GPU, then the GPU benchmark against PyTorch CUDA; writes
# gpu-check.md. Needs CuPy in $(VENV) (pip install 'minitrain[cuda]', or a cupy-cudaXXx wheel),
# which this target does not install.
gpu-check: install
	$(BIN)/python -m benchmarks.gpu_check

lint: install
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

# The documentation site into site/ (mkdocs.yml); fails on any warning: a broken link, a page
# left out, an incomplete API reference (docs/api_coverage.py). Its tools are the docs extra.
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/pip install -e '.[docs]'
	@touch $@

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

# The built site in headless Chromium (Debian's chromium and chromium-driver, installed here as
# root): pages, pictures, search and the console; screenshots into runs/docs-screenshots/.
docs-check: docs
	@if ! command -v chromedriver >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing Debian packages chromium and chromium-driver"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi
	MINITRAIN_REQUIRE_BROWSER=1 $(BIN)/python -m pytest tests/docs -p no:cacheprovider

clean:
	rm -rf $(VENV) build dist site .cache *.egg-info .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -not -path './.git/*' -exec rm -rf {} +
	find . -name .ipynb_checkpoints -type d -prune -not -path './.git/*' -exec rm -rf {} +

# The wheel and the sdist into dist/ (the version is minitrain.__version__).
dist: install
	rm -rf dist
	$(BIN)/python -m build --outdir dist

# Build both, check the wheel holds the package alone, install it into a fresh venv outside the
# checkout (with $(PYTHON)) and train a few steps there; pip show must give the version.
wheel-check: install
	PYTHON=$(PYTHON) .ci/wheel_check
