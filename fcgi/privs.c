#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fcgi.h"
#include "../core/api/gateway.h"
#include "../store/store.h"

int
sg_drop_privileges(const struct sg_cfg *cfg)
{
	struct passwd *pw;

	if (geteuid() != 0)
		return 0;
	if (cfg->server.user == NULL) {
		fprintf(stderr, "sandgate: started as root and server.user is "
		    "not set: refusing to serve as root\n");
		return -1;
	}
	if ((pw = getpwnam(cfg->server.user)) == NULL) {
		fprintf(stderr, "sandgate: server.user %s: no such user\n",
		    cfg->server.user);
		return -1;
	}
	if (pw->pw_uid == 0)
		return 0;
	if (initgroups(pw->pw_name, pw->pw_gid) == -1 ||
	    setgid(pw->pw_gid) == -1 || setuid(pw->pw_uid) == -1) {
		fprintf(stderr, "sandgate: cannot become %s: %s\n",
		    cfg->server.user, strerror(errno));
		return -1;
	}
	/* Paranoia: a setuid that left a way back is a failure. */
	if (setuid(0) == 0) {
		fprintf(stderr, "sandgate: could regain root after dropping "
		    "to %s\n", cfg->server.user);
		return -1;
	}
	return 0;
}

/* Give the directory just made to uid through an fd opened without
 * following a link: whoever can write its parent may have swapped it for
 * one since, and root must not chown what a link points at. */
static int
give_dir(const char *dir, uid_t uid, gid_t gid)
{
	int fd, rc;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1)
		return -1;
	rc = fchown(fd, uid, gid);
	close(fd);
	return rc;
}

static int
own_store_dir(const struct sg_cfg *cfg, char *err, size_t errsz)
{
	char dir[1024], *slash;
	struct passwd *pw = NULL;

	sg_copy(dir, sizeof(dir), cfg->store.path);
	if ((slash = strrchr(dir, '/')) == NULL)
		return 0;
	if (slash == dir)
		return 0;
	*slash = '\0';
	if (geteuid() == 0 && cfg->server.user != NULL &&
	    (pw = getpwnam(cfg->server.user)) == NULL) {
		snprintf(err, errsz, "server.user %s: no such user",
		    cfg->server.user);
		return -1;
	}
	if (mkdir(dir, 0750) == -1) {
		if (errno == EEXIST)
			return 0;
		snprintf(err, errsz, "cannot create %s: %s", dir,
		    strerror(errno));
		return -1;
	}
	if (pw != NULL && give_dir(dir, pw->pw_uid, pw->pw_gid) == -1) {
		snprintf(err, errsz, "cannot give %s to %s: %s", dir,
		    cfg->server.user, strerror(errno));
		return -1;
	}
	return 0;
}

int
sg_prepare_store(const struct sg_cfg *cfg, char *err, size_t errsz)
{
	struct sg_store *st;
	char msg[SG_ERR_MAX];
	int status;
	pid_t pid;

	if (own_store_dir(cfg, err, errsz) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		snprintf(err, errsz, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		if (sg_drop_privileges(cfg) == -1)
			_exit(1);
		if (sg_gw_store_open(cfg, &st, msg, sizeof(msg)) != 0) {
			fprintf(stderr, "sandgate: %s\n", msg);
			_exit(1);
		}
		if (sg_store_migrate(st) != SG_STORE_OK) {
			fprintf(stderr, "sandgate: %s: %s\n",
			    sg_gw_store_name(cfg), sg_store_errmsg(st));
			_exit(1);
		}
		sg_store_close(st);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		snprintf(err, errsz, "store %s could not be opened or migrated "
		    "(reason above)", sg_gw_store_name(cfg));
		return -1;
	}
	return 0;
}
