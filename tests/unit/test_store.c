/*
 * store/store: the SQLite file every sandgate process shares. Each test
 * gets its own temp dir; the concurrency test forks writers that each open
 * their own connection, as responders do.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "../../store/store.h"
#include "../../lib/util.h"
#include "testutil.h"

#define WRITERS		4
#define KEYS_EACH	300
#define MIGRATORS	6
#define MIGRATE_ROUNDS	5

struct fx {
	char		 dir[64];
	char		 path[128];	/* dir/sandgate.db */
	struct sg_store	*st;
	char		 err[256];
	int		 opened;	/* PostgreSQL: wiped at the first open */
};

static int
setup(void **state)
{
	struct fx *fx = calloc(1, sizeof(*fx));

	if (fx == NULL || tu_mkdtemp(fx->dir, sizeof(fx->dir)) == -1) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/sandgate.db", fx->dir);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	sg_store_close(fx->st);
	tu_rmrf(fx->dir);
	free(fx);
	return 0;
}

static void
open_store(struct fx *fx)
{
	if (tu_store_open(fx->path, &fx->st, fx->err, sizeof(fx->err),
	    !fx->opened++) != SG_STORE_OK)
		fail_msg("open: %s", fx->err);
	assert_non_null(fx->st);
}

static void
open_migrated(struct fx *fx)
{
	open_store(fx);
	if (sg_store_migrate(fx->st) != SG_STORE_OK)
		fail_msg("migrate: %s", sg_store_errmsg(fx->st));
}

/* A hash for name, as `sandgate keys create` would store. */
static const char *
hash_of(const char *name, char out[65])
{
	sg_sha256_hex(name, strlen(name), out);
	return out;
}

/* Run one statement on a separate raw connection; its first column as
 * text into out (when out is not NULL). */
static void
raw_sql(const char *path, const char *sql, char *out, size_t outsz)
{
	assert_int_equal(tu_raw_sql(path, sql, out, outsz), 0);
}

/* Run a whole script on a store file, creating it. */
static void
raw_script(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* Collects sg_store_key_list rows. */
struct keyrow {
	int64_t	 id, created_at, revoked_at;
	char	 name[64];
	char	 sha256[65];
};

struct keylist {
	struct keyrow	 rows[16];
	size_t		 n;		/* rows seen (may exceed the array) */
	size_t		 stop_after;	/* return -1 after this many, 0: never */
};

static int
collect(void *arg, const struct sg_store_key *k)
{
	struct keylist *l = arg;

	if (l->n < sizeof(l->rows) / sizeof(l->rows[0])) {
		struct keyrow *r = &l->rows[l->n];

		r->id = k->id;
		r->created_at = k->created_at;
		r->revoked_at = k->revoked_at;
		snprintf(r->name, sizeof(r->name), "%s", k->name);
		snprintf(r->sha256, sizeof(r->sha256), "%s", k->sha256);
	}
	l->n++;
	return l->stop_after != 0 && l->n == l->stop_after ? -1 : 0;
}

/* ---- opening and schema ---- */

static void
open_creates_0600(void **state)
{
	struct fx *fx = *state;
	struct stat sb;
	mode_t old;

	TU_SQLITE_ONLY();
	old = umask(0);

	/* Even with a permissive umask, the store is private. */
	open_store(fx);
	umask(old);
	assert_int_equal(stat(fx->path, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0600);
}

static void
wal_and_shm_files_private(void **state)
{
	/* SQLite's -wal and -shm copy the store's mode: never world-readable
	 * (they hold key hashes too). */
	struct fx *fx = *state;
	char side[192];
	struct stat sb;
	mode_t old;

	TU_SQLITE_ONLY();
	old = umask(0);

	open_migrated(fx);
	umask(old);
	snprintf(side, sizeof(side), "%s-wal", fx->path);
	assert_int_equal(stat(side, &sb), 0);
	assert_int_equal(sb.st_mode & 0077, 0);
	snprintf(side, sizeof(side), "%s-shm", fx->path);
	assert_int_equal(stat(side, &sb), 0);
	assert_int_equal(sb.st_mode & 0077, 0);
}

static void
open_missing_dir_fails(void **state)
{
	struct fx *fx = *state;
	char path[192];

	TU_SQLITE_ONLY();

	snprintf(path, sizeof(path), "%s/no/such/dir/x.db", fx->dir);
	assert_int_equal(sg_store_open(path, &fx->st, fx->err,
	    sizeof(fx->err)), SG_STORE_ERROR);
	assert_null(fx->st);
	assert_contains(fx->err, path);
}

static void
migrate_from_empty(void **state)
{
	struct fx *fx = *state;
	int v = -1;

	open_store(fx);
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, 0);
	assert_int_equal(sg_store_migrate(fx->st), SG_STORE_OK);
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, SG_STORE_SCHEMA_VERSION);
}

static void
migrate_twice_is_noop(void **state)
{
	struct fx *fx = *state;
	char h[65], name[64];
	int v = -1;

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("a", h)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_migrate(fx->st), SG_STORE_OK);
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, SG_STORE_SCHEMA_VERSION);
	/* The data survived the second migrate. */
	assert_int_equal(tu_key_find(fx->st, h, name, sizeof(name)),
	    SG_STORE_OK);
	assert_string_equal(name, "alice");
	/* And a reopened store migrates as a no-op too. */
	sg_store_close(fx->st);
	fx->st = NULL;
	open_migrated(fx);
	assert_int_equal(tu_key_find(fx->st, h, name, sizeof(name)),
	    SG_STORE_OK);
}

static void
migrate_refuses_newer(void **state)
{
	struct fx *fx = *state;
	char v99[16];
	int v = -1;

	open_migrated(fx);
	sg_store_close(fx->st);
	fx->st = NULL;
	raw_sql(fx->path, tu_store_url != NULL ? "UPDATE sg_schema SET "
	    "version = 99" : "PRAGMA user_version=99", NULL, 0);
	open_store(fx);
	assert_int_equal(sg_store_migrate(fx->st), SG_STORE_ERROR);
	assert_contains(sg_store_errmsg(fx->st), "99");
	/* Refused means untouched. */
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, 99);
	raw_sql(fx->path, tu_store_url != NULL ? "SELECT version FROM "
	    "sg_schema" : "PRAGMA user_version", v99, sizeof(v99));
	assert_string_equal(v99, "99");
}

static void
wal_mode_on(void **state)
{
	struct fx *fx = *state;
	char mode[32];

	TU_SQLITE_ONLY();

	open_migrated(fx);
	raw_sql(fx->path, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "wal");
}

static void
ping_answers(void **state)
{
	struct fx *fx = *state;

	open_store(fx);
	assert_int_equal(sg_store_ping(fx->st), 0);
	assert_int_equal(sg_store_migrate(fx->st), SG_STORE_OK);
	assert_int_equal(sg_store_ping(fx->st), 0);
}

/* ---- keys ---- */

static void
key_add_find(void **state)
{
	struct fx *fx = *state;
	char h[65], name[64];

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("ka", h)),
	    SG_STORE_OK);
	memset(name, 0, sizeof(name));
	assert_int_equal(tu_key_find(fx->st, h, name, sizeof(name)),
	    SG_STORE_OK);
	assert_string_equal(name, "alice");
	assert_int_equal(tu_key_find(fx->st, hash_of("other", h), name,
	    sizeof(name)), SG_STORE_NOTFOUND);
}

static void
key_find_truncates_to_buffer(void **state)
{
	struct fx *fx = *state;
	char h[65], name[4];

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "a-long-name",
	    hash_of("k", h)), SG_STORE_OK);
	assert_int_equal(tu_key_find(fx->st, h, name, sizeof(name)),
	    SG_STORE_OK);
	assert_string_equal(name, "a-l");
}

static void
key_list_oldest_first(void **state)
{
	struct fx *fx = *state;
	struct keylist l = { .n = 0 };
	char h1[65], h2[65], h3[65];
	time_t t0 = time(NULL), t1;

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "one", hash_of("1", h1)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_add(fx->st, "two", hash_of("2", h2)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_add(fx->st, "three", hash_of("3", h3)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_revoke(fx->st, "two"), SG_STORE_OK);
	t1 = time(NULL);
	assert_int_equal(sg_store_key_list(fx->st, collect, &l), SG_STORE_OK);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.rows[0].name, "one");
	assert_string_equal(l.rows[1].name, "two");
	assert_string_equal(l.rows[2].name, "three");
	assert_string_equal(l.rows[0].sha256, h1);
	assert_string_equal(l.rows[2].sha256, h3);
	assert_true(l.rows[0].id < l.rows[1].id);
	assert_true(l.rows[1].id < l.rows[2].id);
	assert_in_range(l.rows[0].created_at, t0, t1);
	assert_int_equal(l.rows[0].revoked_at, 0);
	assert_in_range(l.rows[1].revoked_at, t0, t1);
	assert_int_equal(l.rows[2].revoked_at, 0);
}

