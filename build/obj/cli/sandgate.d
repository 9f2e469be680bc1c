build/obj/cli/sandgate.o: cli/sandgate.c cli/../core/config.h \
 cli/../lib/util.h cli/../store/store.h
cli/../core/config.h:
cli/../lib/util.h:
cli/../store/store.h:
