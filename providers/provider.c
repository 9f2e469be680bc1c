#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "provider.h"

extern const struct sg_provider_ops sg_e2b_ops;
extern const struct sg_provider_ops sg_osb_ops;
extern const struct sg_provider_ops sg_local_ops;

const struct sg_provider_ops *
sg_provider_ops(enum sg_provider_kind k)
{
	switch (k) {
	case SG_PROVIDER_E2B:
		return &sg_e2b_ops;
	case SG_PROVIDER_OPENSANDBOX:
		return &sg_osb_ops;
	case SG_PROVIDER_LOCAL:
		return &sg_local_ops;
	}
	return NULL;
}

const char *
sg_provider_name(enum sg_provider_kind k)
{
	switch (k) {
	case SG_PROVIDER_LOCAL:
		return "local";
	case SG_PROVIDER_E2B:
		return "e2b";
	case SG_PROVIDER_OPENSANDBOX:
		return "opensandbox";
	}
	return "unknown";
}

int
sg_provider_parse(const char *s, enum sg_provider_kind *out)
{
	if (strcmp(s, "local") == 0)
		*out = SG_PROVIDER_LOCAL;
	else if (strcmp(s, "e2b") == 0)
		*out = SG_PROVIDER_E2B;
	else if (strcmp(s, "opensandbox") == 0)
		*out = SG_PROVIDER_OPENSANDBOX;
	else
		return -1;
	return 0;
}

void
sg_prov_init(struct sg_prov *p)
{
	memset(p, 0, sizeof(*p));
}

void
sg_prov_free(struct sg_prov *p)
{
	if (p->curl != NULL)
		curl_easy_cleanup(p->curl);
	p->curl = NULL;
}

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
