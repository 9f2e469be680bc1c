/*
 * core/http/upload: a multipart upload read through sg_in in chunks of any
 * size: the file part lands whole in NAME.part and nothing is left behind
 * on any refusal (past max_bytes, a malformed body, no file part, a name
 * that is a path, a client that broke off); fields are kept.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/upload.h"
#include "testutil.h"

#define CTYPE "multipart/form-data; boundary=XyZ"

/* A body served in chunks of `chunk` bytes; broken: -1 at its end. */
struct mem_in {
	struct sg_in	 base;
	const char	*p;
	size_t		 len, off, chunk;
	int		 broken;
};

static long
mem_read(struct sg_in *in, void *buf, size_t len)
{
	struct mem_in *m = (struct mem_in *)in;
	size_t n = m->len - m->off;

	if (n == 0)
		return m->broken ? -1 : 0;
	if (n > len)
		n = len;
	if (n > m->chunk)
		n = m->chunk;
	memcpy(buf, m->p + m->off, n);
	m->off += n;
	return (long)n;
}

struct fx {
	char	 dir[64];
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1)
		return -1;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

/* Entries in dir/files (0 when it does not exist). */
static int
entries(const struct fx *fx)
{
	char path[128];
	struct dirent *de;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/files", fx->dir);
	if ((d = opendir(path)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A file's bytes, new, its length in *len; NULL when unreadable. */
static char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL &&
	    fread(buf, 1, (size_t)n, f) == (size_t)n)
		*len = (size_t)n;
	else {
		free(buf);
		buf = NULL;
	}
	if (f != NULL)
		fclose(f);
	return buf;
}

/* Upload body through chunks of chunk bytes: sg_upload_recv's result,
 * with u and err filled. */
static int
recv_body(struct fx *fx, const char *body, size_t len, size_t chunk,
    long long max, struct sg_upload *u, struct sg_error *err, int broken)
{
	static char dir[128];
	struct mem_in in = { { mem_read }, body, len, 0, chunk, broken };
	struct sg_req req;

	memset(&req, 0, sizeof(req));
	req.in = &in.base;
	req.content_type = CTYPE;
	req.content_length = (long long)len;
	snprintf(dir, sizeof(dir), "%s/files", fx->dir);
	memset(u, 0, sizeof(*u));
	u->dir = dir;
	u->name = "file-1";
	u->max_bytes = max;
	return sg_upload_recv(&req, u, err);
}

/* A body with a purpose field and a file part named name holding n
 * bytes of content (a pattern). New, its length in *len. */
static char *
body_of(const char *name, size_t n, size_t *len)
{
	const char *head = "--XyZ\r\nContent-Disposition: form-data; "
	    "name=\"purpose\"\r\n\r\nuser_data\r\n--XyZ\r\nContent-Disposition: "
	    "form-data; name=\"file\"; filename=\"";
	const char *mid = "\"\r\nContent-Type: text/csv\r\n\r\n";
	const char *tail = "\r\n--XyZ--\r\n";
	size_t hl = strlen(head), nl = strlen(name), ml = strlen(mid), i;
	char *b = malloc(hl + nl + ml + n + strlen(tail) + 1);

	assert_non_null(b);
	memcpy(b, head, hl);
	memcpy(b + hl, name, nl);
	memcpy(b + hl + nl, mid, ml);
	for (i = 0; i < n; i++)
		b[hl + nl + ml + i] = (char)('a' + i % 26);
	strcpy(b + hl + nl + ml + n, tail);
	*len = hl + nl + ml + n + strlen(tail);
	return b;
}

static void
whole_in_any_chunks(void **state)
{
	static const size_t chunks[] = { 1, 7, 4096, 65536 };
	struct fx *fx = *state;
	struct sg_upload u;
	struct sg_error err;
	char path[160], *body, *got;
	size_t len, i, glen;

	body = body_of("data.csv", 100000, &len);
	for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
		assert_int_equal(recv_body(fx, body, len, chunks[i], 1 << 20, &u,
		    &err, 0), 0);
		assert_string_equal(u.filename, "data.csv");
		assert_int_equal(u.bytes, 100000);
		assert_string_equal(sg_upload_field(&u, "purpose"), "user_data");
		assert_null(sg_upload_field(&u, "nope"));
		snprintf(path, sizeof(path), "%s/files/file-1.part", fx->dir);
		got = read_file(path, &glen);
		assert_non_null(got);
		assert_int_equal(glen, 100000);
		assert_memory_equal(got, strstr(body, "\r\n\r\nabc") + 4, glen);
		free(got);
		assert_int_equal(sg_upload_commit(&u, &err), 0);
		snprintf(path, sizeof(path), "%s/files/file-1", fx->dir);
		assert_int_equal(access(path, F_OK), 0);
		assert_int_equal(unlink(path), 0);
	}
	free(body);
	assert_int_equal(entries(fx), 0);
}

