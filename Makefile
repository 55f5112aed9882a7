# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kdat: DAT 1.2 Shared Receive Queues for kernel consumers (kDAPL) on ib_core.
#
#   make            everything that can be built here
#   make module     the kernel module (KDIR= selects the kernel headers)
#   make test       host, guest, dat2, install and debug stages; ends "N passed, N failed"
#   make lint       kernel coding style: checkpatch and sparse over the kernel
#                   C code (tests/host/lint.sh; part of `make test`)
#   make cross      libdat for arm64, armhf, i386, s390x and ppc64el (its
#                   unit tests under qemu-user), the /dev/kdat ABI layout
#                   on each, the module for arm64; part of `make test`
#   make test-debug the debug stage alone: the guest suite on a KASAN/lockdep/
#                   kmemleak kernel (built once per machine, ~15-30 min)
#   make run        the demo: the module on Soft-RoCE in a QEMU guest
#   make bench      message rate against raw ib_core and perftest, in the guest
#                   (kernel consumer); BENCH_DOCS=1 copies the chart to docs/
#   make bench-scale 1024 and 4096 EPs on one SRQ, zero-RNR depths, memory
#   make bench-user libdat: post cost and message rate against rdma-core/perftest
#   make bench-dat2 dapltest -T P on libdaplkdat against OFED's DAT 2.0 provider
#   make dkms-install / dkms-uninstall
#
# KDIR defaults to the running kernel's build directory, as for every
# out-of-tree module.  The test rig builds against the newest installed
# Debian kernel (scripts/kdir.sh), the one it boots in the guest.

KVER ?= $(shell uname -r)
PREFIX ?= /usr/local
KDIR ?= /lib/modules/$(KVER)/build
W1 := W=1
ifeq ($(WERROR),1)
EXTRA_KCFLAGS := KCFLAGS=-Werror
endif

.PHONY: all module test-modules user examples test test-host lint run bench bench-scale bench-user bench-dat2 clean \
	deps install uninstall dkms-install dkms-uninstall test-install test-debug test-guest \
	raw-tests cross cross-arm64

all: user
	@if [ -e "$(KDIR)/Makefile" ]; then \
		$(MAKE) --no-print-directory module test-modules; \
	else \
		echo "kdat: no kernel headers at $(KDIR); skipping the module (make module KDIR=... or apt-get install linux-headers-$(KVER))"; \
	fi

# libdat, examples, tools and their tests (CMake, in build/user).
user:
	@command -v cmake >/dev/null || { echo "kdat: cmake is missing (apt-get install cmake)"; exit 1; }
	@cmake -S . -B build/user -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build build/user -j2

