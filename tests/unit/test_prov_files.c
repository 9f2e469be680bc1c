/*
 * providers/: the list and get ops. The parsers of envd's ListDir answer
 * and execd's /files/search answer, then the calls themselves against a
 * canned HTTP server on a Unix socket (a child of the test, one answer
 * per connection): what is asked, and how each answer is mapped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "../../providers/provider.h"
#include "../../providers/internal.h"
#include "../../lib/util.h"
#include "testutil.h"
#include "canned.h"

/* ---------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------- */

#define q tu_q
#define qjson tu_qjson

/* Consumes got (new or NULL); want in q() notation. */
static void
assert_files(json_t *got, const char *want)
{
	json_t *w = qjson(want);
	char *g;

	if (got == NULL || !json_equal(got, w)) {
		g = got != NULL ? json_dumps(got, JSON_COMPACT) : NULL;
		print_error("got: %s\nwant: %s\n", g != NULL ? g : "(null)", want);
		free(g);
		fail();
	}
	json_decref(got);
	json_decref(w);
}

static json_t *
envd_files(const char *resp, size_t max)
{
	json_t *r = qjson(resp), *f = sg_envd_list_files(r, max);

	json_decref(r);
	return f;
}

static json_t *
osb_files(const char *resp, const char *dir, size_t max)
{
	json_t *r = qjson(resp), *f = sg_osb_search_files(r, dir, max);

	json_decref(r);
	return f;
}

/* ---------------------------------------------------------------------
 * envd's ListDir answer
 * ------------------------------------------------------------------- */

/* As envd writes it: sizes as strings, left out when 0; directories,
 * symlinks (their target's type, and symlinkTarget) and other kinds
 * (no type) are not files. */
static void
envd_list_kinds(void **state)
{
	(void)state;
	assert_files(envd_files("{'entries':["
	    "{'name':'a.csv','type':'FILE_TYPE_FILE','path':'/mnt/data/a.csv',"
	    "'size':'12','mode':420,'permissions':'-rw-r--r--','owner':'user',"
	    "'group':'user','modifiedTime':'2025-01-02T03:04:05.123456789Z'},"
	    "{'name':'sub','type':'FILE_TYPE_DIRECTORY','path':'/mnt/data/sub',"
	    "'size':'4096','modifiedTime':'2025-01-02T03:04:05Z'},"
	    "{'name':'e','type':'FILE_TYPE_FILE','path':'/mnt/data/sub/e',"
	    "'modifiedTime':'2025-01-02T03:04:06Z'},"
	    "{'name':'l','type':'FILE_TYPE_FILE','path':'/mnt/data/l',"
	    "'size':'15','symlinkTarget':'/mnt/data/a.csv',"
	    "'modifiedTime':'2025-01-02T03:04:07Z'},"
	    "{'name':'fifo','path':'/mnt/data/fifo'},"
	    "{'name':'big','type':'FILE_TYPE_FILE','path':'/mnt/data/big',"
	    "'size':'9007199254740993','modifiedTime':'x'}]}", 100),
	    "[{'path':'/mnt/data/a.csv','size':12,"
	    "'mtime':'2025-01-02T03:04:05.123456789Z'},"
	    "{'path':'/mnt/data/sub/e','size':0,'mtime':'2025-01-02T03:04:06Z'},"
	    "{'path':'/mnt/data/big','size':9007199254740993,'mtime':'x'}]");
}

/* protojson leaves an empty list out: {} is an empty directory. */
static void
envd_list_empty(void **state)
{
	(void)state;
	assert_files(envd_files("{}", 100), "[]");
	assert_files(envd_files("{'entries':[]}", 100), "[]");
}

/* At most max files; the directories skipped do not count. */
static void
envd_list_max(void **state)
{
	static const char *resp = "{'entries':["
	    "{'type':'FILE_TYPE_DIRECTORY','path':'/d'},"
	    "{'type':'FILE_TYPE_FILE','path':'/d/1'},"
	    "{'type':'FILE_TYPE_DIRECTORY','path':'/d/x'},"
	    "{'type':'FILE_TYPE_FILE','path':'/d/x/2'},"
	    "{'type':'FILE_TYPE_FILE','path':'/d/3'}]}";

	(void)state;
	assert_files(envd_files(resp, 0), "[]");
	assert_files(envd_files(resp, 1), "[{'path':'/d/1','size':0,'mtime':''}]");
	assert_files(envd_files(resp, 2), "[{'path':'/d/1','size':0,'mtime':''},"
	    "{'path':'/d/x/2','size':0,'mtime':''}]");
	assert_files(envd_files(resp, 3), "[{'path':'/d/1','size':0,'mtime':''},"
	    "{'path':'/d/x/2','size':0,'mtime':''},"
	    "{'path':'/d/3','size':0,'mtime':''}]");
}

