/*
 * What the MCP server's tools and resources share (mcp_tools.c,
 * mcp_ftools.c, mcp_res.c over mcp_box.c and mcp_result.c), and its
 * unit tests: results as values, paths and URIs of the sandbox's files,
 * and those files reached through the session's sandbox.
 */
#ifndef SG_MCP_TOOL_H
#define SG_MCP_TOOL_H

#include <stddef.h>
#include <jansson.h>

#include "mcp_int.h"
#include "../../lib/util.h"

#define SG_MCP_FILE_MAX	(10 * 1024 * 1024)	/* bytes a file read or
						 * written may have */
#define SG_MCP_CODE_MAX	(1024 * 1024)		/* bytes of code */
#define SG_MCP_LIST_MAX	1000			/* files a listing shows */
#define SG_MCP_PATH_MAX	1024			/* bytes of a path, its NUL
						 * included (a file row's) */

/* mcp_result.c: pure functions. */

/* New CallToolResult: one text part (printf's; invalid UTF-8 replaced),
 * isError as is_error, and structuredContent sc (stolen, may be NULL). */
json_t	*sg_mcp_text(int is_error, json_t *sc, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * New CallToolResult of a run (run borrowed, a CodeExecutionResult):
 * a text part with note (NULL: none) and what the loop gives models,
 * an image part per well-formed PNG or JPEG result, and
 * structuredContent conforming to run_code's outputSchema: the run
 * without "object", its results without their binary formats (named in
 * each result's "formats"). isError false: an exception the code raised
 * is its answer.
 */
json_t	*sg_mcp_run_result(const json_t *run, const char *note);
/* A string argument: 0 with *s (borrowed; NULL when absent
 * and optional), or -1 with a new isError result in *bad. */
int	 sg_mcp_arg_string(const json_t *args, const char *name, int required,
	    size_t max, const char **s, json_t **bad);
/* run_code's outputSchema (new). */
json_t	*sg_mcp_run_schema(void);
/*
 * The absolute path in the sandbox of in, a path relative to /mnt/data
 * or absolute under it: "." and empty parts dropped; "..", control
 * characters, a path elsewhere or too long refused. With dir_ok, "" and
 * /mnt/data itself are taken (a directory to list). 0 with out
 * (SG_MCP_PATH_MAX bytes), or -1 with why.
 */
int	 sg_mcp_path(const char *in, int dir_ok, char *out, char *why,
	    size_t whysz);
/* New string: the resource URI of an absolute path, SG_MCP_URI_PREFIX
 * and the path percent-encoded. */
char	*sg_mcp_uri(const char *path);
/* The path a resource URI names (sg_mcp_path's checks): 0 with out
 * (SG_MCP_PATH_MAX bytes), or -1. */
int	 sg_mcp_uri_path(const char *uri, char *out);
/* A file's media type by its name's extension, or NULL when unknown. */
const char *sg_mcp_mime(const char *path);
/* Whether bytes p[0..n) of a file of type mime (NULL: unknown) are to be
 * shown as text: a text type (or none known), valid UTF-8, no NUL. With
 * cut, a character the cut split at the end is forgiven: *n shortened. */
int	 sg_mcp_is_text(const char *mime, const char *p, size_t *n, int cut);
/* Whether s[0..n) is well-formed base64 (standard alphabet, padded). */
int	 sg_mcp_b64_ok(const char *s, size_t n);
/* New JSON string of p[0..n) as base64, or NULL (out of memory). */
json_t	*sg_mcp_b64(const void *p, size_t n);
/* Decode base64 s (white space allowed between groups) into out: 0, or
 * -1 when it is not base64. */
int	 sg_mcp_unb64(const char *s, size_t n, struct sg_buf *out);

/* mcp_box.c: the session's sandbox, open for its provider's file calls. */
struct sg_mcp_box {
	char				 id[48];
	struct sg_store_sbx		 row;
	const struct sg_tool		*t;
	const struct sg_provider_ops	*ops;
	json_t				*handle;	/* new */
	int				 lost;	/* a new one replaced a
						 * gone one */
};

/* A failure (err) as the tool's isError result (new), or
 * NULL with e (-32603) when the store failed: its detail is logged, not
 * sent; a key refused the tool is logged. */
json_t	*sg_mcp_failed(struct sg_mcp *, const char *tool,
	    const struct sg_error *, struct sg_mcp_err *);
/* The outcome of a file call: done, no such file, failed (err). */
#define SG_MCP_FILE_OK		0
#define SG_MCP_FILE_NONE	1
#define SG_MCP_FILE_FAILED	(-1)

/*
 * The bytes of the file at path (absolute), at most max of them, into
 * out (*cut when it holds more). With make the session's sandbox is made
 * if it has none, and one gone is replaced once (b->lost); without,
 * a session with no sandbox has no files. SG_MCP_FILE_*.
 */
int	 sg_mcp_file_get(struct sg_mcp *, int make, const char *path,
	    int64_t max, struct sg_buf *out, int *cut, int *lost,
	    struct sg_error *);
/* Write p[0..n) to path (absolute; parents made): SG_MCP_FILE_OK or
 * _FAILED; the sandbox made when none. */
int	 sg_mcp_file_put(struct sg_mcp *, const char *path, const void *p,
	    size_t n, int *lost, struct sg_error *);
/* The same from fd (size bytes). */
int	 sg_mcp_file_put_fd(struct sg_mcp *, const char *path, int fd,
	    int64_t size, int *lost, struct sg_error *);
/* The regular files under dir (absolute), sorted by path, at most
 * SG_MCP_LIST_MAX: a new array *files of {"path","size","mtime"}, each
 * checked (a sandbox's answer is the attacker's). make as for get.
 * SG_MCP_FILE_OK or _FAILED. */
int	 sg_mcp_file_list(struct sg_mcp *, int make, const char *dir,
	    json_t **files, int *lost, struct sg_error *);

/* What a result says when the session's sandbox was replaced. */
#define SG_MCP_LOST_NOTE "[sandgate: this session's sandbox was lost " \
	"(it expired, was reset or stopped answering), so this ran in a new " \
	"one: variables, imports and files from earlier calls are gone.]\n"

/* mcp_ftools.c: the file tools, arguments checked (an object whose keys
 * are the tool's): a new CallToolResult, or NULL with e (a protocol or
 * store error). */
json_t	*sg_mcp_write_file(struct sg_mcp *, const json_t *args,
	    struct sg_mcp_err *);
json_t	*sg_mcp_read_file(struct sg_mcp *, const json_t *args,
	    struct sg_mcp_err *);
json_t	*sg_mcp_list_files(struct sg_mcp *, const json_t *args,
	    struct sg_mcp_err *);
json_t	*sg_mcp_upload_file(struct sg_mcp *, const json_t *args,
	    struct sg_mcp_err *);

#endif
