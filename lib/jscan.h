/*
 * sg_jscan: an object's members found in JSON text without building it,
 * so that a large event is read for a few of its members: the members
 * wanted are parsed alone, the rest only checked; and a parser that
 * builds what the check passed.
 *
 * The check is Jansson's parser's (json_loadb with JSON_ALLOW_NUL): the
 * same text is refused (bad syntax, UTF-8, escapes, surrogates, numbers
 * past json_int_t or a double, nesting past 2048, a NUL in a key), so a
 * reader that skips members sees what a whole parse would have failed.
 */
#ifndef SG_JSCAN_H
#define SG_JSCAN_H

#include <stddef.h>

#include <jansson.h>

/* A member's value: its text, p[0..len); p NULL when absent. */
struct sg_jspan {
	const char	*p;
	size_t		 len;
};

/*
 * The object p[0..n) (whitespace around it allowed), checked whole: the
 * values of the members named in names (NULL-terminated) in out, in the
 * same order (the last of a repeated key, as Jansson keeps). 0; -1 when
 * the text is not one valid JSON object, or a key is written with an
 * escape (then only a whole parse reads it right).
 */
int	 sg_jscan_object(const char *p, size_t n, const char *const *names,
	    struct sg_jspan *out);

/* A member (names[at]) whose value, when an object, has its own members
 * found in the same pass (out of the last such value: they are its when
 * the member's value found is an object). */
struct sg_jscan_sub {
	int			 at;
	const char *const	*names;
	struct sg_jspan		*out;
};
int	 sg_jscan_object_sub(const char *p, size_t n, const char *const *names,
	    struct sg_jspan *out, const struct sg_jscan_sub *sub);

/* What sg_jparse takes, as Jansson's flags of the same names. */
enum {
	SG_JPARSE_ANY = 1,	/* JSON_DECODE_ANY: any value, not only an
				 * object or an array */
	SG_JPARSE_NODUP = 2	/* JSON_REJECT_DUPLICATES: NULL for an
				 * object that names a key twice */
};

/*
 * New reference: p[0..n) parsed as json_loadb(p, n, JSON_ALLOW_NUL | the
 * flags' Jansson flags, NULL) parses it (the same values, a repeated
 * key's last), faster: checked first, then built without Jansson's
 * lexer; text the check leaves to Jansson goes to it.
 */
json_t	*sg_jparse(const char *p, size_t n, int flags);

/* As sg_jparse; when NULL, err (if not NULL) says why as json_loadb
 * says it: json_error_code() tells a repeated key from text that is not
 * JSON. */
json_t	*sg_jparse_err(const char *p, size_t n, int flags, json_error_t *err);

#endif
