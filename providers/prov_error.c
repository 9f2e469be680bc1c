/*
 * sg_prov_error: a provider call's failure as a value (what went wrong,
 * the HTTP status, a message a client may see), made by every provider.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "provider.h"

/*
 * A provider's message may reach a client: every URL in it (a sandbox's
 * endpoint, a self-hosted server's address, quoted back by a provider)
 * becomes "[url]". The log has the detail.
 */
static void
hide_urls(char *m)
{
	static const char mark[] = "[url]";
	char *p = m, *s, *e;

	while ((s = strstr(p, "://")) != NULL) {
		while (s > m && (isalnum((unsigned char)s[-1]) || s[-1] == '+' ||
		    s[-1] == '-' || s[-1] == '.'))
			s--;
		for (e = s; *e != '\0' && !isspace((unsigned char)*e) &&
		    *e != '"' && *e != '\'' && *e != ')' && *e != '>'; e++)
			;
		if ((size_t)(e - s) < sizeof(mark) - 1) {
			p = e;
			continue;
		}
		memcpy(s, mark, sizeof(mark) - 1);
		memmove(s + sizeof(mark) - 1, e, strlen(e) + 1);
		p = s + sizeof(mark) - 1;
	}
}

const char *
sg_prov_rc_name(enum sg_prov_rc rc)
{
	static const char *const names[] = { "ok", "failed", "gone", "auth",
	    "rate", "timeout", "unreachable", "cap", "stopped", "config" };

	return rc <= SG_PROV_OK && rc >= SG_PROV_CONFIG ? names[-rc] : "failed";
}

int
sg_prov_fail(struct sg_prov_error *err, enum sg_prov_rc rc, int status,
    const char *fmt, ...)
{
	va_list ap;

	err->rc = rc;
	err->status = status;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	hide_urls(err->message);
	return rc;
}
