/*
 * The result of a run, filled line by line from a provider's stream:
 * e2b's NDJSON (also spoken by the local kernel) and OpenSandbox execd's
 * JSON lines. Both end up in e2b's result shape.
 *
 * A sandbox is hostile and may write any line. The output cap counts
 * what the run produced, decoded: the same text costs the same on every
 * provider, however its server escapes it (e2b's sends non-ASCII as
 * \uXXXX, the local kernel raw UTF-8). It also bounds what a run costs
 * the gateway: JSON values kept from result lines are charged to it too
 * (Jansson spends tens of bytes on each, so 9 MB of "0," would become
 * hundreds of MB of tree), and so is what repairing invalid UTF-8 adds.
 * Each line's values are counted before it is parsed; one that would not
 * fit is dropped and stderr says so. A line is held until it ends only
 * up to what the most escaping could make of a full cap (WIRE_FACTOR).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
#include "../lib/util.h"
#include "../lib/jscan.h"

#define DEFAULT_CAP	(10u << 20)
#define VALUE_COST	64	/* bytes of the cap a kept JSON value costs */
#define SMALL_LINE	64	/* values any line may build (text, markers) */
#define MAX_DEPTH	32	/* deeper lines are dropped */
#define WIRE_FACTOR	6	/* "\u0000": six bytes on the wire for one */
#define LINE_SLACK	4096	/* a line's framing, over WIRE_FACTOR */

static const char dropped_note[] =
    "[sandgate: a result too large to keep was dropped]\n";

void
sg_exec_init(struct sg_exec *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	r->results = json_array();
	r->execution_count = -1;
	r->cap = cap != 0 ? cap : DEFAULT_CAP;
}

void
sg_exec_free(struct sg_exec *r)
{
	free(r->out.p);
	free(r->err.p);
	json_decref(r->results);
	json_decref(r->error);
	memset(r, 0, sizeof(*r));
}

static void
add_text(struct sg_exec *r, const char *type, const json_t *text)
{
	const char *s = json_string_value(text);
	size_t n = json_string_length(text);

	if (s == NULL)
		return;
	r->started = 1;
	r->bytes += n;
	if (strcmp(type, "stdout") == 0)
		sg_buf_add(&r->out, s, n);
	else
		sg_buf_add(&r->err, s, n);
}

/* A traceback as one string: e2b sends one, execd a list or null. */
static json_t *
traceback_string(const json_t *tb)
{
	struct sg_buf buf = { 0 };
	const json_t *line;
	size_t i;
	json_t *j;

	if (json_is_string(tb))
		return json_copy((json_t *)tb);
	json_array_foreach(tb, i, line) {
		if (!json_is_string(line))
			continue;
		if (buf.len > 0)
			sg_buf_add(&buf, "\n", 1);
		sg_buf_add(&buf, json_string_value(line), json_string_length(line));
	}
	j = json_stringn(buf.p != NULL ? buf.p : "", buf.len);
	free(buf.p);
	return j;
}

/* The decoded bytes of a value's strings and keys. Lines deeper than
 * MAX_DEPTH never get here. */
static size_t
text_bytes(const json_t *j)
{
	const char *key;
	const json_t *v;
	size_t n = 0, i;

	if (json_is_string(j))
		return json_string_length(j);
	if (json_is_array(j))
		json_array_foreach(j, i, v)
			n += text_bytes(v);
	else if (json_is_object(j))
		json_object_foreach((json_t *)j, key, v)
			n += strlen(key) + text_bytes(v);
	return n;
}

/* Only the first error of a run counts, as with e2b. */
static void
set_error(struct sg_exec *r, const json_t *name, const json_t *value,
    const json_t *tb)
{
	if (r->error != NULL)
		return;
	r->started = 1;
	r->error = json_pack("{s:s,s:s,s:o}",
	    "name", json_is_string(name) ? json_string_value(name) : "Error",
	    "value", json_is_string(value) ? json_string_value(value) : "",
	    "traceback", traceback_string(tb));
	r->bytes += text_bytes(r->error);
}