/* A size as a number is read too (protojson accepts both); a size or
 * path that is not one drops that entry, never the list. */
static void
envd_list_odd_entries(void **state)
{
	(void)state;
	assert_files(envd_files("{'entries':["
	    "{'type':'FILE_TYPE_FILE','path':'/a','size':7},"
	    "{'type':'FILE_TYPE_FILE','path':'/b','size':'-1'},"
	    "{'type':'FILE_TYPE_FILE','path':'/c','size':'12a'},"
	    "{'type':'FILE_TYPE_FILE','path':'/d','size':'99999999999999999999'},"
	    "{'type':'FILE_TYPE_FILE','path':'/e','size':-3},"
	    "{'type':'FILE_TYPE_FILE','path':'/f','size':1.5},"
	    "{'type':'FILE_TYPE_FILE','path':'/g','size':''},"
	    "{'type':'FILE_TYPE_FILE','path':'rel'},"
	    "{'type':'FILE_TYPE_FILE','path':7},"
	    "{'type':'FILE_TYPE_FILE'},"
	    "{'type':7,'path':'/h'},"
	    "{'type':'FILE_TYPE_FILE','path':'/i','modifiedTime':5},"
	    "'a string', 3, null, [],"
	    "{'type':'FILE_TYPE_FILE','path':'/j','size':'0'}]}", 100),
	    "[{'path':'/a','size':7,'mtime':''},"
	    "{'path':'/i','size':0,'mtime':''},"
	    "{'path':'/j','size':0,'mtime':''}]");
}

/* Not a ListDir answer: NULL, no crash. */
static void
envd_list_garbage(void **state)
{
	static const char *bad[] = { "[]", "'entries'", "3", "null",
	    "{'entries':{}}", "{'entries':'x'}", "{'entries':7}" };
	json_t *f;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = envd_files(bad[i], 100);
		if (f != NULL)
			fail_msg("%s gave a list", bad[i]);
	}
	assert_null(sg_envd_list_files(NULL, 100));
}

/* ---------------------------------------------------------------------
 * execd's /files/search answer
 * ------------------------------------------------------------------- */

static void
osb_search_kinds(void **state)
{
	(void)state;
	assert_files(osb_files("["
	    "{'path':'/mnt/data/a.csv','type':'file','size':12,"
	    "'modified_at':'2025-01-02T03:04:05.5Z',"
	    "'created_at':'2025-01-02T03:04:05Z','owner':'root',"
	    "'group':'root','mode':644},"
	    "{'path':'/mnt/data/sub','type':'directory','size':4096},"
	    "{'path':'/mnt/data/l','type':'symlink','size':15},"
	    "{'path':'/mnt/data/p','type':'other','size':0},"
	    "{'path':'/mnt/data/sub/e','type':'file','size':0,"
	    "'modified_at':'2025-01-02T03:04:06Z'}]", "/mnt/data", 100),
	    "[{'path':'/mnt/data/a.csv','size':12,"
	    "'mtime':'2025-01-02T03:04:05.5Z'},"
	    "{'path':'/mnt/data/sub/e','size':0,"
	    "'mtime':'2025-01-02T03:04:06Z'}]");
	assert_files(osb_files("[]", "/mnt/data", 100), "[]");
}

/* The search has no depth: the list keeps SG_PROV_LIST_DEPTH levels,
 * the files in dir itself being the first. */
