/*
 * sandgate: the command line tool: config checks, exec, reap, backup,
 * migrate; keys (cli/keys.c) and sessions (cli/sessions.c). Run as root
 * against a store owned by the service user, it becomes that user first
 * (cli/store.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli.h"
#include "../core/api/gateway.h"
#include "../core/config/config.h"
#include "../core/state/sandbox.h"
#include "../store/store.h"

static void
usage(void)
{
	fprintf(stderr,
	    "usage: sandgate [--config FILE] COMMAND\n"
	    "  keys create NAME    make a key, print it once, store its hash\n"
	    "  keys list           list keys (names and hash prefixes), their\n"
	    "                      limits and what they spent this period\n"
	    "  keys revoke NAME    revoke the active key of that name\n"
	    "  keys set NAME OPTION...\n"
	    "                      change a store key's limits: --rpm N, --tpm N,\n"
	    "                      --budget USD, --period day|week|month,\n"
	    "                      --sandbox-seconds N, --max-concurrent N,\n"
	    "                      --tools A,B | --all-tools, --clear SETTING\n"
	    "  keys usage [--by key|model|day] [--days N]\n"
	    "                      what was spent over the last N days (30)\n"
	    "  check-config        load the config; unknown settings are errors,\n"
	    "                      and so are secrets not set yet (each named)\n"
	    "  reap                delete sandboxes whose life has passed\n"
	    "  backup FILE         a consistent copy of the store, taken while it\n"
	    "                      serves (the store's owner's, with its mode)\n"
	    "  migrate --to URL    copy the store into an empty PostgreSQL\n"
	    "                      database (postgresql://...), then point\n"
	    "                      store.url at it\n"
	    "  sessions list [--key NAME]\n"
	    "                      sessions and their sandboxes\n"
	    "  sessions purge --key NAME | --all\n"
	    "                      delete sessions and their sandboxes (NAME:\n"
	    "                      every key of that name, revoked ones too)\n"
	    "  exec [--tool NAME] [--sandbox ID] [FILE|-]\n"
	    "                      run code (a file, or standard input) in a new\n"
	    "                      sandbox, deleted afterwards, or in sandbox ID\n");
	exit(2);
}

static int
backup(const struct sg_cfg *cfg, const char *path)
{
	struct sg_store *st;
	char err[1024];
	int pages;

	if ((st = sg_cli_open_store(cfg)) == NULL)
		return 1;
	if (sg_store_backup(st, path, &pages, err, sizeof(err)) != SG_STORE_OK) {
		fprintf(stderr, "sandgate: backup: %s\n", err);
		sg_store_close(st);
		return 1;
	}
	printf("backed up %d pages to %s\n", pages, path);
	sg_store_close(st);
	return 0;
}

/* The store copied into the empty PostgreSQL database at url (or any
 * store: a SQLite path works too). Run with the gateway stopped: what it
 * writes after the copy began is not in the copy. */
static int
migrate_to(const struct sg_cfg *cfg, const char *url)
{
	struct sg_store *from, *to;
	char err[512];
	int64_t rows;
	int rc;

	if ((from = sg_cli_open_store(cfg)) == NULL)
		return 1;
	if (cfg->store.url != NULL && strcmp(cfg->store.url, url) == 0) {
		fprintf(stderr, "sandgate: migrate: the store is %s already\n",
		    url);
		sg_store_close(from);
		return 1;
	}
	if (sg_store_open(url, &to, err, sizeof(err)) != SG_STORE_OK) {
		fprintf(stderr, "sandgate: migrate: %s\n", err);
		sg_store_close(from);
		return 1;
	}
	rc = sg_store_copy(from, to, &rows);
	if (rc != SG_STORE_OK)
		fprintf(stderr, "sandgate: migrate: %s (nothing was copied)\n",
		    sg_store_errmsg(from));
	else
		printf("copied %lld rows (schema %d); now set store.url and "
		    "restart the gateway\n", (long long)rows,
		    SG_STORE_SCHEMA_VERSION);
	sg_store_close(to);
	sg_store_close(from);
	return rc == SG_STORE_OK ? 0 : 1;
}