/* Each refusal: its status, and nothing left in the directory. */
static void
refusals_leave_nothing(void **state)
{
	struct fx *fx = *state;
	struct sg_upload u;
	struct sg_error err;
	char *body;
	size_t len;

	body = body_of("data.csv", 5000, &len);
	/* Past max_bytes: 413 as the bytes arrive. */
	assert_int_equal(recv_body(fx, body, len, 512, 4999, &u, &err, 0), -1);
	assert_int_equal(err.status, 413);
	assert_int_equal(entries(fx), 0);
	/* Exactly max_bytes is fine. */
	assert_int_equal(recv_body(fx, body, len, 512, 5000, &u, &err, 0), 0);
	sg_upload_discard(&u);
	assert_int_equal(entries(fx), 0);
	/* Cut off: the client broke off, or the body ends early. */
	assert_int_equal(recv_body(fx, body, len - 20, 512, 1 << 20, &u, &err,
	    1), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(recv_body(fx, body, len - 20, 512, 1 << 20, &u, &err,
	    0), -1);
	assert_int_equal(err.status, 400);
	assert_int_equal(entries(fx), 0);
	free(body);
	/* A path, or a control character, as the name. */
	body = body_of("../x.csv", 10, &len);
	assert_int_equal(recv_body(fx, body, len, 512, 1 << 20, &u, &err, 0), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.param, "file");
	free(body);
	body = body_of("a\\\\b", 10, &len);
	assert_int_equal(recv_body(fx, body, len, 512, 1 << 20, &u, &err, 0), -1);
	free(body);
	assert_int_equal(entries(fx), 0);
}

static void
no_file_part(void **state)
{
	static const char body[] = "--XyZ\r\nContent-Disposition: form-data; "
	    "name=\"purpose\"\r\n\r\nuser_data\r\n--XyZ--\r\n";
	struct fx *fx = *state;
	struct sg_upload u;
	struct sg_error err;

	assert_int_equal(recv_body(fx, body, sizeof(body) - 1, 3, 100, &u, &err,
	    0), -1);
	assert_int_equal(err.status, 400);
	assert_string_equal(err.param, "file");
	assert_int_equal(entries(fx), 0);
}

static void
names(void **state)
{
	(void)state;
	assert_true(sg_upload_name_ok("data.csv"));
	assert_true(sg_upload_name_ok("données €.bin"));
	assert_true(sg_upload_name_ok(".hidden"));
	assert_false(sg_upload_name_ok(""));
	assert_false(sg_upload_name_ok("."));
	assert_false(sg_upload_name_ok(".."));
	assert_false(sg_upload_name_ok("a/b"));
	assert_false(sg_upload_name_ok("/etc/passwd"));
	assert_false(sg_upload_name_ok("a\\b"));
	assert_false(sg_upload_name_ok("a\tb"));
	assert_false(sg_upload_name_ok("a\x7f"));
	assert_false(sg_upload_name_ok("\xff\xfe.csv"));
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(whole_in_any_chunks),
		T(refusals_leave_nothing),
		T(no_file_part),
		cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