static void
key_list_stops_early(void **state)
{
	struct fx *fx = *state;
	struct keylist l = { .stop_after = 2 };
	char h[65], name[16];
	int i;

	open_migrated(fx);
	for (i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		assert_int_equal(sg_store_key_add(fx->st, name,
		    hash_of(name, h)), SG_STORE_OK);
	}
	assert_int_equal(sg_store_key_list(fx->st, collect, &l), SG_STORE_OK);
	assert_int_equal(l.n, 2);
	/* The statement was finished: the store still works. */
	assert_int_equal(sg_store_key_add(fx->st, "after", hash_of("after", h)),
	    SG_STORE_OK);
}

static void
key_list_empty(void **state)
{
	struct fx *fx = *state;
	struct keylist l = { .n = 0 };

	open_migrated(fx);
	assert_int_equal(sg_store_key_list(fx->st, collect, &l), SG_STORE_OK);
	assert_int_equal(l.n, 0);
}

static void
key_duplicate_active_name(void **state)
{
	struct fx *fx = *state;
	char h[65], name[64];

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("k1", h)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("k2", h)),
	    SG_STORE_EXISTS);
	/* The refused key was not stored. */
	assert_int_equal(tu_key_find(fx->st, h, name, sizeof(name)),
	    SG_STORE_NOTFOUND);
}

static void
key_duplicate_hash(void **state)
{
	/* One secret, two names: the second must not shadow the first. */
	struct fx *fx = *state;
	char h[65];

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("same", h)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_add(fx->st, "bob", h), SG_STORE_EXISTS);
}

static void
key_revoke(void **state)
{
	struct fx *fx = *state;
	char h[65], name[64];

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("ka", h)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_revoke(fx->st, "alice"), SG_STORE_OK);
	assert_int_equal(tu_key_find(fx->st, h, name, sizeof(name)),
	    SG_STORE_NOTFOUND);
	/* Revoking again: no active key has that name any more. */
	assert_int_equal(sg_store_key_revoke(fx->st, "alice"),
	    SG_STORE_NOTFOUND);
}

static void
key_revoke_unknown(void **state)
{
	struct fx *fx = *state;
	char h[65];

	open_migrated(fx);
	assert_int_equal(sg_store_key_revoke(fx->st, "nobody"),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("ka", h)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_revoke(fx->st, "Alice"),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_key_revoke(fx->st, "nobody"),
	    SG_STORE_NOTFOUND);
}

static void
key_name_reusable_after_revoke(void **state)
{
	struct fx *fx = *state;
	char h1[65], h2[65], name[64];
	struct keylist l = { .n = 0 };

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("old", h1)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_revoke(fx->st, "alice"), SG_STORE_OK);
	assert_int_equal(sg_store_key_add(fx->st, "alice", hash_of("new", h2)),
	    SG_STORE_OK);
	assert_int_equal(tu_key_find(fx->st, h2, name, sizeof(name)),
	    SG_STORE_OK);
	assert_string_equal(name, "alice");
	/* The old one stays revoked. */
	assert_int_equal(tu_key_find(fx->st, h1, name, sizeof(name)),
	    SG_STORE_NOTFOUND);
	/* Revoking by name touches only the active one. */
	assert_int_equal(sg_store_key_revoke(fx->st, "alice"), SG_STORE_OK);
	assert_int_equal(sg_store_key_list(fx->st, collect, &l), SG_STORE_OK);
	assert_int_equal(l.n, 2);
	assert_true(l.rows[0].revoked_at != 0);
	assert_true(l.rows[1].revoked_at != 0);
}

static void
keys_unmigrated_store_errors(void **state)
{
	/* No schema: an error with a message, never a crash or a NOTFOUND
	 * that would look like "wrong key". */
	struct fx *fx = *state;
	char h[65], name[64];

	open_store(fx);
	assert_int_equal(tu_key_find(fx->st, hash_of("k", h), name,
	    sizeof(name)), SG_STORE_ERROR);
	assert_true(sg_store_errmsg(fx->st)[0] != '\0');
	assert_int_equal(sg_store_key_add(fx->st, "a", h), SG_STORE_ERROR);
}

static void
sql_injection_is_data(void **state)
{
	struct fx *fx = *state;
	char h[65], name[64];
	struct keylist l = { .n = 0 };

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "x'); DROP TABLE keys; --",
	    hash_of("k", h)), SG_STORE_OK);
	assert_int_equal(tu_key_find(fx->st, h, name, sizeof(name)),
	    SG_STORE_OK);
	assert_string_equal(name, "x'); DROP TABLE keys; --");
	assert_int_equal(sg_store_key_revoke(fx->st, "' OR 1=1 --"),
	    SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_key_list(fx->st, collect, &l), SG_STORE_OK);
	assert_int_equal(l.n, 1);
	assert_int_equal(l.rows[0].revoked_at, 0);
}

/* ---- several processes writing at once ---- */

/* One writer: its own connection, KEYS_EACH adds. Never returns. */
static void
writer(const char *path, int who, int go_fd)
{
	struct sg_store *st = NULL;
	char err[256], name[64], h[65], c;
	int i, rc, bad = 0;

	/* Wait until every writer is forked, then all go at once. */
	while (read(go_fd, &c, 1) == -1)
		;
	close(go_fd);
	if (tu_store_open(path, &st, err, sizeof(err), 0) != SG_STORE_OK) {
		fprintf(stderr, "writer %d: open: %s\n", who, err);
		_exit(2);
	}
	for (i = 0; i < KEYS_EACH; i++) {
		snprintf(name, sizeof(name), "w%d-key%d", who, i);
		sg_sha256_hex(name, strlen(name), h);
		if ((rc = sg_store_key_add(st, name, h)) != SG_STORE_OK) {
			if (bad++ == 0)
				fprintf(stderr, "writer %d: add %s: %d %s\n",
				    who, name, rc, sg_store_errmsg(st));
		}
	}
	sg_store_close(st);
	_exit(bad == 0 ? 0 : 1);
}

static void
concurrent_writers(void **state)
{
	struct fx *fx = *state;
	struct keylist l = { .n = 0 };
	pid_t pids[WRITERS];
	int go[2], i, status, failed = 0;

	/* The parent sets the store up, then closes it: no connection is
	 * ever carried across fork. */
	open_migrated(fx);
	sg_store_close(fx->st);
	fx->st = NULL;

	assert_int_equal(pipe(go), 0);
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < WRITERS; i++) {
		pids[i] = fork();
		assert_true(pids[i] != -1);
		if (pids[i] == 0) {
			close(go[1]);
			writer(fx->path, i, go[0]);
		}
	}
	close(go[0]);
	close(go[1]);		/* EOF: everybody starts */
	for (i = 0; i < WRITERS; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			print_error("writer %d: status 0x%x\n", i, status);
			failed++;
		}
	}
	assert_int_equal(failed, 0);

	open_migrated(fx);
	assert_int_equal(sg_store_key_list(fx->st, collect, &l), SG_STORE_OK);
	assert_int_equal(l.n, WRITERS * KEYS_EACH);
}

/* One starting process: open and migrate a fresh store. Never returns. */
static void
migrator(const char *path, int who, int go_fd)
{
	struct sg_store *st = NULL;
	char err[256], c;
	int v = -1;

	while (read(go_fd, &c, 1) == -1)
		;
	close(go_fd);
	if (tu_store_open(path, &st, err, sizeof(err), 0) != SG_STORE_OK) {
		fprintf(stderr, "migrator %d: open: %s\n", who, err);
		_exit(2);
	}
	if (sg_store_migrate(st) != SG_STORE_OK ||
	    sg_store_version(st, &v) != SG_STORE_OK ||
	    v != SG_STORE_SCHEMA_VERSION) {
		fprintf(stderr, "migrator %d: migrate: %s (version %d)\n", who,
		    sg_store_errmsg(st), v);
		sg_store_close(st);
		_exit(1);
	}
	sg_store_close(st);
	_exit(0);
}

/*
 * In a child: open path raw, run begin (a read or write transaction, so
 * holding a SHARED or RESERVED lock), write one byte to ready_fd, keep
 * the lock hold_ms, then let go. Never returns.
 */
static void
locker(const char *path, const char *begin, int ready_fd, int hold_ms)
{
	sqlite3 *db = NULL;
	int rc;

	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(db, begin, NULL, NULL, NULL);
	if (write(ready_fd, rc == SQLITE_OK ? "y" : "n", 1) != 1)
		rc = SQLITE_ERROR;
	close(ready_fd);
	usleep((useconds_t)hold_ms * 1000);
	sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(db);
	_exit(rc == SQLITE_OK ? 0 : 1);
}

/*
 * Open the brand-new store while another process holds a lock on it
 * (begin), for 0.3 s. The busy timeout is 10 s: open must wait for the
 * other process, not fail with "database is locked".
 */
static void
open_while_locked(struct fx *fx, const char *begin)
{
	int ready[2], status;
	char c = 0;
	pid_t pid;

	assert_int_equal(pipe(ready), 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		close(ready[0]);
		locker(fx->path, begin, ready[1], 300);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	assert_int_equal(c, 'y');
	if (sg_store_open(fx->path, &fx->st, fx->err, sizeof(fx->err)) !=
	    SG_STORE_OK) {
		waitpid(pid, &status, 0);
		fail_msg("open while another process has \"%s\": %s", begin,
		    fx->err);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(sg_store_migrate(fx->st), SG_STORE_OK);
}

static void
open_waits_for_a_reader(void **state)
{
	TU_SQLITE_ONLY();
	/* `sandgate keys list` reading the new store as a master starts. */
	open_while_locked(*state, "BEGIN; SELECT count(*) FROM sqlite_master;");
}

static void
open_waits_for_a_writer(void **state)
{
	TU_SQLITE_ONLY();
	/* Another process in a write transaction on the new store: what a
	 * second master does for a moment while it switches it to WAL. */
	open_while_locked(*state, "BEGIN IMMEDIATE;");
}

/* Start MIGRATORS processes on path at once; how many failed. */
static int
migrate_race(const char *path)
{
	pid_t pids[MIGRATORS];
	int go[2], i, status, failed = 0;

	assert_int_equal(pipe(go), 0);
	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < MIGRATORS; i++) {
		pids[i] = fork();
		assert_true(pids[i] != -1);
		if (pids[i] == 0) {
			close(go[1]);
			migrator(path, i, go[0]);
		}
	}
	close(go[0]);
	close(go[1]);
	for (i = 0; i < MIGRATORS; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	return failed;
}

static void
concurrent_migrate(void **state)
{
	/*
	 * Masters (or a master and `sandgate keys`) starting together on a
	 * store that does not exist yet: every one must open and migrate.
	 * A lost race shows only sometimes, so run several rounds, each on
	 * a fresh file; a correct store never fails any of them.
	 */
	struct fx *fx = *state;
	char path[192], h[65];
	int round, failed = 0;

	for (round = 0; round < MIGRATE_ROUNDS; round++) {
		snprintf(path, sizeof(path), "%s/race-%d.db", fx->dir, round);
		failed += migrate_race(path);
	}
	if (failed != 0)
		fail_msg("%d of %d starts failed (reasons above)", failed,
		    MIGRATORS * MIGRATE_ROUNDS);
	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "a", hash_of("a", h)),
	    SG_STORE_OK);
}

/* ---- relayed response ids ---- */

#define UP_A	"http://127.0.0.1:9/v1"
#define UP_B	"https://api.example.com/v1"

/* An id relayed to a tenant from an upstream is that tenant's, for that
 * upstream only; another upstream may hand out the same id to another
 * tenant; relaying it twice changes nothing. */
static void
relayed_bound_to_tenant_and_upstream(void **state)
{
	static const struct {
		const char *op, *id, *tenant, *up;
		int rc;
	} steps[] = {
		{ "has", "resp_1", "alice", UP_A, SG_STORE_NOTFOUND },
		{ "put", "resp_1", "alice", UP_A, SG_STORE_OK },
		{ "has", "resp_1", "alice", UP_A, SG_STORE_OK },
		{ "has", "resp_1", "bob", UP_A, SG_STORE_NOTFOUND },
		{ "has", "resp_1", "alice", UP_B, SG_STORE_NOTFOUND },
		{ "has", "resp_", "alice", UP_A, SG_STORE_NOTFOUND },
		{ "put", "resp_1", "bob", UP_B, SG_STORE_OK },
		{ "has", "resp_1", "bob", UP_B, SG_STORE_OK },
		{ "has", "resp_1", "bob", UP_A, SG_STORE_NOTFOUND },
		{ "put", "resp_1", "alice", UP_A, SG_STORE_OK },
		{ "has", "resp_1", "alice", UP_A, SG_STORE_OK },
	};
	struct fx *fx = *state;
	size_t i;
	int rc;

	open_migrated(fx);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		rc = (strcmp(steps[i].op, "put") == 0 ? sg_store_relayed_put :
		    sg_store_relayed_has)(fx->st, steps[i].id, steps[i].tenant,
		    steps[i].up);
		if (rc != steps[i].rc)
			fail_msg("step %zu: %s %s %s %s: %d, want %d", i,
			    steps[i].op, steps[i].id, steps[i].tenant, steps[i].up,
			    rc, steps[i].rc);
	}
}

/* Rows older than 30 days are not found, and each put prunes a few. */
static void
relayed_expire_and_prune(void **state)
{
	struct fx *fx = *state;
	char n[32], sql[256];
	int i;

	open_migrated(fx);
	for (i = 0; i < 100; i++) {
		snprintf(n, sizeof(n), "resp_old%d", i);
		assert_int_equal(sg_store_relayed_put(fx->st, n, "alice", UP_A),
		    SG_STORE_OK);
	}
	snprintf(sql, sizeof(sql), "UPDATE relayed SET created_at = %lld",
	    (long long)time(NULL) - 31 * 86400);
	raw_sql(fx->path, sql, NULL, 0);
	assert_int_equal(sg_store_relayed_has(fx->st, "resp_old0", "alice",
	    UP_A), SG_STORE_NOTFOUND);
	assert_int_equal(sg_store_relayed_put(fx->st, "resp_new", "alice", UP_A),
	    SG_STORE_OK);
	raw_sql(fx->path, "SELECT count(*) FROM relayed", n, sizeof(n));
	assert_string_equal(n, "37");	/* 100 + 1 - 64 pruned */
	assert_int_equal(sg_store_relayed_put(fx->st, "resp_new2", "alice",
	    UP_A), SG_STORE_OK);
	raw_sql(fx->path, "SELECT count(*) FROM relayed", n, sizeof(n));
	assert_string_equal(n, "2");
	/* The prune finds them by an index, not by a scan. */
	raw_sql(fx->path, tu_store_url != NULL ? "SELECT indexdef FROM "
	    "pg_indexes WHERE tablename = 'relayed' AND indexdef LIKE "
	    "'%(created_at)'" : "SELECT sql FROM sqlite_master WHERE type = "
	    "'index' AND tbl_name = 'relayed' AND sql LIKE '%(created_at)'",
	    sql, sizeof(sql));
	assert_contains(sql, "created_at");
}

/* Schema 1 as it was released: a store made by that sandgate. */
static const char schema_1[] =
    "CREATE TABLE keys (id INTEGER PRIMARY KEY, name TEXT NOT NULL, "
    "sha256 TEXT NOT NULL UNIQUE, created_at INTEGER NOT NULL, "
    "revoked_at INTEGER);"
    "CREATE UNIQUE INDEX keys_active_name ON keys(name) WHERE revoked_at IS "
    "NULL;"
    "CREATE TABLE sandboxes (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, "
    "tool TEXT NOT NULL, state TEXT NOT NULL, handle TEXT, owner_pid "
    "INTEGER, owner_start INTEGER, created_at INTEGER NOT NULL, "
    "last_used_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);"
    "CREATE INDEX sandboxes_tenant ON sandboxes(tenant);"
    "CREATE TABLE sessions (tenant TEXT NOT NULL, session_id TEXT NOT NULL, "
    "sandbox_id TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE, "
    "created_at INTEGER NOT NULL, last_used_at INTEGER NOT NULL, PRIMARY KEY "
    "(tenant, session_id));"
    "CREATE TABLE responses (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, "
    "upstream_id TEXT NOT NULL, model TEXT NOT NULL, created_at INTEGER NOT "
    "NULL);"
    "INSERT INTO responses VALUES ('resp_sg', 'alice', 'resp_up', 'm', 1);"
    "INSERT INTO sandboxes VALUES ('cntr_old', 'alice', 'local', 'ready', "
    "'{}', 1, 2, 3, 4, 99999999999);"
    "PRAGMA user_version=1;";

/* A store of schema 1, with data, is brought to the latest and keeps its
 * data: the old sandbox an explicit one, the response without a
 * container. */
