# bpfbox build. `make` builds, `make run` shows the main job, `make test`
# runs every test; both install their dependencies first (`make deps`).

BUILD     ?= build
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= bpftool
ARCH      := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VERSION   := 0.1.0
PREFIX    ?= /usr/local
GIT_REV   := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# The builds make test and make test-asan start compile on every CPU (each
# object waits for the generated headers, so the order holds).
JOBS      ?= $(shell nproc 2>/dev/null || echo 1)

WARN      := -Wall -Wextra -Werror
# CFLAGS and LDFLAGS are the user's (the ASan build sets them); the
# project's own flags are always added.
CFLAGS    ?= -O2 -g
ALL_CFLAGS := $(WARN) -Wno-missing-field-initializers -std=gnu11 -D_GNU_SOURCE \
	     -I$(BUILD) -Iinclude -DBPFBOX_VERSION='"$(VERSION)"' \
	     -DBPFBOX_GIT_REV='"$(GIT_REV)"' $(CFLAGS)
# Static libraries: a sandbox that wraps every tool call must start fast,
# and dynamic symbol resolution of five libraries costs ~0.2 ms per run.
# The kernel's BTF is parsed once per load, not once per object
# (userspace/probe/kbtf.c wraps libbpf's reader and its free).
WRAPS     := -Wl,--wrap=btf__load_vmlinux_btf,--wrap=btf__free \
	     -Wl,-u,__wrap_btf__load_vmlinux_btf,-u,__wrap_btf__free
LDLIBS    := -Wl,-Bstatic -lbpf -lelf -lz -ljson-c -lncursesw -ltinfo -Wl,-Bdynamic $(WRAPS)
# Attack programs and helpers run as they would in the wild: never sanitized.
HELPER_CFLAGS := -O2 -g $(WARN) -std=gnu11 -D_GNU_SOURCE
BPF_CFLAGS := -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Iinclude $(WARN) \
	      -Wno-unused-parameter

BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))
LIB_SRCS  := $(filter-out %/seccomp_rules.c userspace/cli/%,$(wildcard userspace/*/*.c))
LIB_OBJS  := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
CLI_SRCS  := $(wildcard userspace/cli/*.c)
CLI_OBJS  := $(patsubst %.c,$(BUILD)/obj/%.o,$(CLI_SRCS))
LIB       := $(BUILD)/libbpfbox.a
BIN       := $(BUILD)/bin/bpfbox

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
HELPER_SRCS := $(wildcard tests/escape/*.c tests/helpers/*.c)
HELPER_BINS := $(patsubst %.c,$(BUILD)/tests/bin/%,$(notdir $(HELPER_SRCS)))

VMLINUX_H := $(BUILD)/vmlinux.h
GEN_HDRS  := $(SKELS) $(BUILD)/seccomp_filters.h

.PHONY: check all deps run test test-unit test-host test-vm test-asan bench clean format format-check fuzz \
	install uninstall
.DELETE_ON_ERROR:
.SECONDARY:

all: $(BIN) $(UNIT_BINS) $(HELPER_BINS)

deps:
	@tools/deps.sh

# vmlinux.h from the running kernel's BTF; the committed copy when it has none.
$(VMLINUX_H):
	@mkdir -p $(@D)
	@if [ -r /sys/kernel/btf/vmlinux ]; then \
		$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@; \
	else \
		echo "no /sys/kernel/btf/vmlinux: using vmlinux/vmlinux.h"; \
		cp vmlinux/vmlinux.h $@; \
	fi

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) $(wildcard include/bpfbox/*.h bpf/*.h)
	@mkdir -p $(@D)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
	llvm-strip -g $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*_bpf) > $@

$(BUILD)/obj/%.o: %.c Makefile $(GEN_HDRS) $(wildcard include/bpfbox/*.h userspace/*/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

# The seccomp filters are compiled from libseccomp rules once, at build time.
$(BUILD)/gen_seccomp: tools/gen_seccomp.c userspace/sandbox/seccomp_rules.c \
		      userspace/sandbox/seccomp_rules.h Makefile
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) tools/gen_seccomp.c userspace/sandbox/seccomp_rules.c \
		-o $@ -lseccomp

$(BUILD)/seccomp_filters.h: $(BUILD)/gen_seccomp
	$< > $@

# Anew each time: ar never drops the member of a deleted source.
$(LIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(CLI_OBJS) $(LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ -o $@ $(LDLIBS)

# The shared test headers (scratch.h, unit_main.h, ...) are prerequisites too.
$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB) $(wildcard tests/unit/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -Iuserspace $< -o $@ $(LIB) $(LDLIBS) -lcmocka

$(BUILD)/tests/bin/%: tests/escape/%.c
	@mkdir -p $(@D)
	$(CC) $(HELPER_CFLAGS) $< -o $@ -lpthread

$(BUILD)/tests/bin/%: tests/helpers/%.c
	@mkdir -p $(@D)
	$(CC) $(HELPER_CFLAGS) $< -o $@ -lpthread

# The main job: a sandboxed session and what the host can enforce.
run: deps all
	@tools/demo.sh $(BIN)

# Static checks CI runs first: includes point down the layers, no cycles;
# every file a doc, man page or comment names exists; no file over 600
# lines nor function over 80 without a written reason (tools/lengths.allow
# lists those still to split); the C sources are as .clang-format writes
# them (make format).
check:
	@tools/check-layers
	@tools/check-lengths
	@tools/check-doc-refs
	@command -v clang-format >/dev/null || { echo "check: clang-format is missing; run 'make deps'" >&2; exit 1; }
	@clang-format --dry-run -Werror $(FORMAT_SRCS) || { echo "check: sources not formatted; run 'make format'" >&2; exit 1; }
	@echo "check-format: $(words $(FORMAT_SRCS)) files as .clang-format writes them"

test: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@tests/run.sh --build $(BUILD)

test-unit: all
	@tests/run.sh --build $(BUILD) --only unit

test-host: all
	@tests/run.sh --build $(BUILD) --only host

test-vm: all
	@tests/run.sh --build $(BUILD) --only vm

# The whole suite again under AddressSanitizer and UBSan, in its own tree.
test-asan: deps
	$(MAKE) -j$(JOBS) BUILD=build-asan CC=clang \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=address,undefined" all
	@echo "skip - test_packaging.sh under ASan: it builds its own package from the tree; make test runs it"
	@echo "skip - test_pause_setup.sh under ASan: its 20000-path policies make each run take seconds there (56 s of the 30-minute CI); make test runs it"
	@echo "skip - test_projects.sh under ASan: real toolchains (npm, cargo, javac, a 20,000-file git tree) exercise no more of bpfbox than make test's run; make test runs it"
	@echo "skip - test_race.sh under ASan: a rename race on the run path every suite takes; make test runs it 2,500 times"
	@ASAN_OPTIONS=detect_leaks=1 BPFBOX_ASAN=1 BPFBOX_HOST_SUITES="$(ASAN_HOST_SUITES)" \
		tests/run.sh --build build-asan --only unit,host

# The packaging suite uses no binary of the build it is given; the
# pause-in-set-up suite's slow set-ups on purpose are slower still under ASan;
# the real-project corpus runs toolchains, not more of bpfbox; the race
# suite runs the same `bpfbox run` path as every other suite, 2,500 times
# in make test, for a rename race, not a memory error (54 s under ASan).
ASAN_HOST_SUITES = $(filter-out tests/host/test_packaging.sh tests/host/test_pause_setup.sh \
	tests/host/test_projects.sh tests/host/test_race.sh,$(wildcard tests/host/test_*.sh))

# libFuzzer targets (clang, ASan+UBSan) of the redactor and the JSON writer.
FUZZ_SECONDS ?= 60
fuzz:
	@BUILD=$(BUILD) tests/fuzz/run.sh $(FUZZ_SECONDS)

bench: deps all
	@bench/run.sh $(BUILD)

install: $(BIN)
	@tools/install.sh install BIN=$(BIN) PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

uninstall:
	@tools/install.sh uninstall PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)

# The C sources the style covers (.clang-format); vmlinux/ and the generated
# headers are not ours. `make format` rewrites them, `make format-check` only
# reports (clang-format --dry-run -Werror: one warning per line to change).
FORMAT_SRCS = $(wildcard userspace/*/*.[ch] bpf/*.[ch] include/bpfbox/*.h \
		tests/unit/*.[ch] tests/escape/*.c tools/*.c)

format:
	clang-format -i $(FORMAT_SRCS)

format-check:
	clang-format --dry-run -Werror $(FORMAT_SRCS)

clean:
	rm -rf $(BUILD) build-asan
