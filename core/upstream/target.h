#ifndef SG_UPSTREAM_TARGET_H
#define SG_UPSTREAM_TARGET_H

#include <curl/curl.h>

/*
 * Where a model's requests go, made once per responder: the URL parsed
 * into a CURLU (libcurl parses a URL string again on every transfer
 * otherwise) and the request's header lines, the key's among them.
 * Keyed by the URL and the key's text, not by the model, whose config a
 * reload replaces.
 */
struct sg_target {
	char			*url, *key;
	CURLU			*u;	/* NULL: a URL curl could not parse,
					 * to be given as a string */
	struct curl_slist	*hdrs;
};

#define SG_TARGETS	4	/* upstreams a responder keeps ready */

struct sg_targets {
	struct sg_target	 t[SG_TARGETS];
	unsigned		 next;	/* the slot a new target takes */
};

/* The target of url with key (NULL: no key), made if new (the oldest of
 * SG_TARGETS is dropped for it): borrowed from ts, valid until the next
 * call; NULL out of memory. */
const struct sg_target *sg_targets_get(struct sg_targets *, const char *url,
    const char *key);
void sg_targets_clear(struct sg_targets *);

#endif
