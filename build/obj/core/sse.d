build/obj/core/sse.o: core/sse.c core/sse.h
core/sse.h:
