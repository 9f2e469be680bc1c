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

	snprintf(user, sizeof(user), "%s", spec);
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

static int
listen_unix(const char *path, const struct sg_cfg *cfg, char *err,
    size_t errsz)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat sb;
	mode_t old;
	uid_t uid;
	gid_t gid;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errsz, "%s: socket path too long", path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	/* A socket left by a previous run; never remove anything else. */
	if (lstat(path, &sb) == 0 && S_ISSOCK(sb.st_mode))
		unlink(path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errsz, "socket: %s", strerror(errno));
		return -1;
	}
	/* Born private; opened up below only as far as the config says. */
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		snprintf(err, errsz, "%s: bind: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	umask(old);
	if (cfg->server.socket_owner != NULL) {
		if (owner_ids(cfg->server.socket_owner, &uid, &gid, err,
		    errsz) == -1 || chown(path, uid, gid) == -1) {
			if (errno != 0 && err[0] == '\0')
				snprintf(err, errsz, "%s: chown: %s", path,
				    strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (cfg->server.socket_mode >= 0 &&
	    chmod(path, (mode_t)cfg->server.socket_mode) == -1) {
		snprintf(err, errsz, "%s: chmod: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (listen(fd, BACKLOG) == -1) {
		snprintf(err, errsz, "%s: listen: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
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
