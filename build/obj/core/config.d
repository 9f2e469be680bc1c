build/obj/core/config.o: core/config.c core/config.h core/../lib/util.h
core/config.h:
core/../lib/util.h:
