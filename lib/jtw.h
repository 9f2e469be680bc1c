/*
 * sg_jtw: JSON written as text, piece by piece, with no tree of values
 * built and dumped: for output whose shape the caller knows. Strings and
 * integers are written as sg_jdump writes them, a string that is not
 * UTF-8 made so (its bad bytes U+FFFD, as sg_json_string_lossy makes
 * it). A write after one that failed (out of memory) does nothing, and
 * sg_jtw_end says whether any did: one check at the end, not one a
 * piece.
 */
#ifndef SG_JTW_H
#define SG_JTW_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

struct sg_jtw {
	struct sg_buf	 b;		/* the text so far */
	int		 failed;	/* a write failed: the text is not whole */
};

/* Text as it is (punctuation, a member's JSON already written). */
void	 sg_jtw_lit(struct sg_jtw *, const char *);
/* s[0..n) as a JSON string. */
void	 sg_jtw_text(struct sg_jtw *, const char *s, size_t n);
/* s as a JSON string, or null for NULL and "". */
void	 sg_jtw_str(struct sg_jtw *, const char *s);
void	 sg_jtw_int(struct sg_jtw *, int64_t);
void	 sg_jtw_bool(struct sg_jtw *, int);
/* sep, then "key": (sep "{" or "," as the member's place asks; key a
 * literal that needs no escape). */
void	 sg_jtw_key(struct sg_jtw *, const char *sep, const char *key);
/* A member: sep, "key":, and v (an integer; a string or null as
 * sg_jtw_str). */
void	 sg_jtw_mint(struct sg_jtw *, const char *sep, const char *key,
	    int64_t v);
void	 sg_jtw_mstr(struct sg_jtw *, const char *sep, const char *key,
	    const char *s);
/* The text (new; "" when nothing was written), or NULL (freed) when a
 * write failed. */
char	*sg_jtw_end(struct sg_jtw *);

#endif
