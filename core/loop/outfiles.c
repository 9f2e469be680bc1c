/*
 * The files code writes under /mnt/data, copied out after each round of
 * code into files.dir as container files. A file is new or changed when
 * its size or time differs from what the sandbox's row says was seen;
 * hidden files and caches are left alone, and a round copies at most
 * KEEP_MAX files (the rest wait for the next round). The sandbox is the
 * attacker's: what its listing says a file holds is what is reserved of
 * the key's quota, and no more of the file is copied than that; a path
 * is logged escaped.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outfiles.h"
#include "../http/upload.h"
#include "../state/files.h"
#include "../state/ledger.h"
#include "../../lib/log.h"
#include "../../lib/util.h"
#include "../../lib/jdump.h"
#include "../../lib/jscan.h"

#define LIST_MAX	1000	/* files looked at in one listing */
#define KEEP_MAX	20	/* files copied out in one round */
#define LOCK_S		300	/* what copying a round's files may take */

/* One sandbox being looked at, held as a run holds it. */
struct look {
	struct sg_sbx_env		*env;
	const char			*tenant, *id;
	struct sg_store_sbx		 row;
	const struct sg_tool		*t;
	const struct sg_provider_ops	*ops;
	json_t				*handle;
	int				 held;
};

static void	look_end(struct look *);

static void
logf_failed(const char *id, const char *what, const char *why)
{
	sg_log("sandgate: sandbox %s: files not copied out: %s: %s", id, what,
	    why);
}

/* 0 with the sandbox open (and held, with hold, as a run holds it), or
 * -1: it cannot give files (or is gone). */
static int
look_begin(struct look *l, struct sg_sbx_env *env, const char *tenant,
    const char *id, int hold)
{
	struct sg_error err;

	memset(l, 0, sizeof(*l));
	l->env = env;
	l->tenant = tenant;
	l->id = id;
	l->held = hold;
	if (hold && sg_sbx_lock(env, id, LOCK_S, &err) == -1)
		return -1;
	if (sg_sbx_open(env, tenant, id, &l->row, &l->t, &l->ops, &l->handle,
	    &err) == -1) {
		if (hold)
			sg_sbx_unlock(env, id);
		return -1;
	}
	if (l->ops->list == NULL || l->ops->get == NULL) {
		look_end(l);
		return -1;
	}
	return 0;
}

static void
look_end(struct look *l)
{
	json_decref(l->handle);
	l->handle = NULL;
	sg_store_sbx_clear(&l->row);
	if (l->held)
		sg_sbx_unlock(l->env, l->id);
}

/* Whether a listed file may become a container file. */
static int
wanted(const json_t *e)
{
	const char *path = json_string_value(json_object_get(e, "path"));
	const char *base;
	size_t dl = strlen(SG_SBX_DATA_DIR);

	if (path == NULL || json_integer_value(json_object_get(e, "size")) < 0 ||
	    strncmp(path, SG_SBX_DATA_DIR "/", dl + 1) != 0 ||
	    strlen(path) >= sizeof(((struct sg_store_file *)0)->path) ||
	    sg_sbx_hidden(path + dl + 1))
		return 0;
	base = strrchr(path, '/') + 1;
	return sg_upload_name_ok(base);
}

/* New reference: the files under /mnt/data that may become container
 * files, or NULL when the provider could not say. */
static json_t *
listing(struct look *l)
{
	struct sg_prov_error pe;
	json_t *all = NULL, *keep, *e;
	size_t i;

	if (l->ops->list(l->env->prov, l->t, l->handle, SG_SBX_DATA_DIR, LIST_MAX,
	    &all, &pe) != SG_PROV_OK) {
		if (pe.rc != SG_PROV_GONE)
			logf_failed(l->id, "list", pe.message);
		return NULL;
	}
	keep = json_array();
	json_array_foreach(all, i, e)
		if (wanted(e))
			json_array_append(keep, e);
	json_decref(all);
	return keep;
}

