/*
 * local: sandboxes on this machine. sandboxd (a child of the master)
 * creates and deletes them; each kernel speaks e2b's /execute on its own
 * Unix socket, so runs use the e2b parser over CURLOPT_UNIX_SOCKET_PATH.
 * Handle: {"id", "socket"}. Both sockets sit beside the store, whose path
 * may be longer than AF_UNIX allows: each is reached through an fd of its
 * directory (sg_sbxd_sun_path, as sandboxd binds them).
 *
 * Each master has its own sandboxd, in an instance directory of its own
 * (sbxd.h). A create goes to our master's (a responder's parent), or to
 * any live one (the CLI); everything after it goes where the handle's
 * socket is, so a sandbox is reached from every gateway sharing the
 * store, and deleted by the sandboxd that holds it.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "sandboxd/sbxd.h"

#define SUPERVISOR_MS	10000
#define CONNECT_MS	3000

/* One connect to the socket at path. The fd, or -1 with errno. */
static int
connect_path(const char *path)
{
	struct sockaddr_un sun;
	int dfd, fd, saved;

	if ((dfd = sg_sbxd_sun_path(&sun, path)) == -1)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1 &&
	    connect(fd, (const struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		fd = -1;
	}
	saved = errno;
	close(dfd);
	errno = saved;
	return fd;
}

/* A connection to sandboxd. The master starts it (again, after a crash)
 * within a second or two: until then, keep trying. */
static int
connect_supervisor(const char *path)
{
	int64_t until = sg_now_ms() + CONNECT_MS;
	int fd;

	for (;;) {
		if ((fd = connect_path(path)) != -1)
			return fd;
		if ((errno != ENOENT && errno != ECONNREFUSED) ||
		    sg_now_ms() >= until)
			return -1;
		poll(NULL, 0, 50);
	}
}

/* The socket of the sandboxd a create goes to, new, or NULL. Our
 * master's, unless it is not running and another is: one that is
 * starting (not yet locked) is waited for by connect_supervisor. */
static char *
create_socket(const struct sg_tool *t)
{
	char inst[256], *path;
	int base;

	if (t->local_dir == NULL)
		return NULL;
	snprintf(inst, sizeof(inst), "m%d", (int)getppid());
	if ((base = open(t->local_dir, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) != -1) {
		if (!sg_sbxd_alive(base, inst))
			sg_sbxd_live_instance(base, inst, sizeof(inst));
		close(base);
	}
	return asprintf(&path, "%s/%s/sandboxd.sock", t->local_dir, inst) ==
	    -1 ? NULL : path;
}

/*
 * The socket of the sandboxd holding a sandbox, from its kernel's socket
 * (INST/kernels/ID.sock), new; NULL when there is none or that sandboxd is
 * gone (and its kernels with it).
 */
static char *
holder_socket(const json_t *handle)
{
	const char *sock = json_string_value(json_object_get(handle, "socket"));
	const char *k = sock != NULL ? strstr(sock, "/kernels/") : NULL;
	const char *name;
	char *base = NULL, *inst = NULL, *path = NULL;
	int bfd = -1;

	if (k == NULL || strchr(k + 9, '/') != NULL)
		return NULL;
	for (name = k; name > sock && name[-1] != '/'; name--)
		;
	if (name == sock || name == k || (base = strndup(sock, name - 1 > sock ?
	    (size_t)(name - 1 - sock) : 1)) == NULL ||
	    (inst = strndup(name, (size_t)(k - name))) == NULL)
		goto done;
	if ((bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1 &&
	    sg_sbxd_alive(bfd, inst) && asprintf(&path, "%.*s/sandboxd.sock",
	    (int)(k - sock), sock) == -1)
		path = NULL;
done:
	if (bfd != -1)
		close(bfd);
	free(base);
	free(inst);
	return path;
}

/* One request to the sandboxd at path (NULL: none runs). New reference
 * or NULL with err. */
static json_t *
supervisor(const char *path, const json_t *req, struct sg_prov_error *err)
{
	struct pollfd p;
	char buf[4096], *text;
	size_t len = 0;
	ssize_t n;
	json_t *resp = NULL;
	int fd, saved;

	if (path == NULL) {
		sg_prov_fail(err, SG_PROV_CONFIG, 0, "local sandboxes: no usable "
		    "runtime directory beside the store");
		return NULL;
	}
	fd = connect_supervisor(path);
	saved = errno;
	if (fd == -1) {
		sg_prov_fail(err, SG_PROV_UNREACHABLE, 0, "the local sandbox "
		    "supervisor is not running (%s)", strerror(saved));
		return NULL;
	}
	text = json_dumps(req, JSON_COMPACT);
	if (text == NULL || write(fd, text, strlen(text)) == -1 ||
	    write(fd, "\n", 1) == -1) {
		free(text);
		close(fd);
		sg_prov_fail(err, SG_PROV_FAILED, 0, "local sandbox supervisor: "
		    "write failed");
		return NULL;
	}
	free(text);
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (len < sizeof(buf) - 1 && memchr(buf, '\n', len) == NULL &&
	    poll(&p, 1, SUPERVISOR_MS) > 0 &&
	    (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len == 0 || (resp = json_loadb(buf, len, JSON_DISABLE_EOF_CHECK,
	    NULL)) == NULL)
		sg_prov_fail(err, SG_PROV_FAILED, 0, "the local sandbox "
		    "supervisor did not answer");
	return resp;
}

static int
local_create(struct sg_prov *p, const struct sg_tool *t, const char *sbx_id,
    int lifetime_s, json_t **handle, struct sg_prov_error *err)
{
	json_t *req, *resp;
	const char *sock, *kind;
	char *path;
	int rc;

	(void)p;
	*handle = NULL;
	req = json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:s,s:b,s:s,s:s}", "op",
	    "create", "id", sbx_id, "lifetime", lifetime_s, "memory_mb",
	    t->memory_mb, "disk_mb", t->disk_mb, "max_procs", t->max_procs,
	    "cpu", t->cpu > 0 ? t->cpu : 1, "limits", t->limits_process ?
	    "process" : "cgroup", "net", t->allow_internet_access, "isolation",
	    t->isolation != NULL ? t->isolation : "bubblewrap", "kernel",
	    t->kernel != NULL ? t->kernel : "auto");
	path = create_socket(t);
	resp = supervisor(path, req, err);
	free(path);
	json_decref(req);
	if (resp == NULL)
		return err->rc;
	sock = json_string_value(json_object_get(resp, "socket"));
	if (json_is_true(json_object_get(resp, "ok")) && sock != NULL) {
		*handle = json_pack("{s:s,s:s}", "id", sbx_id, "socket", sock);
		rc = SG_PROV_OK;
	} else {
		kind = json_string_value(json_object_get(resp, "kind"));
		rc = sg_prov_fail(err, kind != NULL && strcmp(kind, "config") == 0 ?
		    SG_PROV_CONFIG : kind != NULL && strcmp(kind, "rate") == 0 ?
		    SG_PROV_RATE : SG_PROV_FAILED, 0, "local sandbox: %s",
		    sg_phttp_message(resp, "the supervisor refused"));
	}
	json_decref(resp);
	return rc;
}

/*
 * Point p's calls at the kernel's socket for one operation: through an fd
 * of its directory, which must stay open while libcurl may connect (until
 * kernel_done). The fd, or -1 (no socket in the handle, or its directory
 * is gone).
 */
static int
kernel_socket(struct sg_prov *p, const json_t *handle, struct sockaddr_un *sun)
{
	const char *path = json_string_value(json_object_get(handle, "socket"));
	int dfd;

	p->unix_socket = NULL;
	if (path == NULL) {
		errno = EINVAL;
		return -1;
	}
	if ((dfd = sg_sbxd_sun_path(sun, path)) == -1)
		return -1;
	p->unix_socket = sun->sun_path;
	return dfd;
}

static void
kernel_done(struct sg_prov *p, int dfd)
{
	p->unix_socket = NULL;
	if (dfd != -1)
		close(dfd);
}

/* Whether the kernel still answers on its socket. */
static int
kernel_alive(struct sg_prov *p)
{
	struct sg_prov_error ignored;
	json_t *resp = NULL;
	long status = 0;
	int rc;

	rc = sg_phttp_call(p, "GET", "http://localhost/health", NULL, NULL,
	    2000, &status, &resp, &ignored);
	json_decref(resp);
	return rc == SG_PROV_OK && status == 200;
}

static int
local_run(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *code, int timeout_s, struct sg_exec *res,
    struct sg_prov_error *err)
{
	struct sg_lines lines = { .fn = sg_exec_e2b_line, .res = res };
	const char *id = json_string_value(json_object_get(handle, "id"));
	struct sockaddr_un sun;
	char *errbody = NULL;
	json_t *body;
	long status = 0;
	int rc, dfd;

	(void)t;
	if ((dfd = kernel_socket(p, handle, &sun)) == -1)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "local sandbox %s is "
		    "gone (its socket: %s)", id, strerror(errno));
	body = json_pack("{s:s,s:i}", "code", code, "timeout", timeout_s);
	/* The kernel's own alarm fires at timeout_s; ours is the backstop. */
	rc = sg_phttp_stream(p, "http://localhost/execute", NULL, body,
	    timeout_s + 10, &lines, &status, &errbody, err);
	json_decref(body);
	rc = sg_exec_timeout(res, rc, status, timeout_s);
	if (rc == SG_PROV_UNREACHABLE)
		rc = sg_prov_fail(err, SG_PROV_GONE, 0, "local sandbox %s is gone",
		    id);
	else if (rc == SG_PROV_OK && status != 200)
		rc = sg_prov_fail(err, SG_PROV_FAILED, (int)status, "local kernel "
		    "answered HTTP %ld: %.200s", status, errbody ? errbody : "");
	else if ((rc == SG_PROV_OK && !res->ended) || rc == SG_PROV_FAILED)
		rc = kernel_alive(p) ? sg_prov_fail(err, SG_PROV_FAILED, 0,
		    "local sandbox %s: the run's stream broke", id) :
		    sg_prov_fail(err, SG_PROV_GONE, 0, "local sandbox %s died "
		    "during the run (killed at its limits)", id);
	free(errbody);
	kernel_done(p, dfd);
	return rc;
}

static int
local_destroy(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    struct sg_prov_error *err)
{
	json_t *req, *resp;
	char *path;
	int rc;

	(void)p;
	(void)t;
	/* Its sandboxd gone, its kernels went with it. */
	if ((path = holder_socket(handle)) == NULL)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "local sandbox: its "
		    "supervisor is gone, and the sandbox with it");
	req = json_pack("{s:s,s:O}", "op", "delete", "id",
	    json_object_get(handle, "id"));
	resp = supervisor(path, req, err);
	free(path);
	json_decref(req);
	if (resp == NULL)
		return err->rc;
	rc = !json_is_true(json_object_get(resp, "ok")) ? sg_prov_fail(err,
	    SG_PROV_FAILED, 0, "local sandbox: %s", sg_phttp_message(resp,
	    "delete refused")) : json_is_true(json_object_get(resp, "gone")) ?
	    sg_prov_fail(err, SG_PROV_GONE, 0, "already gone") : SG_PROV_OK;
	json_decref(resp);
	return rc;
}