/* Warnings are errors here. A key whose secret is not set yet (the
 * shipped config's are all placeholders) lets no one in: say so, and how
 * to go on. */
static int
check_config(const struct sg_cfg *cfg)
{
	size_t i, unset = 0;

	for (i = 0; i < cfg->nwarnings; i++)
		fprintf(stderr, "%s\n", cfg->warnings[i]);
	for (i = 0; i < cfg->auth.nkeys; i++)
		if (cfg->auth.keys[i].problem != NULL)
			unset++;
	if (unset > 0)
		fprintf(stderr, "sandgate: %zu of the %zu keys of %s have no "
		    "secret yet and let no one in: set each where its line "
		    "above says, or remove it; `sandgate keys create NAME` "
		    "makes a key in the store instead\n", unset,
		    cfg->auth.nkeys, cfg->path);
	if (cfg->nwarnings > 0)
		return 1;
	printf("%s: ok (%zu models, %zu sandbox tools, %zu keys)\n", cfg->path,
	    cfg->nmodels, cfg->ntools, cfg->auth.nkeys);
	return 0;
}

static char *
read_code(const char *path)
{
	FILE *f = path == NULL || strcmp(path, "-") == 0 ? stdin :
	    fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (f == NULL) {
		fprintf(stderr, "sandgate: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	do {
		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 8192);

			if (nb == NULL)
				break;
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n > 0);
	if (f != stdin)
		fclose(f);
	if (buf != NULL)
		buf[len] = '\0';
	return buf;
}

/* Print a CodeExecutionResult as a terminal user expects; 0 when the code
 * raised nothing. */
static int
print_result(const json_t *r)
{
	const json_t *err = json_object_get(r, "error"), *res;
	size_t i;

	fputs(json_string_value(json_object_get(r, "stdout")), stdout);
	json_array_foreach(json_object_get(r, "results"), i, res) {
		const char *text = json_string_value(json_object_get(res, "text"));

		if (json_is_true(json_object_get(res, "is_main_result")) && text)
			printf("%s\n", text);
		else if (json_object_get(res, "png") != NULL)
			printf("[image/png result]\n");
	}
	fflush(stdout);
	fputs(json_string_value(json_object_get(r, "stderr")), stderr);
	if (json_is_object(err)) {
		const char *tb = json_string_value(json_object_get(err,
		    "traceback"));

		/* A traceback ends with "Name: value" already. */
		if (tb != NULL && tb[0] != '\0')
			fprintf(stderr, "%s\n", tb);
		else
			fprintf(stderr, "%s: %s\n",
			    json_string_value(json_object_get(err, "name")),
			    json_string_value(json_object_get(err, "value")));
		return 1;
	}
	return 0;
}

static int
exec_code(const struct sg_cfg *cfg, const char *tool, const char *sandbox,
    const char *file)
{
	struct sg_prov prov;
	struct sg_sbx_env env = { cfg, NULL, &prov, NULL };
	struct sg_store_sbx row;
	struct sg_error err, derr;
	json_t *result = NULL;
	char *code;
	int rc = 2;

	if ((code = read_code(file)) == NULL)
		return 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	sg_prov_init(&prov);
	if ((env.store = sg_cli_open_store(cfg)) == NULL)
		goto out;
	if (sandbox != NULL) {
		/* The operator may use any key's sandbox. */
		if (sg_store_sbx_get(env.store, sandbox, NULL, &row) != 0) {
			fprintf(stderr, "sandgate: no sandbox %s\n", sandbox);
			goto out;
		}
		if (sg_sbx_run(&env, row.tenant, sandbox, code, 0, 1, &result,
		    &err) < 0)
			fprintf(stderr, "sandgate: %s\n", err.message);
		sg_store_sbx_clear(&row);
	} else if (sg_sbx_create(&env, "cli", tool, SG_SBX_EPHEMERAL, &row,
	    &err) == -1)
		fprintf(stderr, "sandgate: %s\n", err.message);
	else {
		if (sg_sbx_run(&env, "cli", row.id, code, 0, 0, &result, &err) < 0)
			fprintf(stderr, "sandgate: %s\n", err.message);
		if (sg_sbx_delete(&env, "cli", row.id, &derr) == -1)
			fprintf(stderr, "sandgate: sandbox %s not deleted: %s\n",
			    row.id, derr.message);
		sg_store_sbx_clear(&row);
	}
	if (result != NULL)
		rc = print_result(result);
out:
	json_decref(result);
	sg_store_close(env.store);
	sg_prov_free(&prov);
	curl_global_cleanup();
	free(code);
	return rc;
}

