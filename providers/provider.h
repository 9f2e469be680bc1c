/*
 * sg_provider: one interface over every sandbox provider (e2b,
 * OpenSandbox, the local sandbox). A sandbox is reached again through its
 * handle, a JSON object each provider fills at create and reads back on
 * every call, so any responder can use a sandbox another one created.
 *
 * providers/ never includes core/ or fcgi/: core fills struct sg_tool from
 * the config and hands it in; everything comes back as values.
 */
#ifndef SG_PROVIDER_H
#define SG_PROVIDER_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "../lib/util.h"

enum sg_provider_kind {
	SG_PROVIDER_LOCAL,
	SG_PROVIDER_E2B,
	SG_PROVIDER_OPENSANDBOX,
};

/* One configured sandbox tool (sandbox_tools entry). */
struct sg_tool {
	char	*name;
	enum sg_provider_kind provider;
	char	*api_key, *api_key_problem;
	char	*api_base, *template, *image, *sandbox_url, *isolation;
	int	 memory_mb, disk_mb, max_procs, allow_internet_access;
	int	 cpu;		/* CPUs it may use; 0: the default (local: 1,
				 * opensandbox: the provider's) */
	int	 limits_process; /* local: limits = "process" (no cgroup) */
	int	 warm;		/* sandboxes kept created ahead (core/state/pool.c) */
	char	*kernel;	/* local: "auto" (NULL), "ipython" or "python" */
	char	*local_dir;	/* local: sandboxd's runtime dir (beside the
				 * store), filled by the config loader */
	/* What the ledger charges for it (USD), not the provider's concern
	 * but read with the rest of the tool's settings. */
	double	 price_session, price_hour;
};

enum sg_prov_rc {
	SG_PROV_OK = 0,
	SG_PROV_FAILED = -1,	/* the provider said no, or broke */
	SG_PROV_GONE = -2,	/* the sandbox no longer exists there */
	SG_PROV_AUTH = -3,	/* the tool's credentials were refused */
	SG_PROV_RATE = -4,	/* the provider asks us to slow down */
	SG_PROV_TIMEOUT = -5,	/* no answer in time (create, or a run) */
	SG_PROV_UNREACHABLE = -6, /* could not connect */
	SG_PROV_CAP = -7,	/* output larger than the cap */
	SG_PROV_STOPPED = -8,	/* the caller asked us to stop */
	SG_PROV_CONFIG = -9,	/* the tool cannot work as configured */
};

struct sg_prov_error {
	enum sg_prov_rc	 rc;
	int		 status;	/* the provider's HTTP status, or 0 */
	char		 message[512];
};

/*
 * The result of one run, e2b's shape (design §3.3): stdout, stderr,
 * results (e2b result objects: text, png, html, ..., is_main_result),
 * error {name, value, traceback} or NULL, execution_count (-1: none).
 */
struct sg_exec {
	struct sg_buf out, err;		/* may hold invalid UTF-8 */
	json_t	*results;		/* array, owned */
	json_t	*error;			/* object or NULL, owned */
	int	 execution_count;
	size_t	 bytes;			/* output so far, decoded, and what
					 * kept values cost: for the cap */
	size_t	 cap;
	int	 ended;			/* the provider's end marker was seen */
	int	 started;		/* a line of the run itself came */
	/* A keepalive came before the run started: e2b's server queued it
	 * behind an interrupted run and its kernel aborted it ("aborted",
	 * which the server never reports): it will never start. */
	int	 stalled;
};

/* Per-process context of provider calls: a reused libcurl handle, and
 * when to give up. */
struct sg_phttp;

struct sg_prov {
	struct sg_phttp *http;		/* http.c's kept handle, made lazily */
	size_t	 output_cap;		/* bytes; 0: 10 MiB */
	int64_t	 deadline_ms;		/* sg_now_ms() clock; 0: none */
	/* Set by the local provider around its calls: they go over this
	 * Unix socket (the kernel's) instead of TCP. */
	const char *unix_socket;
	/* Polled while waiting: non-zero means stop (client gone). */
	int	(*stop)(void *arg);
	void	*stop_arg;
	/* Optional (NULL: nothing): shown a run's result as it grows, when
	 * output came and while waiting for more, so a caller can pass the
	 * output on as it comes; res is valid only during the call. */
	void	(*progress)(void *arg, const struct sg_exec *res);
	void	*progress_arg;
};

struct sg_provider_ops {
	/* New *handle. sbx_id is sandgate's id, for the provider's labels;
	 * lifetime_s how long the provider should keep it without keepalive. */
	int	(*create)(struct sg_prov *, const struct sg_tool *,
		    const char *sbx_id, int lifetime_s, json_t **handle,
		    struct sg_prov_error *);
	/* Fills *res (sg_exec_init first). A code error is OK: it is in
	 * res->error. */
	int	(*run)(struct sg_prov *, const struct sg_tool *,
		    const json_t *handle, const char *code, int timeout_s,
		    struct sg_exec *res, struct sg_prov_error *);
	/* GONE when it was already gone: for callers, as good as OK. */
	int	(*destroy)(struct sg_prov *, const struct sg_tool *,
		    const json_t *handle, struct sg_prov_error *);
	int	(*keepalive)(struct sg_prov *, const struct sg_tool *,
		    const json_t *handle, int lifetime_s, struct sg_prov_error *);
	/* The sandbox made for sandgate's sbx_id, by the label create gave
	 * it: for a create whose caller died before it had the handle. OK
	 * with a new *handle, GONE when there is none. NULL for a provider
	 * whose sandboxes die with the request that was making them. */
	int	(*find)(struct sg_prov *, const struct sg_tool *,
		    const char *sbx_id, json_t **handle, struct sg_prov_error *);
	/* Write size bytes read from fd to path in the sandbox (parents
	 * made, an existing file replaced). NULL for a provider that cannot
	 * take files yet. */
	int	(*put)(struct sg_prov *, const struct sg_tool *,
		    const json_t *handle, const char *path, int fd, int64_t size,
		    struct sg_prov_error *);
	/* The regular files under dir (absolute), recursively (symlinks not
	 * followed, at most SG_PROV_LIST_DEPTH levels), at most max of them:
	 * a new array *files of {"path": absolute, "size": integer,
	 * "mtime": string} in the provider's order. mtime is opaque: it
	 * changes when the file is written. A dir that does not exist is an
	 * empty list. NULL for a provider that cannot list. */
	int	(*list)(struct sg_prov *, const struct sg_tool *,
		    const json_t *handle, const char *dir, size_t max,
		    json_t **files, struct sg_prov_error *);
	/* Write the bytes of the file at path to fd (at its offset). CAP
	 * when it holds more than max bytes (fd then has a part of it);
	 * FAILED with status 404 when there is no such file. NULL for a
	 * provider that cannot give files. */
	int	(*get)(struct sg_prov *, const struct sg_tool *,
		    const json_t *handle, const char *path, int fd, int64_t max,
		    struct sg_prov_error *);
};

#define SG_PROV_LIST_DEPTH	8

/* The ops of a provider, or NULL when this build has none for it. */
const struct sg_provider_ops *sg_provider_ops(enum sg_provider_kind);
const char	*sg_provider_name(enum sg_provider_kind);
int		 sg_provider_parse(const char *, enum sg_provider_kind *);
void		 sg_prov_init(struct sg_prov *);
void		 sg_prov_free(struct sg_prov *);
/* A word for rc, for logs and metrics ("timeout", "unreachable"...). */
const char	*sg_prov_rc_name(enum sg_prov_rc);
/* Fill err; returns rc. */
int		 sg_prov_fail(struct sg_prov_error *, enum sg_prov_rc, int status,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

void		 sg_exec_init(struct sg_exec *, size_t cap);
void		 sg_exec_free(struct sg_exec *);
/* New reference: {"object":"code_execution","stdout","stderr","results",
 * "error","execution_count"}; invalid UTF-8 becomes U+FFFD. */
json_t		*sg_exec_json(const struct sg_exec *);
/*
 * A run cut by its time limit once it had started answering is a result,
 * as the local kernel gives one: TimeoutError, the output so far kept.
 * SG_PROV_OK then, else rc as it was (no answer at all stays a timeout).
 */
int		 sg_exec_timeout(struct sg_exec *, int rc, long status,
		    int limit_s);

/* Whether a local sandbox (its handle) is known gone from its files
 * alone, no sandboxd asked: the sandboxd that made it is not running (its
 * kernels died with it), or runs again without it. 0 when it may live, or
 * when this process may not look. */
int		 sg_local_gone(const json_t *handle);

/* Stream parsers, one line at a time (without its "\n"); the line
 * splitter below calls them. Non-JSON lines are skipped. */
void		 sg_exec_e2b_line(struct sg_exec *, const char *line, size_t len);
void		 sg_exec_osb_line(struct sg_exec *, const char *line, size_t len);

/* Splits a byte stream into lines and enforces res->cap. */
struct sg_lines {
	struct sg_buf line;		/* a line not yet ended */
	int	 stall_check;		/* stop when res->stalled */
	void	(*fn)(struct sg_exec *, const char *, size_t);
	struct sg_exec *res;
};
/* 0, or -1 when the output cap was passed, or the run stalled while
 * stall_check is set (then stop reading). */
int		 sg_lines_feed(struct sg_lines *, const char *buf, size_t len);
/* Process a final line without "\n" and free the buffer. */
void		 sg_lines_finish(struct sg_lines *);

#endif
