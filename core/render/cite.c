/*
 * Links to container files in the model's text, found as OpenAI's code
 * interpreter writes them: [name](sandbox:/mnt/data/name), or the bare
 * URL. A link ends at a character no path of ours holds in markdown
 * (space, a bracket, a quote); a sentence's final punctuation after a
 * bare URL is tried off when the path with it names no file. Paths may
 * be percent-encoded (a name with a space).
 */
#include <stdio.h>
#include <string.h>

#include "cite.h"
#include "../state/sandbox.h"
#include "../../lib/util.h"

#define SCHEME		"sandbox:"
#define LINK		SCHEME SG_SBX_DATA_DIR "/"

static int
ends_link(unsigned char c)
{
	return c <= ' ' || c == 0x7f || strchr(")]\"'<>`|*", c) != NULL;
}

/* s[0..n) percent-decoded into out: 0, or -1 when it does not fit or
 * decodes to a NUL. */
static int
decode(const char *s, size_t n, char *out, size_t sz)
{
	size_t i, o = 0;
	int hi, lo;

	for (i = 0; i < n; i++) {
		if (o + 1 >= sz)
			return -1;
		if (s[i] == '%' && i + 2 < n && (hi = sg_hexval(s[i + 1])) >= 0 &&
		    (lo = sg_hexval(s[i + 2])) >= 0) {
			if (hi == 0 && lo == 0)
				return -1;
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else
			out[o++] = s[i];
	}
	out[o] = '\0';
	return 0;
}

/* Code points in s[from..to), counted on from *cp at byte *at. */
static size_t
points(const char *s, size_t to, size_t *at, size_t *cp)
{
	for (; *at < to; (*at)++)
		if (((unsigned char)s[*at] & 0xc0) != 0x80)
			(*cp)++;
	return *cp;
}

/* The container whose files are cited, or NULL. */
static const char *
cited(const struct sg_cite *c)
{
	if (c->container != NULL && c->container[0] != '\0')
		return c->container;
	return c->fallback != NULL && c->fallback[0] != '\0' ? c->fallback :
	    NULL;
}

/* The file the URL s[0..n) names ("sandbox:/mnt/data/..."): 1 with *f. */
static int
names_file(const struct sg_cite *c, const char *s, size_t n,
    struct sg_store_file *f)
{
	char path[sizeof(f->path)];
	size_t skip = strlen(SCHEME);

	return decode(s + skip, n - skip, path, sizeof(path)) == 0 &&
	    sg_store_file_at(c->store, c->tenant, cited(c), path, NULL,
	    f) == SG_STORE_OK;
}

json_t *
sg_cite_text(const struct sg_cite *c, const char *text, size_t len)
{
	json_t *anns = json_array();
	struct sg_store_file f;
	size_t at = 0, cp = 0, i = 0, start, end, first;
	const char *p;

	if (cited(c) == NULL || text == NULL)
		return anns;
	while (i < len && (p = memmem(text + i, len - i, LINK,
	    strlen(LINK))) != NULL) {
		start = (size_t)(p - text);
		for (end = start + strlen(LINK); end < len &&
		    !ends_link((unsigned char)text[end]); end++)
			;
		i = end;
		for (; end > start + strlen(LINK); end--) {
			if (names_file(c, text + start, end - start, &f))
				break;
			if (strchr(".,;:!?", text[end - 1]) == NULL) {
				end = start;
				break;
			}
		}
		if (end <= start + strlen(LINK))
			continue;
		first = points(text, start, &at, &cp);
		json_array_append_new(anns, json_pack("{s:s,s:s,s:s,s:s,s:I,s:I}",
		    "type", "container_file_citation", "container_id",
		    cited(c), "file_id", f.id, "filename", f.filename,
		    "start_index", (json_int_t)first, "end_index",
		    (json_int_t)points(text, end, &at, &cp)));
	}
	return anns;
}

void
sg_cite_message(const struct sg_cite *c, json_t *item)
{
	json_t *part, *anns, *have;
	size_t i;

	if (cited(c) == NULL || !json_is_string(json_object_get(item,
	    "type")) ||
	    strcmp(json_string_value(json_object_get(item, "type")),
	    "message") != 0)
		return;
	json_array_foreach(json_object_get(item, "content"), i, part) {
		const json_t *text = json_object_get(part, "text");

		if (!json_is_string(text) || strcmp(json_string_value(
		    json_object_get(part, "type")) ? json_string_value(
		    json_object_get(part, "type")) : "", "output_text") != 0)
			continue;
		anns = sg_cite_text(c, json_string_value(text),
		    json_string_length(text));
		if (json_array_size(anns) > 0) {
			if (!json_is_array(have = json_object_get(part,
			    "annotations"))) {
				have = json_array();
				json_object_set_new(part, "annotations", have);
			}
			json_array_extend(have, anns);
		}
		json_decref(anns);
	}
}

void
sg_cite_output(const struct sg_cite *c, json_t *output)
{
	json_t *item;
	size_t i;

	json_array_foreach(output, i, item)
		sg_cite_message(c, item);
}