static void
migrate_from_1(void **state)
{
	struct fx *fx = *state;
	struct sg_store_sbx row;
	char up[64], sbx[48];
	int v = -1;

	TU_SQLITE_ONLY();

	raw_script(fx->path, schema_1);
	open_migrated(fx);
	assert_int_equal(sg_store_version(fx->st, &v), SG_STORE_OK);
	assert_int_equal(v, SG_STORE_SCHEMA_VERSION);
	assert_int_equal(sg_store_resp_get(fx->st, "resp_sg", "alice", up,
	    sizeof(up), sbx, sizeof(sbx)), SG_STORE_OK);
	assert_string_equal(up, "resp_up");
	assert_string_equal(sbx, "");
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_old", "alice", &row),
	    SG_STORE_OK);
	assert_int_equal(row.kind, SG_SBX_EXPLICIT);
	assert_int_equal(row.runner_until, 0);
	sg_store_sbx_clear(&row);
	assert_int_equal(sg_store_relayed_put(fx->st, "resp_1", "alice", UP_A),
	    SG_STORE_OK);
}

/*
 * A backup while another process writes: the copy is one snapshot (the
 * keys written in order are a gapless prefix of them), checks, stands alone
 * (no WAL); a backup that cannot be written leaves nothing behind.
 */
