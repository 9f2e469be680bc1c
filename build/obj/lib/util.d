build/obj/lib/util.o: lib/util.c lib/util.h
lib/util.h:
