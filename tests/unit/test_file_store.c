/*
 * store/files: a file row reserves its key's quota while it uploads (no
 * two uploads share the last bytes, nor the last file of a key that may
 * hold so many, even from processes racing for them), is found by its
 * key only and in its own container only, lists newest first (or oldest)
 * page by page, and comes up for the reaper when it expired or still
 * uploads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/wait.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../store/store.h"
#include "testutil.h"

#define A "aaaa"
#define B "bbbb"

/* Ready at bytes, its name and purpose as begun. */
static int
ready(struct sg_store *st, const char *id, int64_t bytes)
{
	struct sg_store_file f;
	int rc = sg_store_file_get(st, id, NULL, "*", &f);

	if (rc != SG_STORE_OK) {
		snprintf(f.id, sizeof(f.id), "%s", id);
		f.filename[0] = f.purpose[0] = '\0';
	}
	f.bytes = bytes;
	return sg_store_file_ready(st, &f);
}

static int
begin_q(struct sg_store *st, const char *id, const char *tenant,
    const char *container, int64_t bytes, int64_t created,
    struct sg_store_quota *q)
{
	struct sg_store_file f;

	memset(&f, 0, sizeof(f));
	snprintf(f.id, sizeof(f.id), "%s", id);
	snprintf(f.tenant, sizeof(f.tenant), "%s", tenant);
	snprintf(f.container_id, sizeof(f.container_id), "%s", container);
	snprintf(f.filename, sizeof(f.filename), "%s.csv", id);
	snprintf(f.purpose, sizeof(f.purpose), "%s", container[0] ? "" :
	    "user_data");
	f.bytes = bytes;
	f.owner_pid = 1;
	f.created_at = created;
	f.expires_at = created + 100;
	return sg_store_file_begin(st, &f, q);
}

/* begin_q within quota bytes, and files enough. */
static int
begin(struct sg_store *st, const char *id, const char *tenant,
    const char *container, int64_t bytes, int64_t created, int64_t quota)
{
	struct sg_store_quota q = { quota, 1000, 0, 0 };

	return begin_q(st, id, tenant, container, bytes, created, &q);
}

/* Empty files cost no bytes: each still counts, uploading or ready, in a
 * container or not, per key. */
static void
files_are_counted(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_quota q = { 1000, 2, -1, -1 };

	assert_int_equal(begin_q(fx->st, "file-1", A, "", 0, 10, &q),
	    SG_STORE_OK);
	assert_int_equal(ready(fx->st, "file-1", 0), SG_STORE_OK);
	assert_int_equal(begin_q(fx->st, "cfile_1", A, "cntr_1", 0, 11, &q),
	    SG_STORE_OK);
	assert_int_equal(begin_q(fx->st, "file-2", A, "", 0, 12, &q),
	    SG_STORE_FULL);
	assert_int_equal(q.files, 2);
	assert_int_equal(q.bytes, 0);
	assert_int_equal(begin_q(fx->st, "file-b", B, "", 0, 12, &q),
	    SG_STORE_OK);
	assert_int_equal(sg_store_file_remove(fx->st, "file-1", A),
	    SG_STORE_OK);
	assert_int_equal(begin_q(fx->st, "file-2", A, "", 0, 13, &q),
	    SG_STORE_OK);
	/* The bytes are still checked, and say so. */
	q.max_files = 10;
	assert_int_equal(begin_q(fx->st, "file-3", A, "", 1001, 14, &q),
	    SG_STORE_FULL);
	assert_true(q.files < q.max_files);
}

/* Processes racing for a key's last files: exactly as many begin as it
 * may hold. */
static void
racing_for_the_last_files(void **state)
{
	struct tu_store_fx *fx = *state;
	char out[32];
	int i, made = 0, status;

	for (i = 0; i < 8; i++) {
		if (fork() == 0) {
			struct sg_store_quota q = { 1 << 20, 3, 0, 0 };
			struct sg_store *st;
			char err[256], id[32];
			int rc;

			if (tu_store_open(fx->path, &st, err, sizeof(err), 0) != 0)
				_exit(2);
			snprintf(id, sizeof(id), "file-r%d", i);
			rc = begin_q(st, id, A, "", 0, 10, &q);
			sg_store_close(st);
			_exit(rc == SG_STORE_OK ? 0 : rc == SG_STORE_FULL ? 5 : 4);
		}
	}
	for (i = 0; i < 8; i++) {
		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status));
		assert_true(WEXITSTATUS(status) == 0 ||
		    WEXITSTATUS(status) == 5);
		made += WEXITSTATUS(status) == 0;
	}
	assert_int_equal(made, 3);
	assert_int_equal(tu_raw_sql(fx->path, "SELECT count(*) FROM files",
	    out, sizeof(out)), 0);
	assert_string_equal(out, "3");
}