static void
osb_search_depth(void **state)
{
	static const char *resp = "["
	    "{'path':'/w/1','type':'file','size':1},"
	    "{'path':'/w/a/b/c/d/e/f/g/8','type':'file','size':1},"
	    "{'path':'/w/a/b/c/d/e/f/g/h/9','type':'file','size':1},"
	    "{'path':'/w/a/b/c/d/e/f/g/h/i/10','type':'file','size':1}]";

	(void)state;
	assert_int_equal(SG_PROV_LIST_DEPTH, 8);
	assert_files(osb_files(resp, "/w", 100),
	    "[{'path':'/w/1','size':1,'mtime':''},"
	    "{'path':'/w/a/b/c/d/e/f/g/8','size':1,'mtime':''}]");
	/* dir's trailing slashes change nothing. */
	assert_files(osb_files(resp, "/w//", 100),
	    "[{'path':'/w/1','size':1,'mtime':''},"
	    "{'path':'/w/a/b/c/d/e/f/g/8','size':1,'mtime':''}]");
	/* From one level up, 8 is 9 deep. */
	assert_files(osb_files("[{'path':'/w/a/b/c/d/e/f/g/8','type':'file'}]",
	    "/", 100), "[]");
	assert_files(osb_files("[{'path':'/w/a/b/c/d/e/f/8','type':'file'}]",
	    "/", 100), "[{'path':'/w/a/b/c/d/e/f/8','size':0,'mtime':''}]");
}

/* Only what is under dir: not a sibling sharing its prefix, not dir. */
static void
osb_search_under_dir(void **state)
{
	(void)state;
	assert_files(osb_files("["
	    "{'path':'/mnt/data','type':'file','size':1},"
	    "{'path':'/mnt/database/x','type':'file','size':1},"
	    "{'path':'/mnt/other/x','type':'file','size':1},"
	    "{'path':'mnt/data/x','type':'file','size':1},"
	    "{'path':'/mnt/data/','type':'file','size':1},"
	    "{'path':'/mnt/data/x','type':'file','size':2}]", "/mnt/data", 100),
	    "[{'path':'/mnt/data/x','size':2,'mtime':''}]");
}

static void
osb_search_max(void **state)
{
	static const char *resp = "["
	    "{'path':'/d/x','type':'directory'},"
	    "{'path':'/d/1','type':'file'},"
	    "{'path':'/d/2','type':'file'},"
	    "{'path':'/d/3','type':'file'}]";

	(void)state;
	assert_files(osb_files(resp, "/d", 0), "[]");
	assert_files(osb_files(resp, "/d", 2), "[{'path':'/d/1','size':0,"
	    "'mtime':''},{'path':'/d/2','size':0,'mtime':''}]");
}

static void
osb_search_garbage(void **state)
{
	static const char *bad[] = { "{}", "{'code':'FILE_NOT_FOUND'}", "3",
	    "'x'", "null" };
	json_t *f;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = osb_files(bad[i], "/d", 100);
		if (f != NULL)
			fail_msg("%s gave a list", bad[i]);
	}
	assert_null(sg_osb_search_files(NULL, "/d", 100));
	/* Odd entries are dropped, the rest kept. */
	assert_files(osb_files("[1, 'x', null, [], {'type':'file'},"
	    "{'path':'/d/a','type':'file','size':'3'},"
	    "{'path':'/d/b','type':'file','size':-1},"
	    "{'path':'/d/c','type':'file','size':1.0},"
	    "{'path':7,'type':'file'},"
	    "{'path':'/d/e','type':'FILE'},"
	    "{'path':'/d/f','type':'file','size':5,'modified_at':null}]", "/d",
	    100), "[{'path':'/d/f','size':5,'mtime':''}]");
}

/* A temporary file, unlinked: the download's fd. */
static int
tmpfd(struct canned *c)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/dl.XXXXXX", c->dir);
	assert_true((fd = mkstemp(path)) != -1);
	unlink(path);
	return fd;
}

/* What fd holds, new and NUL-terminated; its length in *len. */
static char *
contents(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	char *s;

	assert_true(n >= 0);
	assert_non_null(s = calloc(1, (size_t)n + 1));
	assert_int_equal(pread(fd, s, (size_t)n, 0), n);
	*len = (size_t)n;
	return s;
}

static void
assert_fd_holds(int fd, const char *want, size_t wlen)
{
	size_t len;
	char *s = contents(fd, &len);

	assert_int_equal(len, wlen);
	assert_memory_equal(s, want, wlen);
	free(s);
}

/* ---------------------------------------------------------------------
 * sg_phttp_download and sg_phttp_call_max
 * ------------------------------------------------------------------- */

