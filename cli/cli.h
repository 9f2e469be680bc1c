/*
 * The command line tool's parts (the files of cli/), shared by them alone.
 */
#ifndef SG_CLI_H
#define SG_CLI_H

#include "../core/config/config.h"
#include "../store/store.h"

/* store.c: the store, migrated, as its owner. NULL and a message on
 * stderr when it cannot be had. */
struct sg_store *sg_cli_open_store(const struct sg_cfg *);
/* sessions.c: sessions list [--key NAME] | sessions purge (--key NAME | --all), argv
 * from "list"/"purge" on: 0, 1 on failure, -1 for a usage error. */
int	 sg_cli_sessions(const struct sg_cfg *, int argc, char *argv[]);

/* keys.c: keys create|list|revoke|set|usage, argv from "create" (...)
 * on: 0, 1 on failure, -1 for a usage error. */
int	 sg_cli_keys(const struct sg_cfg *, int argc, char *argv[]);

#endif