module:
	@[ -e "$(KDIR)/Makefile" ] || { echo "kdat: no kernel headers at $(KDIR) (apt-get install linux-headers-$(KVER), or pass KDIR=)"; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel $(W1) $(EXTRA_KCFLAGS) modules

# Kernel consumers: the test module, the demo and the benchmark.
CONSUMERS := tests/kernel $(wildcard examples/kernel tests/bench)
test-modules: module
	@for d in $(CONSUMERS); do \
		$(MAKE) -C $(KDIR) M=$(CURDIR)/$$d $(W1) $(EXTRA_KCFLAGS) \
			KBUILD_EXTRA_SYMBOLS=$(CURDIR)/kernel/Module.symvers modules || exit 1; \
	done

# Raw-ABI test of /dev/kdat (no libdat), run in the guest stage.
build/abi_smoke: tests/user/abi/abi_smoke.c include/uapi/kdat_abi.h
	@mkdir -p build
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -Iinclude -o $@ $<

# Raw-ABI race and fuzz tests (guest and debug stages), built when their
# sources exist; a source that exists and does not build fails `make test`.
RAW_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -pthread -Iinclude
RAW_DEPS := $(wildcard include/uapi/*.h tests/user/common/*.h)
build/kdat_race: tests/user/race/kdat_race.c $(RAW_DEPS)
	@mkdir -p build
	$(CC) $(RAW_CFLAGS) -o $@ $<
build/kdat_fuzz: tests/user/fuzz/kdat_fuzz.c $(RAW_DEPS)
	@mkdir -p build
	$(CC) $(RAW_CFLAGS) -o $@ $<
RAW_TESTS := build/abi_smoke \
	$(if $(wildcard tests/user/race/kdat_race.c),build/kdat_race) \
	$(if $(wildcard tests/user/fuzz/kdat_fuzz.c),build/kdat_fuzz)
raw-tests: $(RAW_TESTS)

deps:
	@scripts/deps.sh all

# Cross builds (scripts/cross.sh, in build/cross-*): libdat with Debian's
# cross compilers for arm64, armhf, i386, s390x and ppc64el and its host
# unit tests under qemu-user; kdat.ko and the kernel test modules for arm64, W=1,
# against Debian's arm64 headers (cached in /var/cache/kdat/arm64-kernel).
# The host stage of `make test` runs it; ends "N passed, N failed".
# cross-arm64 is its name from before it built more than arm.
cross cross-arm64:
	@scripts/deps.sh build
	@scripts/cross.sh

# The test and demo targets build against the Debian kernel the guest boots.
test: deps
	@tests/run-tests.sh

test-host: deps
	@STAGES=host tests/run-tests.sh

# checkpatch over kernel/ and the kernel consumers, sparse over kdat.ko and
# the test modules; against scripts/kdir.sh's kernel unless KDIR= is given.
lint:
	@$(if $(filter command line environment,$(origin KDIR)),KDIR=$(KDIR) )bash tests/host/lint.sh

# The guest stage alone (the Debian kernel); needs what the host stage builds.
test-guest: deps
	@$(MAKE) --no-print-directory user test-modules raw-tests KDIR=$$(scripts/kdir.sh)
	@STAGES=guest tests/run-tests.sh

# The debug stage of `make test` alone: builds (once per machine, cached in
# /var/cache/kdat/debug-kernel) the guest's kernel with KASAN, lockdep,
# kmemleak, UBSAN, KFENCE; the module and kernel test modules against it in
# build/debug/; the guest suite on it (docs/testing.md).
test-debug: deps
	@$(MAKE) --no-print-directory user raw-tests
	@STAGES=debug tests/run-tests.sh

# The install stage of `make test` alone: DKMS package + make install +
# out-of-tree builds, inside the guest (about 4 minutes under TCG).
test-install: deps
	@$(MAKE) --no-print-directory user
	@STAGES=install tests/run-tests.sh

run: deps
	@$(MAKE) --no-print-directory user test-modules KDIR=$$(scripts/kdir.sh)
	@tests/vm/guest-run.sh -o $(CURDIR)/build/vm/demo -t 900 -- scripts/guest/demo.sh

# The bench scripts' knobs (every ${NAME:-default} in tests/bench/*.sh but
# the paths the targets set), given to make (`make bench REPEAT=7`) or in
# its environment, are handed to the guest, which inherits no environment
# of the host.
BENCH_KNOBS = $(filter-out OUTDIR DATPERF DATINFO DAT2_LIB,$(sort \
	$(shell grep -ho '\$${[A-Z][A-Z_0-9]*:-' tests/bench/*.sh | tr -d '$${:-')))
BENCH_ENV = $(foreach v,$(BENCH_KNOBS),$(if $($(v)),$(v)='$($(v))'))

bench: deps
	@$(MAKE) --no-print-directory user test-modules KDIR=$$(scripts/kdir.sh)
	@tests/vm/guest-run.sh -o $(CURDIR)/build/vm/bench -t 1800 -- \
		env OUTDIR=$(CURDIR)/build/vm/bench $(BENCH_ENV) tests/bench/run-bench.sh
	@if [ -n "$(BENCH_DOCS)" ]; then cp build/vm/bench/bench-kernel.png docs/; fi

# Many EPs on one SRQ: set-up time at 1024 and 4096 EPs, the SRQ and
# per-EP receive queue depths that give zero RNR, receive memory both ways.
bench-scale: deps
	@$(MAKE) --no-print-directory test-modules KDIR=$$(scripts/kdir.sh)
	@tests/vm/guest-run.sh -o $(CURDIR)/build/vm/scale -t 1800 -m 3072 -- \
		env OUTDIR=$(CURDIR)/build/vm/scale $(BENCH_ENV) tests/bench/run-scale.sh

# libdat: receive post cost against ibv_post_srq_recv and the ioctl path,
# message rate against perftest (docs/benchmarks-user.md).
bench-user: deps
	@$(MAKE) --no-print-directory user test-modules KDIR=$$(scripts/kdir.sh)
	@tests/vm/guest-run.sh -o $(CURDIR)/build/vm/ubench -t 1800 -- \
		env OUTDIR=$(CURDIR)/build/vm/ubench $(BENCH_ENV) tests/bench/run-user-bench.sh

# OFED's dapltest -T P on libdaplkdat against OFED's own DAT 2.0 provider,
# medians and kdat/ofa ratios over 3 rounds (docs/benchmarks.md).
bench-dat2: deps
	@$(MAKE) --no-print-directory user test-modules KDIR=$$(scripts/kdir.sh)
	@tests/vm/guest-run.sh -o $(CURDIR)/build/vm/dat2bench -t 1800 -- \
		env OUTDIR=$(CURDIR)/build/vm/dat2bench $(BENCH_ENV) tests/bench/run-dat2-bench.sh

# libdat, headers, tools, dat.conf, udev rule, man pages (PREFIX, DESTDIR).
install: user
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" scripts/install.sh install

uninstall:
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" scripts/install.sh uninstall

dkms-install:
	scripts/dkms.sh install

dkms-uninstall:
	scripts/dkms.sh remove

clean:
	@for d in kernel $(CONSUMERS) ; do \
		[ -e "$(KDIR)/Makefile" ] && $(MAKE) -s -C $(KDIR) M=$(CURDIR)/$$d clean; \
	done; true
	rm -rf build
