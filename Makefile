# The README's two commands: `make demo` and `make test`. Everything else is a helper.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
CDCLAB := $(VENV)/bin/cdclab

.PHONY: setup demo test test-unit test-integration lint bench chaos soak down clean lock \
        docker-setup docker-build docker-demo docker-test docker-down

setup:  ## install what is missing (idempotent; downloads cached in ~/.cache/cdclab)
	@bash scripts/bootstrap.sh

DEMO_ARGS ?=
demo: setup  ## start the stack, seed, full load, live workload, drain, reconcile
	@$(CDCLAB) demo $(DEMO_ARGS)

PYTEST_ARGS ?=
# Test files run on this many pytest-xdist workers, each with its own servers (a test file
# stays on one worker); two keep two cores busy where one waited on servers a third of
# the time. 0 runs them in this process, one after another.
TEST_WORKERS ?= 2
WORKERS := $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)
test: setup  ## lint, then the whole test suite (unit + integration on the embedded stack)
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/pytest $(WORKERS) -m "not containers" $(PYTEST_ARGS)

test-unit: setup
	@$(VENV)/bin/pytest $(WORKERS) -m "not integration"

test-integration: setup
	@$(VENV)/bin/pytest $(WORKERS) -m "integration and not containers"

lint: setup
	@$(VENV)/bin/ruff check .

bench: setup
	@for b in $(filter-out bench/bench_soak.py,$(wildcard bench/bench_*.py)); do $(PY) $$b; done

CHAOS_TRIALS ?= 100
CHAOS_SEED ?=
CHAOS_ARGS ?=
chaos: setup  ## kill -9 services under a randomized workload, CHAOS_TRIALS trials; one JSON
	@CHAOS_TRIALS=$(CHAOS_TRIALS) CHAOS_SEED=$(CHAOS_SEED) $(PY) bench/chaos.py $(CHAOS_ARGS)

SOAK_MINUTES ?= 60
SOAK_ARGS ?=
soak: setup  ## the embedded stack under 200 changes/s for SOAK_MINUTES, growth measured; JSON
	@$(PY) bench/bench_soak.py --minutes $(SOAK_MINUTES) $(SOAK_ARGS)

down:
	@$(CDCLAB) down

clean: down
	rm -rf .cdclab

lock:  ## re-pin requirements.lock (all), requirements-runtime.lock (the image) and requirements-glue50.lock (Glue 5.0)
	@$(VENV)/bin/uv pip compile --python-version 3.11 requirements.in -o requirements.lock --no-header
	@$(VENV)/bin/uv pip compile --python-version 3.11 requirements-runtime.in --constraint requirements.lock \
	  -o requirements-runtime.lock --no-header
	@# the Glue 5.0 runtime: its own pyspark and awsglue, the rest as in requirements.lock
	@grep -v '^pyspark==\|^awsgluedataplanepython==' requirements.lock >glue50-constraints.txt
	@$(VENV)/bin/uv pip compile --python-version 3.11 requirements-glue50.in \
	  --constraint glue50-constraints.txt -o requirements-glue50.lock --no-header; \
	  status=$$?; rm -f glue50-constraints.txt; exit $$status

# --- containers: the same pipeline with docker compose -----------------------------------
# With a normal Docker install, `docker compose up -d --wait` and `docker compose run --rm
# cli demo` are all you need. These targets also work where there is no registry or no
# engine yet (a bare Debian machine as root, CI): docker-setup installs and starts one.
COMPOSE := bash scripts/compose.sh

docker-setup:  ## a Docker engine + compose, and base images (stand-ins without a registry)
	@bash scripts/docker-setup.sh

docker-build: docker-setup  ## the cdclab/runtime image (layer cache kept between runs)
	@bash scripts/docker-build.sh

docker-demo: docker-build  ## compose up, then the demo workload, drain and reconcile
	@$(COMPOSE) up -d --wait
	@$(COMPOSE) run --rm cli demo $(DEMO_ARGS)

docker-test: setup docker-build  ## the integration suite on containers (testcontainers)
	@TESTCONTAINERS_RYUK_DISABLED=true CDCLAB_BACKEND=containers \
	  bash -c 'set -a; [ -s "$${CDCLAB_CACHE:-$$HOME/.cache/cdclab}/docker-bases.env" ] && \
	    . "$${CDCLAB_CACHE:-$$HOME/.cache/cdclab}/docker-bases.env"; set +a; \
	    docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0; \
	    $(VENV)/bin/pytest -m integration tests/integration $(PYTEST_ARGS)'

docker-down:  ## stop the compose stack and delete its volumes
	@$(COMPOSE) --profile cli --profile spark --profile aws down -v --remove-orphans
