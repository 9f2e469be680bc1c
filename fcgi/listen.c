#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fcgi.h"

/* libfcgi's FCGX_OpenSocket listens with a backlog of 5..10 and binds
 * every interface for ":PORT"; a burst of streams needs far more. */
#define BACKLOG 1024

static int
owner_ids(const char *spec, uid_t *uid, gid_t *gid, char *err, size_t errsz)
{
	char user[128], *colon;
	struct passwd *pw;
	struct group *gr;

	sg_copy(user, sizeof(user), spec);
	if ((colon = strchr(user, ':')) != NULL)
		*colon++ = '\0';
	*uid = (uid_t)-1;
	*gid = (gid_t)-1;
	if (user[0] != '\0') {
		if ((pw = getpwnam(user)) == NULL) {
			snprintf(err, errsz, "socket_owner: no user %s", user);
			return -1;
		}
		*uid = pw->pw_uid;
		*gid = pw->pw_gid;
	}
	if (colon != NULL && *colon != '\0') {
		if ((gr = getgrnam(colon)) == NULL) {
			snprintf(err, errsz, "socket_owner: no group %s", colon);
			return -1;
		}
		*gid = gr->gr_gid;
	}
	return 0;
}

/*
 * Root may be making the socket in a directory a less privileged user can
 * write to: everything after the directory is looked up happens through
 * its fd (bind through /proc/self/fd/N/NAME), the mode is set by the
 * umask at bind, and the owner without following a link, so a socket
 * swapped for a link never makes root chown or chmod what it points at.
 */
static int
listen_unix(const char *path, const struct sg_cfg *cfg, char *err,
    size_t errsz)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	mode_t mode = cfg->server.socket_mode >= 0 ?
	    (mode_t)cfg->server.socket_mode : 0600, old;
	const char *slash = strrchr(path, '/'), *name;
	char dir[4096];
	uid_t uid = (uid_t)-1;
	gid_t gid = (gid_t)-1;
	struct stat sb;
	int fd = -1, dfd, n;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
		    (int)(slash - path), path);
	name = slash != NULL ? slash + 1 : path;
	if (cfg->server.socket_owner != NULL && owner_ids(cfg->server.socket_owner,
	    &uid, &gid, err, errsz) == -1)
		return -1;
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errsz, "%s: %s", dir, strerror(errno));
		return -1;
	}
	n = snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/%s",
	    dfd, name);
	if (*name == '\0' || n < 0 || (size_t)n >= sizeof(sun.sun_path)) {
		snprintf(err, errsz, "%s: socket path too long", path);
		goto fail;
	}
	/* A socket left by a previous run; never remove anything else. */
	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISSOCK(sb.st_mode))
		unlinkat(dfd, name, 0);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errsz, "socket: %s", strerror(errno));
		goto fail;
	}
	old = umask(~mode & 0777);
	n = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (n == -1) {
		snprintf(err, errsz, "%s: bind: %s", path, strerror(errno));
		goto fail;
	}
	if ((uid != (uid_t)-1 || gid != (gid_t)-1) &&
	    fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) == -1) {
		snprintf(err, errsz, "%s: chown: %s", path, strerror(errno));
		goto fail;
	}
	if (listen(fd, BACKLOG) == -1) {
		snprintf(err, errsz, "%s: listen: %s", path, strerror(errno));
		goto fail;
	}
	close(dfd);
	return fd;
fail:
	if (fd != -1)
		close(fd);
	close(dfd);
	return -1;
}

/* "HOST:PORT", "[V6]:PORT" or ":PORT" (loopback, never every interface). */
static int
listen_tcp(const char *spec, char *err, size_t errsz)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
	    .ai_flags = AI_NUMERICSERV }, *res;
	char host[256];
	const char *port;
	size_t hlen;
	int fd, one = 1, rc;

	if ((port = strrchr(spec, ':')) == NULL || port[1] == '\0') {
		snprintf(err, errsz, "--listen %s: expected HOST:PORT, :PORT "
		    "or /path/to.sock", spec);
		return -1;
	}
	hlen = (size_t)(port - spec);
	if (hlen >= 2 && spec[0] == '[' && spec[hlen - 1] == ']') {
		spec++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host))
		hlen = sizeof(host) - 1;
	memcpy(host, spec, hlen);
	host[hlen] = '\0';
	port++;
	if ((rc = getaddrinfo(host[0] != '\0' ? host : "127.0.0.1", port,
	    &hints, &res)) != 0) {
		snprintf(err, errsz, "--listen %s: %s", spec, gai_strerror(rc));
		return -1;
	}
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
	if (fd == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) == -1 ||
	    listen(fd, BACKLOG) == -1) {
		snprintf(err, errsz, "--listen %s: %s", spec, strerror(errno));
		if (fd != -1)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

int
sg_listen_open(const char *spec, const struct sg_cfg *cfg, char *err,
    size_t errsz)
{
	err[0] = '\0';
	if (strchr(spec, '/') != NULL)
		return listen_unix(spec, cfg, err, errsz);
	return listen_tcp(spec, err, errsz);
}

int
sg_listen_check(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);

	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == -1 || !on)
		return -1;
	return 0;
}
