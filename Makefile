# orderlive — the two commands a newcomer needs are `make test` and `make demo`.
SWIFT ?= swift
# chromium: the dispatch board's browser test (headless, driven over DevTools).
# postgresql: the PostgreSQL engine's tests start a throwaway cluster of their own (DESIGN §12).
# systemd: systemd-analyze verifies Deploy/orderlive.service (no systemd needs to run).
SYSTEM_PACKAGES := libcurl4-openssl-dev libssl-dev libsqlite3-dev pkg-config openssl python3 python3-jwt python3-cryptography curl prometheus chromium postgresql systemd nghttp2-client iproute2
# What the benchmarks need beyond that (`make bench`, `make bench-instructions`), not CI.
BENCH_PACKAGES := valgrind wrk
# From PyPI, pinned so that a new release cannot change what CI checks: schemathesis for `make fuzz-api`;
# opentelemetry-proto and grpcio for the OTLP receiver the telemetry tests export to (Scripts/otlp-receiver.py).
PYTHON_PACKAGES := schemathesis==4.32.5 opentelemetry-proto==1.45.2 grpcio==1.85.3
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all deps build test check-imports check-shape check-docs docs demo sandbox release release-static bench bench-deps bench-instructions fuzz fuzz-build fuzz-smoke fuzz-api soak tsan clean

all: build

## Install the system libraries the package links (Debian/Ubuntu), only those missing.
deps:
	@missing=""; \
	for package in $(SYSTEM_PACKAGES); do \
	  dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends $$missing; \
	fi
	@for package in $(PYTHON_PACKAGES); do \
	  python3 -m pip show $${package%%==*} 2>/dev/null | grep -qx "Version: $${package##*==}" \
	    || { echo "Installing from PyPI: $$package"; python3 -m pip install -q $$package || exit 1; }; \
	done

build: deps
	$(SWIFT) build --build-tests

## Suites that measure time on real sockets: run alone, after the parallel suite, whose load starves
## event loops for a second at a time; each suite alone, one after the other.
TIMING_TESTS := HeartbeatGapTests ListenerFloodTests BackendOutageAgentTests StoreFaultTests UpstreamPartitionTests PushPartitionTests PostgresNamespacePartitionTests WebhookRateCapTests

## How many tests run at once. Unbounded (Swift Testing's default), every test of the suite starts
## its servers, agents and clients at the same moment: on two cores the machine then starves for
## seconds at a time and tests with real deadlines (curl's 10 s, a SIGTERM's 10 s) fail on a suite
## that passes alone — 7 to 24 such failures a run were seen. Eight at a time passed, and faster.
TEST_WIDTH ?= 8
## A suite that failed in the parallel run is run once more, alone, and passes only if it passes
## there: two cores under the whole suite's load still miss a deadline now and then (one suite in
## four runs here). A crash is never retried, nor more than this many suites (something systemic).
RETRY_SUITES ?= 3

## Build everything and run every test (Swift Testing), then schemathesis for a minute against a live
## agent, then each fuzzer briefly over its seeds.
## The suite runs its tests side by side, each with its own servers and clients: at its peak the
## test process holds over a thousand descriptors, so its soft open-file limit is raised toward the
## hard one (at most 65536). Every failure is listed again at the end, where CI's tail shows it.
test: build check-imports check-shape check-docs
	@hard=$$(ulimit -Hn); case $$hard in unlimited) hard=65536;; esac; [ $$hard -gt 65536 ] && hard=65536; \
	  [ $$(ulimit -Sn) != unlimited ] && [ $$(ulimit -Sn) -lt $$hard ] && ulimit -Sn $$hard; \
	  export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=$(TEST_WIDTH); \
	  echo "$(SWIFT) test --skip-build   (open-file limit $$(ulimit -Sn), at most $(TEST_WIDTH) tests at once)"; \
	  { $(SWIFT) test --skip-build --skip "$$(echo $(TIMING_TESTS) | tr ' ' '|')" 2>&1; echo $$? > .build/test-status; } \
	    | tee .build/test-output.txt; \
	  status=$$(cat .build/test-status); \
	  failed=$$(grep -aoE "✘ Suite [A-Za-z0-9_]+ failed" .build/test-output.txt | awk '{print $$3}' | sort -u); \
	  if [ "$$status" != 0 ] && [ -n "$$failed" ] && [ $$(echo "$$failed" | wc -l) -le $(RETRY_SUITES) ] \
	     && ! grep -aqE "Fatal error|Program crashed|error: " .build/test-output.txt; then \
	    status=0; \
	    for suite in $$failed; do \
	      echo "$(SWIFT) test --skip-build --filter $$suite   (failed under the parallel load: once more, alone)"; \
	      { $(SWIFT) test --skip-build --filter $$suite 2>&1; echo $$? > .build/test-status; } | tee -a .build/test-output.txt; \
	      if [ "$$(cat .build/test-status)" = 0 ]; then echo "== $$suite failed under the parallel load and passed alone"; else status=1; fi; \
	    done; \
	  fi; \
	  for suite in $(TIMING_TESTS); do \
	    echo "$(SWIFT) test --skip-build --filter $$suite   (timing tests, alone)"; \
	    { $(SWIFT) test --skip-build --filter $$suite 2>&1; echo $$? > .build/test-status; } | tee -a .build/test-output.txt; \
	    [ "$$(cat .build/test-status)" = 0 ] || status=1; \
	  done; \
	  if [ "$$status" != 0 ]; then \
	    echo "== every failure above, again (the whole output is in .build/test-output.txt):"; \
	    grep -aE "✘|error:|Fatal error|Program crashed" .build/test-output.txt | cut -c1-600; \
	  fi; \
	  exit $$status
	FUZZ_API_SECONDS=60 FUZZ_API_EXAMPLES=100 Scripts/fuzz-api.sh .build/debug/orderlive
	$(MAKE) fuzz-smoke FUZZ_CONFIGURATION=debug

## schemathesis against a live agent and the Sandbox, every check, over GET /openapi.json (see
## Scripts/fuzz-api.sh): FUZZ_API_SECONDS (default 600), FUZZ_API_EXAMPLES, FUZZ_API_SEED.
fuzz-api: deps
	$(SWIFT) build --product orderlive
	Scripts/fuzz-api.sh .build/debug/orderlive

## Every target imports exactly what Package.swift declares for it (STYLE 16; Scripts/check-imports.py).
check-imports: deps
	python3 Scripts/check-imports.py

## docs/CONFIGURATION.md's key tables are Config/orderlive.yaml's (Scripts/configuration-doc.py); the
## keys themselves are checked against the code by DocumentedDefaultsTests. `make docs` rewrites them.
check-docs:
	python3 Scripts/configuration-doc.py --check

docs:
	python3 Scripts/configuration-doc.py

## Rooms stay small and the map stays true: no file over 400 lines, no function over 100, a banner
## file per module, docs/ARCHITECTURE.md's module table equal to Package.swift (Scripts/check-shape.py).
check-shape: deps
	python3 Scripts/check-shape.py

## The Sandbox backend and the agent in one process, orders arriving live (release build). Ctrl-C stops it.
demo: deps
	$(SWIFT) build -c release --product orderlive
	.build/release/orderlive demo

## The Sandbox alone, with auth and a changing order book, for `orderlive run` to point at.
sandbox: deps
	$(SWIFT) build -c release --product orderlive
	.build/release/orderlive sandbox --orders --require-auth

release: deps
	$(SWIFT) build -c release --product orderlive

## A self-contained `orderlive` (the Swift runtime and Foundation linked in, as the container image
## ships it) at .build-static/release/orderlive, for boxes without Swift. Linked by lld with packed
## relative relocations (glibc ≥ 2.36): the loader reads 27 KB of them instead of 3.2 MB, which
## takes 1–2.5 MB off the agent's resident memory (docs/PERFORMANCE.md, "The agent's memory").
release-static: deps
	$(SWIFT) build -c release --product orderlive --static-swift-stdlib --scratch-path .build-static \
	  -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs

## The agent against the Sandbox for SOAK_MINUTES (default 30) under steady changes, pushes, refused
## pushes, stream cuts and token expiries; fails when memory, descriptors, journal, commit lag or log
## volume grow after warm-up (Scripts/soak.py; results in docs/PERFORMANCE.md). Not part of `make test`.
SOAK_MINUTES ?= 30
soak: deps
	$(SWIFT) build -c release --product orderlive
	python3 Scripts/soak.py .build/release/orderlive --minutes $(SOAK_MINUTES)

## The whole suite under ThreadSanitizer, child processes included, as `make test` runs it (the
## timing suites alone after the rest), with the tests' time bounds scaled by TestTime.scale, which
## ORDERLIVE_TSAN sets; fails on any report not in Scripts/tsan-suppressions.txt (docs/SANITIZERS.md).
## Not part of `make test` (about 20 minutes cold). Swift 5 language mode for this build only:
## swift-otel 1.6.0 does not compile under --sanitize=thread in Swift 6 mode on Swift 6.3.1 ("sending
## 'logger' risks causing data races" in its batch processors, which a plain build accepts); the
## language mode changes compile-time checks only, which the plain build enforces.
TSAN_SWIFTC := -Xswiftc -swift-version -Xswiftc 5 -Xswiftc -DORDERLIVE_TSAN
tsan: deps
	SWIFT_BACKTRACE=enable=no $(SWIFT) build --build-tests --sanitize=thread $(TSAN_SWIFTC) --scratch-path .build-tsan
	TIMING_TESTS="$(TIMING_TESTS)" Scripts/tsan.sh

