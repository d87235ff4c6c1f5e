# The harness's entry points. Each target creates .venv and installs the pinned dependencies on first use.
#   make bench TASK=babi MODEL=tpr_rnn [PROFILE=cpu] [SEED=0 | SEEDS=0,1,2] [ARGS="optim.lr=3e-4 task.babi_id=2"] [FORCE=1]
#   make sweep SWEEP=sweeps/<name>.yaml [CELLS='babi/*'] [ONLY=task.babi_id=1,8] [SEEDS=0,1,2] | make report | make publish RUNS="<run_id> ..." | make readme
#   make reproduce RUN=<run_id> | UNCHECKED=1 [MINUTES=60] [JOBS=2] [RECORD=1] (train reference runs again, compare every figure)
#   make validate TASK=babi MODEL=tpr_rnn [PROFILE=cpu] [ARGS=...] (the composed config, data and model; nothing trained) | make runs
#   make test [TEST_WORKERS=2] | make test-fast | make lint | make list | make perf | make perf-publish | make sync | make install | make clean

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TASK ?= babi
MODEL ?= tpr_rnn
PROFILE ?= cpu
SEED ?= 0
SEEDS ?=
ARGS ?=
FORCE ?=
CELLS ?=
ONLY ?=
# make test runs the suite in this many pytest-xdist processes, 2 for a 2-core machine (0: in one process)
TEST_WORKERS ?= 2

.PHONY: help install bench list sweep report runs publish reproduce readme validate test test-fast lint perf perf-publish sync clean

help:
	@sed -n '1,7p' Makefile

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP)

# FORCE=1 (on the command line only: a FORCE exported by the shell for something else never retrains a run)
bench: $(STAMP)
	$(BIN)/harness bench --task '$(TASK)' --model '$(MODEL)' --profile '$(PROFILE)' $(if $(SEEDS),--seeds '$(SEEDS)',--seed '$(SEED)') \
		$(if $(filter command line,$(origin FORCE)),$(if $(filter-out 0,$(FORCE)),--force)) -- $(ARGS)

list: $(STAMP)
	@$(BIN)/harness list

# Ray Tune sweep: make sweep SWEEP=sweeps/babi_smoke.yaml [PROFILE=paper] (RAY_ADDRESS=... runs it on a cluster;
# without PROFILE (or with an empty one), on the command line or exported, the sweep file's profile);
# CELLS: task/model patterns choosing the sweep's cells (--cells; in a sweep of one task, its models, e.g. CELLS=tpr_rnn,memn2n); ONLY: space-separated KEY=VALUES, each narrowing one grid (--only)
# SEEDS: the seeds to run instead of the file's (--seeds): a sweep run before trains only the new ones
sweep: $(STAMP)
	@test -n "$(SWEEP)" || { echo "make sweep: name a sweep file, e.g. make sweep SWEEP=sweeps/babi_smoke.yaml (ls sweeps/)" >&2; exit 2; }
	$(BIN)/harness sweep $(SWEEP) $(if $(and $(filter command line environment,$(origin PROFILE)),$(PROFILE)),--profile '$(PROFILE)') \
		$(if $(SEEDS),--seeds '$(SEEDS)') $(if $(CELLS),--cells '$(CELLS)') $(foreach only,$(ONLY),--only '$(only)')

# The HTML report (reports/out/index.html), built only from the run store.
report: $(STAMP)
	$(BIN)/harness report

runs: $(STAMP)
	@$(BIN)/harness runs

# Copy completed runs into the tracked reference store results/ (the runs behind the README and the report).
publish: $(STAMP)
	$(BIN)/harness publish $(RUNS)

# Train a stored supervised or stepwise run again (a capped one for the epochs up to its tested checkpoint, or the
# cycles it trained) and compare every figure; RECORD=1 keeps the check in results/reproductions.json. UNCHECKED=1:
# the reference runs no check has trained again yet that ran on this machine's kind of CPU, cheapest first, for
# at most MINUTES, JOBS at a time (JOBS=2 on two cores: most reference runs trained on one thread).
reproduce: $(STAMP)
	@test -n "$(RUN)$(filter 1,$(UNCHECKED))" || { echo "make reproduce: name a run, e.g. make reproduce RUN=babi-lstm-cpu-s0-7a57f5e9 (harness runs --reference), or UNCHECKED=1 [MINUTES=60] for the runs not checked yet" >&2; exit 2; }
	$(BIN)/harness reproduce $(RUN) $(if $(filter 1,$(UNCHECKED)),--unchecked) $(if $(MINUTES),--minutes $(MINUTES)) \
		$(if $(JOBS),--jobs $(JOBS)) $(if $(RECORD),--record)

# Rewrite the README's result tables from results/ (a test fails while they disagree).
readme: $(STAMP)
	$(BIN)/python -m reports.readme --write

validate: $(STAMP)
	@test -z "$(SEEDS)" || { echo "make validate: SEEDS=$(SEEDS) is a stack of runs; validate checks one run: give SEED=N" >&2; exit 2; }
	@$(BIN)/harness validate --task '$(TASK)' --model '$(MODEL)' --profile '$(PROFILE)' --seed '$(SEED)' -- $(ARGS)

SUITE := WANDB_MODE=disabled $(BIN)/python -m pytest -q --durations=8 -n $(TEST_WORKERS) --dist worksteal

test: lint
	$(SUITE)

# the inner loop: lint and every test not marked slow (no end-to-end training, Ray or Chromium); CI runs make test
test-fast: lint
	$(SUITE) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check harness tasks models reports tests

# Speed benchmarks, reported as figures (not tests): each one's output in bench/NAME.log, its figures with where and
# how they were measured in bench/NAME.json (reports/perf.py); `make perf-publish` copies the records into
# results/perf/, from which the README's speed tables are generated (`make readme`).
PERF_RUN := $(BIN)/python -m reports.perf run
perf: $(STAMP)
	$(PERF_RUN) relations_generator -- $(BIN)/python -m tasks.relations_game.bench_generator
	$(PERF_RUN) listops_generator -- $(BIN)/python -m tasks.listops.bench_generator
	$(PERF_RUN) boxworld_env -- $(BIN)/python -m tasks.boxworld.bench_env
	$(PERF_RUN) agents -- $(BIN)/python -m models.agents.bench_agents
	$(PERF_RUN) relations_models -- $(BIN)/python -m models.relational.bench_models
	$(PERF_RUN) babi_tasks -- $(BIN)/python -m models.tpr_rnn.bench_tasks
	$(PERF_RUN) babi_tasks_trim -- $(BIN)/python -m models.tpr_rnn.bench_tasks --trim
	$(PERF_RUN) babi_tasks_factored -- $(BIN)/python -m models.tpr_rnn.bench_tasks --memory factored --tasks 1 3
	$(PERF_RUN) pathfinder_generator -- $(BIN)/python -m tasks.pathfinder.bench_generator
	$(PERF_RUN) pathfinder_generator_easy -- $(BIN)/python -m tasks.pathfinder.bench_generator --difficulty easy
	$(PERF_RUN) stepwise -- $(BIN)/python -m harness.runners.bench_stepwise
	$(PERF_RUN) stacked -- $(BIN)/python -m harness.runners.bench_stacked
	$(PERF_RUN) stacked_own_optim -- $(BIN)/python -m harness.runners.bench_stacked --own-optimisers --ks 4 16 \
		--threads 2 --models predinet mlp1 mlp2 mha
	$(PERF_RUN) start -- $(BIN)/python -m harness.bench_start

# Copy perf records into results/perf/ (all of bench/, or NAMES="start boxworld_env ...") and regenerate the README.
perf-publish: $(STAMP)
	$(BIN)/python -m reports.perf publish $(NAMES)
	$(BIN)/python -m reports.readme --write

# Upload offline W&B runs (needs network and `wandb login`).
sync: $(STAMP)
	@if [ -n "$${HARNESS_RUNS_DIR+set}" ] && [ -z "$$HARNESS_RUNS_DIR" ]; then \
	  echo "error: HARNESS_RUNS_DIR is set but empty; unset it for the default ./runs, or name a folder" >&2; exit 2; fi; \
	store=$${HARNESS_RUNS_DIR:-runs}; runs=$$(find "$$store" -type d -name 'offline-run-*' 2>/dev/null); \
	if [ -z "$$runs" ]; then echo "no offline W&B runs under $$store/"; \
	elif $(BIN)/python -m harness.tracking; then $(BIN)/wandb sync $$runs; else exit 1; fi

clean:
	rm -rf .cache .pytest_cache build *.egg-info