int
sg_local_gone(const json_t *handle)
{
	const char *sock = json_string_value(json_object_get(handle, "socket"));
	struct sockaddr_un sun;
	struct stat st;
	char *holder = NULL;
	int kernels, gone;

	if (sock == NULL || strchr(sock, '/') == NULL)
		return 0;
	if ((kernels = sg_sbxd_sun_path(&sun, sock)) == -1)
		return errno == ENOENT;
	/* A sandboxd started again in the same place emptied kernels/. A
	 * lock this process may not open says nothing of its holder. */
	if (fstatat(kernels, strrchr(sock, '/') + 1, &st,
	    AT_SYMLINK_NOFOLLOW) == -1)
		gone = errno == ENOENT;
	else
		gone = faccessat(kernels, "../lock", R_OK, AT_EACCESS) == 0 &&
		    (holder = holder_socket(handle)) == NULL;
	free(holder);
	close(kernels);
	return gone;
}

static int
local_keepalive(struct sg_prov *p, const struct sg_tool *t,
    const json_t *handle, int lifetime_s, struct sg_prov_error *err)
{
	struct sockaddr_un sun;
	json_t *body, *resp = NULL;
	long status = 0;
	int rc, dfd;

	(void)t;
	dfd = kernel_socket(p, handle, &sun);
	body = json_pack("{s:i}", "lifetime", lifetime_s);
	rc = dfd == -1 ? SG_PROV_UNREACHABLE : sg_phttp_call(p, "POST",
	    "http://localhost/keepalive", NULL, body, 10000, &status, &resp,
	    err);
	json_decref(body);
	json_decref(resp);
	kernel_done(p, dfd);
	if (rc == SG_PROV_UNREACHABLE)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "local sandbox is gone");
	if (rc == SG_PROV_OK && status != 204)
		return sg_prov_fail(err, SG_PROV_FAILED, (int)status, "local "
		    "kernel refused the keepalive (HTTP %ld)", status);
	return rc;
}

