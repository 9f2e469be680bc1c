build/obj/core/auth.o: core/auth.c core/auth.h core/config.h core/error.h \
 core/../lib/util.h core/../store/store.h
core/auth.h:
core/config.h:
core/error.h:
core/../lib/util.h:
core/../store/store.h:
