/*
 * sg_cite: OpenAI's container_file_citation annotations. Where the
 * model's text links a file of its container as sandbox:/mnt/data/...,
 * the annotation names the container file (cfile_...) that holds it, by
 * the link's place in the text: start and end (exclusive) in code
 * points, covering exactly the sandbox:/mnt/data/... URL, as OpenAI's.
 */
#ifndef SG_CITE_H
#define SG_CITE_H

#include <jansson.h>

#include "../../store/store.h"

struct sg_cite {
	struct sg_store	*store;
	const char	*tenant;
	const char	*container;	/* "" or NULL: nothing is cited */
	/* Cited when container is "" (a session's sandbox this request
	 * never needed): "" or NULL for none. */
	const char	*fallback;
};

/* New reference: the annotations for text's links (an array, [] when
 * none). */
json_t	*sg_cite_text(const struct sg_cite *, const char *text, size_t len);
/* The answer's output items (borrowed, changed in place): every
 * output_text part of a message gets its text's annotations after any
 * it had. */
void	 sg_cite_output(const struct sg_cite *, json_t *output);
/* The same for one message item (borrowed, changed in place). */
void	 sg_cite_message(const struct sg_cite *, json_t *item);

#endif
