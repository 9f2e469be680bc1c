/*
 * sg_cfg: the parsed configuration (libconfig syntax, design §3.2).
 * Loaded once in the master before any fork and shared read-only by the
 * children. Secrets may be literal, "env:NAME", "os.environ/NAME" or
 * "file:/path"; a secret whose source is missing leaves the field NULL
 * and its *_problem set, so the thing using it can say why.
 */
#ifndef SG_CONFIG_H
#define SG_CONFIG_H

#include <stddef.h>

#include "../../providers/provider.h"

/* background.runners, at most: each is a process and a store connection. */
#define SG_CFG_RUNNERS_MAX	64

/* Who keeps a conversation's state for previous_response_id. */
enum sg_state {
	SG_STATE_UPSTREAM,	/* the upstream stores its responses */
	SG_STATE_GATEWAY,	/* sandgate does; the upstream gets store:false
				 * and the whole history */
};

enum sg_api {
	SG_API_RESPONSES,	/* /responses and /chat/completions */
	SG_API_CHAT,		/* only /chat/completions: sandgate serves
				 * /v1/responses on it (core/upstream/bridge.c) */
};

/* What a key may spend: its own (-1, or budget < 0: not set, auth.limits'
 * then) or auth.limits' (0: none). */
enum sg_period { SG_PERIOD_DAY, SG_PERIOD_WEEK, SG_PERIOD_MONTH };
struct sg_cfg_limits {
	long long	 rpm;		/* requests per minute */
	long long	 tpm;		/* tokens (in + out) per minute */
	double		 budget;	/* USD per period */
	int		 period;	/* enum sg_period, calendar UTC */
	long long	 sandbox_seconds;	/* of code runs per period */
};

/* USD per 1M tokens; cached input is charged as input when not set. */
struct sg_price {
	double	 input, cached_input, output;
	int	 cached_set;
};

struct sg_cfg_model {
	char	*name;		/* what clients send; "*" matches any */
	char	*api_base;	/* without trailing slash */
	char	*api_key;	/* NULL: none configured, or unresolved */
	char	*api_key_problem; /* why api_key is NULL, or NULL */
	char	*model;		/* upstream id; NULL: the client's name */
	int	 max_agentic_loops; /* 0: interception's */
	int	 timeout;	/* seconds the upstream may stay silent */
	enum sg_state state;	/* default: upstream for OpenAI's own hosts */
	enum sg_api api;	/* what its upstream speaks */
	struct sg_price price;
};

struct sg_cfg_key {
	char	*name;
	char	 sha256[65];	/* lower-case hex; "" when unresolved */
	char	*problem;
	int	 max_concurrent; /* requests at once; 0: auth.max_concurrent */
	char	**tools;	/* sandbox tools it may use; NULL: all */
	size_t	 ntools;
	struct sg_cfg_limits limits;	/* its own; see sg_cfg_limits_of */
};

/* workers MAX at most: a responder holds a stream, so this many streams
 * at once (about 0.5 MiB of PSS each). */
#define SG_CFG_WORKERS_MAX	1024

struct sg_cfg {
	char	*path;
	struct {
		int	 workers_min, workers_max;
		char	*user;
		char	*mount_prefix;
		size_t	 max_body_bytes;
		int	 request_timeout;
		int	 idle_retire;	/* seconds before a spare responder retires */
		int	 grace;		/* seconds a busy responder gets on stop */
		int	 socket_mode;	/* for --listen /path; -1: umask */
		char	*socket_owner;	/* "user" or "user:group"; NULL: ours */
		int	 read_timeout;	/* seconds to read a request's params
					 * and body from the web server */
		int	 recycle_mb;	/* a responder past this RSS after a
					 * request is replaced; 0: never */
		int	 queue_timeout;	/* seconds a request may wait for a
					 * responder or its key's turn; 0:
					 * refused at once */
	} server;
	struct {
		char	*path;		/* SQLite's file; with url, its
					 * directory still holds the box's
					 * own state (local sandboxes, files) */
		char	*url;		/* PostgreSQL, or NULL */
		char	*box;		/* this box's name; NULL: the host's */
	} store;
	struct {
		struct sg_cfg_key *keys;
		size_t	 nkeys;
		int	 allow_anonymous;
		int	 max_concurrent; /* per key; 0: none (fair share) */
		struct sg_cfg_limits limits;	/* every key's, unless its own */
		/* Keys of the admin API and the console, never a tenant's:
		 * name, key or key_sha256 (limits and tools unused). */
		struct sg_cfg_key *admins;
		size_t	 nadmins;
	} auth;
	struct sg_cfg_model *models;
	size_t	 nmodels;
	struct sg_tool *tools;
	size_t	 ntools;
	struct {
		int	 enabled;
		char	*sandbox_tool;
		int	 max_agentic_loops;
		char	*tool_name;
		int	 exec_timeout;
		int	 reuse_conversation; /* container_reuse = "conversation" */
	} interception;
	struct {
		int	 max_per_key;
		int	 ttl;
	} sessions;
	struct {
		int	 retention;	/* seconds a stored response is kept */
	} responses;
	struct {
		char	*dir;		/* uploaded and container files; default
					 * "files" beside the store */
		long long max_bytes;	/* per file */
		long long max_bytes_per_key;	/* every file of a key */
		int	 max_files_per_key;	/* how many files a key may hold */
		int	 retention;	/* seconds a file is kept */
	} files;
	struct {
		int	 retention;	/* seconds a ledger row is kept */
		int	 traces;	/* seconds a request's trace is kept;
					 * 0: none written */
	} usage;
	struct {
		int	 enabled;	/* served only with auth.admin_keys */
		char	*path;		/* "/console/": under mount_prefix */
	} console;
	struct {
		int	 runners;	/* processes running background
					 * responses; 0: background refused */
		int	 max_per_key;	/* a key's jobs running at once; 0:
					 * no cap */
	} background;
	struct {
		int	 enabled;	/* served when there is a sandbox tool */
		char	*path;		/* "/mcp": under mount_prefix */
		char	*sandbox_tool;	/* default interception.sandbox_tool */
	} mcp;
	/* "file:line: ..." for unknown keys and unresolved secrets: warnings
	 * at start, errors for `sandgate check-config`. */
	char	**warnings;
	size_t	 nwarnings;
};

/* New: *out on success (0). On -1, err holds "file:line: reason". */
int	 sg_cfg_load(const char *path, struct sg_cfg **out, char *err,
	    size_t errsz);
void	 sg_cfg_free(struct sg_cfg *);
/* The config path: argument, else $SANDGATE_CONFIG, else the default. */
const char *sg_cfg_default_path(const char *arg);
/* Borrowed: the model entry clients address as name, or NULL. */
const struct sg_cfg_model *sg_cfg_model(const struct sg_cfg *, const char *name);
const struct sg_tool *sg_cfg_tool(const struct sg_cfg *, const char *name);
/* How many heavy requests key (NULL: a store key, or anonymous) may have
 * under way at once: its max_concurrent, else auth.max_concurrent; 0 when
 * neither is set (no cap but the fair share). */
int	 sg_cfg_key_limit(const struct sg_cfg *, const struct sg_cfg_key *);
/* A key's limits, each its own when set, else auth.limits' (own: a key's
 * limits, or NULL for a store key without settings, or anonymous). */
void	 sg_cfg_limits_of(const struct sg_cfg *, const struct sg_cfg_limits *own,
	    struct sg_cfg_limits *out);
/* Limits none of which is set: what a key's own start as. */
void	 sg_cfg_limits_unset(struct sg_cfg_limits *);
/* Whether key (NULL: any key of the store) may use the tool named tool. */
int	 sg_cfg_key_may_use(const struct sg_cfg_key *, const char *tool);
/* Resolve a secret spec. New string in *out (NULL when the source is
 * missing, with a new reason in *problem). -1 only when out of memory. */
int	 sg_cfg_secret(const char *spec, char **out, char **problem);

#endif
