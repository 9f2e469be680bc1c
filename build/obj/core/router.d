build/obj/core/router.o: core/router.c core/router.h
core/router.h:
