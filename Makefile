# The two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.demo-installed
CLI := $(BIN)/argentic-tools

.PHONY: demo test test-cluster test-conformance test-frameworks npm-servers lint typecheck pytest bench soak mosquitto chromium tmux clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip --version >/dev/null 2>&1 || $(BIN)/python -m ensurepip --upgrade >/dev/null
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# The peer implementation, for the interoperability tests and the benchmark.
	$(BIN)/python -m pip install --quiet --no-deps "argentic==0.16.*"
	touch $(STAMP)

# The demo needs only the library's dependencies and its broker, cli and dashboard extras: no
# dev toolchain, no build of the package (it runs from the checkout), no pip inside the
# environment (the interpreter's own pip installs into it): a cold `make demo` is mostly
# the download of those dependencies.
$(DEMO_STAMP): pyproject.toml
	@echo "Installing the demo's dependencies into $(VENV) (once)..."
	@test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV)
	@$(PYTHON) scripts/requirements.py broker cli dashboard > $(VENV)/demo-requirements.txt
	@$(PYTHON) -m pip --python $(BIN)/python install -qq --disable-pip-version-check \
		-r $(VENV)/demo-requirements.txt 2>/dev/null \
	|| { $(BIN)/python -m ensurepip >/dev/null \
		&& $(BIN)/python -m pip install -qq -r $(VENV)/demo-requirements.txt; }
	@touch $(DEMO_STAMP)

# The argentic-tools command, to reach the demo's tools from another terminal: the
# checkout installed editable without its dependencies (the demo's are there), a few
# seconds once; also into a .venv whose demo stamp predates it.
$(CLI): $(DEMO_STAMP)
	@$(PYTHON) -m pip --python $(BIN)/python install -qq --disable-pip-version-check \
		--no-deps -e . 2>/dev/null \
	|| { $(BIN)/python -m pip --version >/dev/null 2>&1 || $(BIN)/python -m ensurepip >/dev/null; \
		$(BIN)/python -m pip install -qq --disable-pip-version-check --no-deps -e .; }
	@touch $(CLI)

## demo: the example tools and a scripted agent, on an embedded broker (or BROKER=mqtt://host:port),
##       with the dashboard on http://127.0.0.1:8080/ (DASHBOARD=0 leaves it out, DASHBOARD=host:port moves it);
##       the tools then serve until Ctrl-C (EXIT=1 ends the demo after the agent instead)
demo: $(DEMO_STAMP) $(CLI)
	@$(if $(DASHBOARD),ARGENTIC_TOOLS_DEMO_DASHBOARD=$(DASHBOARD)) PYTHONPATH=$(CURDIR) \
		$(BIN)/python -m argentic_tools demo $(if $(BROKER),--broker $(BROKER)) \
		$(if $(filter-out 0,$(EXIT)),--exit)

## mosquitto: install Debian's mosquitto when it is missing and we can (root + apt-get)
mosquitto:
	@bash scripts/ensure-mosquitto.sh

## chromium: install Debian's chromium (the dashboard's browser tests) when missing and we can
chromium:
	@bash scripts/ensure-chromium.sh

## tmux: install Debian's tmux (the command line's terminal tests) when missing and we can
tmux:
	@bash scripts/ensure-tmux.sh

## npm-servers: the MCP servers from npm the tests bridge (the reference server-everything),
##              pinned, into .cache/npm with the machine's npm (scripts/ensure-npm.sh)
npm-servers: $(STAMP)
	PYTHONPATH=$(CURDIR) $(BIN)/python -m tests.support.npm_servers

## test: lint, type-check and run the tests with coverage on a real mosquitto
test: $(STAMP) mosquitto chromium tmux npm-servers lint typecheck pytest

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check argentic_tools tool_clients
	$(BIN)/lint-imports --no-logo --no-cache

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	# Bytecode compiled once: the tests start ~150 Python processes (tools, the CLI), and
	# with PYTHONDONTWRITEBYTECODE set (as on our machines) each one compiled the
	# library again (~0.1 s of CPU apiece). Existing .pyc files are read either way.
	$(BIN)/python -m compileall -q argentic_tools tool_clients tests benchmarks
	$(BIN)/python -m pytest -n auto --dist worksteal --cov --cov-report=term --cov-fail-under=90 -q

## test-cluster: a 3-node RabbitMQ cluster (scripts/cluster.sh), one node killed under load
test-cluster: $(STAMP)
	@bash scripts/cluster.sh up || { bash scripts/cluster.sh down; exit 1; }
	@ARGENTIC_TOOLS_CLUSTER_DIR=$$(realpath -m "$${CLUSTER_DIR:-$${TMPDIR:-/tmp}/argentic-cluster}") \
		$(BIN)/python -m pytest tests/behaviour/cluster -q -s -p no:cacheprovider; \
		status=$$?; bash scripts/cluster.sh down; exit $$status

## test-conformance: the official MCP conformance suite (Node 22 and the suite installed
## under .cache/ when missing) against `mcp serve --http`, at both protocol eras, with the
## baselines in scripts/conformance/ (a scratch report; UPDATE=1 rewrites benchmarks/results/)
test-conformance: $(STAMP) mosquitto
	PYTHONPATH=$(CURDIR) $(BIN)/python scripts/conformance.py $(if $(UPDATE),--update-results)

## test-frameworks: the fleet as native tools of the OpenAI Agents SDK, LangGraph, PydanticAI
## and LlamaIndex, each driven by the framework's own agent loop and test model (no network)
test-frameworks: $(STAMP) mosquitto
	ARGENTIC_TOOLS_FRAMEWORKS=1 $(BIN)/python -m pytest tests/frameworks -q -p no:cacheprovider \
		--cov --cov-config=.ci/coverage-frameworks.toml --cov-report=term

## bench: side-by-side benchmark against the raw MQTT floor and argentic (a scratch
## report; UPDATE=1 rewrites benchmarks/results/)
bench: $(STAMP)
	$(BIN)/argentic-tools bench $(if $(UPDATE),--update-results)

## soak: 20,000 calls under a fault schedule (tool kill, freeze, broker restart, dropped
## links; a scratch report, UPDATE=1 rewrites benchmarks/results/)
soak: $(STAMP)
	$(BIN)/argentic-tools soak $(if $(UPDATE),--update-results)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .coverage .coverage.*
