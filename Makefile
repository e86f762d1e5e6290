# rtvbench build and entry points. `make help` lists the targets.

CC        ?= cc
CSTD      := -std=c11 -D_GNU_SOURCE
WARN      := -Wall -Wextra -Werror
OPT       := -O2
PROBE_SRC := $(filter-out probe/main.c,$(wildcard probe/*.c))
PROBE_HDR := $(wildcard probe/*.h)
BUILD     := build/probe
PY        := .venv/bin/python

# Static, libc only: the binary is copied onto boards and into guests as is.
PROBE_CFLAGS  := $(CSTD) $(WARN) $(OPT) -pthread
PROBE_LDFLAGS := -static -pthread -lm

# Debian's cross compilers; `probe-cross` builds one static binary each.
CROSS_aarch64 := aarch64-linux-gnu-gcc
CROSS_armhf   := arm-linux-gnueabihf-gcc
CROSS_riscv64 := riscv64-linux-gnu-gcc
CROSS_ARCHES  := aarch64 armhf riscv64

.PHONY: help setup probe probe-cross probe-test evaluate test clean

help:
	@echo "make evaluate     set up, then evaluate this machine with the default campaign"
	@echo "make test         set up, then run every test"
	@echo "make setup        install system packages, Python environment, build the probe"
	@echo "make probe        build the native probe at $(BUILD)/rtvb-probe"
	@echo "make probe-cross  build static probes for $(CROSS_ARCHES) at $(BUILD)/<arch>/rtvb-probe"

probe: $(BUILD)/rtvb-probe

$(BUILD)/rtvb-probe: $(PROBE_SRC) probe/main.c $(PROBE_HDR)
	@mkdir -p $(@D)
	$(CC) $(PROBE_CFLAGS) -o $@ probe/main.c $(PROBE_SRC) $(PROBE_LDFLAGS)

probe-cross: $(foreach a,$(CROSS_ARCHES),$(BUILD)/$(a)/rtvb-probe)

$(BUILD)/%/rtvb-probe: $(PROBE_SRC) probe/main.c $(PROBE_HDR)
	@mkdir -p $(@D)
	$(CROSS_$*) $(PROBE_CFLAGS) -o $@ probe/main.c $(PROBE_SRC) $(PROBE_LDFLAGS)

# C unit tests of the probe core (histogram, parsing), built natively.
$(BUILD)/test-%: probe/tests/test_%.c $(PROBE_SRC) $(PROBE_HDR)
	@mkdir -p $(@D)
	$(CC) $(PROBE_CFLAGS) -Iprobe -o $@ $< $(PROBE_SRC) -pthread -lm

probe-test: $(patsubst probe/tests/test_%.c,$(BUILD)/test-%,$(wildcard probe/tests/test_*.c))
	@for t in $^; do echo "== $$t"; $$t || exit 1; done

setup:
	./scripts/setup.sh

evaluate: setup
	.venv/bin/rtvbench run

test: setup
	$(MAKE) probe-test
	$(PY) -m pytest -q

clean:
	rm -rf build
