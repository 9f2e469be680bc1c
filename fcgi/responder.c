#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <fcgiapp.h>

#include "fcgi.h"
#include "../core/gateway.h"
#include "../lib/util.h"

#define DRAIN_MAX	(1LL << 30)	/* read at most this much of a refused body */

static volatile sig_atomic_t stopping;

/* sg_out over a libfcgi request. */
struct fout {
	struct sg_out	 base;
	FCGX_Request	*r;
	int		 gone;
};

static int
fout_write(struct sg_out *o, const void *buf, size_t len)
{
	struct fout *f = (struct fout *)o;

	if (f->gone)
		return -1;
	while (len > 0) {
		int n = len > (1 << 30) ? 1 << 30 : (int)len;

		if (FCGX_PutStr(buf, n, f->r->out) != n) {
			f->gone = 1;
			return -1;
		}
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

static int
fout_flush(struct sg_out *o)
{
	struct fout *f = (struct fout *)o;

	if (f->gone || FCGX_FFlush(f->r->out) == -1) {
		f->gone = 1;
		return -1;
	}
	return 0;
}

/*
 * libfcgi stops reading the connection once the body is in, so a client
 * that left shows only when a write fails. Once stdin is at EOF the web
 * server sends nothing more on a non-multiplexed connection but
 * FCGI_ABORT_REQUEST, so readable data or EOF both mean "gone". ipcFd is
 * libfcgi's "private" field; it has no accessor for it.
 */
static int
fout_alive(struct sg_out *o)
{
	struct fout *f = (struct fout *)o;
	struct pollfd p = { .fd = f->r->ipcFd, .events = POLLIN | POLLRDHUP };

	if (f->gone || p.fd < 0)
		return 0;
	if (poll(&p, 1, 0) <= 0)
		return 1;
	if (p.revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))
		f->gone = 1;
	return !f->gone;
}

static void
on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

static void
set_state(const struct sg_env *env, int slot, int state)
{
	struct sg_slot *s = &env->board->slots[slot];

	__atomic_store_n(&s->since_ms, sg_now_ms(), __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
}

/* Read the whole body (to EOF, which also consumes the empty stdin
 * record, so fout_alive sees a quiet socket). -1 with err when refused. */
static int
read_body(FCGX_Request *r, const struct sg_cfg *cfg, struct sg_req *req,
    struct sg_error *err)
{
	const char *cl = FCGX_GetParam("CONTENT_LENGTH", r->envp);
	size_t cap = cfg->server.max_body_bytes, len = 0, size;
	long long want = cl != NULL ? atoll(cl) : 0, drained = 0;
	char scratch[16384];
	int n;

	if (want > (long long)cap) {
		/* Drain, so the 413 is not lost to a reset connection. */
		while (drained < DRAIN_MAX && (n = FCGX_GetStr(scratch,
		    sizeof(scratch), r->in)) > 0)
			drained += n;
		return sg_error_set(err, 413, "invalid_request_error",
		    "request_too_large", NULL, "Request body of %lld bytes is "
		    "larger than this gateway's limit of %zu bytes.", want, cap);
	}
	size = want > 0 ? (size_t)want + 1 : 4096;
	if ((req->body = malloc(size)) == NULL)
		return sg_error_server(err, 500, "out of memory");
	for (;;) {
		if (len + 1 >= size) {
			char *nb;

			if (len >= cap) {
				while ((n = FCGX_GetStr(scratch, sizeof(scratch),
				    r->in)) > 0 && drained < DRAIN_MAX)
					drained += n;
				return sg_error_set(err, 413,
				    "invalid_request_error", "request_too_large",
				    NULL, "Request body is larger than this "
				    "gateway's limit of %zu bytes.", cap);
			}
			size = size * 2 > cap + 1 ? cap + 1 : size * 2;
			if ((nb = realloc(req->body, size)) == NULL)
				return sg_error_server(err, 500, "out of memory");
			req->body = nb;
		}
		n = FCGX_GetStr(req->body + len, (int)(size - 1 - len), r->in);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	req->body[len] = '\0';
	req->body_len = len;
	return 0;
}

static void
count(const struct sg_env *env, int status, int64_t ms)
{
	int cls = status >= 100 && status < 600 ? status / 100 - 1 : 5;

	__atomic_fetch_add(&env->board->requests[cls], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&env->board->duration_ms, (uint64_t)ms,
	    __ATOMIC_RELAXED);
}

static void
serve(const struct sg_env *env, struct sg_gw *gw, FCGX_Request *r)
{
	struct fout out = { { fout_write, fout_flush, fout_alive, 0, 0 }, r, 0 };
	struct sg_req req;
	struct sg_error err;
	int64_t ms;

	memset(&req, 0, sizeof(req));
	req.method = FCGX_GetParam("REQUEST_METHOD", r->envp);
	req.uri = FCGX_GetParam("REQUEST_URI", r->envp);
	req.authorization = FCGX_GetParam("HTTP_AUTHORIZATION", r->envp);
	req.content_type = FCGX_GetParam("CONTENT_TYPE", r->envp);
	if (req.method == NULL)
		req.method = "GET";
	if (req.uri == NULL)
		req.uri = "/";
	sg_gw_req_init(env->cfg, &req);
	if (read_body(r, env->cfg, &req, &err) == -1)
		sg_http_error(&out.base, &req, &err);
	else
		sg_gw_handle(gw, &req, &out.base);
	fout_flush(&out.base);
	ms = sg_now_ms() - req.start_ms;
	/* One line per request; never the key, only its name. */
	fprintf(stderr, "%s key=%s %s %s model=%s %d %lldms\n", req.id,
	    req.key_name[0] != '\0' ? req.key_name : "-", req.method,
	    req.path[0] != '\0' ? req.path : req.uri,
	    req.model[0] != '\0' ? req.model : "-",
	    out.gone && !out.base.started ? 499 : out.base.status,
	    (long long)ms);
	count(env, out.base.status, ms);
	free(req.body);
}

static void
emit(char *buf, size_t sz, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf + *len, sz - *len, fmt, ap);
	va_end(ap);
	if (n > 0 && (size_t)n < sz - *len)
		*len += (size_t)n;
}

/* Prometheus text for /metrics, from the scoreboard. */
static size_t
render_metrics(void *arg, char *buf, size_t sz)
{
	static const char *const cls[] = { "1xx", "2xx", "3xx", "4xx", "5xx",
	    "other" };
	static const char *const states[] = { "starting", "idle", "busy" };
	const struct sg_board *b = arg;
	int count[3] = { 0, 0, 0 }, i;
	size_t len = 0;

	for (i = 0; i < SG_SLOTS; i++) {
		int st = __atomic_load_n(&b->slots[i].state, __ATOMIC_ACQUIRE);

		if (st >= SG_SLOT_STARTING && st <= SG_SLOT_BUSY)
			count[st - SG_SLOT_STARTING]++;
	}
	emit(buf, sz, &len, "# HELP sandgate_requests_total Requests answered, "
	    "by status class.\n# TYPE sandgate_requests_total counter\n");
	for (i = 0; i < 6; i++)
		emit(buf, sz, &len, "sandgate_requests_total{code=\"%s\"} %llu\n",
		    cls[i], (unsigned long long)__atomic_load_n(&b->requests[i],
		    __ATOMIC_RELAXED));
	emit(buf, sz, &len, "# HELP sandgate_request_duration_ms_total Time "
	    "spent answering.\n# TYPE sandgate_request_duration_ms_total "
	    "counter\nsandgate_request_duration_ms_total %llu\n",
	    (unsigned long long)__atomic_load_n(&b->duration_ms,
	    __ATOMIC_RELAXED));
	emit(buf, sz, &len, "# HELP sandgate_responders Responder processes, "
	    "by state.\n# TYPE sandgate_responders gauge\n");
	for (i = 0; i < 3; i++)
		emit(buf, sz, &len, "sandgate_responders{state=\"%s\"} %d\n",
		    states[i], count[i]);
	return len;
}

void
sg_child_signals(void (*on_stop)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocking accept() or poll() must return EINTR,
	 * so the child can leave. */
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGCHLD, &sa, NULL);
}

void
sg_responder_run(const struct sg_env *env, int slot)
{
	FCGX_Request r;
	struct sg_gw *gw;
	char err[512];
	int rc;

	sg_child_signals(on_stop);
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (sg_drop_privileges(env->cfg) == -1)
		_exit(3);
	if (sg_gw_new(env->cfg, &gw, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandgate: responder %d: %s\n", (int)getpid(), err);
		_exit(3);
	}
	sg_gw_set_metrics(gw, render_metrics, env->board);
	if (FCGX_Init() != 0 || FCGX_InitRequest(&r, env->listen_fd,
	    FCGI_FAIL_ACCEPT_ON_INTR) != 0) {
		fprintf(stderr, "sandgate: responder: libfcgi init failed\n");
		_exit(3);
	}
	while (!stopping) {
		set_state(env, slot, SG_SLOT_IDLE);
		rc = FCGX_Accept_r(&r);
		if (rc < 0) {
			if (stopping || rc == -EINTR)
				continue;
			/* EMFILE and friends: back off, do not spin. */
			fprintf(stderr, "sandgate: accept: %s\n", strerror(-rc));
			sleep(1);
			continue;
		}
		set_state(env, slot, SG_SLOT_BUSY);
		/* Tell the master at once: it may need to grow the pool. */
		(void)!write(env->wake_fd, "b", 1);
		serve(env, gw, &r);
		FCGX_Finish_r(&r);
	}
	sg_gw_free(gw);
	FCGX_Free(&r, 0);
	curl_global_cleanup();
	exit(0);
}
