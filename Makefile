# sandgate — see README.md. `make`, `make test`, `make run`, `make install`.

CC	?= cc
CFLAGS	?= -O2 -g
PREFIX	?= /usr/local
DESTDIR	?=
B	?= build

SG_CFLAGS = -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -MMD -MP \
	    $(shell pkg-config --cflags libpq 2>/dev/null) $(CFLAGS)
LIBS	  = -lfcgi -lcurl -ljansson -lconfig -lsqlite3 -lpq -lcrypto -lseccomp

# The library every program links: one line per folder (each folder's
# README says what it owns and what it may include: tests/layers.txt).
LIB_SRC   = $(wildcard lib/*.c) $(wildcard store/*.c) \
	    $(wildcard providers/*.c) $(wildcard providers/sandboxd/*.c) \
	    $(wildcard core/http/*.c) $(wildcard core/config/*.c) \
	    $(wildcard core/state/*.c) $(wildcard core/upstream/*.c) \
	    $(wildcard core/render/*.c) $(wildcard core/loop/*.c) \
	    $(wildcard core/api/*.c) $(wildcard core/mcp/*.c)
FCGI_SRC  = $(wildcard fcgi/*.c)
CLI_SRC   = $(wildcard cli/*.c)
UNIT_SRC  = $(wildcard tests/unit/test_*.c)
FUZZ_SRC  = $(wildcard fuzz/fuzz_*.c)

LIB_OBJ   = $(LIB_SRC:%.c=$(B)/obj/%.o) $(B)/obj/gen/console_files.o
FCGI_OBJ  = $(FCGI_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ   = $(CLI_SRC:%.c=$(B)/obj/%.o)
UNITS     = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
REPLAYS   = $(FUZZ_SRC:fuzz/%.c=$(B)/replay/%)
FUZZ_SECONDS ?= 60

SAN_FLAGS = -O1 -g -fsanitize=address,undefined,float-cast-overflow \
	    -fno-omit-frame-pointer -fno-sanitize-recover=all

all: $(B)/sandgate-fcgi $(B)/sandgate

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(SG_CFLAGS) -c $< -o $@

# The console's files (console/), embedded into the library as C arrays
# by a tool built for this machine (tools/embed.c): the binary serves
# them, nothing is installed beside it. The READMEs stay out; a vendored
# library's LICENSE is served with it.
CONSOLE_FILES = $(shell find console -type f ! -name README.md \
		  2>/dev/null | LC_ALL=C sort)

$(B)/tools/embed: tools/embed.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -Wall -Wextra -Werror -O2 -o $@ $< -lcrypto

# Made every build (a file taken away changes no date make could see),
# replaced only when it changed: then only it recompiles.
$(B)/gen/console_files.c: $(B)/tools/embed FORCE
	@mkdir -p $(@D)
	@$(B)/tools/embed $@.tmp console $(CONSOLE_FILES) 2>/dev/null
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; \
	    echo "embed: console/ into $@"; fi

FORCE:

$(B)/obj/gen/console_files.o: $(B)/gen/console_files.c
	@mkdir -p $(@D)
	$(CC) $(SG_CFLAGS) -I. -c $< -o $@

$(B)/libsandgate.a: $(LIB_OBJ)
	$(AR) rcs $@ $^

$(B)/sandgate-fcgi: $(FCGI_OBJ) $(B)/libsandgate.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/sandgate: $(CLI_OBJ) $(B)/libsandgate.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tests/%: $(B)/obj/tests/unit/%.o $(B)/libsandgate.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) $(UNIT_WRAP) -o $@ $^ $(LIBS) -lcmocka

# A test that stands in for a function of the library: the linker sends
# every call of it to the test's __wrap_ one (ld --wrap), whatever else
# the library holds. test_org_usage makes up the ledger's sums.
$(B)/tests/test_org_usage: UNIT_WRAP = -Wl,--wrap=sg_store_use_sum
# test_mcp_tools makes up the MCP session (its sandbox, progress, errors)
# and the runs in its sandbox.
$(B)/tests/test_mcp_tools: UNIT_WRAP = -Wl,--wrap=sg_mcp_sandbox \
	-Wl,--wrap=sg_mcp_sandbox_peek -Wl,--wrap=sg_mcp_sandbox_end \
	-Wl,--wrap=sg_mcp_stopped -Wl,--wrap=sg_mcp_progress \
	-Wl,--wrap=sg_mcp_err -Wl,--wrap=sg_sbx_run
# test_after stands in for the delete a request leaves for after its answer.
$(B)/tests/test_after: UNIT_WRAP = -Wl,--wrap=sg_sbx_delete
# test_sbxd_cgput interrupts the library's writes (EINTR) as a pending
# signal makes cgroup v1's memory limits do.
$(B)/tests/test_sbxd_cgput: UNIT_WRAP = -Wl,--wrap=write

units: $(UNITS)

# The floor `make bench` measures against: a bare libfcgi responder.
$(B)/bench/floor: $(B)/obj/bench/floor.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lfcgi

# The passthrough's floor: libfcgi and libcurl alone, forwarding upstream.
$(B)/bench/proxyfloor: $(B)/obj/bench/proxyfloor.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lfcgi -lcurl

# One bare libcurl transfer at a time: its instructions, its wall time.
$(B)/bench/curl_floor: $(B)/obj/bench/curl_floor.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcurl

# A code round's HTTP exchanges alone, against the fakes: the loop's floor.
$(B)/bench/loop_floor: $(B)/obj/bench/loop_floor.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lcurl

# The machine's own stalls (and a spinner that keeps a core from halting).
$(B)/bench/stalls: $(B)/obj/bench/stalls.o
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^

# Each fuzz target as a plain program that replays files (fuzz/replay.c).
$(B)/replay/%: $(B)/obj/fuzz/%.o $(B)/obj/fuzz/replay.o $(B)/libsandgate.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

replays: $(REPLAYS)

# The fuzz targets under libFuzzer with ASan+UBSan (clang), each for
# FUZZ_SECONDS over its seed corpus (fuzz/corpus/NAME, read only) and a
# working corpus in build/fuzz/corpus/NAME. A crash stops it with the input
# saved as build/fuzz/crash-*: copy it to fuzz/regress/NAME/ and fix.
FUZZ_CFLAGS = -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
	      -fno-sanitize-recover=all -fno-omit-frame-pointer -Wno-error
fuzz:
	@sh tests/install-deps.sh fuzz
	$(MAKE) B=build/fuzz CC=clang CFLAGS="$(FUZZ_CFLAGS)" build/fuzz/libsandgate.a \
	    $(FUZZ_SRC:fuzz/%.c=build/fuzz/obj/fuzz/%.o)
	@set -e; for t in $(FUZZ_SRC:fuzz/%.c=%); do \
		clang $(FUZZ_CFLAGS) -fsanitize=fuzzer -o build/fuzz/$$t \
		    build/fuzz/obj/fuzz/$$t.o build/fuzz/libsandgate.a $(LIBS); \
		mkdir -p build/fuzz/corpus/$$t fuzz/corpus/$$t fuzz/regress/$$t; \
		echo "== fuzz $$t for $(FUZZ_SECONDS) s"; \
		(cd build/fuzz && LSAN_OPTIONS=suppressions=../../fuzz/lsan.supp \
		    ./$$t -max_total_time=$(FUZZ_SECONDS) \
		    -print_final_stats=1 corpus/$$t ../../fuzz/corpus/$$t \
		    ../../fuzz/regress/$$t > $$t.log 2>&1) || \
		    { tail -n 40 build/fuzz/$$t.log; exit 1; }; \
		grep -E "^stat::(number_of_executed_units|new_units_added)|^#[0-9]+[[:space:]]+DONE" \
		    build/fuzz/$$t.log || true; \
	done

# Every figure against a baseline from the same run, a few minutes,
# loopback only: the FastCGI floor, /healthz and passthrough at 1, 16 and
# 64 connections, the interception loop, memory, the local sandbox.
# Writes bench/RESULTS.md (its "make bench" part); BENCH_SECS per row.
bench: all $(B)/bench/floor $(B)/bench/proxyfloor $(B)/bench/curl_floor \
	    $(B)/bench/loop_floor $(B)/bench/stalls
	@sh tests/install-deps.sh bench
	sh bench/run.sh

# 2000 mixed requests (SOAK_N) through the real stack while the fakes
# inject faults and a responder is SIGKILLed every ~2 s; then every answer
# must be well-formed, every death one of ours, no sandbox leaked, the
# store intact (tests/soak). soak-asan: the same on the ASan+UBSan build.
SOAK_N ?= 2000
soak: deps all
	sh tests/soak/run.sh $(SOAK_N)

soak-asan: deps asan
	SOAK_BUILD=build/asan sh tests/soak/run.sh $(SOAK_N)

# A Debian package (packaging/deb: binaries, kernel files, the config as
# a conffile, the sandgate user, /var/lib/sandgate, the --listen unit,
# the web-server samples), built in build/deb-out.
deb:
	sh packaging/deb/build.sh $(B)/deb-out

# The same tree, built with ASan+UBSan, in build/asan.
asan:
	$(MAKE) B=build/asan CFLAGS="$(SAN_FLAGS)" LDFLAGS="-fsanitize=address,undefined,float-cast-overflow" all units replays

deps:
	@sh tests/install-deps.sh

unit: all units
	@sh tests/run-units.sh $(B)

# Which folder may include which (tests/layers.txt), held against every
# #include and every call between files: first in make test, and alone.
layers:
	node tests/layers.mjs

# The unit runs get a throwaway PostgreSQL cluster with a database sgunit
# (SG_TEST_PG, see tests/run-units.sh), stopped after them however they
# end; the integration suite starts its own for its PostgreSQL pass.
test: deps
	node tests/layers.mjs
	$(MAKE) all units
	$(MAKE) asan
	sh tests/pg/with-db.sh sgunit sh -c 'sh tests/run-units.sh build && \
	    sh tests/run-units.sh build/asan && sh tests/run-units.sh build valgrind'
	sh fuzz/replay.sh build/asan
	sh tests/integration/run.sh

# Installs only what serving needs (tests/install-deps.sh serve), builds
# and serves etc/sandgate-dev.conf; the test dependencies are make test's.
run:
	@sh tests/install-deps.sh serve
	$(MAKE) all
	sh etc/run-dev.sh

# sandgate.conf(5) is docs/configuration.md in roff (man/md2man.awk).
$(B)/man/sandgate.conf.5: docs/configuration.md man/sandgate.conf.5.in man/md2man.awk
	@mkdir -p $(@D)
	LC_ALL=C awk -f man/md2man.awk docs/configuration.md man/sandgate.conf.5.in > $@.tmp
	mv $@.tmp $@

install: all $(B)/man/sandgate.conf.5
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/sandgate
	install -m 0755 $(B)/sandgate-fcgi $(B)/sandgate $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 etc/sandgate.conf lighttpd.conf.example \
		$(DESTDIR)$(PREFIX)/share/sandgate/
	install -d $(DESTDIR)$(PREFIX)/share/sandgate/shared-hosting
	install -m 0644 etc/shared-hosting/.htaccess etc/shared-hosting/sandgate.conf \
		$(DESTDIR)$(PREFIX)/share/sandgate/shared-hosting/
	install -m 0755 etc/shared-hosting/sandgate.fcgi \
		$(DESTDIR)$(PREFIX)/share/sandgate/shared-hosting/
	install -d $(DESTDIR)$(PREFIX)/share/sandgate/kernel
	install -m 0644 providers/sandboxd/kernel/kernel.py \
		providers/sandboxd/kernel/sg_cells.py \
		providers/sandboxd/kernel/sg_ipython.py \
		providers/sandboxd/kernel/sg_mpl.py \
		$(DESTDIR)$(PREFIX)/share/sandgate/kernel/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
		$(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 man/sandgate.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(B)/man/sandgate.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 0644 man/sandgate-fcgi.8 $(DESTDIR)$(PREFIX)/share/man/man8/

clean:
	rm -rf build

.PHONY: all units replays fuzz bench soak soak-asan deb asan deps unit layers test run install clean FORCE
.SECONDARY:

-include $(shell find build -name '*.d' 2>/dev/null)