static void
download_ok(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	json_t *resp = NULL;
	long status = 0;
	char *req;
	int fd;

	answer(c, 200, "application/octet-stream", "a\0b\nc", 5);
	answer(c, 200, NULL, "", 0);
	serve(c);
	fd = tmpfd(c);
	assert_int_equal(sg_phttp_download(&c->prov, "http://localhost/x?y=1",
	    NULL, fd, 5, 5000, &status, &resp, &err), SG_PROV_OK);
	assert_int_equal(status, 200);
	assert_null(resp);
	assert_fd_holds(fd, "a\0b\nc", 5);
	/* Written at the fd's offset, as it stands. */
	assert_int_equal(sg_phttp_download(&c->prov, "http://localhost/z", NULL,
	    fd, 0, 5000, &status, &resp, &err), SG_PROV_OK);
	assert_int_equal(status, 200);
	assert_fd_holds(fd, "a\0b\nc", 5);
	close(fd);
	served(c);
	req = request(c, 0);
	assert_has(req, "GET /x?y=1 HTTP/1.1\r\n");
	free(req);
}

/* Past max: CAP, the first max bytes written, the rest never read. */
static void
download_cap(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	size_t big = 4u << 20, i;
	json_t *resp = NULL;
	long status = 0;
	char *body;
	int fd;

	assert_non_null(body = malloc(big));
	for (i = 0; i < big; i++)
		body[i] = (char)('a' + i % 26);
	answer(c, 200, "application/octet-stream", body, (ssize_t)big);
	answer(c, 200, "application/octet-stream", body, 1001);
	serve(c);
	fd = tmpfd(c);
	assert_int_equal(sg_phttp_download(&c->prov, "http://localhost/big",
	    NULL, fd, 1000, 5000, &status, &resp, &err), SG_PROV_CAP);
	assert_int_equal(err.rc, SG_PROV_CAP);
	assert_null(resp);
	assert_fd_holds(fd, body, 1000);
	close(fd);
	/* One byte over is over. */
	fd = tmpfd(c);
	assert_int_equal(sg_phttp_download(&c->prov, "http://localhost/big",
	    NULL, fd, 1000, 5000, &status, &resp, &err), SG_PROV_CAP);
	assert_fd_holds(fd, body, 1000);
	close(fd);
	served(c);
	free(body);
}

/* Another status: nothing written, its JSON body in *errresp. */
static void
download_errors(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	json_t *resp = NULL;
	long status = 0;
	int fd;

	answer(c, 404, "application/json", "{'code':404,'message':'no'}\n", -1);
	answer(c, 500, "text/plain", "broken", 6);
	serve(c);
	fd = tmpfd(c);
	assert_int_equal(sg_phttp_download(&c->prov, "http://localhost/a", NULL,
	    fd, 100, 5000, &status, &resp, &err), SG_PROV_OK);
	assert_int_equal(status, 404);
	assert_string_equal(sg_phttp_message(resp, "?"), "no");
	json_decref(resp);
	assert_int_equal(sg_phttp_download(&c->prov, "http://localhost/a", NULL,
	    fd, 100, 5000, &status, &resp, &err), SG_PROV_OK);
	assert_int_equal(status, 500);
	assert_null(resp);
	assert_fd_holds(fd, "", 0);
	close(fd);
	served(c);
}

/* A write that fails (a read-only fd) stops the call. */
static void
download_write_fails(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	json_t *resp = NULL;
	long status = 0;
	int fd;

	answer(c, 200, NULL, "data", 4);
	serve(c);
	assert_true((fd = open("/dev/null", O_RDONLY)) != -1);
	assert_int_equal(sg_phttp_download(&c->prov, "http://localhost/a", NULL,
	    fd, 100, 5000, &status, &resp, &err), SG_PROV_FAILED);
	assert_has(err.message, "cannot write");
	close(fd);
	served(c);
}

static void
call_max(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	json_t *resp = NULL;
	long status = 0;

	answer(c, 200, "application/json", "{'a':'0123456789'}", -1);
	answer(c, 200, "application/json", "{'a':'0123456789'}", -1);
	serve(c);
	assert_int_equal(sg_phttp_call_max(&c->prov, "GET", "http://localhost/",
	    NULL, NULL, 18, 5000, &status, &resp, &err), SG_PROV_OK);
	assert_int_equal(status, 200);
	assert_string_equal(json_string_value(json_object_get(resp, "a")),
	    "0123456789");
	json_decref(resp);
	assert_int_equal(sg_phttp_call_max(&c->prov, "GET", "http://localhost/",
	    NULL, NULL, 17, 5000, &status, &resp, &err), SG_PROV_FAILED);
	assert_null(resp);
	assert_has(err.message, "larger than 17 bytes");
	served(c);
}

