#include <stdlib.h>
#include <string.h>

#include "jdump.h"
#include "jtw.h"

void
sg_jtw_lit(struct sg_jtw *w, const char *lit)
{
	if (!w->failed && sg_buf_add(&w->b, lit, strlen(lit)) == -1)
		w->failed = 1;
}

void
sg_jtw_text(struct sg_jtw *w, const char *s, size_t n)
{
	size_t flen;
	char *fixed;

	if (w->failed || sg_jdump_str(&w->b, s, n) == 0)
		return;
	/* Not UTF-8 (sg_jdump_str left the text as it was). */
	if ((fixed = sg_utf8_fix(s, n, &flen)) == NULL ||
	    sg_jdump_str(&w->b, fixed, flen) == -1)
		w->failed = 1;
	free(fixed);
}

void
sg_jtw_str(struct sg_jtw *w, const char *s)
{
	if (s != NULL && s[0] != '\0')
		sg_jtw_text(w, s, strlen(s));
	else
		sg_jtw_lit(w, "null");
}

void
sg_jtw_int(struct sg_jtw *w, int64_t v)
{
	if (!w->failed && sg_jdump_int(&w->b, (json_int_t)v) == -1)
		w->failed = 1;
}

void
sg_jtw_bool(struct sg_jtw *w, int yes)
{
	sg_jtw_lit(w, yes ? "true" : "false");
}

/* Written in one piece: a trace has some seventy members a request. */
void
sg_jtw_key(struct sg_jtw *w, const char *sep, const char *key)
{
	size_t ns = strlen(sep), nk = strlen(key);
	char *p;

	if (w->failed)
		return;
	if (sg_buf_reserve(&w->b, ns + nk + 3) == -1) {
		w->failed = 1;
		return;
	}
	p = w->b.p + w->b.len;
	memcpy(p, sep, ns);
	p[ns] = '"';
	memcpy(p + ns + 1, key, nk);
	memcpy(p + ns + 1 + nk, "\":", 3);
	w->b.len += ns + nk + 3;
	w->b.p[w->b.len] = '\0';
}

void
sg_jtw_mint(struct sg_jtw *w, const char *sep, const char *key, int64_t v)
{
	sg_jtw_key(w, sep, key);
	sg_jtw_int(w, v);
}

void
sg_jtw_mstr(struct sg_jtw *w, const char *sep, const char *key,
    const char *s)
{
	sg_jtw_key(w, sep, key);
	sg_jtw_str(w, s);
}

char *
sg_jtw_end(struct sg_jtw *w)
{
	if (!w->failed)
		return w->b.p != NULL ? w->b.p : strdup("");
	free(w->b.p);
	w->b.p = NULL;
	return NULL;
}
