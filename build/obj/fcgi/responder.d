build/obj/fcgi/responder.o: fcgi/responder.c fcgi/fcgi.h \
 fcgi/../core/config.h fcgi/../core/gateway.h fcgi/../core/config.h \
 fcgi/../core/http.h fcgi/../core/error.h fcgi/../lib/util.h
fcgi/fcgi.h:
fcgi/../core/config.h:
fcgi/../core/gateway.h:
fcgi/../core/config.h:
fcgi/../core/http.h:
fcgi/../core/error.h:
fcgi/../lib/util.h:
