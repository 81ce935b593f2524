# Two commands for a new user: `make run` and `make test` (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help
NPM_STAMP := node_modules/.package-lock.json

.PHONY: help install generate check-generated lint build migrate seed run test test-embedded bench fuzz mutation mutation-score clean check-breaking check-breaking-selftest release-contract workflows drill client-example drill-failover

help:
	@echo "make run    start the API (:8080) and the payment page (:8081); embedded database unless DATABASE_URL is set"
	@echo "make test   run the whole test suite (embedded database unless DATABASE_URL is set)"
	@echo "other targets: install generate check-generated lint build migrate seed bench fuzz mutation mutation-score clean"

# Installs dependencies when missing or when package-lock.json changed.
$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $(NPM_STAMP)

install: $(NPM_STAMP)

generate: install
	bash scripts/generate.sh

check-generated: install
	bash scripts/check-generated.sh

lint: install
	bash scripts/lint-openapi.sh
	npx --no-install tsc --noEmit
	npx --no-install eslint --max-warnings=0 .
	npx --no-install dpdm --no-warning --no-tree --exit-code circular:1 'src/**/*.ts'

build: install
	npx --no-install tsc -p tsconfig.build.json

# The mode is said here: NODE_ENV unset means production, which refuses the default secrets,
# the embedded database and the demo seed. `make run`, `seed` and `migrate` run for development
# unless NODE_ENV says otherwise; `make test` runs in test mode.
DEV_MODE := NODE_ENV=$${NODE_ENV:-development}

migrate: install
	$(DEV_MODE) npx --no-install tsx scripts/migrate.ts

seed: install
	$(DEV_MODE) npx --no-install tsx scripts/seed.ts

run: install
	$(DEV_MODE) npx --no-install tsx src/main.ts

test: install
	NODE_ENV=test npx --no-install vitest run

bench: install
	npx --no-install tsx scripts/bench/run.ts

# The contract fuzzer with many requests per operation (make test runs a few), its two shards in
# parallel workers; FUZZ_RUNS=2000 is about 1.5*10^5 requests.
fuzz: install
	NODE_ENV=test FUZZ_RUNS=$${FUZZ_RUNS:-200} npx --no-install vitest run test/contract/contract-fuzz-

# Mutation testing of the critical core (stryker.config.mjs); HTML report under
# test-artifacts/mutation/. MUTATE=path narrows it to one file, MUTATION_TESTS=a.test.ts,b.test.ts
# to some test files; INCREMENTAL=1 re-tests only the mutants whose code or tests changed.
mutation: install
	npx --no-install tsx scripts/mutation/run.ts $(if $(MUTATE),--mutate $(MUTATE)) $(if $(INCREMENTAL),--incremental)

# One score over the reports the runs above kept (test-artifacts/mutation/reports/: each
# mutated file from the newest report that has it), so runs file by file add up.
mutation-score:
	node scripts/mutation/score.mjs test-artifacts/mutation/reports/*.json

clean:
	rm -rf dist .data test-artifacts .stryker-tmp

# The breaking-change gate (scripts/breaking/check-breaking.ts): the contract against the newest
# release (a vX.Y.Z tag or contract-releases/vX.Y.Z.json). Its diff tool, Optic, lives in
# scripts/breaking/ with a lock of its own, installed without install scripts.
BREAKING_STAMP := scripts/breaking/node_modules/.package-lock.json
$(BREAKING_STAMP): scripts/breaking/package.json scripts/breaking/package-lock.json
	npm ci --prefix scripts/breaking --ignore-scripts --no-audit --no-fund
	@touch $(BREAKING_STAMP)

check-breaking: install $(BREAKING_STAMP)
	npx --no-install tsx scripts/breaking/check-breaking.ts

# The gate's own proof: a deliberately breaking copy of the contract must fail, an addition
# with a minor bump and a changelog line must pass (about a minute: two Optic runs).
check-breaking-selftest: install $(BREAKING_STAMP)
	npx --no-install tsx scripts/breaking/self-test.ts

# Release the contract under its info.version: tag v<version> and contract-releases/v<version>.json.
release-contract: install
	bash scripts/breaking/release-contract.sh

# The integrator workflows (workflows/*.arazzo.yaml) run by Redocly Respect against `make run`
# on a fresh embedded database (scripts/workflows/run.sh).
workflows: install
	bash scripts/workflows/run.sh

# The fault drill (scripts/drill/): three instances behind nginx on shared PostgreSQL and Redis,
# kill -9, pg_terminate_backend and a Redis restart under a bounded workload, then the
# invariants. DRILL_INJECT=ledger leaves a one-sided ledger entry: the drill must then fail.
drill: install
	bash scripts/drill/run.sh

# The failover drill (scripts/drill-failover/): a pg_auto_failover monitor, a primary and a
# synchronous standby (Debian's packages, installed when missing), two API instances with a
# multi-host DATABASE_URL; a switchover and a kill -9 of the primary under load, then the checks.
drill-failover: install
	bash scripts/drill-failover/run.sh

# The TypeScript client (clients/typescript): npm pack, then its example against `make run`.
client-example: install
	bash scripts/client-example.sh
