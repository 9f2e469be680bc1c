build/obj/fcgi/main.o: fcgi/main.c fcgi/fcgi.h fcgi/../core/config.h
fcgi/fcgi.h:
fcgi/../core/config.h:
