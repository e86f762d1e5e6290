# rtvbench build and entry points. `make help` lists the targets.

CC        ?= cc
CSTD      := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64
WARN      := -Wall -Wextra -Werror
OPT       := -O2
# probe/core/: what measuring needs without an OS (histogram, JSON records, number formatting),
# compiled freestanding for the bare-metal image too (baremetal/).
CORE_SRC  := $(wildcard probe/core/*.c)
CORE_HDR  := $(wildcard probe/core/*.h)
# probe/port/: the porting layer (port.h), the measurements written against it and its Linux
# implementation (linux/); the image takes its bare-metal one (baremetal/).
PORT_SRC  := $(wildcard probe/port/*.c)
PORT_HDR  := $(wildcard probe/port/*.h)
PROBE_SRC := $(filter-out probe/main.c,$(wildcard probe/*.c probe/work/*.c probe/port/linux/*.c)) $(CORE_SRC) $(PORT_SRC)
PROBE_HDR := $(wildcard probe/*.h probe/work/*.h probe/port/linux/*.h) $(CORE_HDR) $(PORT_HDR)
BUILD     := build/probe
PY        := .venv/bin/python

# Static, libc only: the binary is copied onto boards and into guests as is.
# Binaries are linked to a temporary name and renamed, so a test that is
# running one never sees it half-written.
#
# Size (goal: 1 MiB stripped on every architecture; `make bench` prints it):
# - -ffunction-sections -fdata-sections with --gc-sections drop the probe's
#   unused functions and data (12 KB on x86_64, 8 KB on armhf and riscv64).
# - -fno-asynchronous-unwind-tables -fno-unwind-tables: no unwind tables
#   (.eh_frame) for the probe's own code: 24 KB on x86_64, 27 KB on aarch64
#   (where the file shrinks by a whole 64 KB page of segment alignment);
#   armhf's and riscv64's builds make none by default. Nothing unwinds
#   through the probe's frames: in glibc that is done by pthread_cancel and
#   pthread_exit (cancellation is a forced unwind, which would abort in a
#   frame without tables) and backtrace, and the probe calls none of them;
#   tests/test_probe_unwind.py checks that none is even linked. The
#   measured code keeps its instructions (only the padding between
#   functions differs).
# The probe also reads numbers and dates itself (util.c: parse_double, the
# scan_* functions, utc_time) rather than by strtod, sscanf and gmtime_r,
# which bring some 120 KB of glibc's general conversions and time zones.
# x86_64 stays above the goal (1.25 MB): a static glibc printf program is
# already 683 KB there, the probe's own code and data 270 KB, the rest of
# libc it calls 110 KB (60 KB of it resolver code that pthread_create pulls
# in with the resolver's per-thread state), and libm 190 KB, most of
# it one copy per CPU variant (sse2, avx, fma, fma4) of acos (basicmath) and
# of atan2, sin and cos (fpmix, which is there to measure libm). Not taken,
# with what each would save on x86_64: basicmath's angle by atan2 instead
# of acos (78 KB; the same rounded roots, but a 4 % slower solve changes what
# the workload times); -Os for the code that measures nothing (8 KB); -z norelro and -z noseparate-code (6 KB: hardening for
# little); discarding glibc's own unwind tables with a linker script (57 KB,
# fragile); musl (the probe would be 371 KB), because mem-bw measures libc's
# memcpy and memset and mem-alloc glibc's malloc, which it would replace.
PROBE_CFLAGS  := $(CSTD) $(WARN) $(OPT) -pthread -ffunction-sections -fdata-sections \
                 -fno-asynchronous-unwind-tables -fno-unwind-tables -Iprobe/core -Iprobe \
                 -Iprobe/port -Iprobe/port/linux
PROBE_LDFLAGS := -static -pthread -lm -Wl,--gc-sections

# Debian's cross compilers; `probe-cross` builds one static binary each. x86_64's is there for
# the wheel (setup.py), which carries an x86_64 probe also when it is built on another machine.
CROSS_x86_64  := x86_64-linux-gnu-gcc
CROSS_aarch64 := aarch64-linux-gnu-gcc
CROSS_armhf   := arm-linux-gnueabihf-gcc
CROSS_riscv64 := riscv64-linux-gnu-gcc
CROSS_ARCHES  := aarch64 armhf riscv64

.PHONY: help setup probe probe-cross probe-test baremetal kernels evaluate test test-fast clean

help:
	@echo "make evaluate     set up, then evaluate this machine with the default campaign"
	@echo "make test         set up, then run every test"
	@echo "make test-fast    the Python tests that need no probe, guest, ssh server or browser"
	@echo "make setup        install system packages, Python environment, build the probe"
	@echo "make probe        build the native probe at $(BUILD)/rtvb-probe"
	@echo "make probe-cross  build static probes for $(CROSS_ARCHES) at $(BUILD)/<arch>/rtvb-probe"
	@echo "make baremetal    build the bare-metal images for QEMU's virt at build/baremetal/<arch>/rtvb-probe.elf and .bin ($(BM_ARCHES))"
	@echo "make baremetal BOARD=b.toml   build the image for the board that b.toml describes at build/baremetal/boards/b/"
	@echo "make kernels      fetch Debian's x86_64 (also PREEMPT_RT) and aarch64 kernels into kernels/"

probe: $(BUILD)/rtvb-probe

$(BUILD)/rtvb-probe: $(PROBE_SRC) probe/main.c $(PROBE_HDR) Makefile
	@mkdir -p $(@D)
	$(CC) $(PROBE_CFLAGS) -o $@.tmp probe/main.c $(PROBE_SRC) $(PROBE_LDFLAGS)
	mv -f $@.tmp $@

probe-cross: $(foreach a,$(CROSS_ARCHES),$(BUILD)/$(a)/rtvb-probe)

$(BUILD)/%/rtvb-probe: $(PROBE_SRC) probe/main.c $(PROBE_HDR) Makefile
	@mkdir -p $(@D)
	$(CROSS_$*) $(PROBE_CFLAGS) -o $@.tmp probe/main.c $(PROBE_SRC) $(PROBE_LDFLAGS)
	mv -f $@.tmp $@

# C unit tests of the probe core (histogram, parsing), built natively.
$(BUILD)/test-%: probe/tests/test_%.c $(PROBE_SRC) $(PROBE_HDR) Makefile
	@mkdir -p $(@D)
	$(CC) $(PROBE_CFLAGS) -Iprobe -o $@.tmp $< $(PROBE_SRC) -pthread -lm
	mv -f $@.tmp $@

# The core compiled freestanding: no libc headers (-nostdinc, only the compiler's own: stdint.h,
# stddef.h, stdbool.h, stdarg.h, float.h) and no libc calls but the few the compiler itself emits
# (memcpy, memset, strlen), which the bare-metal image supplies. The hist-dump pair checks that this
# compile prints what the Linux build prints (tests/test_probe_core_freestanding.py).
CORE_FREESTANDING := -std=c11 $(WARN) $(OPT) -ffreestanding -nostdlib -nostdinc \
                     -isystem $(shell $(CC) -print-file-name=include) -Iprobe/core

$(BUILD)/freestanding/%.o: probe/core/%.c $(CORE_HDR) Makefile
	@mkdir -p $(@D)
	$(CC) $(CORE_FREESTANDING) -c -o $@ $<

CORE_FREESTANDING_OBJ := $(patsubst probe/core/%.c,$(BUILD)/freestanding/%.o,$(CORE_SRC))

$(BUILD)/hist-dump-linux: probe/tests/hist_dump.c $(CORE_SRC) $(CORE_HDR) probe/jsonw_fd.c Makefile
	$(CC) $(PROBE_CFLAGS) -o $@.tmp $< $(CORE_SRC) probe/jsonw_fd.c
	mv -f $@.tmp $@

$(BUILD)/hist-dump-freestanding: probe/tests/hist_dump.c probe/tests/hist_dump_sink.c $(CORE_FREESTANDING_OBJ)
	$(CC) $(PROBE_CFLAGS) -o $@.tmp $< probe/tests/hist_dump_sink.c $(CORE_FREESTANDING_OBJ)
	mv -f $@.tmp $@

PROBE_TESTS := $(patsubst probe/tests/test_%.c,$(BUILD)/test-%,$(wildcard probe/tests/test_*.c))

probe-test: $(patsubst probe/tests/test_%.c,$(BUILD)/test-%,$(wildcard probe/tests/test_*.c))
	@for t in $^; do echo "== $$t"; $$t || exit 1; done

# The bare-metal images (docs/baremetal.md): the freestanding core, probe/baremetal/ and its
# probe/baremetal/<arch>/ (start-up, interrupts, UART, board.h, link.ld.S), for QEMU's `virt` unless a
# board's -D's say otherwise: aarch64 at EL1 (-machine virt,gic-version=2), riscv64 in S-mode under
# OpenSBI. aarch64's start-up turns the MMU on (RAM normal cacheable memory, where unaligned
# accesses are allowed) before any C code but the table's set-up runs; what its interrupts run is built -mgeneral-regs-only (its vectors save no FP/SIMD registers; riscv64's trap
# entry saves the FP temporaries instead, as GCC has no such option there).
# -fno-tree-loop-distribute-patterns keeps GCC from turning mem.c's loops into calls to themselves.
BM_ARCHES  := aarch64 riscv64
BM_DIR     := probe/baremetal
BM_CC_aarch64    := aarch64-linux-gnu-gcc
BM_CC_riscv64    := riscv64-linux-gnu-gcc
BM_ARCH_aarch64  := -mcpu=cortex-a53
BM_ARCH_riscv64  := -march=rv64imafdc -mabi=lp64d -mcmodel=medany
BM_IRQ_aarch64   := -mgeneral-regs-only
BM_IRQ_SRC := $(BM_DIR)/irqlat_handler.c $(wildcard $(BM_DIR)/aarch64/*.c) probe/port/baremetal/port_baremetal.c
BM_HDR     := $(wildcard $(BM_DIR)/*.h) $(CORE_HDR) $(PORT_HDR)

# A board description (docs/baremetal.md, "On a board") is a TOML file that scripts/baremetal_board.py checks
# and turns into board_config.h, put before board.h with -include. `make baremetal` builds QEMU's `virt`
# boards of probe/baremetal/boards/ into build/baremetal/<arch>/; `make baremetal BOARD=path/to/b.toml`
# builds that board alone into build/baremetal/boards/<b>/ (or BOARD_OUT), so boards build side by side.
# Its architecture is read when make starts: a bad file stops make with the script's sentence.
BM_PY := $(if $(wildcard $(PY)),$(PY),python3)
BM_BOARD_TOOL := scripts/baremetal_board.py
ifdef BOARD
BM_BOARD_ARCH := $(shell $(BM_PY) $(BM_BOARD_TOOL) $(BOARD) --arch 2>&1)
ifeq ($(filter $(BM_BOARD_ARCH),$(BM_ARCHES)),)
$(error $(BM_BOARD_ARCH))
endif
BOARD_OUT ?= build/baremetal/boards/$(basename $(notdir $(BOARD)))
BM_IMAGES := board
BM_ARCH_OF_board := $(BM_BOARD_ARCH)
BM_TOML_board := $(BOARD)
BM_OUT_board := $(BOARD_OUT)
else
BM_IMAGES := $(BM_ARCHES)
$(foreach a,$(BM_ARCHES),$(eval BM_ARCH_OF_$(a) := $(a)))
$(foreach a,$(BM_ARCHES),$(eval BM_TOML_$(a) := $(BM_DIR)/boards/qemu-virt-$(a).toml))
$(foreach a,$(BM_ARCHES),$(eval BM_OUT_$(a) := build/baremetal/$(a)))
endif

baremetal: $(foreach i,$(BM_IMAGES),$(BM_OUT_$(i))/rtvb-probe.elf $(BM_OUT_$(i))/rtvb-probe.bin)

# One image per board (<i>) of architecture <a>: objects under <out>/obj/ keep their source's path.
define BM_IMAGE
BM_CONFIG_$(1) := $(3)/board_config.h
BM_INC_$(1) := -I$(BM_DIR) -I$(BM_DIR)/$(2) -Iprobe/core -Iprobe/port -include $(3)/board_config.h
BM_CFLAGS_$(1) := -std=c11 $(WARN) $(OPT) -ffreestanding -nostdlib -nostdinc \
              -isystem $$(shell $(BM_CC_$(2)) -print-file-name=include 2>/dev/null) $$(BM_INC_$(1)) \
              $(BM_ARCH_$(2)) -fno-pie -fno-stack-protector -ffunction-sections \
              -fdata-sections -fno-asynchronous-unwind-tables -fno-unwind-tables \
              -fno-tree-loop-distribute-patterns
BM_SRC_$(1) := $(filter-out %/link.ld.S,$(wildcard $(BM_DIR)/*.c $(BM_DIR)/$(2)/*.c $(BM_DIR)/$(2)/*.S)) $(CORE_SRC) \
               $(PORT_SRC) $(wildcard probe/port/baremetal/*.c probe/port/baremetal/$(2)/*.S)
BM_OBJ_$(1) := $$(patsubst %,$(3)/obj/%.o,$$(basename $$(BM_SRC_$(1))))
BM_DEP_$(1) := $(BM_HDR) $(wildcard $(BM_DIR)/$(2)/*.h) $(3)/board_config.h Makefile

$(3)/board_config.h: $(4) $(BM_BOARD_TOOL)
	$(BM_PY) $(BM_BOARD_TOOL) $(4) -o $$@

$(3)/obj/%.o: %.c $$(BM_DEP_$(1))
	@mkdir -p $$(@D)
	$(BM_CC_$(2)) $$(BM_CFLAGS_$(1)) $$(if $$(filter $$<,$(BM_IRQ_SRC)),$(BM_IRQ_$(2))) -c -o $$@ $$<

$(3)/obj/%.o: %.S $$(BM_DEP_$(1))
	@mkdir -p $$(@D)
	$(BM_CC_$(2)) $$(BM_INC_$(1)) $(BM_ARCH_$(2)) -c -o $$@ $$<

$(3)/link.ld: $(BM_DIR)/$(2)/link.ld.S $(BM_DIR)/$(2)/board.h $(3)/board_config.h Makefile
	@mkdir -p $$(@D)
	$(BM_CC_$(2)) -E -P -x c $$(BM_INC_$(1)) -o $$@ $$<

$(3)/rtvb-probe.elf: $$(BM_OBJ_$(1)) $(3)/link.ld
	$(BM_CC_$(2)) $(BM_ARCH_$(2)) -nostdlib -static -no-pie -Wl,--gc-sections -Wl,--no-warn-rwx-segments \
	    -Wl,--build-id=none -Wl,-T,$(3)/link.ld -o $$@.tmp $$(BM_OBJ_$(1)) -lgcc
	mv -f $$@.tmp $$@

$(3)/rtvb-probe.bin: $(3)/rtvb-probe.elf
	$(2)-linux-gnu-objcopy -O binary $$< $$@.tmp
	mv -f $$@.tmp $$@
endef
$(foreach i,$(BM_IMAGES),$(eval $(call BM_IMAGE,$(i),$(BM_ARCH_OF_$(i)),$(BM_OUT_$(i)),$(BM_TOML_$(i)))))

setup:
	./scripts/setup.sh

# A failed requirement (exit 1) is a finding of the evaluation, written in the
# report, not a failure of this target; any other non-zero status is.
evaluate: setup
	.venv/bin/rtvbench run || [ $$? -eq 1 ]

# Debian's kernels for the qemu guests of the tests and examples (kernels/<arch>[-rt]/vmlinuz);
# a second fetch only refreshes the package lists.
kernels: setup
	.venv/bin/rtvbench kernel fetch --arch x86_64 --dest kernels
	.venv/bin/rtvbench kernel fetch --arch x86_64 --rt --dest kernels
	.venv/bin/rtvbench kernel fetch --arch aarch64 --dest kernels

# Every test, in three phases that all run whatever an earlier one did (tests/phases.py): the unit
# tests in parallel; the functional ones (marked by their authors: nothing they assert depends on
# time or a quiet machine) two at a time, a module per worker; then every test that measures, alone.
# A measuring test that fails is run once more, alone, at the end; the summary names each one that
# passed only then. The probe's C unit tests run as tests of their own (tests/test_probe_c_units.py).
test: setup kernels
	@$(MAKE) -q probe-cross || { echo "test: building the probes for $(CROSS_ARCHES)"; $(MAKE) -s probe-cross; }
	@$(MAKE) -q baremetal || { echo "test: building the bare-metal images"; $(MAKE) -s baremetal; }
	$(PY) tests/phases.py

# Markers come from what a test needs (tests/conftest.py): unit, probe, qemu, ssh, browser, postgres, peer.
test-fast: setup
	$(PY) -m pytest -q -m unit -n auto

clean:
	rm -rf build

# Benchmarks of rtvbench itself (see bench/README.md); not part of `make test`.
$(BUILD)/bench-hist-record: bench/hist_record.c $(CORE_SRC) $(CORE_HDR) probe/jsonw_fd.c
	@mkdir -p $(@D)
	$(CC) $(PROBE_CFLAGS) -Iprobe -o $@ bench/hist_record.c $(CORE_SRC) probe/jsonw_fd.c -lm

.PHONY: bench
bench: $(BUILD)/bench-hist-record probe probe-cross
	$(PY) bench/peers.py
	@mkdir -p build/bench
	$(BUILD)/bench-hist-record build/bench/hist_record.json
	$(PY) bench/latency_cpu_cost.py
	$(PY) bench/latency_vs_cyclictest.py
	$(PY) bench/trace_cost.py
	$(PY) bench/cli_speed.py
	$(PY) bench/report_speed.py
	$(PY) bench/publish_speed.py
	$(PY) bench/change_points.py
	$(PY) bench/campaign_overhead.py
	$(PY) bench/farm_speed.py
	$(PY) bench/memlat_compare.py
	$(PY) bench/lmbench_compare.py
	$(PY) bench/network_vs_iperf3.py --udp-rate-bps 1000000000
	$(PY) bench/probe_size.py
	$(PY) bench/summary.py