/* New reference: what tells a file's version apart, its size and time. */
static json_t *
stamp(const json_t *e)
{
	const char *mtime = json_string_value(json_object_get(e, "mtime"));

	return json_sprintf("%" JSON_INTEGER_FORMAT "|%s", json_integer_value(
	    json_object_get(e, "size")), mtime != NULL ? mtime : "");
}

/*
 * New reference: what the sandbox's row says was seen ({} when nothing
 * or unreadable). An unheld look right after a run takes what the run's
 * lock read: only a holder changes it, and one that did since makes the
 * files differ from it, which sends the look to the held one (read
 * afresh, as every held look's is).
 */
static json_t *
seen_load(struct look *l)
{
	char *text = NULL;
	json_t *seen = NULL;

	if (!l->held && l->row.seen != NULL)
		seen = sg_jparse(l->row.seen, strlen(l->row.seen), 0);
	else if (sg_store_sbx_seen(l->env->store, l->id, &text) ==
	    SG_STORE_OK && text != NULL)
		seen = sg_jparse(text, strlen(text), 0);
	free(text);
	if (!json_is_object(seen)) {
		json_decref(seen);
		seen = json_object();
	}
	return seen;
}

static void
seen_save(struct look *l, const json_t *seen)
{
	char *text = sg_jdump_text(seen, NULL);

	if (text == NULL || sg_store_sbx_set_seen(l->env->store, l->id,
	    text) != SG_STORE_OK)
		logf_failed(l->id, "remember", text == NULL ? "out of memory" :
		    sg_store_errmsg(l->env->store));
	free(text);
}

/* Older copies of the file at f's path: replaced by f, as the sandbox
 * replaced them. */
static void
drop_older(struct look *l, const struct sg_store_file *f)
{
	struct sg_store_file old;

	while (sg_store_file_at(l->env->store, l->tenant, l->id, f->path,
	    f->id, &old) == SG_STORE_OK &&
	    sg_store_file_remove(l->env->store, old.id, l->tenant) ==
	    SG_STORE_OK)
		sg_files_unlink(l->env->cfg, old.id);
}

/* The bytes of sandbox file f->path into files.dir, fsynced, whole or
 * not at all, and no more than the f->bytes reserved for it (what the
 * listing said): 0 with f->bytes those received, or -1 with why. */
static int
fetch(struct look *l, struct sg_store_file *f, char *why, size_t whysz)
{
	const struct sg_cfg *cfg = l->env->cfg;
	struct sg_prov_error pe;
	char dst[4096], part[4200];
	struct stat st;
	int fd, rc;

	if (sg_files_path(cfg, f->id, dst, sizeof(dst)) == -1) {
		snprintf(why, whysz, "files.dir is too long");
		return -1;
	}
	snprintf(part, sizeof(part), "%s.part", dst);
	(void)mkdir(cfg->files.dir, 0700);
	if ((fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0600)) == -1) {
		snprintf(why, whysz, "files.dir: %s", strerror(errno));
		return -1;
	}
	rc = l->ops->get(l->env->prov, l->t, l->handle, f->path, fd, f->bytes,
	    &pe);
	if (rc == SG_PROV_CAP)
		snprintf(why, whysz, "it grew past the %lld bytes it was listed "
		    "with", (long long)f->bytes);
	else if (rc != SG_PROV_OK)
		snprintf(why, whysz, "%s", pe.message);
	else if (fsync(fd) == -1 || fstat(fd, &st) == -1 ||
	    rename(part, dst) == -1) {
		snprintf(why, whysz, "files.dir: %s", strerror(errno));
		rc = -1;
	} else
		f->bytes = (int64_t)st.st_size;
	close(fd);
	if (rc != SG_PROV_OK)
		unlink(part);
	return rc == SG_PROV_OK ? 0 : -1;
}

/*
 * Listed file e as a new container file: 0 copied (its row in *f), 1 not
 * kept for good (why says: too large, the key's byte quota), 2 not kept
 * for the key holds as many files as it may (nor will the next one be),
 * -1 failed (tried again next round).
 */
