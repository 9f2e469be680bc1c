/*
 * sg_wdump: the loop's body for the upstream as json_dumps(work,
 * JSON_COMPACT) writes it, its list of items (Responses' input, Chat's
 * messages) dumped an item once: between turns the loop only appends to
 * that list (it never changes an item in it), so a turn dumps only the
 * items the last one added, and the body's other members.
 */
#ifndef SG_WDUMP_H
#define SG_WDUMP_H

#include <jansson.h>

#include "../../lib/util.h"

struct sg_wdump {
	const json_t	*list;	/* the array the items dumped are of */
	size_t		 n;	/* how many */
	struct sg_buf	 items;	/* their text, joined by commas */
};

/* New text of work (its length in *len), key naming the list; NULL out
 * of memory. */
char	*sg_wdump_text(struct sg_wdump *, const json_t *work, const char *key,
	    size_t *len);
void	 sg_wdump_free(struct sg_wdump *);

#endif
