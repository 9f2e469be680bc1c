build/obj/core/gateway.o: core/gateway.c core/auth.h core/config.h \
 core/error.h core/gateway.h core/http.h core/router.h core/upstream.h \
 core/../lib/util.h core/../store/store.h
core/auth.h:
core/config.h:
core/error.h:
core/gateway.h:
core/http.h:
core/router.h:
core/upstream.h:
core/../lib/util.h:
core/../store/store.h:
