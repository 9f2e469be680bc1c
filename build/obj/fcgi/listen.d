build/obj/fcgi/listen.o: fcgi/listen.c fcgi/fcgi.h fcgi/../core/config.h
fcgi/fcgi.h:
fcgi/../core/config.h:
