# orderlive — the two commands a newcomer needs are `make test` and `make demo`.
SWIFT ?= swift
SYSTEM_PACKAGES := libcurl4-openssl-dev libssl-dev libsqlite3-dev pkg-config openssl python3
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: all deps build test demo sandbox release bench fuzz clean

all: build

## Install the system libraries the package links (Debian/Ubuntu), only those missing.
deps:
	@missing=""; \
	for package in $(SYSTEM_PACKAGES); do \
	  dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing system packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build --build-tests

## Build everything and run every test (Swift Testing).
test: build
	$(SWIFT) test --skip-build

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

## Release-mode benchmarks (see docs/PERFORMANCE.md); not part of `make test`.
bench: deps
	cd Benchmarks && $(SWIFT) run -c release --scratch-path ../.build-bench orderlive-bench

## The parser fuzzer for FUZZ_SECONDS (see docs/FUZZING.md); not part of `make test`.
FUZZ_SECONDS ?= 300
fuzz: deps
	cd Fuzz && $(SWIFT) build -c release --product ParserFuzz --sanitize=fuzzer --sanitize=address --scratch-path ../.build-fuzz
	mkdir -p Fuzz/corpus-run
	SWIFT_BACKTRACE=enable=no ./.build-fuzz/release/ParserFuzz Fuzz/corpus-run Fuzz/corpus \
	  -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1

clean:
	rm -rf .build .build-bench .build-fuzz
