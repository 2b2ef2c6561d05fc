# fencebench: plain GNU make.
#
#   make                         build the library, ./fencebench and the tests
#   make test                    build and run every cmocka test
#   make SANITIZE=address,undefined test
#   make SANITIZE=thread test    sanitizer builds, each in its own build dir
#   make run                     build and run the default benchmark
#   make install PREFIX=/usr/local DESTDIR=
#   make clean
#
# Objects go to build/<flavour>/; a change of compiler or flags rebuilds
# everything (the flags are recorded in build/<flavour>/.flags).

# A plain `make` compiles on every CPU (a clean build takes half the time
# on two); a -jN on the command line still wins.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
PKG_CONFIG ?= pkg-config
SANITIZE ?=
OPT      ?= -O2
# jemalloc for real runs; the sanitizers bring their own allocator.
MALLOC   ?= $(if $(SANITIZE),libc,jemalloc)

comma := ,
ifeq ($(SANITIZE),)
FLAVOUR := release
else
FLAVOUR := $(subst $(comma),-,$(SANITIZE))
endif
B := build/$(FLAVOUR)
# make V=1 shows every command.
Q := $(if $(V),,@)

# Checked (and installed with apt-get when root) before anything compiles.
# The ZooKeeper C client ships no .pc file: its header is looked for.
DEPS_PKGS := jemalloc cmocka json-c hiredis libpq libcurl
ZK_HEADER ?= /usr/include/zookeeper/zookeeper.h
DEPS_OK := $(shell $(PKG_CONFIG) --exists $(DEPS_PKGS) 2>/dev/null && test -f $(ZK_HEADER) && echo yes)

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# x86-64: -mcx16 for the 16-byte CAS; -mprfchw so that a prefetch for
# writing (fb_feed_prefetch) asks for the line to own, not to share (Intel
# before Broadwell runs the instruction as a no-op).
ARCH     := $(if $(filter x86_64,$(shell uname -m)),-mcx16 -mprfchw,)
CFLAGS_ALL := -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) -g $(WARN) $(ARCH) -pthread \
              -MMD -MP $(CFLAGS)

