/*
 * sg_console: the operator's console, static files served by sandgate
 * itself at server.mount_prefix + console.path (design §3.6). The files
 * are the repository's console/, embedded at build time (tools/embed.c):
 * the page asks for an admin key and talks to the admin API; serving it
 * needs none. Served only with auth.admin_keys set and console.enabled.
 */
#ifndef SG_CONSOLE_H
#define SG_CONSOLE_H

#include <stddef.h>

#include "../config/config.h"
#include "../http/http.h"

/* One embedded file: its path under console/, content type, bytes (NUL
 * after them) and ETag (quoted). */
struct sg_console_file {
	const char		*path;
	const char		*type;
	const unsigned char	*data;
	size_t			 len;
	const char		*etag;
};

/* The embedded files, ended by one whose path is NULL (generated). */
extern const struct sg_console_file sg_console_files[];

/* Whether the route path is the console's (console.path, with or without
 * its last "/", or under it) and the console is on. */
int	 sg_console_match(const struct sg_cfg *, const char *path);
/* Answer a request sg_console_match took: the file, 304, a redirect to
 * console.path, 404 or 405. */
void	 sg_console_serve(const struct sg_cfg *, const struct sg_req *,
	    struct sg_out *);

#endif
