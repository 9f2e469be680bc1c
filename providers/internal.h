/*
 * Private to providers/: the HTTP calls every remote provider makes.
 */
#ifndef SG_PROVIDERS_INTERNAL_H
#define SG_PROVIDERS_INTERNAL_H

#include "provider.h"

#define SG_HDR_MAX 12

/* Request headers: "Name: value" strings, owned by the struct. */
struct sg_hdrs {
	char	*h[SG_HDR_MAX];
	int	 n;
};

/* "name: value" (value NULL: ""), built without printf: a transfer
 * takes a handful, every round. */
void	 sg_hdrs_add(struct sg_hdrs *, const char *name, const char *value);
void	 sg_hdrs_free(struct sg_hdrs *);

/* The prov's kept handle and parsed URLs freed (sg_prov_free). */
void	 sg_phttp_free(struct sg_prov *);
/*
 * One JSON call. 0 when an HTTP answer came (any status: *status, and
 * *resp a new reference to its JSON body, or NULL when empty or not
 * JSON); else an sg_prov_rc with err filled. body is borrowed.
 */
int	 sg_phttp_call(struct sg_prov *, const char *method, const char *url,
	    const struct sg_hdrs *, const json_t *body, long timeout_ms,
	    long *status, json_t **resp, struct sg_prov_error *);

/* sg_phttp_call for an answer that may be large (a file list): its body
 * is kept up to max bytes; a larger one stops the call, FAILED. */
int	 sg_phttp_call_max(struct sg_prov *, const char *method,
	    const char *url, const struct sg_hdrs *, const json_t *body,
	    size_t max, long timeout_ms, long *status, json_t **resp,
	    struct sg_prov_error *);

/*
 * A GET whose 200 body is written to fd as it comes; SG_PROV_CAP as soon
 * as more than max bytes came (the first max are written, the transfer is
 * stopped). Any other status's body is kept (64 KiB at most) and *errresp
 * is a new reference to it as JSON, or NULL. Returns like sg_phttp_call.
 */
int	 sg_phttp_download(struct sg_prov *, const char *url,
	    const struct sg_hdrs *, int fd, int64_t max, long timeout_ms,
	    long *status, json_t **errresp, struct sg_prov_error *);

/*
 * A streamed POST (HTTP/1.1, as the sandboxes expect): a 200's body goes
 * line by line to lines; any other status's body is kept in *errbody (new,
 * NUL-terminated). Returns like sg_phttp_call; SG_PROV_CAP past the
 * output cap, SG_PROV_TIMEOUT past timeout_s.
 */
int	 sg_phttp_stream(struct sg_prov *, const char *url,
	    const struct sg_hdrs *, const json_t *body, int timeout_s,
	    struct sg_lines *, long *status, char **errbody,
	    struct sg_prov_error *);

/* A POST whose body is size bytes read from fd (hdrs give its type);
 * returns like sg_phttp_call. */
int	 sg_phttp_upload(struct sg_prov *, const char *url,
	    const struct sg_hdrs *, int fd, int64_t size, long timeout_ms,
	    long *status, json_t **resp, struct sg_prov_error *);

/* A multipart/form-data POST: each part's bytes are data, or size bytes
 * from fd when fd >= 0. Returns like sg_phttp_call. */
struct sg_form_part {
	const char	*name, *filename, *type;
	const char	*data;
	int		 fd;
	int64_t		 size;
};
int	 sg_phttp_upload_form(struct sg_prov *, const char *url,
	    const struct sg_hdrs *, const struct sg_form_part *, int n,
	    long timeout_ms, long *status, json_t **resp,
	    struct sg_prov_error *);

/* envd.c: write size bytes from fd to path through envd's files API at
 * base (its URL without a path), with h (more are added). */
int	 sg_envd_put(struct sg_prov *, const char *base, struct sg_hdrs *h,
	    const char *path, int fd, int64_t size, struct sg_prov_error *);

/* envd.c: the list and get ops through envd's filesystem service
 * (ListDir) and files API at base, with h (more are added). */
int	 sg_envd_list(struct sg_prov *, const char *base, struct sg_hdrs *h,
	    const char *dir, size_t max, json_t **files,
	    struct sg_prov_error *);
int	 sg_envd_get(struct sg_prov *, const char *base, struct sg_hdrs *h,
	    const char *path, int fd, int64_t max, struct sg_prov_error *);
/* One of the ops above as a value, for providers that reach envd one
 * way for all (the local kernel's socket, e2b's proxy). size: put's
 * bytes, get's most. */
enum sg_envd_op { SG_ENVD_PUT, SG_ENVD_LIST, SG_ENVD_GET };
struct sg_envd_req {
	enum sg_envd_op	 op;
	const char	*path;		/* the file, or the dir listed */
	int		 fd;
	int64_t		 size;
	size_t		 max;		/* list: most files */
	json_t		**files;	/* list: its answer */
};
int	 sg_envd(struct sg_prov *, const char *base, struct sg_hdrs *h,
	    const struct sg_envd_req *, struct sg_prov_error *);
/* envd's MakeDir: dir made (with its parents, owned by "user"), or
 * already there. */
int	 sg_envd_mkdir(struct sg_prov *, const char *base, struct sg_hdrs *h,
	    const char *dir, struct sg_prov_error *);

/* The provider's error message from a JSON error body, or a fallback. */
const char *sg_phttp_message(const json_t *resp, const char *fallback);

/* A control-plane answer that is not the expected success, mapped: 401
 * and 403 AUTH, 404 GONE, 429 RATE, the rest FAILED. */
int	 sg_phttp_status_error(const char *provider, const struct sg_tool *,
	    const char *what, long status, const json_t *resp,
	    struct sg_prov_error *);

/* Request bodies and URLs, exposed for the unit tests. New references. */
json_t	*sg_e2b_create_body(const struct sg_tool *, const char *sbx_id,
	    int lifetime_s);
void	 sg_e2b_execute_url(const struct sg_tool *, const json_t *handle,
	    char *url, size_t sz);
json_t	*sg_osb_create_body(const struct sg_tool *, const char *sbx_id,
	    int lifetime_s);
/* The list op's parsers. New array of {path, size, mtime}: the regular
 * files of a ListDir answer (envd), of an execd /files/search answer at
 * most SG_PROV_LIST_DEPTH levels below dir (OpenSandbox), at most max;
 * NULL when resp (borrowed) is not such an answer. */
json_t	*sg_envd_list_files(const json_t *resp, size_t max);
json_t	*sg_osb_search_files(const json_t *resp, const char *dir, size_t max);
/* osb_files.c: the headers a handle says every execd call carries; the
 * put, list and get ops through execd's files API. */
void	 sg_osb_execd_headers(const json_t *handle, struct sg_hdrs *);
int	 sg_osb_put(struct sg_prov *, const struct sg_tool *,
	    const json_t *handle, const char *path, int fd, int64_t size,
	    struct sg_prov_error *);
int	 sg_osb_list(struct sg_prov *, const struct sg_tool *,
	    const json_t *handle, const char *dir, size_t max, json_t **files,
	    struct sg_prov_error *);
int	 sg_osb_get(struct sg_prov *, const struct sg_tool *,
	    const json_t *handle, const char *path, int fd, int64_t max,
	    struct sg_prov_error *);

#endif