/* ---------------------------------------------------------------------
 * envd: ListDir and GET /files
 * ------------------------------------------------------------------- */

static int
envd_list(struct canned *c, const char *dir, size_t max, json_t **files,
    struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	int rc;

	sg_hdrs_add(&h, "X-Access-Token", "tok");
	rc = sg_envd_list(&c->prov, "http://localhost", &h, dir, max, files,
	    err);
	sg_hdrs_free(&h);
	return rc;
}

/* Connect unary over JSON, as user "user", depth 8. */
static void
envd_list_request(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	json_t *files = NULL, *body;
	char *req;

	answer(c, 200, "application/json", "{'entries':[{'name':'a','type':"
	    "'FILE_TYPE_FILE','path':'/mnt/data/a','size':'3',"
	    "'modifiedTime':'2025-01-01T00:00:00Z'}]}", -1);
	serve(c);
	assert_int_equal(envd_list(c, "/mnt/data", 10, &files, &err),
	    SG_PROV_OK);
	assert_files(files, "[{'path':'/mnt/data/a','size':3,"
	    "'mtime':'2025-01-01T00:00:00Z'}]");
	served(c);
	req = request(c, 0);
	assert_has(req, "POST /filesystem.Filesystem/ListDir HTTP/1.1\r\n");
	assert_has(req, "\r\nContent-Type: application/json\r\n");
	assert_has(req, "\r\nConnect-Protocol-Version: 1\r\n");
	assert_has(req, "\r\nAuthorization: Basic dXNlcjo=\r\n");
	assert_has(req, "\r\nX-Access-Token: tok\r\n");
	body = json_loads(strstr(req, "\r\n\r\n") + 4, 0, NULL);
	assert_files(body, "{'path':'/mnt/data','depth':8}");
	free(req);
}

static void
envd_list_statuses(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	json_t *files = NULL;

	/* Connect's not_found: the directory is not there. */
	answer(c, 404, "application/json", "{'code':'not_found','message':"
	    "'path not found: lstat /nope: no such file or directory'}", -1);
	/* A 404 that is not Connect's (no such RPC). */
	answer(c, 404, "text/plain", "404 page not found\n", -1);
	/* e2b's proxy: no such sandbox. */
	answer(c, 502, "application/json", "{'sandboxId':'x','message':"
	    "'The sandbox was not found','code':502}", -1);
	answer(c, 400, "application/json", "{'code':'invalid_argument',"
	    "'message':'path is not a directory: /a'}", -1);
	answer(c, 200, "application/json", "{'entries':7}", -1);
	answer(c, 200, "text/plain", "not json", -1);
	serve(c);
	assert_int_equal(envd_list(c, "/nope", 10, &files, &err), SG_PROV_OK);
	assert_files(files, "[]");
	files = NULL;
	assert_int_equal(envd_list(c, "/x", 10, &files, &err), SG_PROV_FAILED);
	assert_null(files);
	assert_int_equal(err.status, 404);
	assert_int_equal(envd_list(c, "/x", 10, &files, &err), SG_PROV_GONE);
	assert_null(files);
	assert_int_equal(err.status, 502);
	assert_int_equal(envd_list(c, "/a", 10, &files, &err), SG_PROV_FAILED);
	assert_null(files);
	assert_int_equal(err.status, 400);
	assert_has(err.message, "path is not a directory: /a");
	assert_int_equal(envd_list(c, "/x", 10, &files, &err), SG_PROV_FAILED);
	assert_null(files);
	assert_int_equal(envd_list(c, "/x", 10, &files, &err), SG_PROV_FAILED);
	assert_null(files);
	served(c);
}

static int
envd_get(struct canned *c, const char *path, int fd, int64_t max,
    struct sg_prov_error *err)
{
	struct sg_hdrs h = { 0 };
	int rc;

	rc = sg_envd_get(&c->prov, "http://localhost", &h, path, fd, max, err);
	sg_hdrs_free(&h);
	return rc;
}

