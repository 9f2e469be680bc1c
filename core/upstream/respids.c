/*
 * The response ids relayed on the passthrough of /v1/responses, bound to
 * the key they went to (respids.h).
 */
#include <stdio.h>
#include <string.h>

#include "respids.h"
#include "../../lib/log.h"

/*
 * The few members read here are found by scanning the JSON text, not by
 * building a tree of it (an upstream's answer may be 64 MiB, a body
 * max_body_bytes). A quick skip, not a validator: text that is not what
 * it should be just has no such member.
 */
static size_t
skip_ws(const char *p, size_t len, size_t i)
{
	while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' ||
	    p[i] == '\n'))
		i++;
	return i;
}

/* The index after the string that starts at p[i] ('"'). */
static size_t
string_end(const char *p, size_t len, size_t i)
{
	for (i++; i < len; i++)
		if (p[i] == '\\')
			i++;
		else if (p[i] == '"')
			return i + 1;
	return len;
}

/* The index after the value that starts at p[i]. */
static size_t
value_end(const char *p, size_t len, size_t i)
{
	int depth = 0;

	if (i < len && p[i] == '"')
		return string_end(p, len, i);
	if (i < len && (p[i] == '{' || p[i] == '[')) {
		for (; i < len; i++) {
			if (p[i] == '"')
				i = string_end(p, len, i) - 1;
			else if (p[i] == '{' || p[i] == '[')
				depth++;
			else if ((p[i] == '}' || p[i] == ']') && --depth == 0)
				return i + 1;
		}
		return len;
	}
	while (i < len && p[i] != ',' && p[i] != '}' && p[i] != ']' &&
	    skip_ws(p, len, i) == i)
		i++;
	return i;
}

/* New reference: the JSON value tok[0..len) decoded (a small token). */
static json_t *
token(const char *tok, size_t len)
{
	return json_loadb(tok, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
}

/* Whether the key token (quotes included) names key, escapes decoded. */
static int
key_is(const char *tok, size_t len, const char *key)
{
	json_t *k;
	int is;

	if (memchr(tok, '\\', len) == NULL)
		return len == strlen(key) + 2 && memcmp(tok + 1, key, len - 2) == 0;
	k = token(tok, len);
	is = json_is_string(k) && json_string_length(k) == strlen(key) &&
	    memcmp(json_string_value(k), key, strlen(key)) == 0;
	json_decref(k);
	return is;
}

/*
 * The next member named key of the object p[0..len), from *at (0 at
 * first): its value's text in *v and *vlen. 0, or -1 when there is none.
 * Every one is found, so a key given twice is seen twice.
 */
static int
next_member(const char *p, size_t len, const char *key, size_t *at,
    const char **v, size_t *vlen)
{
	size_t i = *at, k, kend, vend;

	if (i == 0) {
		i = skip_ws(p, len, 0);
		if (i >= len || p[i] != '{')
			return -1;
		i++;
	}
	for (;;) {
		i = skip_ws(p, len, i);
		if (i < len && p[i] == ',')
			i = skip_ws(p, len, i + 1);
		if (i >= len || p[i] != '"')
			return -1;
		kend = string_end(p, len, k = i);
		i = skip_ws(p, len, kend);
		if (i >= len || p[i] != ':')
			return -1;
		i = skip_ws(p, len, i + 1);
		if ((vend = value_end(p, len, i)) == i)
			return -1;
		if (key_is(p + k, kend - k, key)) {
			*v = p + i;
			*vlen = vend - i;
			*at = vend;
			return 0;
		}
		i = vend;
	}
}

/* New reference: member key of the object p[0..len) when it is a string
 * (the first such), else NULL. */
static json_t *
string_member(const char *p, size_t len, const char *key)
{
	size_t at = 0, vlen;
	const char *v;
	json_t *s;

	if (next_member(p, len, key, &at, &v, &vlen) == -1 || *v != '"')
		return NULL;
	if ((s = token(v, vlen)) != NULL && !json_is_string(s)) {
		json_decref(s);
		s = NULL;
	}
	return s;
}

void
sg_respids_note(struct sg_store *st, const char *api_base,
    const struct sg_req *req, const char *obj, size_t len)
{
	json_t *id = string_member(obj, len, "id");

	if (id != NULL && strlen(json_string_value(id)) == json_string_length(id)
	    && sg_store_relayed_put(st, json_string_value(id), req->tenant,
	    api_base) != SG_STORE_OK)
		sg_log("sandgate: %s: cannot note a relayed response "
		    "id: %s", req->id, sg_store_errmsg(st));
	json_decref(id);
}

void
sg_respids_note_event(struct sg_store *st, const char *api_base,
    const struct sg_req *req, const struct sg_sse_event *ev)
{
	const char *resp;
	size_t at = 0, rlen;
	json_t *type;
	int created = strcmp(ev->name, "response.created") == 0;

	if (!ev->has_data)
		return;
	if (!created && ev->name[0] == '\0' && (type = string_member(ev->data,
	    ev->datalen, "type")) != NULL) {
		created = strcmp(json_string_value(type), "response.created") == 0;
		json_decref(type);
	}
	if (created && next_member(ev->data, ev->datalen, "response", &at,
	    &resp, &rlen) == 0)
		sg_respids_note(st, api_base, req, resp, rlen);
}

/* A value that is not a string is the upstream's to refuse. */
int
sg_respids_check(struct sg_store *st, const char *api_base,
    const struct sg_req *req, const char *body, size_t len,
    struct sg_error *err)
{
	size_t at = 0, vlen;
	const char *v;
	json_t *id;
	int rc;

	while (next_member(body, len, "previous_response_id", &at, &v,
	    &vlen) == 0) {
		if (*v != '"' || (id = token(v, vlen)) == NULL)
			continue;
		if (st == NULL) {
			json_decref(id);
			return sg_error_final(err, 500, "This gateway cannot "
			    "check previous_response_id: it has no store.");
		}
		rc = strlen(json_string_value(id)) != json_string_length(id) ?
		    SG_STORE_NOTFOUND : sg_store_relayed_has(st,
		    json_string_value(id), req->tenant, api_base);
		if (rc == SG_STORE_NOTFOUND)
			sg_error_invalid(err, "previous_response_id",
			    "previous_response_not_found", "Previous response "
			    "with id '%s' not found.", json_string_value(id));
		else if (rc != SG_STORE_OK)
			sg_error_store(err, sg_store_errmsg(st));
		json_decref(id);
		if (rc != SG_STORE_OK)
			return -1;
	}
	return 0;
}

