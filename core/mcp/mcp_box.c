/*
 * The files of an MCP session's sandbox, through its provider's file
 * calls (put, list, get). A call that finds the sandbox gone deletes it,
 * as a run that finds it gone does, and, when the caller may make one,
 * is made once more in the session's new sandbox (*lost then). Bytes go
 * through an anonymous file: the provider calls read and write fds.
 * A failure becomes the tool's result here too (sg_mcp_failed).
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp_tool.h"
#include "../../lib/log.h"

/*
 * A failure as the tool's result, or, when the store failed, as
 * -32603 (NULL with e): the store's detail is logged, never sent.
 */
json_t *
sg_mcp_failed(struct sg_mcp *m, const char *name, const struct sg_error *err,
    struct sg_mcp_err *e)
{
	if (err->status == 503 && err->code == NULL &&
	    strncmp(err->message, "The store is unavailable", 24) == 0) {
		sg_log("sandgate: mcp: %s: %s", name, err->message);
		sg_mcp_err(e, SG_MCP_INTERNAL, "Internal error");
		return NULL;
	}
	if (err->code != NULL && strcmp(err->code, "tool_not_allowed") == 0)
		sg_log("sandgate: mcp: session %s: %s refused: %s", m->session,
		    name, err->message);
	return sg_mcp_text(1, NULL, "%s", err->message);
}

/* One provider call on an open sandbox: the provider's rc. */
typedef int (*box_fn)(struct sg_mcp *, struct sg_mcp_box *, void *arg,
    struct sg_prov_error *);

static void
box_close(struct sg_mcp_box *b)
{
	json_decref(b->handle);
	b->handle = NULL;
	sg_store_sbx_clear(&b->row);
}

/* 0 open, 1 the session has none (and none was to be made), -1 err. */
static int
box_open(struct sg_mcp *m, struct sg_mcp_box *b, int make,
    struct sg_error *err)
{
	int rc;

	memset(b, 0, sizeof(*b));
	if (make) {
		if (sg_mcp_sandbox(m, b->id, &b->lost, err) == -1)
			return -1;
	} else if ((rc = sg_mcp_sandbox_peek(m, b->id)) != 1) {
		if (rc == -1)
			sg_error_store(err, sg_store_errmsg(m->env->store));
		return rc == 0 ? 1 : -1;
	}
	if (sg_sbx_open(m->env, m->req->tenant, b->id, &b->row, &b->t, &b->ops,
	    &b->handle, err) == -1)
		/* Not to be made: one gone or still being made has no
		 * files yet. */
		return !make && (err->status == 404 || err->status == 409) ?
		    1 : -1;
	return 0;
}

/*
 * fn on the session's sandbox: SG_MCP_FILE_OK, _NONE (no sandbox
 * without make; or a get's 404), or _FAILED with err. Gone: deleted,
 * and with make tried once more in a new one.
 */
static int
box_do(struct sg_mcp *m, int make, box_fn fn, void *arg, int *lost,
    struct sg_error *err)
{
	struct sg_mcp_box b;
	struct sg_prov_error pe;
	struct sg_error ignored;
	int rc, tries;

	for (tries = 0; tries < 2; tries++) {
		if ((rc = box_open(m, &b, make, err)) != 0)
			return rc == 1 ? SG_MCP_FILE_NONE : SG_MCP_FILE_FAILED;
		*lost |= b.lost;
		memset(&pe, 0, sizeof(pe));
		rc = fn(m, &b, arg, &pe);
		if (rc == SG_PROV_GONE) {
			sg_log("sandgate: mcp: sandbox %s is gone (%s)", b.id,
			    pe.message);
			sg_sbx_delete(m->env, m->req->tenant, b.id, &ignored);
			box_close(&b);
			*lost = 1;
			if (!make)
				return SG_MCP_FILE_NONE;
			continue;
		}
		if (rc == SG_PROV_FAILED && pe.status == 404)
			rc = SG_MCP_FILE_NONE;
		else if (rc != SG_PROV_OK)
			rc = sg_sbx_prov_error(b.t, &pe, b.id, err);
		box_close(&b);
		return rc == SG_PROV_OK ? SG_MCP_FILE_OK : rc;
	}
	sg_error_server(err, 502, "The sandbox stopped answering, and so did "
	    "the new one that replaced it.");
	return SG_MCP_FILE_FAILED;
}

struct get {
	const char	*path;
	int64_t		 max;
	struct sg_buf	*out;
	int		*cut;
};

/* The bytes of fd, from its start, into out. */
static int
slurp(int fd, struct sg_buf *out)
{
	char chunk[65536];
	ssize_t n;

	out->len = 0;
	if (lseek(fd, 0, SEEK_SET) == -1 || sg_buf_add(out, "", 0) == -1)
		return -1;
	for (;;) {
		do
			n = read(fd, chunk, sizeof(chunk));
		while (n == -1 && errno == EINTR);
		if (n <= 0)
			return n == 0 ? 0 : -1;
		if (sg_buf_add(out, chunk, (size_t)n) == -1)
			return -1;
	}
}

static int
get_fn(struct sg_mcp *m, struct sg_mcp_box *b, void *arg,
    struct sg_prov_error *pe)
{
	struct get *g = arg;
	int fd, rc;

