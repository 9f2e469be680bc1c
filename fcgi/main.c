/*
 * sandgate-fcgi: the gateway. FastCGI on fd 0 (spawned by lighttpd's
 * bin-path or spawn-fcgi) or on a socket of its own (--listen).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "fcgi.h"
#include "../lib/util.h"

static void
usage(void)
{
	fprintf(stderr, "usage: sandgate-fcgi [--config FILE] "
	    "[--listen HOST:PORT|:PORT|/path.sock] [--workers MIN[:MAX]]\n");
	exit(2);
}

static int
parse_workers(const char *s, int w[2])
{
	char *end;
	long lo, hi;

	lo = strtol(s, &end, 10);
	hi = lo;
	if (*end == ':')
		hi = strtol(end + 1, &end, 10);
	if (*end != '\0' || lo < 1 || hi < lo || hi > SG_CFG_WORKERS_MAX)
		return -1;
	w[0] = (int)lo;
	w[1] = (int)hi;
	return 0;
}

/*
 * Where the local kernel's files are: $SANDGATE_KERNEL_DIR, else beside
 * the installed binary (PREFIX/share/sandgate/kernel), else the build
 * tree's providers/sandboxd/kernel.
 */
static const char *
kernel_src(void)
{
	static char path[4096];
	const char *env = getenv("SANDGATE_KERNEL_DIR");
	static const char *const rel[] = { "../share/sandgate/kernel",
	    "../providers/sandboxd/kernel" };
	char exe[2048], *slash;
	ssize_t n;
	size_t i;

	if (env != NULL && *env != '\0')
		return env;
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
		return "/usr/local/share/sandgate/kernel";
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) != NULL)
		*slash = '\0';
	for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/kernel.py", exe, rel[i]);
		if (access(path, R_OK) == 0) {
			snprintf(path, sizeof(path), "%s/%s", exe, rel[i]);
			return path;
		}
	}
	return "/usr/local/share/sandgate/kernel";
}

/*
 * What every responder would otherwise do on its first request, done
 * once before the fork: OpenSSL loads its config and fetches SHA-256
 * (~3 M instructions), Jansson seeds its hash function (a read of
 * /dev/urandom). The children share these pages.
 */
static void
warm_up(void)
{
	char hex[65];

	sg_sha256_hex("", 0, hex);
	json_decref(json_object());
}

int
main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ "workers", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *listen_spec = NULL, *workers = NULL;
	int w[2] = { 0, 0 };
	struct sg_cfg *cfg;
	char err[SG_ERR_MAX];
	size_t i;
	int c, fd;

	sg_tune_malloc(argv);
	while ((c = getopt_long(argc, argv, "c:l:w:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'l': listen_spec = optarg; break;
		case 'w': workers = optarg; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	setvbuf(stderr, NULL, _IOLBF, 0);
	/* libfcgi filters TCP peers by this list when it accepts; the
	 * responders accept themselves, so never run as if it held. */
	if (getenv("FCGI_WEB_SERVER_ADDRS") != NULL) {
		fprintf(stderr, "sandgate: FCGI_WEB_SERVER_ADDRS is not "
		    "supported: bind --listen to the address the web server "
		    "reaches (loopback by default) instead\n");
		return 1;
	}
	config = sg_cfg_default_path(config);
	if (sg_cfg_load(config, &cfg, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandgate: %s\n", err);
		return 1;
	}
	for (i = 0; i < cfg->nwarnings; i++)
		fprintf(stderr, "sandgate: warning: %s\n", cfg->warnings[i]);
	if (workers != NULL && parse_workers(workers, w) == -1) {
		fprintf(stderr, "sandgate: --workers %s: expected MIN[:MAX] "
		    "with 1 <= MIN <= MAX <= %d\n", workers, SG_CFG_WORKERS_MAX);
		return 1;
	}
	if (listen_spec != NULL) {
		if ((fd = sg_listen_open(listen_spec, cfg, err, sizeof(err))) == -1) {
			fprintf(stderr, "sandgate: %s\n", err);
			return 1;
		}
	} else if (sg_listen_check(0) == 0) {
		fd = 0;
		listen_spec = "fd 0";
	} else {
		fprintf(stderr, "sandgate: fd 0 is not a listening socket: "
		    "start under a FastCGI server or use --listen\n");
		return 1;
	}
	/* Before any fork: libcurl's global state is not fork-safe to init. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "sandgate: curl_global_init failed\n");
		return 1;
	}
	if (sg_prepare_store(cfg, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandgate: %s\n", err);
		return 1;
	}
	warm_up();
	return sg_master_run(cfg, fd, listen_spec, kernel_src(), w);
}
