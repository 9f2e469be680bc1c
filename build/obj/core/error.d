build/obj/core/error.o: core/error.c core/error.h core/../lib/util.h
core/error.h:
core/../lib/util.h:
