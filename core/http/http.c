#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "http.h"
#include "../../lib/util.h"
#include "../../lib/jdump.h"

const char *
sg_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 413: return "Payload Too Large";
	case 421: return "Misdirected Request";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default:  return "Unknown";
	}
}

int
sg_http_begin(struct sg_out *out, const struct sg_req *req, int status,
    const char *content_type, const char *extra)
{
	char head[512], code[24];
	size_t n;

	if (out->started)
		return -1;
	/* Every answer's head: built without printf (~2 k instructions). */
	n = sg_join(head, sizeof(head), "Status: ", sg_dec(code, sizeof(code),
	    status), " ", sg_http_reason(status), "\r\nContent-Type: ",
	    content_type != NULL ? content_type : "application/octet-stream",
	    "\r\nx-request-id: ", req->id, "\r\n", NULL);
	if (n >= sizeof(head))
		return -1;
	out->started = 1;
	out->status = status;
	if (out->write(out, head, (size_t)n) == -1)
		return -1;
	if (req->head[0] != '\0' && out->write(out, req->head,
	    strlen(req->head)) == -1)
		return -1;
	if (extra != NULL && out->write(out, extra, strlen(extra)) == -1)
		return -1;
	return out->write(out, "\r\n", 2);
}

int
sg_http_write(struct sg_out *out, const void *buf, size_t len)
{
	return out->write(out, buf, len);
}

static int
send_json(struct sg_out *out, const struct sg_req *req, int status,
    const json_t *body, const char *extra)
{
	size_t len;
	char *text;
	int rc;

	if (!json_is_object(body) && !json_is_array(body))
		return -1;
	if ((text = sg_jdump_text(body, &len)) == NULL)
		return -1;
	rc = sg_http_begin(out, req, status, "application/json", extra);
	if (rc == 0)
		rc = out->write(out, text, len);
	free(text);
	return rc;
}

int
sg_http_json(struct sg_out *out, const struct sg_req *req, int status,
    const json_t *body)
{
	return send_json(out, req, status, body, NULL);
}

int
sg_http_error(struct sg_out *out, const struct sg_req *req,
    const struct sg_error *err)
{
	return sg_http_error_head(out, req, err, NULL);
}

int
sg_http_error_head(struct sg_out *out, const struct sg_req *req,
    const struct sg_error *err, const char *extra)
{
	char head[256];
	json_t *body;
	int rc;

	if (out->started)
		return -1;
	if ((body = sg_error_json(err)) == NULL)
		return -1;
	snprintf(head, sizeof(head), "%s%s", err->no_retry ?
	    "x-should-retry: false\r\n" : "", extra != NULL ? extra : "");
	rc = send_json(out, req, err->status, body,
	    head[0] != '\0' ? head : NULL);
	json_decref(body);
	return rc;
}

/* Decode value[0..len) into out[outsz]: 0, or -1 when it cannot. */
static int
query_decode(const char *value, size_t len, char *out, size_t outsz)
{
	char *plus, *dec;
	int n = 0;

	if ((plus = strndup(value, len)) == NULL)
		return -1;
	/* A form's '+' is a space; libcurl decodes only the %XX. */
	for (dec = plus; *dec != '\0'; dec++)
		if (*dec == '+')
			*dec = ' ';
	dec = curl_easy_unescape(NULL, plus, 0, &n);
	free(plus);
	if (dec == NULL || n < 0 || (size_t)n >= outsz ||
	    memchr(dec, '\0', (size_t)n) != NULL) {
		curl_free(dec);
		return -1;
	}
	memcpy(out, dec, (size_t)n);
	out[n] = '\0';
	curl_free(dec);
	return 0;
}

int
sg_http_query(const char *uri, const char *name, char *out, size_t outsz)
{
	const char *q = uri != NULL ? strchr(uri, '?') : NULL, *p, *eq;
	size_t nlen = strlen(name), len;

	for (p = q; p != NULL && *p != '\0' && *p != '#'; p += len) {
		p++;
		len = strcspn(p, "&#");
		eq = memchr(p, '=', len);
		if ((size_t)((eq != NULL ? eq : p + len) - p) == nlen &&
		    memcmp(p, name, nlen) == 0)
			return query_decode(eq != NULL ? eq + 1 : p + len,
			    eq != NULL ? (size_t)(p + len - eq - 1) : 0, out,
			    outsz) == 0 ? 1 : -1;
	}
	return 0;
}

int
sg_http_query_each(const char *uri,
    int (*fn)(void *, const char *, const char *), void *arg)
{
	const char *p = uri != NULL ? strchr(uri, '?') : NULL, *eq;
	char *name, *value;
	size_t cap, len, nlen;
	int rc = 0, has;

	if (p == NULL)
		return 0;
	/* Decoding never lengthens: the query's length holds any part. */
	cap = strlen(p);
	name = malloc(cap);
	value = malloc(cap);
	if (name == NULL || value == NULL)
		rc = -1;
	for (; rc == 0 && *p != '\0' && *p != '#'; p += len) {
		p++;
		len = strcspn(p, "&#");
		eq = memchr(p, '=', len);
		has = eq != NULL;
		nlen = has ? (size_t)(eq - p) : len;
		if (len == 0 || query_decode(p, nlen, name, cap) == -1)
			continue;
		if (fn(arg, name, query_decode(p + nlen + has, len - nlen - has,
		    value, cap) == 0 ? value : NULL) == -1)
			rc = -1;
	}
	free(name);
	free(value);
	return rc;
}

int
sg_http_page_args(const struct sg_req *req, long dflt, long max, long *limit,
    int *desc, char *after, size_t aftersz, struct sg_error *err)
{
	char v[32], *end;
	int rc;

	*limit = dflt;
	*desc = 1;
	after[0] = '\0';
	if ((rc = sg_http_query(req->uri, "limit", v, sizeof(v))) != 0) {
		*limit = rc == 1 ? strtol(v, &end, 10) : 0;
		if (rc == -1 || *end != '\0' || v[0] == '\0' || *limit < 1 ||
		    *limit > max)
			return sg_error_invalid(err, "limit", "integer_out_of_"
			    "range", "Invalid 'limit': expected an integer "
			    "between 1 and %ld.", max);
	}
	if ((rc = sg_http_query(req->uri, "order", v, sizeof(v))) != 0) {
		if (rc == -1 || (strcmp(v, "asc") != 0 && strcmp(v, "desc") != 0))
			return sg_error_invalid(err, "order", "invalid_value",
			    "Invalid 'order': expected one of 'asc' or 'desc'.");
		*desc = strcmp(v, "desc") == 0;
	}
	if (sg_http_query(req->uri, "after", after, aftersz) == -1)
		return sg_error_invalid(err, "after", "invalid_value",
		    "Invalid 'after': no such item.");
	return 0;
}

/* The id of data's item i, or JSON null. Borrowed. */
static json_t *
id_at(const json_t *data, size_t i)
{
	json_t *id = json_object_get(json_array_get(data, i), "id");

	return id != NULL ? id : json_null();
}

json_t *
sg_http_list(json_t *data, int more)
{
	size_t n = json_array_size(data);

	return json_pack("{s:s,s:o,s:O,s:O,s:b}", "object", "list", "data",
	    data, "first_id", id_at(data, 0), "last_id", id_at(data, n > 0 ?
	    n - 1 : 0), "has_more", more);
}

json_t *
sg_http_body_object(const struct sg_req *req, struct sg_error *err)
{
	json_error_t jerr;
	json_t *b;

	if (req->body_len == 0)
		return json_object();
	b = json_loadb(req->body, req->body_len, JSON_ALLOW_NUL, &jerr);
	if (b == NULL)
		sg_error_invalid(err, NULL, NULL, "We could not parse the JSON "
		    "body of your request: %s (line %d, column %d).", jerr.text,
		    jerr.line, jerr.column);
	else if (!json_is_object(b)) {
		json_decref(b);
		b = NULL;
		sg_error_invalid(err, NULL, "invalid_type", "The body of your "
		    "request must be a JSON object.");
	}
	return b;
}

int
sg_http_body_bounded(const struct sg_req *req, size_t max_values,
    struct sg_error *err)
{
	size_t values;
	int depth;

	values = sg_json_size(req->body != NULL ? req->body : "",
	    req->body_len, &depth);
	if (values <= max_values && depth <= SG_HTTP_BODY_DEPTH)
		return 0;
	return sg_error_invalid(err, NULL, "request_too_complex", "The JSON "
	    "body of your request is too complex to process (about %zu "
	    "values, nested %d deep); the limits are %zu values and a depth "
	    "of %d.", values, depth, max_values, SG_HTTP_BODY_DEPTH);
}

json_t *
sg_http_page(const json_t *all, long limit, int desc, const char *after, int *more)
{
	json_t *data = json_array();
	size_t n = json_array_size(all), i, k, start = 0;
	const json_t *it;

	if (after[0] != '\0')
		for (k = 0; k < n; k++) {
			it = json_array_get(all, desc ? n - 1 - k : k);
			if (strcmp(json_string_value(json_object_get(it, "id")) ?
			    json_string_value(json_object_get(it, "id")) : "",
			    after) == 0)
				start = k + 1;
		}
	for (k = start; k < n && (long)json_array_size(data) < limit; k++) {
		i = desc ? n - 1 - k : k;
		json_array_append(data, json_array_get(all, i));
	}
	*more = k < n;
	return data;
}

const char *
sg_http_param(const struct sg_req *req, const char *name)
{
	return req->param != NULL ? req->param(req->param_arg, name) : NULL;
}
