/*
 * TEMPORARY, to be deleted when store/usage.c (the ledger) is merged: an
 * empty ledger, so that the programs link while org_usage.c calls
 * sg_store_use_sum and the ledger is written on another branch.
 */
#include "store.h"
#include "usage.h"

int
sg_store_use_sum(struct sg_store *st, const struct sg_store_use_q *q,
    int (*fn)(void *, const struct sg_store_use_sum *), void *arg)
{
	(void)st;
	(void)q;
	(void)fn;
	(void)arg;
	return SG_STORE_OK;
}