/* An envd call on the kernel's socket. */
static int
local_envd(struct sg_prov *p, const json_t *handle,
    const struct sg_envd_req *r, struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	struct sockaddr_un sun;
	int rc, dfd;

	if ((dfd = kernel_socket(p, handle, &sun)) == -1)
		return sg_prov_fail(err, SG_PROV_GONE, 0, "local sandbox is gone");
	rc = sg_envd(p, "http://localhost", &h, r, err);
	sg_hdrs_free(&h);
	kernel_done(p, dfd);
	if (rc == SG_PROV_UNREACHABLE)
		rc = sg_prov_fail(err, SG_PROV_GONE, 0, "local sandbox is gone");
	return rc;
}

static int
local_put(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *path, int fd, int64_t size, struct sg_prov_error *err)
{
	struct sg_envd_req r = { SG_ENVD_PUT, path, fd, size, 0, NULL };

	(void)t;
	return local_envd(p, handle, &r, err);
}

static int
local_list(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *dir, size_t max, json_t **files, struct sg_prov_error *err)
{
	struct sg_envd_req r = { SG_ENVD_LIST, dir, -1, 0, max, files };

	(void)t;
	*files = NULL;
	return local_envd(p, handle, &r, err);
}

static int
local_get(struct sg_prov *p, const struct sg_tool *t, const json_t *handle,
    const char *path, int fd, int64_t max, struct sg_prov_error *err)
{
	struct sg_envd_req r = { SG_ENVD_GET, path, fd, max, 0, NULL };

	(void)t;
	return local_envd(p, handle, &r, err);
}

const struct sg_provider_ops sg_local_ops = {
	local_create, local_run, local_destroy, local_keepalive, NULL,
	local_put, local_list, local_get,
};