static void
envd_get_statuses(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	char *req;
	int fd;

	answer(c, 200, "text/csv", "x,y\n", -1);
	answer(c, 404, "application/json", "{'code':404,'message':"
	    "'path \\u0027/b\\u0027 does not exist'}\n", -1);
	answer(c, 502, "application/json", "{'message':"
	    "'The sandbox was not found','code':502}", -1);
	answer(c, 400, "application/json", "{'code':400,'message':"
	    "'path \\u0027/d\\u0027 is a directory'}\n", -1);
	answer(c, 200, "text/csv", "x,y\n", -1);
	serve(c);
	fd = tmpfd(c);
	assert_int_equal(envd_get(c, "/mnt/data/a b&c.csv", fd, 100, &err),
	    SG_PROV_OK);
	assert_fd_holds(fd, "x,y\n", 4);
	assert_int_equal(envd_get(c, "/b", fd, 100, &err), SG_PROV_FAILED);
	assert_int_equal(err.status, 404);
	assert_has(err.message, "'/b' does not exist");
	assert_int_equal(envd_get(c, "/c", fd, 100, &err), SG_PROV_GONE);
	assert_int_equal(envd_get(c, "/d", fd, 100, &err), SG_PROV_FAILED);
	assert_int_equal(err.status, 400);
	assert_int_equal(envd_get(c, "/e", fd, 3, &err), SG_PROV_CAP);
	close(fd);
	served(c);
	req = request(c, 0);
	assert_has(req, "GET /files?path=/mnt/data/a%20b%26c.csv&username=user "
	    "HTTP/1.1\r\n");
	free(req);
}

/* ---------------------------------------------------------------------
 * OpenSandbox: execd's /files/search and /files/download
 * ------------------------------------------------------------------- */

static json_t *
osb_handle(void)
{
	return qjson("{'id':'s','execd':'http://localhost/sandboxes/s/proxy/"
	    "44772','headers':{'X-EXECD-ACCESS-TOKEN':'tok'}}");
}

static void
osb_list_statuses(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	json_t *h = osb_handle(), *files = NULL;
	char *req;

	answer(c, 200, "application/json", "[{'path':'/mnt/data/a','type':"
	    "'file','size':3,'modified_at':'2025-01-01T00:00:00Z'},{'path':"
	    "'/mnt/data/1/2/3/4/5/6/7/8/9','type':'file','size':1}]", -1);
	answer(c, 404, "application/json", "{'code':'FILE_NOT_FOUND','message':"
	    "'file not found. stat /nope: no such file or directory'}", -1);
	answer(c, 404, "application/json", "{'code':'DOCKER::SANDBOX_NOT_FOUND',"
	    "'message':'Sandbox s not found.'}", -1);
	answer(c, 500, "application/json", "{'code':'RUNTIME_ERROR','message':"
	    "'error searching files'}", -1);
	serve(c);
	assert_int_equal(sg_osb_list(&c->prov, NULL, h, "/mnt/data", 10, &files,
	    &err), SG_PROV_OK);
	assert_files(files, "[{'path':'/mnt/data/a','size':3,"
	    "'mtime':'2025-01-01T00:00:00Z'}]");
	files = NULL;
	assert_int_equal(sg_osb_list(&c->prov, NULL, h, "/nope", 10, &files,
	    &err), SG_PROV_OK);
	assert_files(files, "[]");
	files = NULL;
	assert_int_equal(sg_osb_list(&c->prov, NULL, h, "/x", 10, &files,
	    &err), SG_PROV_GONE);
	assert_null(files);
	assert_int_equal(sg_osb_list(&c->prov, NULL, h, "/x", 10, &files,
	    &err), SG_PROV_FAILED);
	assert_null(files);
	assert_int_equal(err.status, 500);
	served(c);
	req = request(c, 0);
	assert_has(req, "GET /sandboxes/s/proxy/44772/files/search?path="
	    "/mnt/data&pattern=** HTTP/1.1\r\n");
	assert_has(req, "\r\nX-EXECD-ACCESS-TOKEN: tok\r\n");
	free(req);
	json_decref(h);
}

