/*
 * The FastCGI parameters every request needs, read in one pass: libfcgi's
 * FCGX_GetParam scans the whole list for each name asked (a web server
 * sends 25 to 40), which cost more than the rest of a /healthz.
 */
#include <stddef.h>
#include <string.h>

#include "fcgi.h"

struct want {
	const char	*name;
	size_t		 len;
	size_t		 off;	/* of the field in struct sg_params */
};

#define W(n, f)	{ n, sizeof(n) - 1, offsetof(struct sg_params, f) }
static const struct want wants[] = {
	W("REQUEST_METHOD", method),
	W("REQUEST_URI", uri),
	W("HTTP_AUTHORIZATION", authorization),
	W("CONTENT_TYPE", content_type),
	W("CONTENT_LENGTH", content_length),
	W("HTTP_IF_NONE_MATCH", if_none_match),
};
#undef W

void
sg_params_read(char **envp, struct sg_params *p)
{
	const char **field;
	size_t i, found = 0;

	memset(p, 0, sizeof(*p));
	for (; envp != NULL && *envp != NULL &&
	    found < sizeof(wants) / sizeof(wants[0]); envp++) {
		for (i = 0; i < sizeof(wants) / sizeof(wants[0]); i++) {
			/* The first byte first: most names differ there,
			 * and a call to strncmp costs more than the rest. */
			if (**envp != wants[i].name[0] ||
			    strncmp(*envp, wants[i].name, wants[i].len) != 0 ||
			    (*envp)[wants[i].len] != '=')
				continue;
			field = (const char **)((char *)p + wants[i].off);
			/* The first of a name counts, as with FCGX_GetParam. */
			if (*field == NULL) {
				*field = *envp + wants[i].len + 1;
				found++;
			}
			break;
		}
	}
}
