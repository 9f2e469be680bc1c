build/obj/core/http.o: core/http.c core/http.h core/error.h
core/http.h:
core/error.h:
