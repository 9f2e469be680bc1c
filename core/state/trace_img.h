/*
 * sg_timg: the PNG images a request's code runs made, kept for its trace
 * (trace.h) apart from its rounds, so an operator sees what the code drew
 * and the rounds' bound stays the text's. Bounded per request: the first
 * SG_TRACE_IMAGES_MAX images and SG_TRACE_IMAGES_BYTES of their base64 in
 * all; an image past either is counted, not kept. A sandbox may send
 * anything as "png": only well-formed base64 whose bytes begin with PNG's
 * signature is kept, the rest dropped without a word (it is counted among
 * the run's images, as every image is).
 */
#ifndef SG_TRACE_IMG_H
#define SG_TRACE_IMG_H

#include <stddef.h>

#include <jansson.h>

/* Keep the PNGs of result (a CodeExecutionResult, borrowed; NULL: none),
 * the code run at index run of round round (both from 0): how many real
 * PNGs the bounds left out. */
int	 sg_timg_add(size_t round, size_t run, const json_t *result);
/* Whether s[0..n) is a PNG as well-formed base64 (padded, no space). */
int	 sg_timg_png(const char *s, size_t n);
/*
 * The images kept, but those of the rounds [skip_from, skip_to) (the ones
 * the trace's rounds left out): new text, a JSON array of {"round": its
 * number (from 1, as the rounds'), "run": its index in the round's
 * code_runs, "url": "data:image/png;base64,..."} in the order they were
 * made; NULL when none is.
 */
char	*sg_timg_json(size_t skip_from, size_t skip_to);
/* Forget every image. */
void	 sg_timg_reset(void);

#endif
