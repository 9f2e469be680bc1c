/*
 * sg_wdump: the loop's body for the upstream as json_dumps(work,
 * JSON_COMPACT) writes it, each part dumped once. Between turns the loop
 * changes the body only by appending to its list of items (Responses'
 * input, Chat's messages) and by setting members anew (a new value:
 * tool_choice); it never changes a value in place. So a turn dumps the
 * items the last one added, and the members whose value is not the one
 * dumped before (each value dumped is held, so its address stays its).
 */
#ifndef SG_WDUMP_H
#define SG_WDUMP_H

#include <jansson.h>

#include "../../lib/util.h"

#define SG_WDUMP_MEMBERS	24	/* members kept; more are dumped */

struct sg_wdump {
	json_t		*list;	/* the array the items dumped are of (held) */
	size_t		 n;	/* how many */
	struct sg_buf	 items;	/* their text, joined by commas */
	struct {
		char	*key;
		json_t	*v;	/* held */
		char	*text;	/* "key":value */
	}		 m[SG_WDUMP_MEMBERS];
	int		 nm;
};

/* New text of work (its length in *len), key naming the list; NULL out
 * of memory. */
char	*sg_wdump_text(struct sg_wdump *, const json_t *work, const char *key,
	    size_t *len);
void	 sg_wdump_free(struct sg_wdump *);

#endif
