/*
 * The config loader's private parts, shared by config.c (the load and the
 * cross-setting rules), config_read.c (typed readers of one setting) and
 * config_parts.c (one loader per group). Nothing outside those includes it.
 */
#ifndef SG_CONFIG_INT_H
#define SG_CONFIG_INT_H

#include <libconfig.h>

#include "config.h"

/* One load in progress: where errors go and the config being built. */
struct sg_cfgld {
	const char	*file;
	char		*err;
	size_t		 errsz;
	struct sg_cfg	*cfg;
};

/* config_read.c */
int	 sg_cfgld_fail(struct sg_cfgld *, const config_setting_t *,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void	 sg_cfgld_warn(struct sg_cfgld *, const config_setting_t *,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The setting named name in grp, else grp itself (grp may be NULL): where
 * an error points. */
const config_setting_t *sg_cfgld_at(const config_setting_t *grp,
	    const char *name);
void	 sg_cfgld_check_keys(struct sg_cfgld *, const config_setting_t *grp,
	    const char *const known[], const char *where);
int	 sg_cfgld_str(struct sg_cfgld *, const config_setting_t *grp,
	    const char *name, char **out, int required);
int	 sg_cfgld_llong(struct sg_cfgld *, const config_setting_t *grp,
	    const char *name, long long *out, long long min, long long max);
/* The same into an int; min and max must fit one. */
int	 sg_cfgld_int(struct sg_cfgld *, const config_setting_t *grp,
	    const char *name, int *out, long long min, long long max);
int	 sg_cfgld_bool(struct sg_cfgld *, const config_setting_t *grp,
	    const char *name, int *out);
/* One of the words in allowed[] (NULL-terminated), or absent. */
int	 sg_cfgld_word(struct sg_cfgld *, const config_setting_t *grp,
	    const char *name, char **out, const char *const allowed[]);
/* A list or array of strings: new *out (NULL-terminated) and *n. */
int	 sg_cfgld_strings(struct sg_cfgld *, const config_setting_t *grp,
	    const char *name, char ***out, size_t *n);
int	 sg_cfgld_secret(struct sg_cfgld *, const config_setting_t *grp,
	    const char *name, char **out, char **problem);
/* A list of groups ( {...}, ... ), each read by fn into the next item of
 * an array of itemsz-byte items stored in *arrayp before any is read. */
int	 sg_cfgld_list(struct sg_cfgld *, const config_setting_t *list,
	    const char *what, const char *const known[], size_t itemsz,
	    void *arrayp, size_t *n,
	    int (*fn)(struct sg_cfgld *, const config_setting_t *, void *));
/* A key's hash from its key or key_sha256 (one of them), into k->sha256. */
int	 sg_cfgld_key_hash(struct sg_cfgld *, const config_setting_t *,
	    struct sg_cfg_key *k, char *key, char *hash);
/* "http://x/v1/" and "http://x/v1" are one base: paths are appended. */
void	 sg_cfgld_strip_slashes(char *);

/* config_parts.c: one loader per top-level group. */
int	 sg_cfgld_server(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_auth(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_models(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_tools(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_interception(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_background(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_mcp(struct sg_cfgld *, const config_setting_t *);

int	 sg_cfgld_sessions(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_responses(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_files(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_store(struct sg_cfgld *, const config_setting_t *);

/* config_usage.c: limits, admin keys, prices, the ledger's retention. */
int	 sg_cfgld_limits(struct sg_cfgld *, const config_setting_t *,
	    struct sg_cfg_limits *);
int	 sg_cfgld_auth_usage(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_model_price(struct sg_cfgld *, const config_setting_t *,
	    struct sg_cfg_model *);
int	 sg_cfgld_tool_price(struct sg_cfgld *, const config_setting_t *,
	    struct sg_tool *);
int	 sg_cfgld_usage(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_console(struct sg_cfgld *, const config_setting_t *);
int	 sg_cfgld_admins_apart(struct sg_cfgld *, const config_t *);

#endif
