/*
 * sg_files: the tenants' files, what /v1/files and container files share:
 * where a file's bytes live, its JSON, its quota, sending it, and the
 * reaper's pruning. The routes: core/api/files_api.h.
 */
#ifndef SG_FILES_H
#define SG_FILES_H

#include <jansson.h>

#include "../config/config.h"
#include "../http/http.h"
#include "../http/upload.h"
#include "../../store/store.h"

struct sg_files_env {
	const struct sg_cfg	*cfg;
	struct sg_store		*store;
};

#define SG_FILES_IDS_MAX	50	/* OpenAI's most file_ids in a request */

/* New reference: the file object OpenAI answers for f. */
json_t	*sg_files_json(const struct sg_store_file *f);
/* Where the bytes of file id are: 0, or -1 when the path does not fit. */
int	 sg_files_path(const struct sg_cfg *, const char *id, char *out,
	    size_t sz);
void	 sg_files_unlink(const struct sg_cfg *, const char *id);
/* Record f (its container_id and source set, or "") as a new file of
 * tenant: an id of prefix and idbytes random bytes, its times, and
 * reserve bytes and one file of the key's quota held while its bytes are
 * written (no more may be written). 0, or -1 with err (413 past the
 * quota: then *held, when not NULL, says which part and what was held). */
int	 sg_files_begin(const struct sg_files_env *, const char *tenant,
	    const char *prefix, size_t idbytes, int64_t reserve,
	    struct sg_store_file *f, struct sg_store_quota *held,
	    struct sg_error *err);
/* sg_files_begin for req's upload (the bytes its body may hold), then
 * the body read into u (sg_upload_recv), its name and size into f: 0
 * with the bytes in the upload's part file, or -1 with err and nothing
 * left, row included. */
int	 sg_files_upload(const struct sg_files_env *, struct sg_req *,
	    const char *prefix, size_t idbytes, struct sg_store_file *f,
	    struct sg_upload *u, struct sg_error *err);
/* f's bytes open for reading: the descriptor, or -1 with err (421 when
 * another box wrote them and files.dir is not shared with it). */
int	 sg_files_open(const struct sg_files_env *, const struct sg_store_file *f,
	    struct sg_error *err);
/* Answer f's bytes (200, application/octet-stream, its length and name):
 * 0, or -1 with err before anything was sent. */
int	 sg_files_send(const struct sg_files_env *, const struct sg_store_file *f,
	    const struct sg_req *, struct sg_out *, struct sg_error *err);
/*
 * A request's list of file ids (ids NULL: none), as OpenAI checks one:
 * an array of at most SG_FILES_IDS_MAX ids, each one of tenant's ready
 * files (else 404), fn called for each. The errors name the list as name
 * and carry param. 0, or -1 with err.
 */
int	 sg_files_each_id(const struct sg_files_env *, const char *tenant,
	    const json_t *ids, const char *param, const char *name,
	    void (*fn)(void *, const struct sg_store_file *), void *arg,
	    struct sg_error *err);
/* Every file of tenant's container (a gone one's too) removed with its
 * bytes. */
void	 sg_files_drop(const struct sg_files_env *, const char *tenant,
	    const char *container);
/* The reaper's part: files past their expiry, and uploads whose writer
 * died, removed with their bytes. The count removed. */
int	 sg_files_prune(const struct sg_files_env *);

#endif