static void
backup_while_writing(void **state)
{
	struct fx *fx = *state;
	char copy[160], bad[200], out[64], sql[128], h[65], name[32];
	int pages, status, i, n = 0;
	pid_t pid;

	TU_SQLITE_ONLY();

	open_migrated(fx);
	assert_int_equal(sg_store_key_add(fx->st, "k0", hash_of("k0", h)),
	    SG_STORE_OK);
	if ((pid = fork()) == 0) {
		struct sg_store *w;
		char err[256];

		if (tu_store_open(fx->path, &w, err, sizeof(err), 0) != SG_STORE_OK)
			_exit(2);
		for (i = 1; i < 400; i++) {
			snprintf(name, sizeof(name), "k%d", i);
			if (sg_store_key_add(w, name, hash_of(name, h)) !=
			    SG_STORE_OK)
				_exit(3);
		}
		sg_store_close(w);
		_exit(0);
	}
	snprintf(copy, sizeof(copy), "%s/copy.db", fx->dir);
	for (i = 0; i < 5; i++) {
		assert_int_equal(sg_store_backup(fx->st, copy, &pages, fx->err,
		    sizeof(fx->err)), SG_STORE_OK);
		assert_true(pages > 0);
		raw_sql(copy, "SELECT count(*) FROM keys", out, sizeof(out));
		n = atoi(out);
		assert_true(n >= 1);
		snprintf(sql, sizeof(sql), "SELECT count(*) FROM keys WHERE "
		    "name = 'k%d'", n - 1);
		raw_sql(copy, sql, out, sizeof(out));
		assert_string_equal(out, "1");
		raw_sql(copy, "PRAGMA journal_mode", out, sizeof(out));
		assert_string_equal(out, "delete");
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(bad, sizeof(bad), "%s/missing/copy.db", fx->dir);
	assert_int_equal(sg_store_backup(fx->st, bad, &pages, fx->err,
	    sizeof(fx->err)), SG_STORE_ERROR);
	assert_non_null(strstr(fx->err, "missing/copy.db"));
	assert_int_equal(access(bad, F_OK), -1);
}

/* `sandgate migrate --to`: a SQLite store copied whole into another
 * store (in the PostgreSQL run: into the PostgreSQL database). */
static void
copy_into_an_empty_store(void **state)
{
	struct fx *fx = *state;
	struct sg_store *src;
	struct sg_store_item in = { "msg_1", "{\"a\":1}", "[]" };
	struct sg_store_resp r = { .id = "resp_1", .tenant = "alice",
	    .model = "m", .upstream_id = "up_1", .sandbox_id = "cntr_s",
	    .body = "{}" };
	struct sg_store_file f = { .id = "file-1", .tenant = "alice",
	    .filename = "a.txt", .purpose = "user_data", .bytes = 3,
	    .created_at = 1, .expires_at = 4102444800 };
	struct sg_store_resp_row rr;
	struct sg_store_sbx row;
	struct keylist l = { .n = 0 };
	char path[192], h[65], sbx[48], victim[48], *item = NULL, *up = NULL;
	int64_t rows = 0;
	int created, lost;

	snprintf(path, sizeof(path), "%s/source.db", fx->dir);
	assert_int_equal(sg_store_open(path, &src, fx->err, sizeof(fx->err)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_migrate(src), SG_STORE_OK);
	assert_int_equal(sg_store_set_box(src, "box-a"), SG_STORE_OK);
	assert_int_equal(sg_store_key_add(src, "k1", hash_of("1", h)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_add(src, "k2", hash_of("2", h)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_key_revoke(src, "k1"), SG_STORE_OK);
	assert_int_equal(sg_store_sess_claim(src, "alice", "s1", "cntr_s",
	    "local", 1, 2, 4102444800, 10, sbx, victim, &created, &lost),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_ready(src, "cntr_s", "{\"h\":1}",
	    4102444800), SG_STORE_OK);
	assert_int_equal(sg_store_resp_save(src, &r, &in, 1, NULL, 0),
	    SG_STORE_OK);
	assert_int_equal(sg_store_file_begin(src, &f,
	    &(struct sg_store_quota){ 100, 100, 0, 0 }), SG_STORE_OK);
	assert_int_equal(sg_store_relayed_put(src, "up_2", "alice", UP_A),
	    SG_STORE_OK);
	/* A row from before boxes gets the source's box. */
	assert_int_equal(tu_raw_sql_store(src, "UPDATE files SET box = NULL"),
	    0);

	open_migrated(fx);
	if (sg_store_copy(src, fx->st, &rows) != SG_STORE_OK)
		fail_msg("copy: %s", sg_store_errmsg(src));
	assert_int_equal(rows, 2 + 1 + 1 + 1 + 1 + 1 + 1);
	assert_int_equal(sg_store_key_list(fx->st, collect, &l), SG_STORE_OK);
	assert_int_equal(l.n, 2);
	assert_string_equal(l.rows[0].name, "k1");
	assert_true(l.rows[0].revoked_at > 0);
	/* New keys number on after the copied ones. */
	assert_int_equal(sg_store_key_add(fx->st, "k3", hash_of("3", h)),
	    SG_STORE_OK);
	assert_int_equal(sg_store_sbx_get(fx->st, "cntr_s", "alice", &row),
	    SG_STORE_OK);
	assert_string_equal(row.state, "ready");
	assert_string_equal(row.handle, "{\"h\":1}");
	assert_string_equal(row.box, "box-a");
	assert_int_equal(row.kind, SG_SBX_SESSION);
	sg_store_sbx_clear(&row);
	assert_int_equal(sg_store_sess_claim(fx->st, "alice", "s1", "cntr_n",
	    "local", 1, 2, 4102444800, 10, sbx, victim, &created, &lost),
	    SG_STORE_OK);
	assert_string_equal(sbx, "cntr_s");
	assert_int_equal(created, 0);
	assert_int_equal(sg_store_resp_load(fx->st, "resp_1", "alice", &rr),
	    SG_STORE_OK);
	assert_string_equal(rr.upstream_id, "up_1");
	sg_store_resp_clear(&rr);
	assert_int_equal(sg_store_item_find(fx->st, "msg_1", "alice", &item,
	    &up), SG_STORE_OK);
	assert_string_equal(item, "{\"a\":1}");
	free(item);
	free(up);
	memset(&f, 0, sizeof(f));
	assert_int_equal(sg_store_file_get(fx->st, "file-1", "alice", NULL, &f),
	    SG_STORE_OK);
	assert_string_equal(f.box, "box-a");
	assert_int_equal(sg_store_relayed_has(fx->st, "up_2", "alice", UP_A),
	    SG_STORE_OK);
	/* Into a store that holds rows: refused, nothing copied. */
	assert_int_equal(sg_store_copy(src, fx->st, &rows), SG_STORE_ERROR);
	assert_contains(sg_store_errmsg(src), "not empty");
	sg_store_close(src);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(open_creates_0600),
		T(wal_and_shm_files_private),
		T(open_missing_dir_fails),
		T(migrate_from_empty),
		T(migrate_twice_is_noop),
		T(migrate_refuses_newer),
		T(wal_mode_on),
		T(ping_answers),
		T(key_add_find),
		T(key_find_truncates_to_buffer),
		T(key_list_oldest_first),
		T(key_list_stops_early),
		T(key_list_empty),
		T(key_duplicate_active_name),
		T(key_duplicate_hash),
		T(key_revoke),
		T(key_revoke_unknown),
		T(key_name_reusable_after_revoke),
		T(keys_unmigrated_store_errors),
		T(sql_injection_is_data),
		T(concurrent_writers),
		T(open_waits_for_a_reader),
		T(open_waits_for_a_writer),
		T(concurrent_migrate),
		T(relayed_bound_to_tenant_and_upstream),
		T(relayed_expire_and_prune),
		T(migrate_from_1),
		T(backup_while_writing),
		T(copy_into_an_empty_store),
	};

	TU_STORE_MAIN(tests);
}
