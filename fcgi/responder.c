/*
 * A responder: takes one FastCGI connection at a time from the listen
 * socket, reads the request under a deadline, has the gateway answer it,
 * and reports its state on the scoreboard.
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <fcgiapp.h>

#include "fcgi.h"
#include "../core/api/gateway.h"
#include "../core/http/after.h"
#include "../core/mcp/mcp.h"
#include "../core/state/ledger.h"
#include "../core/state/metrics.h"
#include "../lib/util.h"

#define DRAIN_MAX	(1LL << 30)	/* read at most this much of a refused body */
#define UPLOAD_DRAIN_MAX (1LL << 20)	/* of an upload its handler refused */
#define READ_CHUNK	65536		/* body bytes due within read_timeout */
#define TRIM_FREE	(1 << 20)	/* free heap that is worth a malloc_trim */
#define ALIVE_MS	5		/* a client found there is not looked at
					 * again for this long */

static volatile sig_atomic_t stopping;

/* sg_out over a libfcgi request. */
struct fout {
	struct sg_out	 base;
	FCGX_Request	*r;
	int		 gone;
	int64_t		 looked_ms;	/* when alive() last polled; 0: never */
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
	int64_t now;

	if (f->gone || p.fd < 0)
		return 0;
	/* libcurl asks at each step of each transfer (seven times for one
	 * run in a sandbox): a client that leaves is seen within ALIVE_MS,
	 * for one poll instead of one a step. */
	now = sg_now_ms();
	if (f->looked_ms != 0 && now - f->looked_ms < ALIVE_MS)
		return 1;
	f->looked_ms = now;
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
	sg_board_set(env->board, slot, state);
	/* No longer free to accept: when that leaves the pool short of free
	 * responders, tell the master at once, it may need to grow it (its
	 * tick catches anything else). The store above and the loads in
	 * sg_board_short are sequentially consistent: of two responders
	 * going busy at once, at least one sees the other busy. */
	if ((state == SG_SLOT_BUSY || state == SG_SLOT_KEPT) &&
	    sg_board_short(env->board, 2) &&
	    !__atomic_load_n(&env->board->watching, __ATOMIC_SEQ_CST))
		(void)!write(env->wake_fd, "b", 1);
}

/* Up to READ_CHUNK bytes of the body into buf[len]: the peer has
 * read_timeout to send them. */
static int
get_chunk(FCGX_Request *r, const struct sg_cfg *cfg, char *buf, size_t len)
{
	sg_conn_deadline(r->ipcFd, cfg->server.read_timeout);
	return FCGX_GetStr(buf, len > READ_CHUNK ? READ_CHUNK : (int)len, r->in);
}

/* A body its handler streams (sg_in over the request's stdin). */
struct fin {
	struct sg_in		 base;
	FCGX_Request		*r;
	const struct sg_cfg	*cfg;
};

static long
fin_read(struct sg_in *in, void *buf, size_t len)
{
	struct fin *f = (struct fin *)in;
	int n = get_chunk(f->r, f->cfg, buf, len);

	return n < 0 || FCGX_GetError(f->r->in) != 0 ? -1 : n;
}

/* Read and drop the rest of a refused body, so its answer is not lost to
 * a reset connection. */
static void
drain(FCGX_Request *r, const struct sg_cfg *cfg, long long max, int secs)
{
	char scratch[16384];
	long long drained = 0;
	int n;

	while (drained < max) {
		sg_conn_deadline(r->ipcFd, secs > 0 ? secs : cfg->server.read_timeout);
		if ((n = FCGX_GetStr(scratch, sizeof(scratch), r->in)) <= 0)
			break;
		drained += n;
	}
}

/* Read the whole body (to EOF, which also consumes the empty stdin
 * record, so fout_alive sees a quiet socket). -1 with err when refused. */
static int
read_body(FCGX_Request *r, const struct sg_cfg *cfg, struct sg_req *req,
    struct sg_error *err)
{
	size_t cap = cfg->server.max_body_bytes, len = 0, size;
	long long want = req->content_length > 0 ? req->content_length : 0;
	int n;