	if (b->ops->get == NULL)
		return sg_prov_fail(pe, SG_PROV_CONFIG, 0, "sandbox tool %s "
		    "cannot give files", b->t->name);
	if ((fd = memfd_create("sandgate-mcp", MFD_CLOEXEC)) == -1)
		return sg_prov_fail(pe, SG_PROV_FAILED, 0, "no file to read "
		    "into: %s", strerror(errno));
	*g->cut = 0;
	rc = b->ops->get(m->env->prov, b->t, b->handle, g->path, fd, g->max,
	    pe);
	if (rc == SG_PROV_CAP) {
		*g->cut = 1;
		rc = SG_PROV_OK;
	}
	if (rc == SG_PROV_OK && slurp(fd, g->out) == -1)
		rc = sg_prov_fail(pe, SG_PROV_FAILED, 0, "the file could not be "
		    "read back");
	/* The cap is ours: a provider that sent more is cut here. */
	if (rc == SG_PROV_OK && g->out->len > (size_t)g->max) {
		g->out->len = (size_t)g->max;
		*g->cut = 1;
	}
	close(fd);
	return rc;
}

int
sg_mcp_file_get(struct sg_mcp *m, int make, const char *path, int64_t max,
    struct sg_buf *out, int *cut, int *lost, struct sg_error *err)
{
	struct get g = { path, max, out, cut };

	return box_do(m, make, get_fn, &g, lost, err);
}

struct put {
	const char	*path;
	int		 fd;
	int64_t		 size;
};

static int
put_fn(struct sg_mcp *m, struct sg_mcp_box *b, void *arg,
    struct sg_prov_error *pe)
{
	struct put *p = arg;

	if (b->ops->put == NULL)
		return sg_prov_fail(pe, SG_PROV_CONFIG, 0, "sandbox tool %s "
		    "cannot take files", b->t->name);
	if (lseek(p->fd, 0, SEEK_SET) == -1)
		return sg_prov_fail(pe, SG_PROV_FAILED, 0, "the file could not "
		    "be read");
	return b->ops->put(m->env->prov, b->t, b->handle, p->path, p->fd,
	    p->size, pe);
}

int
sg_mcp_file_put_fd(struct sg_mcp *m, const char *path, int fd, int64_t size,
    int *lost, struct sg_error *err)
{
	struct put p = { path, fd, size };

	return box_do(m, 1, put_fn, &p, lost, err);
}

int
sg_mcp_file_put(struct sg_mcp *m, const char *path, const void *bytes,
    size_t n, int *lost, struct sg_error *err)
{
	const char *s = bytes;
	size_t done;
	ssize_t w;
	int fd, rc;

	if ((fd = memfd_create("sandgate-mcp", MFD_CLOEXEC)) == -1)
		return sg_error_server(err, 500, "No file to write from (%s).",
		    strerror(errno));
	for (done = 0; done < n; done += (size_t)w)
		if ((w = write(fd, s + done, n - done)) <= 0) {
			if (w == -1 && errno == EINTR) {
				w = 0;
				continue;
			}
			close(fd);
			return sg_error_server(err, 500, "No file to write "
			    "from (%s).", strerror(errno));
		}
	rc = sg_mcp_file_put_fd(m, path, fd, (int64_t)n, lost, err);
	close(fd);
	return rc;
}

struct list {
	const char	*dir;
	json_t		*files;
};

static int
by_path(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a,
	    "path")), json_string_value(json_object_get(*(json_t *const *)b,
	    "path")));
}

/* New reference: the entries of a provider's listing that are files
 * under dir as the provider's contract says, rebuilt, sorted by path. */
static json_t *
checked(const json_t *all, const char *dir)
{
	size_t dl = strlen(dir), i, n = 0;
	json_t **v, *e, *out;
	const char *path, *mtime;
	json_int_t size;

	if ((v = calloc(json_array_size(all) + 1, sizeof(*v))) == NULL)
		return NULL;
	json_array_foreach(all, i, e) {
		path = json_string_value(json_object_get(e, "path"));
		size = json_integer_value(json_object_get(e, "size"));
		mtime = json_string_value(json_object_get(e, "mtime"));
		if (path == NULL || strlen(path) >= SG_MCP_PATH_MAX ||
		    strlen(path) != json_string_length(json_object_get(e,
		    "path")) || strncmp(path, dir, dl) != 0 ||
		    (dl > 1 && path[dl] != '/') || path[dl + 1] == '\0' ||
		    !json_is_integer(json_object_get(e, "size")) || size < 0 ||
		    n == SG_MCP_LIST_MAX)
			continue;
		v[n++] = json_pack("{s:s,s:I,s:s}", "path", path, "size", size,
		    "mtime", mtime != NULL ? mtime : "");
	}
	qsort(v, n, sizeof(*v), by_path);
	out = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(out, v[i]);
	free(v);
	return out;
}

static int
list_fn(struct sg_mcp *m, struct sg_mcp_box *b, void *arg,
    struct sg_prov_error *pe)
{
	struct list *l = arg;
	json_t *all = NULL;
	int rc;

	if (b->ops->list == NULL)
		return sg_prov_fail(pe, SG_PROV_CONFIG, 0, "sandbox tool %s "
		    "cannot list files", b->t->name);
	rc = b->ops->list(m->env->prov, b->t, b->handle, l->dir,
	    SG_MCP_LIST_MAX, &all, pe);
	if (rc == SG_PROV_OK && (l->files = checked(all, l->dir)) == NULL)
		rc = sg_prov_fail(pe, SG_PROV_FAILED, 0, "out of memory");
	json_decref(all);
	return rc;
}

int
sg_mcp_file_list(struct sg_mcp *m, int make, const char *dir, json_t **files,
    int *lost, struct sg_error *err)
{
	struct list l = { dir, NULL };
	int rc = box_do(m, make, list_fn, &l, lost, err);

	if (rc == SG_MCP_FILE_NONE && l.files == NULL) {
		l.files = json_array();
		rc = SG_MCP_FILE_OK;
	}
	if (rc != SG_MCP_FILE_OK) {
		json_decref(l.files);
		l.files = NULL;
	}
	*files = l.files;
	return rc;
}