static void
quota_is_reserved_while_uploading(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_file f;

	assert_int_equal(begin(fx->st, "file-1", A, "", 600, 10, 1000),
	    SG_STORE_OK);
	/* 600 reserved: 500 more would pass 1000. */
	assert_int_equal(begin(fx->st, "file-2", A, "", 500, 11, 1000),
	    SG_STORE_FULL);
	assert_int_equal(begin(fx->st, "file-2", B, "", 500, 11, 1000),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "file-1", B, "", 1, 12, 1000),
	    SG_STORE_EXISTS);
	/* Whole at 100 bytes: the rest of the reservation is free again. */
	assert_int_equal(ready(fx->st, "file-1", 100),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "file-3", A, "", 500, 13, 1000),
	    SG_STORE_OK);
	assert_int_equal(sg_store_file_get(fx->st, "file-1", A, NULL, &f),
	    SG_STORE_OK);
	assert_string_equal(f.state, "ready");
	assert_int_equal(f.bytes, 100);
	assert_string_equal(f.purpose, "user_data");
	assert_int_equal(f.owner_pid, 0);
	assert_int_equal(ready(fx->st, "file-9", 1),
	    SG_STORE_NOTFOUND);
}

static void
found_by_its_key_in_its_container(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_file f;

	assert_int_equal(begin(fx->st, "file-1", A, "", 1, 10, 100),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "cfile_1", A, "cntr_1", 1, 10, 100),
	    SG_STORE_OK);
	assert_int_equal(sg_store_file_get(fx->st, "file-1", B, NULL, &f),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_file_get(fx->st, "file-1", NULL, NULL, &f),
	    SG_STORE_OK);
	/* A container file is not a /v1/files file, nor another
	 * container's. */
	assert_int_equal(sg_store_file_get(fx->st, "cfile_1", A, NULL, &f),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_file_get(fx->st, "cfile_1", A, "cntr_2", &f),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_file_get(fx->st, "cfile_1", A, "cntr_1", &f),
	    SG_STORE_OK);
	assert_string_equal(f.container_id, "cntr_1");
	assert_int_equal(sg_store_file_get(fx->st, "cfile_1", A, "*", &f),
	    SG_STORE_OK);
	assert_int_equal(sg_store_file_remove(fx->st, "cfile_1", B),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_file_remove(fx->st, "cfile_1", A),
	    SG_STORE_OK);
	assert_int_equal(sg_store_file_get(fx->st, "cfile_1", A, "*", &f),
	    SG_STORE_NOTFOUND);
}

struct ids {
	char	 text[256];
};

static int
note(void *arg, const struct sg_store_file *f)
{
	struct ids *s = arg;
	size_t n = strlen(s->text);

	snprintf(s->text + n, sizeof(s->text) - n, "%s%s", n ? "," : "", f->id);
	return 0;
}

/* One page: its ids, and whether there is more. */
static int
page(struct sg_store *st, const char *after, int limit, int asc,
    struct ids *s)
{
	int more = -1;

	s->text[0] = '\0';
	assert_int_equal(sg_store_file_list(st, A, NULL, NULL, after, limit,
	    asc, note, s, &more), SG_STORE_OK);
	return more;
}