	if (want > (long long)cap) {
		drain(r, cfg, DRAIN_MAX, 0);
		return sg_error_set(err, 413, "invalid_request_error",
		    "request_too_large", NULL, "Request body of %lld bytes is "
		    "larger than this gateway's limit of %zu bytes.", want, cap);
	}
	size = want > 0 ? (size_t)want + 1 : 4096;
	if ((req->body = malloc(size)) == NULL)
		return sg_error_server(err, 500, "out of memory");
	for (;;) {
		if (len + 1 >= size) {
			char *nb, more;

			/* At the limit: a body of exactly cap bytes ends
			 * here; one byte more is one too many. */
			if (len >= cap && get_chunk(r, cfg, &more, 1) <= 0)
				break;
			if (len >= cap) {
				drain(r, cfg, DRAIN_MAX, 0);
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
		n = get_chunk(r, cfg, req->body + len, size - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	req->body[len] = '\0';
	req->body_len = len;
	return 0;
}

/*
 * One request, its params read: the body, then the gateway's answer.
 * mask is restored once the body is in. A body that did not arrive (the
 * peer went quiet past read_timeout, or broke off) makes a dead request:
 * logged as 408, answered with nothing.
 */
/* sg_req's param: the request's FastCGI parameters. */
static const char *
fcgi_param(void *envp, const char *name)
{
	return FCGX_GetParam(name, envp);
}

static int
serve(const struct sg_env *env, int slot, struct sg_gw *gw, FCGX_Request *r,
    const sigset_t *mask, struct sg_after *after)
{
	struct fout out = { { fout_write, fout_flush, fout_alive, 0, 0 }, r, 0,
	    0 };
	struct fin in = { { fin_read }, r, env->cfg };
	struct sg_params p;
	struct sg_req req;
	struct sg_error err;
	int rc = 0, dead, status;
	int64_t ms;

	memset(&req, 0, sizeof(req));
	sg_params_read(r->envp, &p);
	req.method = p.method != NULL ? p.method : "GET";
	req.uri = p.uri != NULL ? p.uri : "/";
	req.authorization = p.authorization;
	req.content_type = p.content_type;
	req.if_none_match = p.if_none_match;
	req.param = fcgi_param;
	req.param_arg = r->envp;
	req.content_length = p.content_length != NULL &&
	    *p.content_length != '\0' ? atoll(p.content_length) : -1;
	req.after = after;
	sg_gw_req_init(env->cfg, &req);
	/* An upload is read by its handler as it goes; a stop still waits
	 * for it (the mask stays) and each read has its deadline. */
	if (sg_gw_streams(&req))
		req.in = &in.base;
	else {
		rc = read_body(r, env->cfg, &req, &err);
		sg_conn_deadline(-1, 0);
		sigprocmask(SIG_SETMASK, mask, NULL);
	}
	if ((dead = FCGX_GetError(r->in) != 0)) {
		status = 408;
		sg_mx_request(req.route, status, sg_now_ms() - req.start_ms);
	} else {
		if (rc == -1 && !sg_mcp_refused_early(env->cfg, &req,
		    &out.base, &err))
			sg_http_error(&out.base, &req, &err);
		else if (rc != -1)
			sg_gw_handle(gw, &req, &out.base);
		/* Answered: the client may send its next request this
		 * instant (the answer's last bytes are on their way), so this
		 * one no longer counts against its key nor holds a place. */
		sg_queue_release(env->board, slot,
		    env->cfg->server.workers_max);
		if (req.in != NULL) {
			/* What an upload's handler left unread (it refused
			 * it): a little, for a second, not the whole of a
			 * huge one, nor what the client has yet to send; its
			 * answer goes out first. */
			FCGX_FFlush(r->out);
			drain(r, env->cfg, UPLOAD_DRAIN_MAX, 1);
			sg_conn_deadline(-1, 0);
			sigprocmask(SIG_SETMASK, mask, NULL);
		}
		/* Counted before the answer ends: a client's next request
		 * (a scrape) sees this one. */
		sg_mx_request(req.route, out.base.status, sg_now_ms() -
		    req.start_ms);
		/* Closing both streams sends the rest of the answer, its end
		 * and the END_REQUEST record (libfcgi adds it on the last
		 * stream closed) in one write, instead of a flush here and
		 * one more write in FCGX_Finish_r. */
		FCGX_FClose(r->err);
		if (!out.gone && FCGX_FClose(r->out) == -1)
			out.gone = 1;
		status = out.gone && !out.base.started ? 499 : out.base.status;
	}
	ms = sg_now_ms() - req.start_ms;
	sg_log_request(&req, status, ms);
	sg_board_count(env->board, dead ? status : out.base.status, ms);
	free(req.body);
	/* Its body read to the end (its empty stdin record too) and its
	 * answer out whole: nothing more is due from either side. */
	return !dead && rc == 0 && req.in == NULL && !out.gone;
}

/*
 * Read one request on the connection taken and answer it. A stop waits
 * until the request is in, so it never drops one half read; the deadline
 * bounds how long that is. libfcgi closes a connection that fails before
 * a request is in (FCGX_Accept_r then returns < 0: it has no listen
 * socket to accept another on). What the request left for after its
 * answer (its sandbox's delete) runs once the web server has it all,
 * the slot still busy; a stop waits for that too (each job is bounded),
 * so nothing the request made is left untracked.
 */
static void
one_request(const struct sg_env *env, int slot, struct sg_gw *gw,
    FCGX_Request *r)
{
	int secs = env->cfg->server.read_timeout;
	struct sg_after after = SG_AFTER_INIT;
	sigset_t stop, mask;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigprocmask(SIG_BLOCK, &stop, &mask);
	sg_conn_deadline(r->ipcFd, secs);
	if (FCGX_Accept_r(r) < 0) {
		sg_conn_deadline(-1, 0);
		sigprocmask(SIG_SETMASK, &mask, NULL);
		return;
	}
	if (serve(env, slot, gw, r, &mask, &after) &&
	    sg_conn_close_quiet(r))
		FCGX_Finish_r(r);	/* frees; the connection is closed */
	else {
		/* Finishing flushes and, closing, reads what the peer still
		 * sends until it closes too (libfcgi's OS_Close): under a
		 * deadline too. */
		sg_conn_deadline(r->ipcFd, secs);
		FCGX_Finish_r(r);
		sg_conn_deadline(-1, 0);
	}
	if (sg_after_pending(&after) > 0) {
		sigprocmask(SIG_BLOCK, &stop, NULL);
		sg_after_run(&after);
		sigprocmask(SIG_SETMASK, &mask, NULL);
	}
}

/* Close a kept connection the web server left idle too long. */
static void
drop_kept(const struct sg_env *env, FCGX_Request *r)
{
	sg_conn_deadline(r->ipcFd, env->cfg->server.read_timeout);
	FCGX_Free(r, 1);
	sg_conn_deadline(-1, 0);
}

/*
 * A kept connection (FCGI_KEEP_CONN, nginx's fastcgi_keep_conn): the web
 * server sends its next request on it, or leaves it in its pool. Idle
 * past read_timeout it is closed (the web server opens a new one when it
 * needs one), so it cannot hold this responder for good.
 */
static int
take_kept(const struct sg_env *env, int slot, FCGX_Request *r)
{
	struct pollfd p = { .fd = r->ipcFd, .events = POLLIN };
	int rc;

	set_state(env, slot, SG_SLOT_KEPT);
	rc = poll(&p, 1, env->cfg->server.read_timeout * 1000);
	if (rc == -1)
		return -1;
	if (rc == 0) {
		drop_kept(env, r);
		return -1;
	}
	set_state(env, slot, SG_SLOT_BUSY);
	return 0;
}

/* Whether the listen socket is TCP (it does not change: asked once). */
static int
is_tcp(int fd)
{
	static int tcp = -1;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (tcp == -1)
		tcp = getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
		    (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
	return tcp;
}

/*
 * The next connection to read a request on: a kept one, else a new one
 * from the listen socket. 0 with r->ipcFd set and the slot busy, or -1
 * to look again. We accept, not libfcgi: so the slot is busy from accept
 * on (a connection that sends nothing holds a busy responder, and the
 * pool grows past it), and the connection libfcgi reads is the one the
 * deadline watches.
 */
static int
take(const struct sg_env *env, int slot, FCGX_Request *r)
{
	struct pollfd p = { .fd = env->listen_fd, .events = POLLIN };
	int fd, one = 1;

	if (r->ipcFd >= 0)
		return take_kept(env, slot, r);
	set_state(env, slot, SG_SLOT_IDLE);
	if ((fd = accept4(env->listen_fd, NULL, NULL, SOCK_CLOEXEC)) == -1) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			poll(&p, 1, -1);	/* a non-blocking listen socket */
		else if (errno != EINTR && errno != ECONNABORTED &&
		    errno != EPROTO && errno != ECONNRESET) {
			/* EMFILE and friends: back off, do not spin. */
			fprintf(stderr, "sandgate: accept: %s\n", strerror(errno));
			sleep(1);
		}
		return -1;
	}
	set_state(env, slot, SG_SLOT_BUSY);
	/* FastCGI waits for no replies: no Nagle on TCP (libfcgi does the
	 * same). */
	if (is_tcp(env->listen_fd))
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
	/*
	 * ipcFd and keepConnection are libfcgi's private fields. Given a
	 * connection in ipcFd, FCGX_Accept_r reads it as it reads a kept
	 * one; keepConnection stops the FCGX_Finish_r it starts with from
	 * closing it (the BEGIN_REQUEST record then sets it as it should).
	 */
	r->ipcFd = fd;
	r->keepConnection = 1;
	return 0;
}

/* Resident bytes, from /proc/self/statm; 0 when unknown. */
static size_t
resident(void)
{
	unsigned long pages;
	char buf[128];
	ssize_t n;
	int fd;

	if ((fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%*u %lu", &pages) != 1)
		return 0;
	return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* What over_memory remembers between requests. */
struct mem {
	size_t	 kept;		/* free heap left after the last trim */
	size_t	 heap;		/* most heap ever taken from the kernel */
};

/*
 * After each request. When a request left much freed memory in the heap
 * it goes back to the kernel: a big body or sandbox output is freed as
 * many small Jansson chunks, which glibc would otherwise keep (its own
 * trimming returns only the heap's top). A responder past recycle_mb
 * leaves (it has answered), and the master forks a fresh one. glibc's
 * counts cost no system call, so the resident size is read only when the
 * heap grew past its most: only then can the process have grown. 1 to
 * leave.
 */
static int
over_memory(const struct sg_env *env, struct mem *m)
{
	struct mallinfo2 mi = mallinfo2();
	size_t rss, heap, limit = (size_t)env->cfg->server.recycle_mb << 20;

	if (mi.fordblks > m->kept + TRIM_FREE) {
		malloc_trim(0);
		mi = mallinfo2();
		m->kept = mi.fordblks;
	} else if (mi.fordblks < m->kept)
		m->kept = mi.fordblks;
	/* 0: not glibc's allocator (a sanitizer's): no counts to go by. */
	heap = mi.arena + mi.hblkhd;
	if (heap != 0 && heap <= m->heap)
		return 0;
	m->heap = heap;
	if (limit == 0 || (rss = resident()) <= limit)
		return 0;
	fprintf(stderr, "sandgate: responder %d: %zu MiB resident after a "
	    "request, over server.recycle_mb = %d; exiting to be replaced\n",
	    (int)getpid(), rss >> 20, env->cfg->server.recycle_mb);
	return 1;
}

void
sg_responder_run(const struct sg_env *env, int slot)
{
	struct sg_seat seat = { env->board, slot, env->cfg, env->reserve };
	FCGX_Request r;
	struct sg_gw *gw;
	char err[SG_ERR_MAX];
	struct mem mem = { 0, 0 };

	sg_child_signals(on_stop);
	sg_conn_init();
	setvbuf(stderr, NULL, _IOLBF, 0);
	if (sg_drop_privileges(env->cfg) == -1)
		_exit(3);
	sg_child_follow();
	if (sg_gw_new(env->cfg, &gw, err, sizeof(err)) == -1) {
		fprintf(stderr, "sandgate: responder %d: %s\n", (int)getpid(), err);
		_exit(3);
	}
	sg_use_slot(slot);
	sg_gw_set_metrics(gw, sg_board_metrics, &seat);
	sg_gw_set_admit(gw, sg_queue_admit, &seat);
	sg_gw_set_load(gw, sg_board_load, &seat);
	/* No listen socket for libfcgi: take() accepts. */
	if (FCGX_Init() != 0 || FCGX_InitRequest(&r, -1, 0) != 0) {
		fprintf(stderr, "sandgate: responder: libfcgi init failed\n");
		_exit(3);
	}
	while (!stopping) {
		if (take(env, slot, &r) == -1)
			continue;
		one_request(env, slot, gw, &r);
		/* A reserve responder serves one connection: the master
		 * forks it only while the pool is full. */
		if (env->reserve || over_memory(env, &mem))
			break;
	}
	sg_gw_free(gw);
	FCGX_Free(&r, 0);
	curl_global_cleanup();
	exit(0);
}