## What the benchmarks need besides `deps` (BENCH_PACKAGES), installed the same way.
bench-deps: deps
	@$(MAKE) --no-print-directory deps SYSTEM_PACKAGES="$(BENCH_PACKAGES)"

## Release-mode benchmarks (see docs/PERFORMANCE.md); not part of `make test`.
## The build plan is dropped first: SwiftPM keeps the source lists of this package (a path dependency
## of Benchmarks/) from the last plan, so a source file added here since fails with "cannot find X
## in scope" until it is re-planned (seconds).
bench: bench-deps
	rm -f .build-bench/release.yaml
	cd Benchmarks && $(SWIFT) run -c release --scratch-path ../.build-bench orderlive-bench

## Instructions per unit of work under valgrind's callgrind: figures that repeat on a noisy machine
## (docs/PERFORMANCE.md). BENCH_INSTRUCTIONS=parse,parse-batched,store,store-at-once,push,push-keyed picks workloads.
bench-instructions: bench-deps
	rm -f .build-bench/release.yaml
	cd Benchmarks && $(SWIFT) build -c release --scratch-path ../.build-bench --product orderlive-instructions
	Scripts/bench-instructions.sh

## The fuzzers (see docs/FUZZING.md). `fuzz` runs each target for FUZZ_SECONDS; `fuzz-smoke` (part
## of `make test`) runs each over its seeds for FUZZ_SMOKE_RUNS executions, so a fuzzer that no
## longer builds or trips on its seeds fails CI. FUZZ_TARGETS picks some.
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_RUNS ?= 3000
FUZZ_TARGETS ?= sse gorush webhooks token-pair response-policy orders events configuration tokens protocol-choice webhook-options
# swiftc keeps coverage only when it sees both sanitizers in one flag: given as two flags (as SwiftPM's
# --sanitize passes them, in an order that varies between runs), `-sanitize=fuzzer -sanitize=address`
# compiles without coverage and `-sanitize=address -sanitize=fuzzer` without ASan. The combined
# -Xswiftc flag, last on every compile line, gives both; --sanitize still drives the link and C code.
## FUZZ_CONFIGURATION picks the build: release (the default, for `make fuzz`'s long runs) or debug,
## which `make test`'s smoke run uses: the same instrumentation over the same seeds; whether it builds
## faster is not settled (380 s once, 666 s in a fresh clone, against 680 s in release; docs/FUZZING.md).
## Each has its own scratch path: sharing one, each build of the other rebuilt everything (8 minutes).
FUZZ_CONFIGURATION ?= release
export FUZZ_CONFIGURATION
FUZZ_SCRATCH := .build-fuzz$(if $(filter debug,$(FUZZ_CONFIGURATION)),-debug)
FUZZ_BUILD := ORDERLIVE_FUZZ=1 $(SWIFT) build -c $(FUZZ_CONFIGURATION) --sanitize=fuzzer --sanitize=address \
	-Xswiftc -sanitize=fuzzer,address --scratch-path $(FUZZ_SCRATCH)

fuzz-build: deps
	$(FUZZ_BUILD) --product ParserFuzz && $(FUZZ_BUILD) --product InputFuzz

fuzz: fuzz-build
	@for target in $(FUZZ_TARGETS); do \
	  echo "== fuzz $$target for $(FUZZ_SECONDS) s"; \
	  Fuzz/run.sh $$target -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 || exit 1; \
	done

fuzz-smoke: fuzz-build
	@for target in $(FUZZ_TARGETS); do \
	  work=$$(mktemp -d); \
	  FUZZ_WORK_DIR=$$work Fuzz/run.sh $$target -runs=$(FUZZ_SMOKE_RUNS) > $$work.log 2>&1 \
	    || { tail -n 40 $$work.log; echo "fuzz-smoke: $$target failed"; exit 1; }; \
	  grep -q 'INITED cov:' $$work.log \
	    || { tail -n 20 $$work.log; echo "fuzz-smoke: $$target saw no coverage: the build is not instrumented (rm -rf $(FUZZ_SCRATCH) and build again)"; exit 1; }; \
	  echo "fuzz-smoke: $$target $$(grep -o 'Done [0-9]* runs' $$work.log), $$(grep -o 'INITED cov: [0-9]*' $$work.log | cut -d' ' -f3) edges from the seeds"; \
	  rm -rf $$work $$work.log; \
	done

clean:
	rm -rf .build .build-bench .build-fuzz .build-fuzz-debug .build-tsan
