/*
 * sg_keyset: a key's settings (its limits, max_concurrent and tools) as
 * JSON, the form the store keeps for keys made over HTTP or with
 * `sandgate keys`, read into the struct a config key has:
 *
 *   {"rpm":600,"tpm":200000,"budget":50.0,"budget_period":"month",
 *    "sandbox_seconds":3600,"max_concurrent":4,"tools":["local"]}
 *
 * Every member is optional: one left out is not set (auth.limits' then).
 */
#ifndef SG_KEYSET_H
#define SG_KEYSET_H

#include <stddef.h>

#include <jansson.h>

#include "config.h"

/*
 * The settings in o (borrowed) into k's limits, max_concurrent and tools
 * (new strings; sg_keyset_clear frees them), over what k holds. 0, or -1
 * with why in err and the member at fault in *param (static).
 */
int	 sg_keyset_read(const json_t *o, struct sg_cfg_key *k, char *err,
	    size_t errsz, const char **param);
/* The same from JSON text (NULL or "": nothing set). */
int	 sg_keyset_parse(const char *text, struct sg_cfg_key *k, char *err,
	    size_t errsz);
/* New reference: k's settings, the ones set only. */
json_t	*sg_keyset_json(const struct sg_cfg_key *k);
/* A key with nothing set: limits unset, no max_concurrent, every tool. */
void	 sg_keyset_init(struct sg_cfg_key *k);
/* Free what sg_keyset_read made (the tools). */
void	 sg_keyset_clear(struct sg_cfg_key *k);

#endif
