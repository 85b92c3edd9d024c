# bloomkit build. `make` builds everything that exists (it only checks that
# the build dependencies are present, and names any that are missing);
# `make deps` installs them (as root, with apt-get); `make test` runs the
# whole suite, `make bench` the benchmarks and `make fuzz` the fuzzer, each
# installing what it needs first when run as root; `make demo` runs the
# built-in example.

CC      ?= cc
PREFIX  ?= /usr/local
DESTDIR ?=
BUILD   ?= build

VERSION     := 0.1.0
SOVERSION   := 0

WARN    := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes
# Warnings are errors in CI (CI=true) and whenever WERROR=1.
ifneq ($(CI)$(WERROR),)
WARN    += -Werror
endif
OPT     ?= -O2 -g
# Public headers for everyone; the library's internal headers (src/*.h)
# only for the library and its own tests (LIB_INC), never for the tool or
# the module, which use the public API alone.
CFLAGS_ALL = $(WARN) $(OPT) -fPIC -Iinclude $(CFLAGS)
LIB_INC   := -Isrc
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

LIB_SRC   := $(sort $(wildcard src/*.c))
LIB_OBJ   := $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o)
LIB_SAN   := $(LIB_SRC:src/%.c=$(BUILD)/san/%.o)
# The tool's sources live in rooms (docs/LAYOUT.md): cli/ (its shared
# services), cli/cmd/ (one file per subcommand), cli/join/ (the `common`
# engine), cli/input/ (readers, lines, numbers). Headers are included by
# name, from any room.
CLI_SRC   := $(sort $(wildcard cli/*.c cli/*/*.c))
CLI_HDR   := $(wildcard cli/*.h cli/*/*.h)
CLI_INC   := -Icli -Icli/cmd -Icli/join -Icli/input
CLI_OBJ   := $(CLI_SRC:cli/%.c=$(BUILD)/cli/%.o)
# libbloomkit-redis (client/): the client side of a seen-set in Redis, a
# library of its own on Debian's libhiredis, so that libbloomkit keeps no
# network dependency; the tool links it for --redis.
NET_SRC   := $(sort $(wildcard client/*.c))
NET_OBJ   := $(NET_SRC:client/%.c=$(BUILD)/client/%.o)
NET_SAN   := $(NET_SRC:client/%.c=$(BUILD)/client-san/%.o)
NET_LIB   := $(BUILD)/libbloomkit-redis.a
# hiredis linked from its archive: the code is there only for --redis,
# and a shared library's loading would add its pages to every command's
# memory (common's --memory cap counts them)
NET_LIBS  := -l:libhiredis.a
RED_SRC   := $(sort $(wildcard redis/*.c))
RED_OBJ   := $(RED_SRC:redis/%.c=$(BUILD)/redis/%.o)
# Unit tests mirror the sources: tests/unit/lib/ for the library (src/),
# tests/unit/cli/ for the tool's shared modules (cli/), built as
# build/tests/test_NAME and build/tests/test_cli_NAME.
UNIT_LIB  := $(sort $(wildcard tests/unit/lib/test_*.c))
UNIT_CLI  := $(sort $(wildcard tests/unit/cli/test_*.c))
UNIT_NAME := $(UNIT_LIB:tests/unit/lib/%.c=%) $(UNIT_CLI:tests/unit/cli/test_%.c=test_cli_%)
UNIT_BIN  := $(UNIT_NAME:%=$(BUILD)/tests/%)
UNIT_SANB := $(UNIT_NAME:%=$(BUILD)/tests-san/%)
# test_cuckoo again over the cuckoo kind's portable code (see below)
UNIT_BIN  += $(BUILD)/tests/test_cuckoo_scalar
BENCH_SRC := $(sort $(wildcard bench/bench_*.c))
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

STATIC  := $(BUILD)/libbloomkit.a
SHARED  := $(BUILD)/libbloomkit.so.$(VERSION)
TOOL    := $(if $(CLI_SRC),$(BUILD)/bloomkit)
MODULE  := $(if $(RED_SRC),$(BUILD)/bloomkit.so)

.PHONY: all deps build-deps test unit-test demo bench install clean fuzz format python install-python
.DEFAULT_GOAL := all

all: build-deps $(STATIC) $(SHARED) $(NET_LIB) $(TOOL) $(MODULE)

# Build dependencies. `make deps`, and the goals that install what they
# need (test, demo, bench, fuzz), install them with apt-get when root; any other
# goal, `make` itself included, only checks and names what is missing.
INSTALL_GOALS := deps test demo bench fuzz
NEED_MODE := $(if $(filter $(INSTALL_GOALS),$(MAKECMDGOALS)),install,check)
deps:
	@sh scripts/need.sh build

build-deps:
	@sh scripts/need.sh $(if $(filter check,$(NEED_MODE)),--check) build

$(BUILD)/obj/%.o: src/%.c $(wildcard include/bloomkit/*.h src/*.h) | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LIB_INC) -c $< -o $@

$(BUILD)/san/%.o: src/%.c $(wildcard include/bloomkit/*.h src/*.h) | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LIB_INC) $(SAN_FLAGS) -c $< -o $@

$(STATIC): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libbloomkit-san.a: $(LIB_SAN)
	rm -f $@ && ar rcs $@ $^

$(SHARED): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libbloomkit.so.$(SOVERSION) -o $@ $^ -lm
	ln -sf libbloomkit.so.$(VERSION) $(BUILD)/libbloomkit.so.$(SOVERSION)
	ln -sf libbloomkit.so.$(VERSION) $(BUILD)/libbloomkit.so

$(BUILD)/cli/%.o: cli/%.c $(wildcard include/bloomkit/*.h) $(CLI_HDR) | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(CLI_INC) -c $< -o $@

$(BUILD)/client/%.o: client/%.c $(wildcard include/bloomkit/*.h) | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

$(BUILD)/client-san/%.o: client/%.c $(wildcard include/bloomkit/*.h) | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(SAN_FLAGS) -c $< -o $@

$(NET_LIB): $(NET_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libbloomkit-redis-san.a: $(NET_SAN)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bloomkit: $(CLI_OBJ) $(NET_LIB) $(STATIC)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(NET_LIBS) -lm -lpthread

$(BUILD)/redis/%.o: redis/%.c $(wildcard include/bloomkit/*.h redis/*.h) | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Iredis -c $< -o $@

$(BUILD)/bloomkit.so: $(RED_OBJ) $(LIB_OBJ)
	$(CC) -shared -o $@ $^ -lm

UNIT_DEPS := tests/unit/harness.c tests/unit/harness.h $(wildcard tests/unit/lib/*.h tests/unit/lib/*.inc)

$(BUILD)/tests/%: tests/unit/lib/%.c $(UNIT_DEPS) $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LIB_INC) -Itests/unit -o $@ $< tests/unit/harness.c $(STATIC) -lm -lpthread

# The cuckoo kind's portable code, what CPUs without SSE2 run, tested here
# too: test_cuckoo linked with src/cuckoo.c built -DBKI_CUCKOO_SCALAR, an
# object the linker takes before the archive's copy.
$(BUILD)/obj-scalar/cuckoo.o: src/cuckoo.c $(wildcard include/bloomkit/*.h src/*.h) | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LIB_INC) -DBKI_CUCKOO_SCALAR -c $< -o $@

$(BUILD)/tests/test_cuckoo_scalar: tests/unit/lib/test_cuckoo.c $(UNIT_DEPS) \
		$(BUILD)/obj-scalar/cuckoo.o $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LIB_INC) -Itests/unit -o $@ $< tests/unit/harness.c \
	    $(BUILD)/obj-scalar/cuckoo.o $(STATIC) -lm -lpthread

$(BUILD)/tests-san/%: tests/unit/lib/%.c $(UNIT_DEPS) $(BUILD)/libbloomkit-san.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LIB_INC) $(SAN_FLAGS) -Itests/unit -o $@ $< tests/unit/harness.c $(BUILD)/libbloomkit-san.a -lm -lpthread

# Unit tests of the tool's shared modules (tests/unit/cli/test_NAME.c) link
# the cli objects they test as well.
CLI_TEST_MODS := input/input input/newlines input/normalize join/lineset join/spill options filter_inputs message \
                 input/numbers filterfile input/lines output progress lock input/keyform \
                 input/mapguard
CLI_SAN_OBJ := $(CLI_SRC:cli/%.c=$(BUILD)/cli-san/%.o)
$(CLI_SAN_OBJ): $(BUILD)/cli-san/%.o: cli/%.c $(wildcard include/bloomkit/*.h) $(CLI_HDR) | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(SAN_FLAGS) $(CLI_INC) -c $< -o $@

# The whole tool under ASan+UBSan, for the tool's tests with the
# sanitizers watching (tests/run.sh); not installed.
$(BUILD)/cli-san/bloomkit: $(CLI_SAN_OBJ) $(BUILD)/libbloomkit-redis-san.a $(BUILD)/libbloomkit-san.a
	$(CC) $(CFLAGS_ALL) $(SAN_FLAGS) -o $@ $^ $(NET_LIBS) -lm -lpthread

$(BUILD)/tests/test_cli_%: tests/unit/cli/test_%.c tests/unit/harness.c tests/unit/harness.h \
		$(CLI_TEST_MODS:%=$(BUILD)/cli/%.o) $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LIB_INC) -Itests/unit $(CLI_INC) -o $@ $< tests/unit/harness.c \
	    $(CLI_TEST_MODS:%=$(BUILD)/cli/%.o) $(STATIC) -lm -lpthread

$(BUILD)/tests-san/test_cli_%: tests/unit/cli/test_%.c tests/unit/harness.c tests/unit/harness.h \
		$(CLI_TEST_MODS:%=$(BUILD)/cli-san/%.o) $(BUILD)/libbloomkit-san.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(LIB_INC) $(SAN_FLAGS) -Itests/unit $(CLI_INC) -o $@ $< tests/unit/harness.c \
	    $(CLI_TEST_MODS:%=$(BUILD)/cli-san/%.o) $(BUILD)/libbloomkit-san.a -lm -lpthread

$(BUILD)/bench/%: bench/%.c $(wildcard bench/*.h) $(STATIC)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -O3 -march=native -Ibench -o $@ $< $(STATIC) $(BENCH_LDLIBS) -lm -lpthread

# The core-filter and first-adds benchmarks compare with Debian's libbloom
# (libbloom-dev).
$(BUILD)/bench/bench_filters: BENCH_LDLIBS = -lbloom
$(BUILD)/bench/bench_first_adds: BENCH_LDLIBS = -lbloom

# The whole suite: unit tests (plain, then ASan+UBSan), the tool's tests and
# the Redis module's tests, each printing "N passed, N failed"; the last
# line sums them.
test: deps all $(UNIT_BIN) $(UNIT_SANB) $(if $(CLI_SRC),$(BUILD)/cli-san/bloomkit) python
	@sh scripts/need.sh test
	@BUILD=$(BUILD) sh tests/run.sh

# One suite by name (tests/run.sh lists them): make test-cli, test-redis, ...
TEST_SUITES := unit unit-san install cli cli-san redis python docs
.PHONY: $(TEST_SUITES:%=test-%)
$(TEST_SUITES:%=test-%): deps all $(UNIT_BIN) $(UNIT_SANB) \
    $(if $(CLI_SRC),$(BUILD)/cli-san/bloomkit) python
	@sh scripts/need.sh test
	@BUILD=$(BUILD) sh tests/run.sh $(@:test-%=%)

unit-test: $(UNIT_BIN)
	@for t in $(UNIT_BIN); do $$t || exit 1; done

demo: all
	@sh scripts/demo.sh $(BUILD)

bench: all $(BENCH_BIN)
	@sh scripts/need.sh bench
	@BUILD=$(BUILD) sh bench/run.sh

# The Python package (python/): the extension bloomkit._bloomkit is built in
# place, linked statically against $(STATIC), so `PYTHONPATH=python` imports
# it. install-python installs it with pip, offline (Debian's system Python
# is externally managed: run it in a venv, or pass
# PIP_FLAGS=--break-system-packages or --user).
PY        ?= /usr/bin/python3
PIP_FLAGS ?=
python: $(STATIC)
	@sh scripts/need.sh python
	BLOOMKIT_STATIC_LIB=$(abspath $(STATIC)) $(PY) python/bkbuild.py --inplace >/dev/null

install-python: $(STATIC)
	@sh scripts/need.sh python
	BLOOMKIT_STATIC_LIB=$(abspath $(STATIC)) $(PY) -m pip install --no-index $(PIP_FLAGS) ./python

fuzz: deps
	@BUILD=$(BUILD) sh tests/fuzz/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/include/bloomkit $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 644 include/bloomkit/*.h $(DESTDIR)$(PREFIX)/include/bloomkit/
	install -m 644 $(STATIC) $(NET_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libbloomkit.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libbloomkit.so.$(SOVERSION)
	ln -sf libbloomkit.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libbloomkit.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' bloomkit.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/bloomkit.pc
	if [ -n "$(TOOL)" ]; then install -d $(DESTDIR)$(PREFIX)/bin && \
	    install -m 755 $(TOOL) $(DESTDIR)$(PREFIX)/bin/; fi
	if [ -n "$(MODULE)" ]; then install -d $(DESTDIR)$(PREFIX)/lib/bloomkit && \
	    install -m 755 $(MODULE) $(DESTDIR)$(PREFIX)/lib/bloomkit/; fi
	if ls docs/*.1 >/dev/null 2>&1; then install -d $(DESTDIR)$(PREFIX)/share/man/man1 && \
	    install -m 644 docs/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/; fi
	@# programs linked without pkg-config's run path find the library too
	@# (ldconfig only knows the system's directories: /usr and /usr/local)
	@case "$(DESTDIR):$(PREFIX)" in :/usr|:/usr/local) \
	    [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null && ldconfig || true ;; esac

format:
	clang-format -i include/bloomkit/*.h src/*.c src/*.h $(wildcard client/*.c cli/*.[ch] cli/*/*.[ch] redis/*.[ch] tests/unit/*.[ch] tests/unit/*/*.[ch] bench/*.c)

clean:
	rm -rf $(BUILD) python/build python/*.egg-info python/bloomkit/*.so