static int
reap(const struct sg_cfg *cfg)
{
	struct sg_prov prov;
	struct sg_sbx_env env = { cfg, NULL, &prov, NULL };
	int deleted = 0, failed = 0, skipped = 0, rc = 1;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	sg_prov_init(&prov);
	if ((env.store = sg_cli_open_store(cfg)) != NULL &&
	    sg_sbx_reap(&env, NULL, &deleted, &failed, &skipped) == 0) {
		if (skipped)
			printf("skipped: another sweep holds the lease\n");
		else
			printf("deleted %d, failed %d\n", deleted, failed);
		rc = failed > 0;
	}
	sg_store_close(env.store);
	sg_prov_free(&prov);
	curl_global_cleanup();
	return rc;
}

static int
exec_main(const struct sg_cfg *cfg, int argc, char *argv[])
{
	const char *tool = NULL, *sandbox = NULL, *file = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--tool") == 0 && i + 1 < argc)
			tool = argv[++i];
		else if (strcmp(argv[i], "--sandbox") == 0 && i + 1 < argc)
			sandbox = argv[++i];
		else if (file == NULL && (argv[i][0] != '-' ||
		    strcmp(argv[i], "-") == 0))
			file = argv[i];
		else
			return -1;
	}
	return exec_code(cfg, tool, sandbox, file);
}

int
main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *cmd, *sub;
	struct sg_cfg *cfg;
	char err[512];
	int c, rc = 2;

	while ((c = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
		if (c == 'c')
			config = optarg;
		else
			usage();
	}
	if (optind >= argc)
		usage();
	cmd = argv[optind];
	sub = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (sg_cfg_load(sg_cfg_default_path(config), &cfg, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		return 1;
	}
	if (strcmp(cmd, "check-config") == 0 && argc - optind == 1)
		rc = check_config(cfg);
	else if (strcmp(cmd, "reap") == 0 && argc - optind == 1)
		rc = reap(cfg);
	else if (strcmp(cmd, "backup") == 0 && sub != NULL && argc - optind == 2)
		rc = backup(cfg, sub);
	else if (strcmp(cmd, "migrate") == 0 && sub != NULL &&
	    strcmp(sub, "--to") == 0 && argc - optind == 3)
		rc = migrate_to(cfg, argv[optind + 2]);
	else if (strcmp(cmd, "exec") == 0) {
		if ((rc = exec_main(cfg, argc - optind, argv + optind)) == -1) {
			sg_cfg_free(cfg);
			usage();
		}
	}
	else if (strcmp(cmd, "sessions") == 0 && sub != NULL) {
		if ((rc = sg_cli_sessions(cfg, argc - optind - 1,
		    argv + optind + 1)) == -1) {
			sg_cfg_free(cfg);
			usage();
		}
	} else if (strcmp(cmd, "keys") == 0 && sub != NULL) {
		if ((rc = sg_cli_keys(cfg, argc - optind - 1,
		    argv + optind + 1)) == -1) {
			sg_cfg_free(cfg);
			usage();
		}
	} else {
		sg_cfg_free(cfg);
		usage();
	}
	sg_cfg_free(cfg);
	return rc;
}
