/*
 * The store as the command line tool opens it: as the store's owner (a
 * root-owned -wal or -shm file would leave it read-only for the
 * gateway), its directory made, migrated.
 */
#include <sys/stat.h>

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "../core/api/gateway.h"

/* Become the owner of the store (or of its directory, or server.user). */
static int
become_store_owner(const struct sg_cfg *cfg)
{
	char dir[1024], *slash;
	struct passwd *pw;
	struct stat sb;
	uid_t uid;
	gid_t gid;

	if (geteuid() != 0)
		return 0;
	sg_copy(dir, sizeof(dir), cfg->store.path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir)
		*slash = '\0';
	if (stat(cfg->store.path, &sb) == 0 || stat(dir, &sb) == 0) {
		uid = sb.st_uid;
		gid = sb.st_gid;
	} else if (cfg->server.user != NULL &&
	    (pw = getpwnam(cfg->server.user)) != NULL) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	} else
		return 0;
	if (uid == 0)
		return 0;
	if ((pw = getpwuid(uid)) == NULL || initgroups(pw->pw_name, gid) == -1 ||
	    setgid(gid) == -1 || setuid(uid) == -1) {
		fprintf(stderr, "sandgate: cannot become the store's owner "
		    "(uid %d): %s\n", (int)uid, strerror(errno));
		return -1;
	}
	return 0;
}

/* The store's own directory, private, as the gateway makes it (a first
 * `keys create` may come before the gateway ever ran): 0, or -1 said. */
static int
make_store_dir(const struct sg_cfg *cfg)
{
	char dir[1024], *slash;

	sg_copy(dir, sizeof(dir), cfg->store.path);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		fprintf(stderr, "sandgate: cannot make the store's directory %s: "
		    "%s\n", dir, strerror(errno));
		return -1;
	}
	return 0;
}

struct sg_store *
sg_cli_open_store(const struct sg_cfg *cfg)
{
	struct sg_store *st;
	char err[512];

	if (become_store_owner(cfg) == -1 || make_store_dir(cfg) == -1)
		return NULL;
	if (sg_gw_store_open(cfg, &st, err, sizeof(err)) != 0) {
		fprintf(stderr, "sandgate: %s\n", err);
		return NULL;
	}
	if (sg_store_migrate(st) != SG_STORE_OK) {
		fprintf(stderr, "sandgate: %s: %s\n", sg_gw_store_name(cfg),
		    sg_store_errmsg(st));
		sg_store_close(st);
		return NULL;
	}
	return st;
}
