build/obj/fcgi/privs.o: fcgi/privs.c fcgi/fcgi.h fcgi/../core/config.h \
 fcgi/../store/store.h
fcgi/fcgi.h:
fcgi/../core/config.h:
fcgi/../store/store.h:
