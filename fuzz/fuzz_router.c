/*
 * The router with a mount prefix: any prefix, method and REQUEST_URI
 * (query, percent signs, dots, long ids). Nothing may crash, a matched id
 * fits its buffer and is a path segment, and an unprefixed path never
 * matches under a prefix it lacks.
 *
 * Input: prefix NUL method NUL uri.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/http/router.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[2048], *prefix, *method, *uri, *end, path[1024], id[64];
	enum sg_route r;

	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	prefix = buf;
	if ((end = memchr(prefix, '\0', size)) == NULL || end == buf + size)
		return 0;
	method = end + 1;
	if ((end = strchr(method, '\0')) == buf + size)
		return 0;
	uri = end + 1;
	if (sg_route_path(prefix, uri, path, sizeof(path)) != 0)
		return 0;
	if (strlen(path) >= sizeof(path))
		abort();
	sg_route_find(method, path);
	/* Routes without an id leave it alone: "" then. One that writes it
	 * must end it within the buffer. */
	memset(id, 'x', sizeof(id));
	id[0] = '\0';
	r = sg_route_match(method, path, id, sizeof(id));
	if (r != SG_ROUTE_NONE && memchr(id, '\0', sizeof(id)) == NULL)
		abort();
	if (r != SG_ROUTE_NONE && strchr(id, '/') != NULL)
		abort();
	sg_route_authed(r);
	return 0;
}
