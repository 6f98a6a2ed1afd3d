# Entry points: `make book` builds the executed book, `make test` runs the suite.
# Both create .venv from requirements.txt first when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ASSIGNMENTS := $(notdir $(wildcard solutions/[0-9][0-9]_*))

.PHONY: venv book test test-fast exercises ops bench gpu-check clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . --builder html -W -n --keep-going

test: $(STAMP)
	$(BIN)/python -m pytest

test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

exercises: $(STAMP)
	$(BIN)/python -m autograder.release $(ASSIGNMENTS)

# Custom ops (chapter 7): CPU library, GPU library when nvcc exists, CUDA harness; cached.
ops: $(STAMP)
	$(BIN)/python book/ops/build.py --harness

bench: $(STAMP)
	$(BIN)/python -m autograder bench

clean:
	rm -rf _build