/* Bytes of the cap the run has left. */
static size_t
left(const struct sg_exec *r)
{
	return r->bytes < r->cap ? r->cap - r->bytes : 0;
}

/* Say once per run of drops that something was dropped; the note is
 * output too, so it counts. */
static void
note_dropped(struct sg_exec *r)
{
	const size_t n = sizeof(dropped_note) - 1;

	if (r->err.len >= n && memcmp(r->err.p + r->err.len - n, dropped_note,
	    n) == 0)
		return;
	if (r->err.len > 0 && r->err.p[r->err.len - 1] != '\n' &&
	    sg_buf_add(&r->err, "\n", 1) == 0)
		r->bytes++;
	if (sg_buf_add(&r->err, dropped_note, n) == 0)
		r->bytes += n;
}

/*
 * Charge a kept result to the run, its values and its text: 0, or -1
 * (the result must be dropped) when they do not fit in what the cap has
 * left.
 */
static int
charge(struct sg_exec *r, size_t values, const json_t *kept)
{
	size_t text = text_bytes(kept);

	if (values > left(r) / VALUE_COST || text > left(r) - values *
	    VALUE_COST) {
		note_dropped(r);
		return -1;
	}
	r->bytes += values * VALUE_COST + text;
	return 0;
}

/* e2b's server sends base64 images with a trailing "\n" (and a Jupyter
 * bundle may wrap them): a data URL must hold none. */
