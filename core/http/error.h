/*
 * sg_error: an error as a value. Every failing function fills one and
 * returns -1 (or an enum); the HTTP layer turns it into OpenAI's shape
 * {"error":{"message","type","param","code"}} with the right status.
 */
#ifndef SG_ERROR_H
#define SG_ERROR_H

#include <jansson.h>

struct sg_error {
	int		 status;	/* HTTP status: 400, 401, 404, ... */
	const char	*type;		/* static string, OpenAI error type */
	const char	*code;		/* static string or NULL */
	const char	*param;		/* static string or NULL */
	int		 no_retry;	/* 5xx that retrying cannot fix */
	char		 message[512];
};

/* Fill err; returns -1 so callers can `return sg_error_set(...)`. */
int	 sg_error_set(struct sg_error *, int status, const char *type,
	    const char *code, const char *param, const char *fmt, ...)
	    __attribute__((format(printf, 6, 7)));

/* Shorthands for the common kinds. All return -1. */
int	 sg_error_invalid(struct sg_error *, const char *param,
	    const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
int	 sg_error_server(struct sg_error *, int status, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* A 5xx that retrying cannot fix: it carries x-should-retry: false. */
int	 sg_error_final(struct sg_error *, int status, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/* 503: the store failed; detail is its message (sg_store_errmsg). */
int	 sg_error_store(struct sg_error *, const char *detail);

/* New reference: {"error":{...}}. Never NULL unless out of memory. */
json_t	*sg_error_json(const struct sg_error *);

#endif