# The layers, lowest first. Each directory sees its own headers and those of
# the layers below it, never above: a wrong include fails the build.
#   core/           the model: clocks, the lease table, the store, PRNG, histograms
#   inject/         faults: the decisions, the ports, plans, the delay line
#   backends/       engines behind two ops vectors (in-process, Redis, PostgreSQL),
#                   and the helpers they share (helpers.c)
#   backends/registry/  the registry: the one file that includes every engine;
#                   beside it the schemes (schemes.c), all the options know of them
#   bench/config/   the run's configuration: one table parses, helps, echoes, replays
#   bench/verify/   the checkers: history walk, lease witness, the offline history
#   bench/drive/    the cycle, once, and its two drivers (threads, simulator)
#   bench/report/   the summary, JSON and CSV, compare, plot
#   bench/tools/    the subcommands: floor, scenario, check
#   bench/cli/      main and the subcommand table
INC_core     := -Icore
INC_inject   := $(INC_core) -Iinject
INC_backends := $(INC_core) -Ibackends
INC_registry := $(INC_backends) -Ibackends/registry
INC_config   := $(INC_inject) -Ibackends -Ibackends/registry -Ibench/config
INC_verify   := $(INC_core) -Ibackends -Ibench/verify
INC_drive    := $(INC_config) -Ibench/verify -Ibench/drive
INC_report   := $(INC_drive) -Ibench/report
INC_tools    := $(INC_report) -Ibench/tools
INC_cli      := $(INC_tools) -Ibench/cli
INC_tests    := $(INC_cli) -Itests
$(B)/core/%.o:         INC := $(INC_core)
$(B)/inject/%.o:       INC := $(INC_inject)
$(B)/backends/%.o:     INC := $(INC_backends)
$(B)/backends/registry/%.o: INC := $(INC_registry)
$(B)/bench/config/%.o: INC := $(INC_config)
$(B)/bench/verify/%.o: INC := $(INC_verify)
$(B)/bench/drive/%.o:  INC := $(INC_drive)
$(B)/bench/report/%.o: INC := $(INC_report)
$(B)/bench/tools/%.o:  INC := $(INC_tools)
$(B)/bench/cli/%.o:    INC := $(INC_cli)
$(B)/tests/%.o:        INC := $(INC_tests)
LIBS_JSON := $(shell $(PKG_CONFIG) --libs json-c 2>/dev/null)
CFLAGS_JSON := $(shell $(PKG_CONFIG) --cflags json-c 2>/dev/null)
LIBS_CMOCKA := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)
# the real engines' client libraries: hiredis (Redis, Redlock), libpq,
# libcurl (etcd's JSON gateway) and the single-threaded ZooKeeper client
# (its I/O runs only when the worker drives it: a paused worker's session
# sends no heartbeat; libzookeeper-mt-dev's I/O thread would)
LIBS_ENGINES := $(shell $(PKG_CONFIG) --libs hiredis libpq libcurl 2>/dev/null) -lzookeeper_st
CFLAGS_JSON += $(shell $(PKG_CONFIG) --cflags hiredis libpq libcurl 2>/dev/null)
ifeq ($(MALLOC),jemalloc)
LIBS_MALLOC := $(shell $(PKG_CONFIG) --libs jemalloc 2>/dev/null)
CFLAGS_ALL += -DFB_JEMALLOC
endif
ifneq ($(SANITIZE),)
CFLAGS_ALL += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS_ALL += -fsanitize=$(SANITIZE)
endif
LDFLAGS_ALL += -pthread $(LDFLAGS)
LDLIBS_ALL := -latomic -lm $(LDLIBS)

