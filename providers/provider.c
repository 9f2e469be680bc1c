/*
 * The providers by kind: each one's ops (the one place that names them
 * all, local's included), its name in the config, and a responder's
 * provider state. A call's failure: prov_error.c.
 */
#include <stddef.h>
#include <string.h>


#include "provider.h"
#include "internal.h"

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
	sg_phttp_free(p);
}
