/*
 * The floor: a bare libfcgi responder answering a fixed body, spawned by
 * the web server on fd 0 as sandgate is. What it costs is the cost of
 * lighttpd plus FastCGI itself; `make bench` measures sandgate against it.
 */
#include <fcgiapp.h>
#include <stdlib.h>

static const char reply[] =
    "Status: 200 OK\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: 16\r\n"
    "\r\n"
    "{\"status\":\"ok\"}\n";

int
main(void)
{
	FCGX_Request r;

	if (FCGX_Init() != 0 || FCGX_InitRequest(&r, 0, 0) != 0)
		return 1;
	while (FCGX_Accept_r(&r) >= 0) {
		FCGX_PutStr(reply, (int)sizeof(reply) - 1, r.out);
		FCGX_Finish_r(&r);
	}
	return 0;
}