static void
strip_base64(json_t *result, const char *key)
{
	json_t *v = json_object_get(result, key);
	const char *s = json_string_value(v);
	size_t n = json_string_length(v), i, o;
	char *c;

	if (s == NULL || strpbrk(s, " \t\r\n") == NULL ||
	    (c = malloc(n + 1)) == NULL)
		return;
	for (i = o = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n')
			c[o++] = s[i];
	json_object_set_new(result, key, json_stringn(c, o));
	free(c);
}

static void
strip_images(json_t *result)
{
	strip_base64(result, "png");
	strip_base64(result, "jpeg");
}

/*
 * Parse one line, if the run can afford its values; a line with invalid
 * UTF-8 is repaired, not dropped, unless what the repair adds could not
 * fit (what it adds counts once its text is kept). New reference or
 * NULL; the line's values in *values.
 */
static json_t *
parse_line(struct sg_exec *r, const char *line, size_t len, size_t *values)
{
	json_t *j;
	size_t flen;
	char *fixed;
	int depth;

	*values = sg_json_size(line, len, &depth);
	if (depth > MAX_DEPTH || (*values > SMALL_LINE &&
	    *values > left(r) / VALUE_COST)) {
		note_dropped(r);
		return NULL;
	}
	j = sg_jparse(line, len, 0);
	if (j == NULL && (fixed = sg_utf8_fix(line, len, &flen)) != NULL) {
		/* What the repair adds alone cannot fit: not parsed at all. */
		if (flen - len <= left(r))
			j = sg_jparse(fixed, flen, 0);
		else
			note_dropped(r);
		free(fixed);
	}
	if (j != NULL && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* A provider's count: a whole number in [0, INT_MAX], else -1 (absent).
 * Peers send reals and strings too, and a cast of 1e300 to int is
 * undefined. */
static int
count_of(const json_t *n)
{
	double d;
	char *end;
	long v;

	if (json_is_integer(n))
		return json_integer_value(n) >= 0 && json_integer_value(n) <=
		    INT_MAX ? (int)json_integer_value(n) : -1;
	if (json_is_real(n)) {
		d = json_real_value(n);
		return isfinite(d) && d >= 0 && d <= INT_MAX && d == floor(d) ?
		    (int)d : -1;
	}
	if (json_is_string(n) && json_string_length(n) > 0) {
		v = strtol(json_string_value(n), &end, 10);
		return *end == '\0' && v >= 0 && v <= INT_MAX ? (int)v : -1;
	}
	return -1;
}

void
sg_exec_e2b_line(struct sg_exec *r, const char *line, size_t len)
{
	size_t values;
	json_t *j = parse_line(r, line, len, &values);
	const char *type;
	int n;

	if (j == NULL)
		return;
	if ((type = json_string_value(json_object_get(j, "type"))) == NULL) {
		json_decref(j);
		return;
	}
	if (strcmp(type, "keepalive") == 0) {
		/* Only keepalives, no run: see struct sg_exec's stalled. */
		if (!r->started)
			r->stalled = 1;
	} else if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0)
		add_text(r, type, json_object_get(j, "text"));
	else if (strcmp(type, "number_of_executions") == 0) {
		r->started = 1;
		/* A count we cannot use is as good as none. */
		if ((n = count_of(json_object_get(j, "execution_count"))) >= 0)
			r->execution_count = n;
	} else if (strcmp(type, "result") == 0) {
		/* The line's own tree becomes the result: no copy. */
		r->started = 1;
		json_object_del(j, "type");
		strip_images(j);
		if (charge(r, values, j) == 0)
			json_array_append(r->results, j);
	} else if (strcmp(type, "error") == 0)
		set_error(r, json_object_get(j, "name"),
		    json_object_get(j, "value"), json_object_get(j, "traceback"));
	else if (strcmp(type, "end_of_execution") == 0)
		r->ended = 1;
	json_decref(j);
}

/* execd forwards Jupyter's MIME bundle; sandgate speaks e2b's keys. */
static json_t *
osb_result(const json_t *bundle)
{
	static const struct {
		const char *mime, *key;
	} map[] = {
		{ "text", "text" }, { "text/plain", "text" },
		{ "image/png", "png" }, { "image/jpeg", "jpeg" },
		{ "image/svg+xml", "svg" }, { "text/html", "html" },
		{ "text/markdown", "markdown" }, { "text/latex", "latex" },
		{ "application/json", "json" }, { "application/pdf", "pdf" },
		{ "application/javascript", "javascript" },
	};
	json_t *out = json_object(), *extra = json_object(), *v;
	const char *mime;
	size_t i;

	json_object_foreach((json_t *)bundle, mime, v) {
		for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (strcmp(map[i].mime, mime) == 0)
				break;
		if (i < sizeof(map) / sizeof(map[0]))
			json_object_set(out, map[i].key, v);
		else
			json_object_set(extra, mime, v);
	}
	json_object_set_new(out, "extra", extra);
	json_object_set_new(out, "is_main_result", json_true());
	return out;
}

/* Trim, drop SSE framing lines, strip a "data:" prefix. */
static const char *
osb_payload(const char *line, size_t *len)
{
	const char *p = line, *end = line + *len;

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	if (p == end || *p == ':' || (end - p >= 6 && memcmp(p, "event:", 6) == 0) ||
	    (end - p >= 3 && memcmp(p, "id:", 3) == 0) ||
	    (end - p >= 6 && memcmp(p, "retry:", 6) == 0))
		return NULL;
	if (end - p >= 5 && memcmp(p, "data:", 5) == 0) {
		p += 5;
		while (p < end && *p == ' ')
			p++;
	}
	*len = (size_t)(end - p);
	return p;
}

void
sg_exec_osb_line(struct sg_exec *r, const char *line, size_t len)
{
	const char *p = osb_payload(line, &len), *type;
	size_t values;
	json_t *j, *e;

	if (p == NULL || (j = parse_line(r, p, len, &values)) == NULL)
		return;
	type = json_string_value(json_object_get(j, "type"));
	if (type == NULL) {
		/* A typeless {code, message}: execd's error after init. */
		if (json_object_get(j, "code") && json_object_get(j, "message")) {
			set_error(r, json_object_get(j, "code"),
			    json_object_get(j, "message"), NULL);
			r->ended = 1;
		}
	} else if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0)
		add_text(r, type, json_object_get(j, "text"));
	else if (strcmp(type, "execution_count") == 0) {
		r->started = 1;
		if (r->execution_count < 0)
			r->execution_count = count_of(json_object_get(j,
			    "execution_count"));
	} else if (strcmp(type, "result") == 0) {
		e = json_is_object(json_object_get(j, "results")) ?
		    osb_result(json_object_get(j, "results")) : NULL;
		if (e != NULL)
			strip_images(e);
		if (e != NULL && charge(r, values, e) == 0)
			json_array_append(r->results, e);
		json_decref(e);
	} else if (strcmp(type, "error") == 0) {
		e = json_object_get(j, "error");
		if (json_is_object(e))
			set_error(r, json_object_get(e, "ename") ?
			    json_object_get(e, "ename") : json_object_get(e, "name"),
			    json_object_get(e, "evalue") ?
			    json_object_get(e, "evalue") : json_object_get(e, "value"),
			    json_object_get(e, "traceback"));
		else
			set_error(r, json_object_get(j, "name"),
			    json_object_get(j, "text"), NULL);
		r->ended = 1;
	} else if (strcmp(type, "execution_complete") == 0)
		r->ended = 1;
	json_decref(j);
}

int
sg_exec_timeout(struct sg_exec *r, int rc, long status, int limit_s)
{
	if (rc != SG_PROV_TIMEOUT || status != 200 || !r->started)
		return rc;
	/* An error the run already sent is the one it keeps. */
	if (r->error == NULL && (r->error = json_pack("{s:s,s:o,s:o}", "name",
	    "TimeoutError", "value", json_sprintf("Execution exceeded the time "
	    "limit of %d s", limit_s), "traceback", json_sprintf("TimeoutError: "
	    "execution exceeded the time limit of %d s", limit_s))) == NULL)
		return rc;
	r->ended = 1;
	return SG_PROV_OK;
}

json_t *
sg_exec_json(const struct sg_exec *r)
{
	return json_pack("{s:s,s:o,s:o,s:O,s:O,s:o}",
	    "object", "code_execution",
	    "stdout", sg_json_string_lossy(r->out.p ? r->out.p : "", r->out.len),
	    "stderr", sg_json_string_lossy(r->err.p ? r->err.p : "", r->err.len),
	    "results", r->results,
	    "error", r->error != NULL ? r->error : json_null(),
	    "execution_count", r->execution_count >= 0 ?
	    json_integer(r->execution_count) : json_null());
}

/* Whether the stream must stop: past the cap, or stalled when that is
 * watched for. */
static int
must_stop(const struct sg_lines *l)
{
	return l->res->bytes > l->res->cap || (l->stall_check &&
	    l->res->stalled);
}

int
sg_lines_feed(struct sg_lines *l, const char *buf, size_t len)
{
	const char *nl;

	while (len > 0) {
		nl = memchr(buf, '\n', len);
		size_t n = nl != NULL ? (size_t)(nl - buf) : len;

		if (nl == NULL) {
			/* Only a line not yet ended is held: it may not grow
			 * past what the most escaping makes of a full cap. */
			if ((l->line.len + n) / WIRE_FACTOR > l->res->cap + LINE_SLACK) {
				l->res->bytes = l->res->cap + 1;
				return -1;
			}
			sg_buf_add(&l->line, buf, n);
			return 0;
		}
		if (l->line.len > 0) {
			sg_buf_add(&l->line, buf, n);
			l->fn(l->res, l->line.p, l->line.len);
			l->line.len = 0;
		} else
			l->fn(l->res, buf, n);
		if (must_stop(l))
			return -1;
		buf += n + 1;
		len -= n + 1;
	}
	return 0;
}

void
sg_lines_finish(struct sg_lines *l)
{
	if (l->line.len > 0 && !must_stop(l))
		l->fn(l->res, l->line.p, l->line.len);
	free(l->line.p);
	memset(&l->line, 0, sizeof(l->line));
}