static int
copy_out(struct look *l, const json_t *e, struct sg_store_file *f,
    char *why, size_t whysz)
{
	const struct sg_cfg *cfg = l->env->cfg;
	struct sg_files_env fenv = { cfg, l->env->store };
	const char *path = json_string_value(json_object_get(e, "path"));
	int64_t size = json_integer_value(json_object_get(e, "size"));
	struct sg_store_quota held;
	struct sg_error err;

	if (size > cfg->files.max_bytes) {
		snprintf(why, whysz, "larger than the %lld bytes a file may have",
		    cfg->files.max_bytes);
		return 1;
	}
	memset(f, 0, sizeof(*f));
	sg_copy(f->container_id, sizeof(f->container_id), l->id);
	snprintf(f->source, sizeof(f->source), "assistant");
	sg_copy(f->path, sizeof(f->path), path);
	sg_copy(f->filename, sizeof(f->filename), strrchr(path, '/') + 1);
	if (sg_files_begin(&fenv, l->tenant, "cfile_", 16, size, f, &held,
	    &err) == -1) {
		if (err.status != 413) {
			snprintf(why, whysz, "%s", err.message);
			return -1;
		}
		if (held.files >= held.max_files) {
			snprintf(why, whysz, "this key holds %lld files, as many "
			    "as it may", (long long)held.files);
			return 2;
		}
		snprintf(why, whysz, "this key's files are at their quota");
		return 1;
	}
	if (fetch(l, f, why, whysz) == -1 ||
	    sg_store_file_ready(l->env->store, f) != SG_STORE_OK) {
		if (why[0] == '\0')
			snprintf(why, whysz, "%s", sg_store_errmsg(l->env->store));
		sg_files_unlink(cfg, f->id);
		sg_store_file_remove(l->env->store, f->id, NULL);
		return -1;
	}
	sg_use_file(f->bytes);
	drop_older(l, f);
	return 0;
}

/* A line of the note for the model: a file kept (why NULL), or not. */
static void
note_line(struct sg_buf *b, const char *path, long long bytes,
    const char *why)
{
	if (why != NULL)
		sg_buf_printf(b, "- %s (not kept: %s)\n", path, why);
	else
		sg_buf_printf(b, "- %s (%lld bytes)\n", path, bytes);
}

/* New string: the note for the model on what this round wrote. */
static char *
note_of(struct sg_buf *lines, const char *example)
{
	char *note;

	if (lines->len == 0)
		return NULL;
	if (asprintf(&note, "\n[sandgate: files written to %s this round:\n%.*s"
	    "To give the user a file, link it in your answer as sandbox:%s, "
	    "e.g. [%s](sandbox:%s).]", SG_SBX_DATA_DIR, (int)lines->len, lines->p,
	    example != NULL ? example : SG_SBX_DATA_DIR "/<name>",
	    example != NULL ? strrchr(example, '/') + 1 : "name",
	    example != NULL ? example : SG_SBX_DATA_DIR "/<name>") == -1)
		return NULL;
	return note;
}

/* New reference: {path: stamp} of a listing. */
static json_t *
stamps(const json_t *files)
{
	json_t *all = json_object(), *e;
	size_t i;

	json_array_foreach(files, i, e)
		json_object_set_new(all, json_string_value(json_object_get(e,
		    "path")), stamp(e));
	return all;
}

/*
 * Whether the sandbox's files differ from what was seen: most rounds
 * write none, and then a look costs a listing and two reads, with
 * neither the sandbox held nor the store written.
 */
static int
changed(struct sg_sbx_env *env, const char *tenant, const char *id)
{
	struct look l;
	json_t *files, *seen, *now;
	int differ;

	if (look_begin(&l, env, tenant, id, 0) == -1)
		return 0;
	if ((files = listing(&l)) == NULL) {
		look_end(&l);
		return 0;
	}
	seen = seen_load(&l);
	now = stamps(files);
	differ = !json_equal(seen, now);
	look_end(&l);
	json_decref(files);
	json_decref(seen);
	json_decref(now);
	return differ;
}

/* What was not kept once the key held as many files as it may: path
 * and the n - 1 after it, told once to the model and to the log. */
static void
not_kept_rest(struct look *l, struct sg_buf *lines, const char *path, int n,
    const char *why)
{
	if (n == 1)
		sg_buf_printf(lines, "- %s (not kept: %s)\n", path, why);
	else
		sg_buf_printf(lines, "- %s and %d more (not kept: %s)\n", path,
		    n - 1, why);
	sg_log("sandgate: sandbox %s: %d files not copied out: %s "
	    "(files.max_files_per_key)", l->id, n, why);
}

/*
 * The files of listing files that differ from seen, copied out (at most
 * KEEP_MAX); what is now seen into *now, the model's lines into lines.
 * Once the key holds as many files as it may, the rest are seen and not
 * kept, in one line.
 */
static void
copy_changed(struct look *l, const json_t *files, const json_t *seen,
    json_t *now, struct sg_buf *lines, char example[1024])
{
	struct sg_store_file f;
	const json_t *e;
	json_t *st;
	const char *path, *first = NULL;
	char why[512], full[512];
	size_t i;
	int kept = 0, rest = 0, rc;

	json_array_foreach(files, i, e) {
		path = json_string_value(json_object_get(e, "path"));
		st = stamp(e);
		why[0] = '\0';
		if (json_equal(json_object_get(seen, path), st))
			;	/* unchanged */
		else if (first != NULL)
			rest++;	/* not kept either */
		else if (kept == KEEP_MAX) {	/* one for the next round */
			json_decref(st);
			continue;
		} else if ((rc = copy_out(l, e, &f, why, sizeof(why))) == -1) {
			logf_failed(l->id, path, why);	/* tried again then */
			json_decref(st);
			continue;
		} else if (rc == 2) {
			sg_copy(full, sizeof(full), why);
			first = path;
			rest = 1;
		} else {
			kept++;
			note_line(lines, path, (long long)f.bytes, rc == 0 ? NULL :
			    why);
			if (rc == 0 && example[0] == '\0')
				sg_copy(example, 1024, path);
		}
		json_object_set_new(now, path, st);
	}
	if (rest > 0)
		not_kept_rest(l, lines, first, rest, full);
}

void
sg_outf_collect(struct sg_sbx_env *env, const char *tenant, const char *id,
    char **note)
{
	struct sg_buf lines = { 0 };
	struct look l;
	json_t *files, *seen, *now;
	char example[1024] = "";

	*note = NULL;
	/* Held only when something changed: then listed again, held, so
	 * two requests of one session never copy a file twice. */
	if (!changed(env, tenant, id) || look_begin(&l, env, tenant, id,
	    1) == -1) {
		/* The run's deferred writes (its lock's release) go now:
		 * the look read nothing they could ride with. */
		sg_store_flush(env->store);
		return;
	}
	if ((files = listing(&l)) == NULL) {
		look_end(&l);
		return;
	}
	seen = seen_load(&l);
	now = json_object();
	copy_changed(&l, files, seen, now, &lines, example);
	seen_save(&l, now);
	look_end(&l);
	*note = note_of(&lines, example[0] != '\0' ? example : NULL);
	free(lines.p);
	json_decref(files);
	json_decref(seen);
	json_decref(now);
}

void
sg_outf_seen(struct sg_sbx_env *env, const char *tenant, const char *id,
    const char *const *paths, int n)
{
	struct look l;
	json_t *files, *seen, *e;
	const char *path;
	size_t i;
	int k;

	if (n == 0 || look_begin(&l, env, tenant, id, 1) == -1)
		return;
	if ((files = listing(&l)) != NULL) {
		seen = seen_load(&l);
		json_array_foreach(files, i, e) {
			path = json_string_value(json_object_get(e, "path"));
			for (k = 0; k < n; k++)
				if (strcmp(paths[k], path) == 0)
					json_object_set_new(seen, path, stamp(e));
		}
		seen_save(&l, seen);
		json_decref(seen);
		json_decref(files);
	}
	look_end(&l);
}
