build/obj/fcgi/master.o: fcgi/master.c fcgi/fcgi.h fcgi/../core/config.h \
 fcgi/../lib/util.h
fcgi/fcgi.h:
fcgi/../core/config.h:
fcgi/../lib/util.h:
