/*
 * Where a fuzz target cuts its input stream: byte 0 says how many cuts
 * (0-7), two bytes each give one, taken modulo the stream's length and
 * sorted; the rest is the stream. Shared by the targets that check that a
 * parser gives the same answer whole and in pieces.
 */
#ifndef SG_FUZZ_CUTS_H
#define SG_FUZZ_CUTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define FUZZ_MAX_CUTS 7

static int
fuzz_cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* 0 and the cuts, the stream in *s and *n; -1 when the input is too
 * short to hold its cuts. */
static int
fuzz_cuts(const uint8_t *data, size_t size, size_t cuts[FUZZ_MAX_CUTS],
    int *ncuts, const char **s, size_t *n)
{
	size_t head;
	int i;

	if (size < 1)
		return -1;
	*ncuts = data[0] & FUZZ_MAX_CUTS;
	head = 1 + 2 * (size_t)*ncuts;
	if (size < head)
		return -1;
	*s = (const char *)data + head;
	*n = size - head;
	for (i = 0; i < *ncuts; i++)
		cuts[i] = ((size_t)data[1 + 2 * i] << 8 | data[2 + 2 * i]) %
		    (*n + 1);
	qsort(cuts, (size_t)*ncuts, sizeof(cuts[0]), fuzz_cmp_size);
	return 0;
}

#endif
