# sandgate — see README.md. `make`, `make test`, `make run`, `make install`.

CC	?= cc
CFLAGS	?= -O2 -g
PREFIX	?= /usr/local
DESTDIR	?=
B	?= build

SG_CFLAGS = -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -MMD -MP $(CFLAGS)
LIBS	  = -lfcgi -lcurl -ljansson -lconfig -lsqlite3 -lcrypto -lseccomp

CORE_SRC  = lib/util.c core/answer.c core/auth.c core/codedec.c core/config.c core/config_parts.c core/config_read.c core/convo.c core/error.c core/gateway.c \
	    core/http.c core/loop.c core/resp_api.c core/respids.c core/rewrite.c core/reap.c core/router.c core/sandbox.c core/sandbox_api.c core/session.c core/sse.c core/stream.c core/turn.c core/upstream.c store/responses.c store/sandbox.c store/session.c store/store.c \
	    providers/e2b.c providers/http.c providers/opensandbox.c \
	    providers/local.c providers/provider.c providers/result.c \
	    providers/sandboxd.c providers/sbxd_cgroup.c providers/sbxd_exec.c \
	    providers/sbxd_files.c providers/sbxd_net.c providers/sbxd_seccomp.c \
	    providers/sbxd_sock.c
FCGI_SRC  = fcgi/board.c fcgi/listen.c fcgi/log.c fcgi/main.c fcgi/master.c fcgi/privs.c \
	    fcgi/reaper.c fcgi/responder.c
CLI_SRC   = cli/sandgate.c cli/sessions.c
UNIT_SRC  = $(wildcard tests/unit/test_*.c)

CORE_OBJ  = $(CORE_SRC:%.c=$(B)/obj/%.o)
FCGI_OBJ  = $(FCGI_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ   = $(CLI_SRC:%.c=$(B)/obj/%.o)
UNITS     = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

SAN_FLAGS = -O1 -g -fsanitize=address,undefined,float-cast-overflow \
	    -fno-omit-frame-pointer -fno-sanitize-recover=all

all: $(B)/sandgate-fcgi $(B)/sandgate

$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(SG_CFLAGS) -c $< -o $@

$(B)/libsandgate.a: $(CORE_OBJ)
	$(AR) rcs $@ $^

$(B)/sandgate-fcgi: $(FCGI_OBJ) $(B)/libsandgate.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/sandgate: $(CLI_OBJ) $(B)/libsandgate.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/tests/%: $(B)/obj/tests/unit/%.o $(B)/libsandgate.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS) -lcmocka

units: $(UNITS)

# The same tree, built with ASan+UBSan, in build/asan.
asan:
	$(MAKE) B=build/asan CFLAGS="$(SAN_FLAGS)" LDFLAGS="-fsanitize=address,undefined,float-cast-overflow" all units

deps:
	@sh tests/install-deps.sh

unit: all units
	@sh tests/run-units.sh $(B)

test: deps
	$(MAKE) all units
	$(MAKE) asan
	sh tests/run-units.sh build
	sh tests/run-units.sh build/asan
	sh tests/run-units.sh build valgrind
	sh tests/integration/run.sh

run: deps all
	sh etc/run-dev.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/sandgate
	install -m 0755 $(B)/sandgate-fcgi $(B)/sandgate $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 etc/sandgate.conf lighttpd.conf.example \
		$(DESTDIR)$(PREFIX)/share/sandgate/
	install -d $(DESTDIR)$(PREFIX)/share/sandgate/kernel
	install -m 0644 providers/kernel/kernel.py providers/kernel/sg_cells.py \
		providers/kernel/sg_ipython.py providers/kernel/sg_mpl.py \
		$(DESTDIR)$(PREFIX)/share/sandgate/kernel/

clean:
	rm -rf build

.PHONY: all units asan deps unit test run install clean
.SECONDARY:

-include $(shell find build -name '*.d' 2>/dev/null)
