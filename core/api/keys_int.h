/*
 * What keys.c and keys_edit.c share, and no one else.
 */
#ifndef SG_KEYS_INT_H
#define SG_KEYS_INT_H

#include "keys.h"

/* What a store key made before its redacted form was kept shows. */
#define SG_KEYS_REDACTED_NONE	"sk-sg-...(not kept)"

/* A 503 in err for the store's failure at what, the detail logged. -1. */
int	 sg_keys_store_failed(struct sg_store *, struct sg_error *,
	    const char *what);

#endif
