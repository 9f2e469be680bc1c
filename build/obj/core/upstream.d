build/obj/core/upstream.o: core/upstream.c core/sse.h core/upstream.h \
 core/config.h core/error.h core/http.h core/../lib/util.h
core/sse.h:
core/upstream.h:
core/config.h:
core/error.h:
core/http.h:
core/../lib/util.h:
