build/obj/store/store.o: store/store.c store/store.h
store/store.h:
