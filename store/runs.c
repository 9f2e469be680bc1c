/*
 * A SQLite store's run locks (one run at a time in a sandbox), kept out
 * of the database: in a table in a file beside it (PATH-runs), which
 * every process that opens the store maps shared (the responders, the
 * reaper, the background runners, the command line tool). A lock is then
 * a few stores in memory, not a write transaction: a code round took two
 * (the lock, its release), about a quarter of a round's SQLite work.
 *
 * The table holds exactly what the rows' runner columns held (the
 * holder's pid and start, a deadline in unix seconds), with the same
 * rules: a lock whose deadline passed is free, a dead holder's is
 * dropped by whoever finds it (sg_store_sbx_run_drop). The columns stay
 * for PostgreSQL (several boxes). A SQLite store whose table cannot be
 * mapped does not open: every process of it must use the table, or the
 * one left on the rows would take locks the others do not see.
 *
 * Every process of the store's owner can write the file: nothing in it
 * may stall the others for good. Its lock is lib/shlock's (a dead or
 * stuck holder loses it); an id is found in a window of slots from its
 * hash, so garbage costs slots, never a wrong answer for an id it does
 * not name; a full window says EXISTS (the caller waits, as for a lock
 * held). One that scribbles an id's slot could hold that sandbox until
 * its deadline, as it could by writing the row itself.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "../lib/shlock.h"
#include "../lib/util.h"

#define RUNS_MAGIC	0x73677275u	/* "sgru" */
#define RUNS_VERSION	1
#define RUNS_SLOTS	4096
#define RUNS_WINDOW	64	/* slots an id may sit in, from its hash */

struct run_slot {
	uint64_t	 hash;		/* of id; 0: free */
	char		 id[48];
	int64_t		 pid, start, until;
};

struct sg_st_runs {
	uint32_t	 magic, version;
	struct sg_shlock lock;
	struct run_slot	 slots[RUNS_SLOTS];
};

/* The slot naming id in its window, or NULL; *empty: the first one free
 * by now (none named, or its lock past), NULL when none is. */
static struct run_slot *
find(struct sg_st_runs *t, const char *id, uint64_t h, int64_t now,
    struct run_slot **empty)
{
	struct run_slot *s, *hit = NULL;
	size_t i;

	*empty = NULL;
	for (i = 0; i < RUNS_WINDOW; i++) {
		s = &t->slots[(h + i) % RUNS_SLOTS];
		if (hit == NULL && s->hash == h &&
		    strncmp(s->id, id, sizeof(s->id)) == 0)
			hit = s;
		else if (*empty == NULL && (s->hash == 0 || s->until < now))
			*empty = s;
	}
	return hit;
}

static uint64_t
hash_of(const char *id)
{
	uint64_t h = sg_fnv1a(id);

	return h != 0 ? h : 1;
}

int
sg_st_runs_open(struct sg_store *st, const char *db_path)
{
	char path[1024];
	struct stat sb;
	void *p = MAP_FAILED;
	int fd, saved;

	st->runs = NULL;
	if ((size_t)snprintf(path, sizeof(path), "%s-runs", db_path) >=
	    sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* As the database itself: its owner's, nobody else's. */
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	    0600)) == -1)
		return -1;
	if (fstat(fd, &sb) == -1)
		;	/* errno says why */
	else if (!S_ISREG(sb.st_mode))
		errno = EINVAL;
	else if (sb.st_size == sizeof(*st->runs) ||
	    ftruncate(fd, sizeof(*st->runs)) == 0)
		p = mmap(NULL, sizeof(*st->runs), PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	saved = errno;
	close(fd);
	if (p == MAP_FAILED) {
		errno = saved;
		return -1;
	}
	st->runs = p;
	/* A new file is all zero; one of another layout is started again
	 * (its locks are lost: runs under way then are a new version's).
	 * Looked at again under the lock: two first opens reset it once. */
	if (st->runs->magic != RUNS_MAGIC || st->runs->version !=
	    RUNS_VERSION) {
		sg_shlock_take(&st->runs->lock);
		if (st->runs->magic != RUNS_MAGIC || st->runs->version !=
		    RUNS_VERSION) {
			memset(st->runs->slots, 0, sizeof(st->runs->slots));
			st->runs->version = RUNS_VERSION;
			st->runs->magic = RUNS_MAGIC;
		}
		sg_shlock_give(&st->runs->lock);
	}
	return 0;
}

void
sg_st_runs_close(struct sg_store *st)
{
	if (st->runs != NULL)
		munmap(st->runs, sizeof(*st->runs));
	st->runs = NULL;
}

void
sg_st_runs_get(struct sg_store *st, const char *id, int64_t *pid,
    int64_t *start, int64_t *until)
{
	struct run_slot *s, *empty;
	uint64_t h = hash_of(id);

	*pid = *start = *until = 0;
	sg_shlock_take(&st->runs->lock);
	if ((s = find(st->runs, id, h, INT64_MIN, &empty)) != NULL) {
		*pid = s->pid;
		*start = s->start;
		*until = s->until;
	}
	sg_shlock_give(&st->runs->lock);
}

int
sg_st_runs_take(struct sg_store *st, const char *id, int64_t pid,
    int64_t start, int64_t until, int64_t now, int64_t seen_until)
{
	struct run_slot *s, *empty;
	uint64_t h = hash_of(id);
	int rc = SG_STORE_OK;

	if (strlen(id) >= sizeof(s->id))
		return sg_st_err(st, "sandbox id too long");
	sg_shlock_take(&st->runs->lock);
	s = find(st->runs, id, h, now, &empty);
	if (s != NULL && (seen_until >= 0 ? s->until != seen_until :
	    s->until >= now))
		rc = SG_STORE_EXISTS;	/* held, or not as seen */
	else if (s == NULL && seen_until > 0)
		rc = SG_STORE_EXISTS;	/* seen held, now free */
	else if (s == NULL && (s = empty) == NULL)
		rc = SG_STORE_EXISTS;	/* the window is full: wait */
	if (rc == SG_STORE_OK) {
		/* Named last: a writer killed halfway leaves a free slot. */
		s->hash = 0;
		sg_copy(s->id, sizeof(s->id), id);
		s->pid = pid;
		s->start = start;
		s->until = until;
		s->hash = h;
	}
	sg_shlock_give(&st->runs->lock);
	return rc;
}

void
sg_st_runs_give(struct sg_store *st, const char *id, int64_t pid,
    int64_t start)
{
	struct run_slot *s, *empty;
	uint64_t h = hash_of(id);

	sg_shlock_take(&st->runs->lock);
	if ((s = find(st->runs, id, h, INT64_MIN, &empty)) != NULL &&
	    s->pid == pid && (start == 0 || s->start == start)) {
		s->hash = 0;
		s->id[0] = '\0';
		s->pid = s->start = s->until = 0;
	}
	sg_shlock_give(&st->runs->lock);
}
