# handoff — the whole set-up is `make run` and `make test` (README.md).
# Both install what is missing (as root, through apt-get) before building.

SWIFT        ?= swift
SWIFT_FLAGS  ?= --explicit-target-dependency-import-check error
PREFIX       ?= /usr/local
FUZZ_SECONDS ?= 300
BIN_DEBUG     = .build/debug
BIN_RELEASE   = .build/release

.PHONY: all build release run test fuzz bench deps-build deps-run deps-test clean help

all: build

help:
	@echo "make run      install missing packages, build, start Avahi if needed, run handoffd"
	@echo "make test     install missing packages, build, run every test"
	@echo "make build    debug build;  make release: release build"
	@echo "make fuzz     long fuzzing of the activity decoder (FUZZ_SECONDS=$(FUZZ_SECONDS))"
	@echo "make bench    the benchmarks of docs/benchmarks.md (root: simulated hosts)"

deps-build:
	@scripts/install-deps.sh build
deps-run:
	@scripts/install-deps.sh run
deps-test:
	@scripts/install-deps.sh test

build: deps-build
	$(SWIFT) build $(SWIFT_FLAGS)

release: deps-build
	$(SWIFT) build -c release $(SWIFT_FLAGS)

# Runs the daemon in the foreground on the user's default paths; Ctrl-C stops it. On first use it
# creates an account — or, with JOIN=CODE (from `handoffctl account invite` on another device),
# joins that one instead.
run: deps-run build
	@scripts/ensure-avahi.sh
	exec $(BIN_DEBUG)/handoffd $(if $(JOIN),--join $(JOIN),--create-account)

test: deps-test
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build

# Millions of random and mutated encodings through the decoder: first the seeded generator of the
# unit test in a release build, then libFuzzer (coverage-guided, with AddressSanitizer).
fuzz: deps-build
	HANDOFF_FUZZ_CASES=5000000 $(SWIFT) test -c release --filter DecoderFuzzTests
	mkdir -p .build/fuzz fuzz-corpus
	swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name HandoffFuzz \
	    Sources/HandoffModel/*.swift fuzz/ActivityDecoderFuzzer.swift -o .build/fuzz/activity-decoder
	.build/fuzz/activity-decoder -max_total_time=$(FUZZ_SECONDS) -max_len=4096 fuzz-corpus fuzz/corpus

# Tables for docs/benchmarks.md: release builds on two simulated hosts (root).
bench: deps-test
	python3 bench/propagation
	python3 bench/continue
	python3 bench/streams

clean:
	rm -rf .build