CORE_SRC   := $(wildcard core/*.c)
BENCH_SRC  := $(wildcard bench/config/*.c bench/verify/*.c bench/drive/*.c bench/report/*.c \
                         bench/tools/*.c) $(wildcard inject/*.c) $(wildcard backends/*.c) \
              $(wildcard backends/registry/*.c)
# tests/test_cluster.c starts etcd and ZooKeeper clusters, too slow for
# `make test`: it is `make cluster-test` (issue 24)
CLUSTER_SRC := tests/test_cluster.c
TEST_SRC   := $(filter-out $(CLUSTER_SRC),$(wildcard tests/test_*.c))
TOOLS_SRC  := tests/corebench.c tests/fbproc.c tests/fbengine.c tests/servers.c tests/relay.c

LIB        := $(B)/libfencebench.a
BIN        := $(B)/fencebench
TESTS      := $(patsubst tests/%.c,$(B)/tests/%,$(TEST_SRC))
COREBENCH  := $(B)/corebench
MAN        := build/fencebench.1

CLUSTER_TEST := $(B)/tests/test_cluster

ALL_OBJ := $(patsubst %.c,$(B)/%.o,$(CORE_SRC) $(BENCH_SRC) bench/cli/main.c $(TEST_SRC) $(TOOLS_SRC) \
                                   $(CLUSTER_SRC))

.PHONY: all test run install uninstall clean bench man soak seeds swarm cluster-test verify-cost
.DELETE_ON_ERROR:
# The objects are kept: the tests' are intermediate files of the pattern
# rule that links them, which make would otherwise delete after the build
# with a line of `rm ...` at the end of `make run` and `make test`.
.SECONDARY: $(ALL_OBJ)

ifneq ($(DEPS_OK),yes)
# Missing build dependencies: install them (apt-get as root) or print the
# exact line, then start again with the same goal and variables.
all test run bench man install cluster-test:
	@./scripts/deps.sh
	@$(MAKE) --no-print-directory $@
else

all: $(BIN) fencebench $(TESTS) $(COREBENCH)

# Release builds leave ./fencebench at the top for the README's commands.
fencebench: $(BIN)
ifeq ($(FLAVOUR),release)
	@cp $(BIN) $@
endif

$(B)/.flags: FORCE
	@mkdir -p $(B)
	@echo '$(CC) $(CFLAGS_ALL) $(CFLAGS_JSON) $(LDFLAGS_ALL) $(LDLIBS_ALL) $(MALLOC)' | cmp -s - $@ \
	  || echo '$(CC) $(CFLAGS_ALL) $(CFLAGS_JSON) $(LDFLAGS_ALL) $(LDLIBS_ALL) $(MALLOC)' > $@
FORCE:

$(B)/%.o: %.c $(B)/.flags
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CFLAGS_ALL) $(INC) $(CFLAGS_JSON) -c $< -o $@

$(LIB): $(patsubst %.c,$(B)/%.o,$(CORE_SRC) $(BENCH_SRC))
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BIN): $(B)/bench/cli/main.o $(LIB)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_JSON) $(LIBS_ENGINES) $(LIBS_MALLOC) $(LDLIBS_ALL)

$(B)/tests/%: $(B)/tests/%.o $(B)/tests/fbproc.o $(B)/tests/fbengine.o $(B)/tests/servers.o \
             $(B)/tests/relay.o $(LIB)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CMOCKA) $(LIBS_JSON) $(LIBS_ENGINES) $(LDLIBS_ALL)

$(COREBENCH): $(B)/tests/corebench.o $(LIB)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_JSON) $(LIBS_ENGINES) $(LIBS_MALLOC) $(LDLIBS_ALL)

# What the tests use (servers, gnuplot, libfaketime) is installed first as
# root, else its apt-get line printed. Every test binary runs even after a
# failure; the target fails if any did. The last line counts the skipped
# tests and names the packages that would run them.
test: all
	@./scripts/deps.sh test
	@FB_BIN=$(abspath $(BIN)) FB_TESTS=$(abspath tests) $(if $(SANITIZE),FB_SANITIZED=1) \
	  ./scripts/run-tests.sh $(TESTS)

# Issue 24: leases on a three-member etcd cluster and a three-server
# ZooKeeper ensemble while their leader is killed or stopped (a few
# minutes: not part of `make test`; CI runs it).
cluster-test: all $(CLUSTER_TEST)
	@./scripts/deps.sh test
	@FB_BIN=$(abspath $(BIN)) FB_TESTS=$(abspath tests) $(if $(SANITIZE),FB_SANITIZED=1) \
	  ./scripts/run-tests.sh $(CLUSTER_TEST)

run: all
	./fencebench

# The soak: every fault, 64 threads, SOAK_SECONDS (default 60); flat RSS.
SOAK_SECONDS ?= 60
soak: all
	./scripts/soak.sh $(abspath $(BIN)) $(SOAK_SECONDS) build/soak

# A deterministic safety search: SEEDS seeds with every fault, stopping at the
# first fenced violation (CI runs it).
SEEDS ?= 1..200
seeds: all
	$(BIN) --deterministic --seeds $(SEEDS) --steps 100000 \
	  --faults pause,skew,delay,crash,renew,retry --lease-clock realtime --check-lease local

# The same search over configurations: each seed draws its own (--swarm).
swarm: all
	$(BIN) --deterministic --seeds $(SEEDS) --swarm -q -o build/swarm

# What verification costs: checked against --no-check, alternated, medians
# (scripts/verify-cost.sh: VC_THREADS, VC_ROUNDS, VC_D, VC_ARGS).
verify-cost: all
	./scripts/verify-cost.sh $(BIN)

# Single-thread cost of the core cycle beside the raw atomic floor, and of
# the lease chain's take of a record (in slot order, and out of it).
bench: all
	$(COREBENCH)

man: $(MAN)
# the adapter protocol (--store exec:COMMAND) is a section of its own
MAN_INCLUDE := scripts/adapters/protocol.h2m
$(MAN): $(BIN) $(MAN_INCLUDE)
	@mkdir -p $(dir $@)
	help2man --no-info --name='is your distributed lock a lease or a safety boundary?' \
	  --include $(MAN_INCLUDE) \
	  --version-string=$$($(BIN) --version | awk '{print $$2}') ./$(BIN) > $@.tmp && mv $@.tmp $@

install: all $(MAN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/fencebench
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/fencebench
	install -m 644 $(MAN) $(DESTDIR)$(PREFIX)/share/man/man1/fencebench.1
	install -m 644 $(LIB) $(DESTDIR)$(PREFIX)/lib/libfencebench.a
	install -m 644 core/*.h $(DESTDIR)$(PREFIX)/include/fencebench/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/fencebench $(DESTDIR)$(PREFIX)/share/man/man1/fencebench.1 \
	  $(DESTDIR)$(PREFIX)/lib/libfencebench.a
	rm -rf $(DESTDIR)$(PREFIX)/include/fencebench

endif

clean:
	rm -rf build fencebench

# ---- fuzzing: libFuzzer harnesses, built with clang -------------------------
#
#   make fuzz                    build tests/fuzz/fuzz_*.c (the duration, option,
#                                scenario, plan, store and lease adapter-reply and SQL-file parsers)
#                                and run each for
#                                FUZZ_SECONDS (default 30)
#   make fuzz FUZZ_SECONDS=10    CI's short run
#   make fuzz-build              build only
#
# Each harness links only the sources it drives, all under ASan and UBSan,
# into build/fuzz/. It runs on build/fuzz/corpus-NAME, seeded from
# tests/fuzz/corpus/NAME (what it finds stays out of the tree), with
# tests/fuzz/fuzz_NAME.dict. A crash, leak, UB report, input slower than
# 10 s or RSS above 2 GB fails the target and leaves the input as
# build/fuzz/fuzz_NAME-crash-* (replay: build/fuzz/fuzz_NAME FILE).
# libFuzzer's runtime is Debian's libclang-rt-14-dev, which clang only
# recommends.

CLANG        ?= clang
FUZZ_SECONDS ?= 30
FZ           := build/fuzz
FUZZ_NAMES   := duration options scenario plan list doc reply lease_reply sql
FUZZ_CFLAGS  := -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 $(WARN) $(ARCH) -pthread \
                -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer -MMD -MP $(INC_tests) $(CFLAGS_JSON)
# the engine harnesses link the engines, their registry and the client
# libraries; options.c knows the schemes alone (schemes.c), no engine
FUZZ_ENGINES      := $(wildcard backends/*.c backends/registry/*.c) core/lease.c core/store.c core/clock.c core/hist.c
FUZZ_SCHEMES      := backends/registry/schemes.c backends/url.c backends/helpers.c core/store.c core/clock.c
FUZZ_SRC_duration := bench/config/duration.c
FUZZ_SRC_options  := bench/config/options.c bench/config/duration.c inject/fault.c core/common.c $(FUZZ_SCHEMES)
FUZZ_SRC_scenario := bench/tools/scenario_parse.c bench/tools/scenario.c bench/config/duration.c core/common.c \
                     core/clock.c core/lease.c core/store.c
FUZZ_SRC_plan     := inject/plan.c inject/fault.c core/outfile.c core/stop.c
FUZZ_SRC_list     := bench/config/options.c bench/config/duration.c inject/fault.c core/common.c $(FUZZ_SCHEMES)
FUZZ_SRC_doc      := bench/report/compare.c bench/report/metrics.c bench/report/output.c
FUZZ_SRC_reply    := core/common.c $(FUZZ_ENGINES)
FUZZ_SRC_lease_reply := core/common.c $(FUZZ_ENGINES)
FUZZ_SRC_sql      := core/common.c $(FUZZ_ENGINES)
fuzz_objs = $(patsubst %.c,$(FZ)/%.o,tests/fuzz/fuzz_$(1).c $(FUZZ_SRC_$(1)))
FUZZ_BINS := $(patsubst %,$(FZ)/fuzz_%,$(FUZZ_NAMES))
FUZZ_OBJ  := $(sort $(foreach n,$(FUZZ_NAMES),$(call fuzz_objs,$(n))))

.PHONY: fuzz fuzz-build

fuzz-build: $(FUZZ_BINS)

# Rebuild when the compiler or flags change; check once that clang can
# link a libFuzzer binary at all.
$(FZ)/.flags: fuzz-force
	@mkdir -p $(FZ)
	@echo '$(CLANG) $(FUZZ_CFLAGS)' | cmp -s - $@ || { \
	  echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
	    | $(CLANG) -x c - -fsanitize=fuzzer,address,undefined -o $(FZ)/.check 2>/dev/null || { \
	    echo "fencebench: make fuzz needs clang and libFuzzer:" \
	         "apt-get install -y clang libclang-rt-14-dev" >&2; exit 1; }; \
	  rm -f $(FZ)/.check; echo '$(CLANG) $(FUZZ_CFLAGS)' > $@; }
fuzz-force:

$(FZ)/%.o: %.c $(FZ)/.flags
	@mkdir -p $(dir $@)
	$(Q)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(foreach n,$(FUZZ_NAMES),$(eval $(FZ)/fuzz_$(n): $(call fuzz_objs,$(n))))
# the client libraries only where a harness links the engines
FUZZ_LIBS := $(LIBS_JSON) $(LIBS_ENGINES)
$(FZ)/fuzz_duration $(FZ)/fuzz_options $(FZ)/fuzz_list $(FZ)/fuzz_scenario $(FZ)/fuzz_plan: FUZZ_LIBS :=
$(FZ)/fuzz_doc: FUZZ_LIBS := $(LIBS_JSON)
$(FUZZ_BINS):
	$(Q)$(CLANG) -fsanitize=fuzzer,address,undefined -pthread -o $@ $^ $(FUZZ_LIBS) -latomic -lm

# Every harness runs even after one failed; the target fails if any did.
fuzz: $(FUZZ_BINS)
	@fail=0; for n in $(FUZZ_NAMES); do \
	  mkdir -p $(FZ)/corpus-$$n && cp tests/fuzz/corpus/$$n/* $(FZ)/corpus-$$n/; \
	  dict=; [ ! -f tests/fuzz/fuzz_$$n.dict ] || dict=-dict=tests/fuzz/fuzz_$$n.dict; \
	  echo "== fuzz_$$n for $(FUZZ_SECONDS)s"; \
	  if $(FZ)/fuzz_$$n -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -timeout=10 \
	       -print_final_stats=1 -artifact_prefix=$(FZ)/fuzz_$$n- $$dict $(FZ)/corpus-$$n \
	       > $(FZ)/fuzz_$$n.log 2>&1; then \
	    awk '/^#[0-9]+.*cov:/ { cov = $$4; ft = $$6; corp = $$8 } \
	         /number_of_executed_units/ { runs = $$2 } /average_exec_per_sec/ { eps = $$2 } \
	         END { printf "   ok: %d runs, %d exec/s, cov %s, features %s, corpus %s\n", \
	               runs, eps, cov, ft, corp }' $(FZ)/fuzz_$$n.log; \
	  else \
	    tail -n 60 $(FZ)/fuzz_$$n.log; \
	    echo "   FAILED: fuzz_$$n (the whole log: $(FZ)/fuzz_$$n.log)"; fail=1; \
	  fi; \
	done; exit $$fail

-include $(FUZZ_OBJ:.o=.d)

-include $(ALL_OBJ:.o=.d)
