/*
 * sg_codedec: decodes the "code" string of a code tool call's arguments
 * while they stream in, so the code can be shown as it is written
 * (response.code_interpreter_call_code.delta). The arguments are a JSON
 * object, {"code": "..."}, arriving in pieces split anywhere: inside an
 * escape, between the halves of a surrogate pair. What comes out is
 * always whole UTF-8 characters. A key other than "code" is skipped; a
 * document it cannot follow (not an object, a nested value before
 * "code", more keys than it keeps) makes it stop emitting: the caller
 * then takes the code from the complete arguments. Keys are decoded, so
 * "c\u006fde" is "code" here as for Jansson; a key seen twice marks the
 * arguments invalid, as sg_rw_code_arg refuses them: a second "code" is
 * never shown.
 */
#ifndef SG_CODEDEC_H
#define SG_CODEDEC_H

#include <stddef.h>

typedef void (*sg_codedec_fn)(void *arg, const char *text, size_t len);

struct sg_codedec {
	int		 state;
	int		 esc;		/* in an escape: 0, '\\', or 'u' */
	unsigned	 u;		/* \uXXXX being read */
	int		 udigits;
	unsigned	 high;		/* a high surrogate waiting for its low */
	char		 keys[256];	/* the keys seen, decoded, each ended
					 * by a NUL, then the one being read */
	size_t		 keys_len;	/* bytes of the finished keys */
	size_t		 keylen;	/* bytes of the key being read */
	int		 is_code;	/* the current string value is "code" */
	int		 done;		/* the code string has ended */
	int		 lost;		/* could not follow: stopped */
	int		 invalid;	/* a key came twice: stopped, and the
					 * arguments are to be refused */
	sg_codedec_fn	 fn;
	void		*arg;
};

void	 sg_codedec_init(struct sg_codedec *, sg_codedec_fn, void *arg);
/* Feed the next piece of the arguments text. */
void	 sg_codedec_feed(struct sg_codedec *, const char *buf, size_t len);

#endif
