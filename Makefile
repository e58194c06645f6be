# constel-agent build. `make` builds the static agent (and, later, the host tools);
# `make test` prepares the host, builds everything and runs every test; see README.md.
#
# The user-facing targets first prepare the host (deps/host-setup.sh: apt packages and the
# deb-src entry) and the musl-static dependencies (deps/build.sh: cached outside the clone),
# then run the real rules below with DEPS set to the dependency prefix.

SHELL := /bin/bash
BUILD := build
VERSION := $(shell cat VERSION)

ifndef DEPS

# ONE inner make gets every goal asked for (`make -j2 agent tools` used to run two inner makes
# at once that both rebuilt $(BUILD)/libconstel.a): the first goal's recipe runs it, the
# others' do nothing.
INNER_GOALS = $(or $(filter-out prepare clean,$(MAKECMDGOALS)),all)

.PHONY: all test run bench fuzz agent tools initrd uki measurements image prepare clean
all test run bench fuzz agent tools initrd uki measurements image: prepare
	@$(if $(filter $@,$(firstword $(INNER_GOALS))),$(MAKE) --no-print-directory -j$$(nproc) DEPS="$$(cat $(BUILD)/deps-prefix)" $(INNER_GOALS),:)

prepare:
	@deps/host-setup.sh
	@mkdir -p $(BUILD)
	@deps/build.sh >$(BUILD)/deps-prefix.new && mv $(BUILD)/deps-prefix.new $(BUILD)/deps-prefix

clean:
	rm -rf $(BUILD)

else # DEPS is the prefix of the musl-static dependencies

# ---- sources ----
# Every layer under agent/ except the agent-only entry point goes into the library that the
# agent, the host tools, the unit tests and the fuzz targets link.
LIB_SRCS := $(sort $(wildcard agent/*/*.c)) agent/cli.c agent/commands.c
AGENT_SRCS := agent/main.c agent/version.c agent/pid1.c
TEST_SRCS := $(sort $(wildcard tests/*/test_*.c))
FUZZ_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))

# Protobuf messages: nanopb-proto/X.proto (+ X.options) -> build/gen/X.pb.[ch], generated with
# Debian's nanopb generator. The nanopb runtime is compiled from the pinned source package
# (installed into the deps prefix) in every build, with PB_DEFS, so runtime and generated code
# always agree on the options.
PROTOS := $(sort $(wildcard nanopb-proto/*.proto))
PB_GEN_C := $(patsubst nanopb-proto/%.proto,$(BUILD)/gen/%.pb.c,$(PROTOS))
PB_GEN_H := $(PB_GEN_C:.c=.h)
PB_SRC := $(DEPS)/src/nanopb
PB_RUNTIME := pb_common pb_encode pb_decode
PB_DEFS := -DPB_FIELD_32BIT
LIB_SRCS += $(PB_GEN_C)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla
STD := -std=gnu11

# ---- the shipped agent: static musl, -Os, --gc-sections ----
MUSL_CC := musl-gcc -isystem $(BUILD)/kinc
# What keeps the stripped agent under 1 MiB (README "Size", make bench): no unwind tables, the
# same as deps/build.sh builds every dependency with (C is never unwound here; ~33 KiB of ours).
# Hardening stays: -z separate-code and -z relro are ld's defaults and are kept.
# -fno-pie: the agent and the tools are static EXEC files at fixed addresses, so GCC's default
# position-independent code only cost GOT loads (8 KiB of ours). -flto with -Oz: one unit,
# where calls across files inline or vanish (8 KiB, 4 KiB more from -Oz). The crypto that
# is timed (BearSSL, nettle, argon2 in libcryptsetup) is the dependencies', built with -Os.
SIZE_CFLAGS := -fno-asynchronous-unwind-tables -fno-unwind-tables
MUSL_CFLAGS := $(STD) $(WARN) -Oz -fno-pie -flto=auto -ffunction-sections -fdata-sections $(SIZE_CFLAGS) $(PB_DEFS) \
	-Iagent -I$(BUILD)/gen -I$(PB_SRC) -I$(DEPS)/include -I$(DEPS)/include/bearssl
MUSL_LDFLAGS := -static -no-pie -Wl,--gc-sections -flto=auto -Oz
# The musl objects depend on their flags (and so on the deps prefix they name): a changed flag
# rebuilds them instead of linking stale objects.
MUSL_FLAGS_STAMP := $(BUILD)/musl/cflags.txt
$(shell mkdir -p $(BUILD)/musl && { echo '$(MUSL_CFLAGS)' | cmp -s - $(MUSL_FLAGS_STAMP) || \
	echo '$(MUSL_CFLAGS)' >$(MUSL_FLAGS_STAMP); })
MUSL_LIBS := -L$(DEPS)/lib -lhogweed \
	$(shell PKG_CONFIG_LIBDIR=$(DEPS)/lib/pkgconfig pkg-config --static --libs libcryptsetup) \
	-lnghttp2 -ltss2-sys -ltss2-mu -ltss2-tcti-device $(BUILD)/lib/libtss2-tcti-swtpm.a -ltss2-rc \
	-lbearssl $(BUILD)/lib/libsodium.a -lz
# archives the Makefile adapts from the prefix (rules below)
MUSL_LIB_DEPS := $(BUILD)/lib/libtss2-tcti-swtpm.a $(BUILD)/lib/libsodium.a
MUSL_OBJS := $(patsubst %.c,$(BUILD)/musl/%.o,$(LIB_SRCS)) $(PB_RUNTIME:%=$(BUILD)/musl/nanopb/%.o)

# ---- the test build: host compiler, Debian's -dev libraries, ASan + UBSan ----
TEST_CC := gcc
SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
TEST_CFLAGS := $(STD) $(WARN) -g -O1 $(SAN) $(PB_DEFS) -Iagent -Itests -I$(BUILD)/gen -I$(PB_SRC) \
	-I/usr/include/bearssl
TEST_LIBS := -lbearssl -lnghttp2 -lsodium -lz -ltss2-sys -ltss2-mu -ltss2-tcti-device \
	-ltss2-tcti-swtpm -ljson-c -lcryptsetup -ldevmapper -lhogweed -lnettle -lgmp
TEST_OBJS := $(patsubst %.c,$(BUILD)/test/%.o,$(LIB_SRCS)) $(PB_RUNTIME:%=$(BUILD)/test/nanopb/%.o)
TEST_BINS := $(patsubst tests/%.c,$(BUILD)/test/bin/%,$(TEST_SRCS))

# ---- libFuzzer targets: clang, same sources ----
FUZZ_CC := clang
FUZZ_CFLAGS := $(STD) -Wall -Wextra -Werror -g -O1 -fsanitize=address,undefined \
	-fno-sanitize-recover=all $(PB_DEFS) -Iagent -Itests -I$(BUILD)/gen -I$(PB_SRC) \
	-I/usr/include/bearssl
FUZZ_OBJS := $(patsubst %.c,$(BUILD)/fuzz/%.o,$(LIB_SRCS)) $(PB_RUNTIME:%=$(BUILD)/fuzz/nanopb/%.o)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/bin/%,$(FUZZ_SRCS))

.PHONY: all agent tools test run bench fuzz test-build fuzz-build
# Keep every intermediate (objects of the nanopb runtime, generated sources) for fast rebuilds.
.SECONDARY:
all: agent tools
agent: $(BUILD)/constel-agent $(BUILD)/constel-agent.stripped
TOOLS := $(patsubst tools/%.c,$(BUILD)/tools/%,$(wildcard tools/*.c))
tools: $(TOOLS)

$(BUILD)/kinc/.stamp:
	@mkdir -p $(BUILD)/kinc
	ln -sfn /usr/include/linux $(BUILD)/kinc/linux
	ln -sfn /usr/include/asm-generic $(BUILD)/kinc/asm-generic
	ln -sfn /usr/include/x86_64-linux-gnu/asm $(BUILD)/kinc/asm
	@touch $@

$(BUILD)/gen/deps_versions.h: deps/versions.txt VERSION
	@mkdir -p $(dir $@)
	{ echo '/* generated from deps/versions.txt and VERSION by the Makefile */'; \
	  echo '#define CONSTEL_VERSION "$(VERSION)"'; \
	  echo '#define DEPS_PINNED \'; \
	  awk '!/^#/ && NF == 3 { printf "\t{\"%s\", \"%s\", \"%s\"}, \\\n", $$1, $$2, $$3 }' $<; \
	  echo '	/* end */'; } >$@.tmp && mv $@.tmp $@

$(BUILD)/gen/%.pb.c $(BUILD)/gen/%.pb.h: nanopb-proto/%.proto $(wildcard nanopb-proto/*.options)
	@mkdir -p $(BUILD)/gen
	cd nanopb-proto && /usr/bin/python3 /usr/bin/nanopb_generator.py -q -D ../$(BUILD)/gen $*.proto

$(BUILD)/gen/blowfish_pi.h: agent/base/gen-blowfish-pi.py
	@mkdir -p $(dir $@)
	python3 $< >$@.tmp && mv $@.tmp $@

# Every object may include a generated header: generate them all first.
GEN_FIRST := | $(PB_GEN_H) $(BUILD)/gen/deps_versions.h $(BUILD)/gen/blowfish_pi.h

$(BUILD)/musl/%.o: %.c $(BUILD)/kinc/.stamp $(MUSL_FLAGS_STAMP) $(GEN_FIRST)
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/musl/nanopb/%.o: $(PB_SRC)/%.c $(BUILD)/kinc/.stamp $(MUSL_FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_CFLAGS) -c $< -o $@

# Both static TCTIs define Tss2_Tcti_Info (for the dynamic loader we do not use): keep the
# device one and make the swtpm one local, so the agent can open either.
$(BUILD)/lib/libtss2-tcti-swtpm.a: $(DEPS)/lib/libtss2-tcti-swtpm.a
	@mkdir -p $(dir $@)
	objcopy --localize-symbol=Tss2_Tcti_Info $< $@

# libsodium's argon2 and libcryptsetup's internal one define the same global functions
# (finalize, initialize, fill_memory_blocks, ...); sodium_init pulls libsodium's in. Our copy
# of libsodium renames its side of every clash (definitions and references alike), so each
# library keeps calling its own argon2.
$(BUILD)/lib/libsodium.a: $(DEPS)/lib/libsodium.a $(DEPS)/lib/libcryptsetup.a
	@mkdir -p $(dir $@)
	comm -12 <(nm -g --defined-only $< 2>/dev/null | awk 'NF == 3 {print $$3}' | sort -u) \
		<(nm -g --defined-only $(DEPS)/lib/libcryptsetup.a 2>/dev/null | \
		awk 'NF == 3 {print $$3}' | sort -u) | awk '{print $$1, "constel_sodium_" $$1}' >$@.syms
	objcopy --redefine-syms=$@.syms $< $@

$(BUILD)/libconstel.a: $(MUSL_OBJS)
	rm -f $@ && gcc-ar rcs $@ $^ # gcc-ar: the archive's index must see the LTO objects' symbols

$(BUILD)/constel-agent: $(patsubst %.c,$(BUILD)/musl/%.o,$(AGENT_SRCS)) $(BUILD)/libconstel.a \
		$(MUSL_LIB_DEPS)
	$(MUSL_CC) $(MUSL_LDFLAGS) -Wl,-Map=$@.map -o $@ $(filter %.o %/libconstel.a,$^) \
		$(MUSL_LIBS)

$(BUILD)/constel-agent.stripped: $(BUILD)/constel-agent
	strip -s -o $@ $<

$(BUILD)/test/%.o: %.c $(GEN_FIRST)
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/test/nanopb/%.o: $(PB_SRC)/%.c
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) -c $< -o $@

$(BUILD)/test/libconstel.a: $(TEST_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/test/bin/%: $(BUILD)/test/tests/%.o $(BUILD)/test/tests/harness.o $(BUILD)/test/libconstel.a
	@mkdir -p $(dir $@)
	$(TEST_CC) $(SAN) -o $@ $^ $(TEST_LIBS)

$(BUILD)/fuzz/%.o: %.c $(GEN_FIRST)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(BUILD)/fuzz/nanopb/%.o: $(PB_SRC)/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/bin/%: $(BUILD)/fuzz/tests/fuzz/%.o $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ $(TEST_LIBS)

# The agent built like the unit tests (host gcc, Debian's libraries, ASan + UBSan). The
# host-mode node tests run it: the static agent's libcryptsetup (nettle backend) encrypts the
# keyslot area through the kernel's AF_ALG xts(aes) or through device-mapper, and a CI
# machine may have neither; Debian's libcryptsetup does it in userspace.
$(BUILD)/test/constel-agent: $(patsubst %.c,$(BUILD)/test/%.o,$(AGENT_SRCS)) \
		$(BUILD)/test/libconstel.a
	$(TEST_CC) $(SAN) -o $@ $^ $(TEST_LIBS)

# A host tool of the QEMU boots: a node's swtpm state provisioned as a cloud's vTPM before the
# guest runs (tests/attest/vtpm_provision.h's logic; qemu-tests/cloud-cluster.sh). Not under
# test/bin: tests/run.sh runs every program there as a unit test.
$(BUILD)/test/tools/vtpm-provision: $(BUILD)/test/tests/attest/vtpm_provision_tool.o \
		$(BUILD)/test/libconstel.a
	@mkdir -p $(dir $@)
	$(TEST_CC) $(SAN) -o $@ $^ $(TEST_LIBS)

test-build: $(TEST_BINS) $(BUILD)/test/constel-agent $(BUILD)/bench/attest_bench \
		$(BUILD)/test/tools/vtpm-provision
fuzz-build: $(FUZZ_BINS)

test: agent tools test-build fuzz-build $(BUILD)/vm/guest_disk $(BUILD)/vm/guest_audit $(BUILD)/vm/guest_state_disk $(BUILD)/vm/standin $(BUILD)/vm/netprobe \
		$(BUILD)/vm/preinit $(BUILD)/vm/sev_guest_fake $(BUILD)/vm/sev_guest_probe $(BUILD)/vm/gce_pcr0 \
		$(BUILD)/initrd.img $(BUILD)/bench/join_bench uki measurements image
	@tests/run.sh

# The main job: a control plane initialised and a worker joined and rebooted under QEMU, the
# agent as PID 1, each node a measured boot of the UKI with the measurements enforced
# (qemu-tests/run-main.sh). RUN_CSP=gcp|azure|aws|openstack make run (as root: a network
# namespace): the same cluster booted as that cloud, its DHCP lease and node-local endpoints
# faked in the namespace (qemu-tests/run-cloud.sh, docs/cluster-clouds.md).
run: agent tools $(BUILD)/vm/standin $(BUILD)/initrd.img uki measurements
	@BUILD=$(BUILD) RUN_CSP=$(RUN_CSP) qemu-tests/run-main.sh

# ---- the agent's initrd (initrd/build.sh): the stripped agent as /init, the static mke2fs,
# the modules of initrd/modules.txt for the kernel the QEMU tests boot, this machine's CA
# bundle (ca-certificates); gzip, reproducible.
.PHONY: initrd
initrd: $(BUILD)/initrd.img
$(BUILD)/initrd.img: $(BUILD)/constel-agent.stripped $(DEPS)/sbin/mke2fs initrd/mkinitrd.py \
		initrd/build.sh initrd/modules.txt $(wildcard /etc/ssl/certs/ca-certificates.crt)
	BUILD=$(BUILD) DEPS=$(DEPS) initrd/build.sh $@

# ---- the measured boot (image/README.md): the UKI of that initrd with Debian's systemd-stub
# and the kernel the QEMU tests boot, byte for byte reproducible (image/uki.py); its FAT ESP;
# the PCRs a node booting it directly from UEFI firmware must quote (image/measure.py).
.PHONY: uki measurements
uki: $(BUILD)/constel.efi $(BUILD)/constel-esp.img
measurements: $(BUILD)/measurements.json
$(BUILD)/constel.efi: $(BUILD)/initrd.img image/uki.py image/qemu-node.cmdline image/qemu-node.os-release
	eval "$$(qemu-tests/kernel.sh)" && image/uki.py --linux "$$BZIMAGE" --initrd $< \
		--cmdline image/qemu-node.cmdline --osrel image/qemu-node.os-release -o $@
	sha256sum $@
$(BUILD)/constel-esp.img: $(BUILD)/constel.efi image/esp.sh
	image/esp.sh $@ $<
$(BUILD)/measurements.json: $(BUILD)/constel.efi image/measure.py
	image/measure.py --uki $< --zero 8,12,13,15 >$@.tmp && mv $@.tmp $@

# ---- the node image (image/README.md): mkosi 14's Debian root (squashfs + dm-verity), cached
# in /var/cache/constel-agent by its recipe; the UKI of the agent's initrd for that root's
# kernel, its ESP in the disk and the measurements, cached by the agent and initrd/ (seconds).
.PHONY: image
image: $(BUILD)/constel-agent.stripped $(DEPS)/sbin/mke2fs
	BUILD=$(BUILD) DEPS=$(DEPS) image/build.sh $(BUILD)/image

# Host tools: static musl programs on the agent's library, like the agent.
$(BUILD)/tools/%: $(BUILD)/musl/tools/%.o $(BUILD)/libconstel.a $(MUSL_LIB_DEPS)
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_LDFLAGS) -o $@ $(filter %.o %/libconstel.a,$^) $(MUSL_LIBS)

# Test programs that run as /init of a test initrd inside QEMU (tests/vm), built like the agent,
# with the harness side of such a program (tests/vm/guest.c).
$(BUILD)/vm/%: $(BUILD)/musl/tests/vm/%.o $(BUILD)/musl/tests/vm/guest.o $(BUILD)/libconstel.a \
		$(MUSL_LIB_DEPS)
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_LDFLAGS) -o $@ $(filter %.o %/libconstel.a,$^) $(MUSL_LIBS)

# The join-latency bench client, built exactly like the agent.
$(BUILD)/bench/join_bench: $(BUILD)/musl/tests/bench/join_bench.o $(BUILD)/libconstel.a \
		$(MUSL_LIB_DEPS)
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(MUSL_LDFLAGS) -o $@ $(filter %.o %/libconstel.a,$^) $(MUSL_LIBS)

# make bench's attestation variants on swtpm (tests/bench/attest-variants.sh), built like the
# unit tests: it runs the issuers' test fixtures (tests/attest/vtpm_fixture.h).
$(BUILD)/bench/attest_bench: $(BUILD)/test/tests/bench/attest_bench.o $(BUILD)/test/tests/harness.o \
		$(BUILD)/test/libconstel.a
	@mkdir -p $(dir $@)
	$(TEST_CC) $(SAN) -o $@ $^ $(TEST_LIBS)

bench: agent tools $(BUILD)/bench/join_bench $(BUILD)/bench/attest_bench $(BUILD)/vm/guest_disk $(BUILD)/vm/standin $(BUILD)/vm/netprobe \
		$(BUILD)/vm/floor_activate $(BUILD)/initrd.img uki
	@rm -f $(BUILD)/bench/figures-*.txt
	@echo "bench: $$(date -u '+%F %H:%M UTC'), $$(nproc) cores, load average $$(cut -d' ' -f1-3 /proc/loadavg), commit $$(git rev-parse --short HEAD 2>/dev/null)"; echo
	-@tests/bench/size.sh $(BUILD)
	@echo
	-@tests/bench/join-latency.sh $(BUILD)
	@echo
	-@tests/bench/joinservice.sh $(BUILD)
	@echo
	-@tests/bench/attest-variants.sh $(BUILD)
	@echo
	-@tests/bench/disk-vm.sh $(BUILD)
	-@echo; tests/bench/initrd.sh $(BUILD)
	-@echo; tests/bench/boot-vm.sh $(BUILD)
	-@echo; tests/bench/floor-vm.sh $(BUILD)
	-@echo; tests/bench/first-boot.sh $(BUILD)
	-@echo; tests/bench/measured-boot.sh $(BUILD)
	-@echo; tests/bench/hostile.sh $(BUILD)
	@echo; tests/bench/summary.sh $(BUILD)

FUZZ_TIME ?= 60
# Each target for FUZZ_TIME seconds, then one line of libFuzzer's final stats: executions,
# exec/s, coverage (cov: edges, ft: features) and the corpus size.
fuzz: fuzz-build
	@printf '%-22s %12s %8s %6s %7s %7s\n' target execs exec/s cov ft corpus
	@for f in $(FUZZ_BINS); do \
	  n=$$(basename $$f); mkdir -p $(BUILD)/fuzz/corpus/$$n; \
	  $$f -max_total_time=$(FUZZ_TIME) -timeout=10 -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/ \
	    $(BUILD)/fuzz/corpus/$$n tests/fuzz/corpus/$$n \
	    2>$(BUILD)/fuzz/$$n.log || { tail -40 $(BUILD)/fuzz/$$n.log; exit 1; }; \
	  d=$$(grep -E '^#[0-9]+[[:space:]]+DONE' $(BUILD)/fuzz/$$n.log | tail -1); \
	  printf '%-22s %12s %8s %6s %7s %7s\n' $$n \
	    $$(sed -n 's/^stat::number_of_executed_units: *//p' $(BUILD)/fuzz/$$n.log) \
	    $$(sed -n 's/^stat::average_exec_per_sec: *//p' $(BUILD)/fuzz/$$n.log) \
	    $$(echo "$$d" | sed -n 's/.* cov: \([0-9]*\).*/\1/p') \
	    $$(echo "$$d" | sed -n 's/.* ft: \([0-9]*\).*/\1/p') \
	    $$(echo "$$d" | sed -n 's/.* corp: \([0-9]*\)\/.*/\1/p'); \
	done

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

endif