static void
osb_get_statuses(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	json_t *h = osb_handle(), *nox = qjson("{'id':'s'}");
	char *req;
	int fd;

	answer(c, 200, "application/octet-stream", "bytes", -1);
	answer(c, 404, "application/json", "{'code':'FILE_NOT_FOUND','message':"
	    "'file not found. open /b: no such file or directory'}", -1);
	answer(c, 404, "application/json", "{'code':'DOCKER::SANDBOX_NOT_FOUND',"
	    "'message':'Sandbox s not found.'}", -1);
	answer(c, 502, "text/plain", "Bad Gateway", -1);
	serve(c);
	fd = tmpfd(c);
	assert_int_equal(sg_osb_get(&c->prov, NULL, h, "/mnt/data/ä.txt", fd,
	    100, &err), SG_PROV_OK);
	assert_fd_holds(fd, "bytes", 5);
	assert_int_equal(sg_osb_get(&c->prov, NULL, h, "/b", fd, 100, &err),
	    SG_PROV_FAILED);
	assert_int_equal(err.status, 404);
	assert_int_equal(sg_osb_get(&c->prov, NULL, h, "/c", fd, 100, &err),
	    SG_PROV_GONE);
	assert_int_equal(sg_osb_get(&c->prov, NULL, h, "/c", fd, 100, &err),
	    SG_PROV_GONE);
	/* No execd in the handle: never asked. */
	assert_int_equal(sg_osb_get(&c->prov, NULL, nox, "/c", fd, 100, &err),
	    SG_PROV_GONE);
	close(fd);
	served(c);
	req = request(c, 0);
	assert_has(req, "GET /sandboxes/s/proxy/44772/files/download?path="
	    "/mnt/data/%C3%A4.txt HTTP/1.1\r\n");
	free(req);
	json_decref(h);
	json_decref(nox);
}

/* A run's caller is shown its output as it grows (sg_prov.progress). */
static size_t	progress_calls, progress_out;

static void
on_progress(void *arg, const struct sg_exec *res)
{
	assert_ptr_equal(arg, &progress_calls);
	progress_calls++;
	assert_true(res->out.len >= progress_out);
	progress_out = res->out.len;
}

static void
stream_progress(void **state)
{
	struct canned *c = *state;
	struct sg_prov_error err = { 0 };
	struct sg_exec res;
	struct sg_lines lines = { .fn = sg_exec_e2b_line, .res = &res };
	json_t *body = json_object();
	char *errbody = NULL;
	long status = 0;

	answer(c, 200, "application/x-ndjson", "{'type':'stdout','text':'a\\n'}\n"
	    "{'type':'stdout','text':'b\\n'}\n{'type':'end_of_execution'}\n",
	    -1);
	serve(c);
	sg_exec_init(&res, 1000);
	c->prov.progress = on_progress;
	c->prov.progress_arg = &progress_calls;
	assert_int_equal(sg_phttp_stream(&c->prov, "http://localhost/execute",
	    NULL, body, 10, &lines, &status, &errbody, &err), SG_PROV_OK);
	sg_lines_finish(&lines);
	assert_int_equal(status, 200);
	assert_true(progress_calls >= 1);
	assert_int_equal(progress_out, 4);
	sg_exec_free(&res);
	json_decref(body);
	free(errbody);
	served(c);
}

/* The three providers fill both ops. */
static void
ops_filled(void **state)
{
	static const enum sg_provider_kind kinds[] = { SG_PROVIDER_LOCAL,
	    SG_PROVIDER_E2B, SG_PROVIDER_OPENSANDBOX };
	const struct sg_provider_ops *ops;
	size_t i;

	(void)state;
	for (i = 0; i < 3; i++) {
		assert_non_null(ops = sg_provider_ops(kinds[i]));
		assert_non_null(ops->list);
		assert_non_null(ops->get);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(envd_list_kinds),
		cmocka_unit_test(envd_list_empty),
		cmocka_unit_test(envd_list_max),
		cmocka_unit_test(envd_list_odd_entries),
		cmocka_unit_test(envd_list_garbage),
		cmocka_unit_test(osb_search_kinds),
		cmocka_unit_test(osb_search_depth),
		cmocka_unit_test(osb_search_under_dir),
		cmocka_unit_test(osb_search_max),
		cmocka_unit_test(osb_search_garbage),
		cmocka_unit_test(ops_filled),
		cmocka_unit_test_setup_teardown(download_ok, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(download_cap, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(download_errors, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(download_write_fails, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(call_max, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(stream_progress, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(envd_list_request, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(envd_list_statuses, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(envd_get_statuses, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(osb_list_statuses, fx_setup,
		    fx_teardown),
		cmocka_unit_test_setup_teardown(osb_get_statuses, fx_setup,
		    fx_teardown),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
