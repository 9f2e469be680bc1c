/*
 * The line each request leaves on stderr. Its fields carry a client's
 * bytes (the path, the model name) and the config's (the key name), so
 * each is escaped as a field (sg_log_field: spaces too): one request
 * always makes exactly one line, and the line always splits on spaces
 * into the same fields.
 */
#include <stdio.h>

#include "fcgi.h"
#include "../core/http/http.h"
#include "../lib/log.h"

/*
 * One fprintf of at most ~3 KiB: stderr is line-buffered and shared by
 * every responder, and a line under PIPE_BUF goes out in one write, so
 * lines of different responders never interleave. Never the key, only
 * its name.
 */
void
sg_log_request(const struct sg_req *req, int status, int64_t ms)
{
	char key[128], method[32], path[2048], model[512];

	sg_log_field(key, sizeof(key), req->key_name[0] != '\0' ?
	    req->key_name : "-");
	sg_log_field(method, sizeof(method), req->method);
	sg_log_field(path, sizeof(path), req->path[0] != '\0' ? req->path :
	    req->uri);
	sg_log_field(model, sizeof(model), req->model[0] != '\0' ?
	    req->model : "-");
	fprintf(stderr, "event=request id=%s key=%s method=%s path=%s model=%s "
	    "status=%d ms=%lld\n", req->id, key, method, path, model, status,
	    (long long)ms);
}
