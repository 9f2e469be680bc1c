/*
 * sg_jdump: a JSON value written as json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) writes it, byte for byte, several times faster: the
 * same members in the same order, the same escapes (\" \\ \b \f \n \r \t,
 * \uXXXX in capitals for the other control characters), and a string
 * that is not UTF-8 refused as Jansson refuses it. Reals are left to
 * Jansson. v must be a tree (no value inside itself), as every value
 * sandgate builds is.
 */
#ifndef SG_JDUMP_H
#define SG_JDUMP_H

#include <jansson.h>

#include "util.h"

/* Append v's text to b: 0, or -1 (not UTF-8, out of memory; b's length
 * then as it was). */
int	 sg_jdump(struct sg_buf *b, const json_t *v);
/* New text of v, its length in *len (may be NULL); NULL as sg_jdump. */
char	*sg_jdump_text(const json_t *v, size_t *len);
/* Where a part of a text went: its bytes [start, end). */
struct sg_jdump_at {
	size_t	 start, end;
};
/*
 * Append the object o as sg_jdump does, and where its member name's
 * value went when it is an array: the array's bytes in *whole (start ==
 * end == 0 when o has no such array), its elements' in at[0..n) (at must
 * hold the array's size). So one writing gives a value's text and its
 * parts'. 0, or -1 as sg_jdump (o not an object too).
 */
int	 sg_jdump_marked(struct sg_buf *b, const json_t *o, const char *name,
	    struct sg_jdump_at *whole, struct sg_jdump_at *at);
/* Append s[0..n) as a JSON string, as sg_jdump writes one: 0, or -1 (not
 * UTF-8, out of memory; b's length then as it was). For text written
 * without a tree of values. */
int	 sg_jdump_str(struct sg_buf *b, const char *s, size_t n);
/* Append v as sg_jdump writes an integer: 0, or -1. */
int	 sg_jdump_int(struct sg_buf *b, json_int_t v);

#endif
