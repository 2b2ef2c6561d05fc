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
DEPS_PKGS := jemalloc cmocka json-c
DEPS_OK := $(shell $(PKG_CONFIG) --exists $(DEPS_PKGS) 2>/dev/null && echo yes)

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
ARCH     := $(if $(filter x86_64,$(shell uname -m)),-mcx16,)
CFLAGS_ALL := -std=c11 -D_POSIX_C_SOURCE=200809L $(OPT) -g $(WARN) $(ARCH) -pthread \
              -MMD -MP -Icore -Iinject -Ibench $(CFLAGS)
LIBS_JSON := $(shell $(PKG_CONFIG) --libs json-c 2>/dev/null)
CFLAGS_JSON := $(shell $(PKG_CONFIG) --cflags json-c 2>/dev/null)
LIBS_CMOCKA := $(shell $(PKG_CONFIG) --libs cmocka 2>/dev/null)
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

CORE_SRC   := core/common.c core/clock.c core/lease.c core/store.c
BENCH_SRC  := $(filter-out bench/main.c,$(wildcard bench/*.c)) $(wildcard inject/*.c)
TEST_SRC   := $(wildcard tests/test_*.c)
TOOLS_SRC  := tests/corebench.c

LIB        := $(B)/libfencebench.a
BIN        := $(B)/fencebench
TESTS      := $(patsubst tests/%.c,$(B)/tests/%,$(TEST_SRC))
COREBENCH  := $(B)/corebench
MAN        := build/fencebench.1

ALL_OBJ := $(patsubst %.c,$(B)/%.o,$(CORE_SRC) $(BENCH_SRC) bench/main.c $(TEST_SRC) $(TOOLS_SRC))

.PHONY: all test run install uninstall clean bench man
.DELETE_ON_ERROR:

ifneq ($(DEPS_OK),yes)
# Missing build dependencies: install them (apt-get as root) or print the
# exact line, then start again with the same goal and variables.
all test run bench man install:
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
	$(Q)$(CC) $(CFLAGS_ALL) $(CFLAGS_JSON) -c $< -o $@

$(LIB): $(patsubst %.c,$(B)/%.o,$(CORE_SRC) $(BENCH_SRC))
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BIN): $(B)/bench/main.o $(LIB)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_JSON) $(LIBS_MALLOC) $(LDLIBS_ALL)

$(B)/tests/%: $(B)/tests/%.o $(LIB)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_CMOCKA) $(LIBS_JSON) $(LDLIBS_ALL)

$(COREBENCH): $(B)/tests/corebench.o $(LIB)
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $^ $(LIBS_MALLOC) $(LDLIBS_ALL)

# Every test binary runs even after a failure; the target fails if any did.
test: all
	@FB_BIN=$(abspath $(BIN)) FB_TESTS=$(abspath tests) $(if $(SANITIZE),FB_SANITIZED=1) \
	  ./scripts/run-tests.sh $(TESTS)

run: all
	./fencebench

# Single-thread cost of the core cycle beside the raw atomic floor.
bench: all
	$(COREBENCH)

man: $(MAN)
$(MAN): $(BIN)
	@mkdir -p $(dir $@)
	help2man --no-info --name='is your distributed lock a lease or a safety boundary?' \
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

-include $(ALL_OBJ:.o=.d)
