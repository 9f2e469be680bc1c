#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "../../lib/util.h"

static void
error_vset(struct sg_error *err, int status, const char *type,
    const char *code, const char *param, const char *fmt, va_list ap)
{
	err->status = status;
	err->type = type;
	err->code = code;
	err->param = param;
	/* Our 500s are deterministic (configuration, a bug): the SDKs would
	 * retry them in vain. 502/503/504 may clear on a retry. */
	err->no_retry = status == 500 || status == 501;
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
}

int
sg_error_set(struct sg_error *err, int status, const char *type,
    const char *code, const char *param, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_vset(err, status, type, code, param, fmt, ap);
	va_end(ap);
	return -1;
}

int
sg_error_invalid(struct sg_error *err, const char *param, const char *code,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_vset(err, 400, "invalid_request_error", code, param, fmt, ap);
	va_end(ap);
	return -1;
}

int
sg_error_server(struct sg_error *err, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_vset(err, status, "server_error", NULL, NULL, fmt, ap);
	va_end(ap);
	return -1;
}

int
sg_error_final(struct sg_error *err, int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_vset(err, status, "server_error", NULL, NULL, fmt, ap);
	va_end(ap);
	err->no_retry = 1;
	return -1;
}

static json_t *
str_or_null(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

json_t *
sg_error_json(const struct sg_error *err)
{
	json_t *inner;

	inner = json_object();
	if (inner == NULL)
		return NULL;
	/* vsnprintf may cut a UTF-8 sequence, or a message may quote a
	 * client's bytes: never lose the message over it. */
	json_object_set_new(inner, "message",
	    sg_json_string_lossy(err->message, strlen(err->message)));
	json_object_set_new(inner, "type",
	    json_string(err->type != NULL ? err->type : "server_error"));
	json_object_set_new(inner, "param", str_or_null(err->param));
	json_object_set_new(inner, "code", str_or_null(err->code));
	return json_pack("{s:o}", "error", inner);
}

int
sg_error_store(struct sg_error *err, const char *detail)
{
	return sg_error_set(err, 503, "server_error", NULL, NULL, "The store is "
	    "unavailable: %s", detail);
}
