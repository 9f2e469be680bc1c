/*
 * The store's conversations (conversations.c): the Conversations API's
 * objects, per tenant, and their items in the order they came. The JSON
 * is opaque text here, as for stored responses: core decides what an item
 * is; the store keeps it and gives it back. Another tenant's conversation
 * is not found, as if it did not exist.
 */
#ifndef SG_STORE_CONVERSATIONS_H
#define SG_STORE_CONVERSATIONS_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* A conversation read back; metadata new (NULL when none), freed by
 * sg_store_conv_clear. */
struct sg_store_conv {
	char		 id[64];
	char		*metadata;	/* JSON object text, or NULL */
	char		 sandbox_id[48];	/* the container its code last
					 * ran in, or "" */
	int64_t		 created_at, used_at;
};

/*
 * A new conversation id of tenant, with metadata (JSON text or NULL) and
 * its first n items (items' upstream may be NULL), in one transaction.
 * sandbox_id: the container the items' code ran in, or NULL. OK, or
 * EXISTS (its id).
 */
int	 sg_store_conv_create(struct sg_store *, const char *id,
	    const char *tenant, const char *metadata,
	    const struct sg_store_item *items, size_t n, const char *sandbox_id);
/* OK and *out filled, or NOTFOUND (another tenant's too). */
int	 sg_store_conv_get(struct sg_store *, const char *id,
	    const char *tenant, struct sg_store_conv *out);
void	 sg_store_conv_clear(struct sg_store_conv *);
/* Replace its metadata (JSON text or NULL): OK or NOTFOUND. */
int	 sg_store_conv_update(struct sg_store *, const char *id,
	    const char *tenant, const char *metadata);
/* OK or NOTFOUND; its items go with it. */
int	 sg_store_conv_delete(struct sg_store *, const char *id,
	    const char *tenant);
/*
 * Append n items, in one transaction; sandbox_id (NULL: unchanged)
 * becomes its container. OK, or NOTFOUND when it is not tenant's (then
 * nothing is added).
 */
int	 sg_store_conv_append(struct sg_store *, const char *id,
	    const char *tenant, const struct sg_store_item *items, size_t n,
	    const char *sandbox_id);
/*
 * One page of conversation id's items (the caller checked it is its
 * tenant's), oldest first unless desc, after the item after (NULL or "":
 * from the start), at most limit: fn for each (it->upstream NULL when
 * none was kept; strings borrowed for the call); *more set when items are
 * left. limit 0: every item. NOTFOUND when after is not one of its items.
 */
int	 sg_store_conv_items(struct sg_store *, const char *id,
	    const char *after, int limit, int desc,
	    int (*fn)(void *, const struct sg_store_item *), void *arg,
	    int *more);
/* The item item_id of tenant's conversation id: OK with *item a new
 * string, or NOTFOUND. */
int	 sg_store_conv_item_get(struct sg_store *, const char *id,
	    const char *tenant, const char *item_id, char **item);
/* OK or NOTFOUND (another tenant's too). */
int	 sg_store_conv_item_delete(struct sg_store *, const char *id,
	    const char *tenant, const char *item_id);
/* Remove at most limit conversations unused since before (unix
 * seconds), with their items. */
int	 sg_store_conv_prune(struct sg_store *, int64_t before, int limit,
	    int *removed);

#endif