static void
lists_page_by_page(void **state)
{
	struct tu_store_fx *fx = *state;
	struct ids s;
	char id[16];
	int i, more;

	/* Two with one created_at: the order still total (rowid). */
	for (i = 1; i <= 5; i++) {
		snprintf(id, sizeof(id), "file-%d", i);
		assert_int_equal(begin(fx->st, id, A, "", 1, i == 3 ? 2 : i, 100),
		    SG_STORE_OK);
		if (i != 4)
			assert_int_equal(ready(fx->st, id, 1),
			    SG_STORE_OK);
	}
	assert_int_equal(begin(fx->st, "file-b", B, "", 1, 1, 100),
	    SG_STORE_OK);
	assert_int_equal(ready(fx->st, "file-b", 1), SG_STORE_OK);
	assert_int_equal(begin(fx->st, "cfile_x", A, "cntr_1", 1, 1, 100),
	    SG_STORE_OK);
	assert_int_equal(ready(fx->st, "cfile_x", 1), SG_STORE_OK);
	/* Uploading (4), another key's and a container's are not listed. */
	assert_int_equal(page(fx->st, NULL, 2, 0, &s), 1);
	assert_string_equal(s.text, "file-5,file-3");
	assert_int_equal(page(fx->st, "file-3", 2, 0, &s), 0);
	assert_string_equal(s.text, "file-2,file-1");
	assert_int_equal(page(fx->st, NULL, 10, 1, &s), 0);
	assert_string_equal(s.text, "file-1,file-2,file-3,file-5");
	assert_int_equal(page(fx->st, "file-2", 1, 1, &s), 1);
	assert_string_equal(s.text, "file-3");
	more = -1;
	assert_int_equal(sg_store_file_list(fx->st, A, NULL, NULL, "file-b", 5,
	    0, note, &s, &more), SG_STORE_NOTFOUND);
	s.text[0] = '\0';
	assert_int_equal(sg_store_file_list(fx->st, A, "cntr_1", NULL, NULL, 5,
	    0, note, &s, &more), SG_STORE_OK);
	assert_string_equal(s.text, "cfile_x");
	s.text[0] = '\0';
	assert_int_equal(sg_store_file_list(fx->st, A, NULL, "batch", NULL, 5,
	    0, note, &s, &more), SG_STORE_OK);
	assert_string_equal(s.text, "");
}

static void
due_are_expired_or_uploading(void **state)
{
	struct tu_store_fx *fx = *state;
	struct ids s = { "" };

	assert_int_equal(begin(fx->st, "file-old", A, "", 1, 0, 100),
	    SG_STORE_OK);
	assert_int_equal(ready(fx->st, "file-old", 1),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "file-up", A, "", 1, 1000, 100),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "file-new", A, "", 1, 1000, 100),
	    SG_STORE_OK);
	assert_int_equal(ready(fx->st, "file-new", 1),
	    SG_STORE_OK);
	/* file-old expired at 100. */
	assert_int_equal(sg_store_file_due(fx->st, 500, 0, 10, note, &s),
	    SG_STORE_OK);
	assert_string_equal(s.text, "file-old,file-up");
}

/* A container's file by its path: the newest ready one of this key in
 * this container, other than the one excepted. */
static void
found_by_path_newest_first(void **state)
{
	struct tu_store_fx *fx = *state;
	struct sg_store_file f;

	assert_int_equal(begin(fx->st, "cfile_1", A, "cntr_1", 1, 10, 1000),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "cfile_2", A, "cntr_1", 1, 20, 1000),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "cfile_3", A, "cntr_1", 1, 30, 1000),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "cfile_4", A, "cntr_2", 1, 40, 1000),
	    SG_STORE_OK);
	assert_int_equal(begin(fx->st, "cfile_5", B, "cntr_1", 1, 50, 1000),
	    SG_STORE_OK);
	/* All but cfile_3 ready, all at one path. */
	for (int i = 1; i <= 5; i++) {
		char id[16];

		snprintf(id, sizeof(id), "cfile_%d", i);
		assert_int_equal(sg_store_file_get(fx->st, id, NULL, "*", &f),
		    SG_STORE_OK);
		snprintf(f.path, sizeof(f.path), "/mnt/data/x");
		if (i != 3)
			assert_int_equal(sg_store_file_ready(fx->st, &f),
			    SG_STORE_OK);
	}
	assert_int_equal(sg_store_file_at(fx->st, A, "cntr_1", "/mnt/data/x",
	    NULL, &f), SG_STORE_OK);
	assert_string_equal(f.id, "cfile_2");
	assert_int_equal(sg_store_file_at(fx->st, A, "cntr_1", "/mnt/data/x",
	    "cfile_2", &f), SG_STORE_OK);
	assert_string_equal(f.id, "cfile_1");
	assert_int_equal(sg_store_file_at(fx->st, A, "cntr_2", "/mnt/data/x",
	    NULL, &f), SG_STORE_OK);
	assert_string_equal(f.id, "cfile_4");
	assert_int_equal(sg_store_file_at(fx->st, B, "cntr_2", "/mnt/data/x",
	    NULL, &f), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_file_at(fx->st, A, "cntr_1", "/mnt/data/y",
	    NULL, &f), SG_STORE_NOTFOUND);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tu_store_setup, \
	tu_store_teardown)
	const struct CMUnitTest tests[] = {
		T(quota_is_reserved_while_uploading),
		T(files_are_counted),
		T(racing_for_the_last_files),
		T(found_by_its_key_in_its_container),
		T(lists_page_by_page),
		T(due_are_expired_or_uploading),
		T(found_by_path_newest_first),
	};

	TU_STORE_MAIN(tests);
}
