/*
 * sg_files: OpenAI's Files API (/v1/files), and what container files
 * share with it: where a file's bytes live, its JSON, sending it, and the
 * reaper's pruning.
 */
#ifndef SG_FILES_H
#define SG_FILES_H

#include <jansson.h>

#include "config.h"
#include "http.h"
#include "router.h"
#include "../store/store.h"

struct sg_files_env {
	const struct sg_cfg	*cfg;
	struct sg_store		*store;
};

/* Answer one of the SG_ROUTE_FILE_* routes for req's tenant. */
void	 sg_files_api(const struct sg_files_env *, enum sg_route,
	    const char *id, struct sg_req *, struct sg_out *);
/* New reference: the file object OpenAI answers for f. */
json_t	*sg_files_json(const struct sg_store_file *f);
/* Where the bytes of file id are: 0, or -1 when the path does not fit. */
int	 sg_files_path(const struct sg_cfg *, const char *id, char *out,
	    size_t sz);
void	 sg_files_unlink(const struct sg_cfg *, const char *id);
/* Record f (its tenant, ids, names set) holding reserve bytes of its
 * key's quota while its bytes are written: 0, or -1 with err (413 past
 * the quota). */
int	 sg_files_reserve(const struct sg_files_env *, struct sg_store_file *f,
	    int64_t reserve, struct sg_error *err);
/* Answer f's bytes (200, application/octet-stream, its length and name):
 * 0, or -1 with err before anything was sent. */
int	 sg_files_send(const struct sg_cfg *, const struct sg_store_file *f,
	    const struct sg_req *, struct sg_out *, struct sg_error *err);
/* The reaper's part: files past their expiry, and uploads whose writer
 * died, removed with their bytes. The count removed. */
int	 sg_files_prune(const struct sg_files_env *);

#endif
