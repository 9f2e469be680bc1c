/*
 * A canned HTTP server for the providers' unit tests (test_prov_files.c,
 * test_phttp.c): a child answering one connection after another on a
 * Unix socket, each with the next answer; request i is saved as
 * dir/req.i. Static, as testutil.h's; included after cmocka.h, with the
 * fixture's prov going over the socket.
 */
#ifndef SG_CANNED_H
#define SG_CANNED_H

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../providers/provider.h"
#include "testutil.h"

#define MAX_ANSWERS	8

struct canned {
	char	 dir[64], sock[96];
	pid_t	 pid;
	int	 n;
	char	*answer[MAX_ANSWERS];
	size_t	 len[MAX_ANSWERS];
	struct sg_prov prov;
};

static inline int
fx_setup(void **state)
{
	struct canned *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	assert_int_equal(tu_mkdtemp(c->dir, sizeof(c->dir)), 0);
	snprintf(c->sock, sizeof(c->sock), "%s/s.sock", c->dir);
	sg_prov_init(&c->prov);
	c->prov.unix_socket = c->sock;
	c->pid = -1;
	*state = c;
	return 0;
}

static inline int
fx_teardown(void **state)
{
	struct canned *c = *state;
	int i;

	if (c->pid > 0) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, NULL, 0);
	}
	for (i = 0; i < c->n; i++)
		free(c->answer[i]);
	sg_prov_free(&c->prov);
	tu_rmrf(c->dir);
	free(c);
	return 0;
}

/* Queue an answer: status, a Content-Type (NULL: none), body of len
 * bytes (len -1: strlen, q() applied). */
static inline void
answer(struct canned *c, int status, const char *ctype, const char *body,
    ssize_t len)
{
	char head[256], *b = NULL;
	size_t n;

	assert_true(c->n < MAX_ANSWERS);
	if (len < 0) {
		b = tu_q(body);
		body = b;
		len = (ssize_t)strlen(b);
	}
	snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\n%s%s%sContent-Length: "
	    "%zd\r\nConnection: close\r\n\r\n", status, ctype ? "Content-Type: "
	    : "", ctype ? ctype : "", ctype ? "\r\n" : "", len);
	n = strlen(head);
	assert_non_null(c->answer[c->n] = malloc(n + (size_t)len));
	memcpy(c->answer[c->n], head, n);
	memcpy(c->answer[c->n] + n, body, (size_t)len);
	c->len[c->n++] = n + (size_t)len;
	free(b);
}

/* One request: its head and its Content-Length body. */
static inline void
child_read(int fd, FILE *log)
{
	char buf[65536], *end, *cl;
	size_t len = 0, want = 0;
	ssize_t r;

	while (len < sizeof(buf) - 1 && (r = read(fd, buf + len,
	    sizeof(buf) - 1 - len)) > 0) {
		len += (size_t)r;
		buf[len] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) == NULL)
			continue;
		cl = strcasestr(buf, "\r\ncontent-length:");
		want = (size_t)(end + 4 - buf) + (cl != NULL && cl < end ?
		    strtoul(cl + 17, NULL, 10) : 0);
		if (len >= want)
			break;
	}
	fwrite(buf, 1, len, log);
}

static inline void
child_serve(struct canned *c, int lfd)
{
	char path[128];
	FILE *log;
	size_t off;
	ssize_t w;
	int i, fd;

	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < c->n; i++) {
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			_exit(1);
		snprintf(path, sizeof(path), "%s/req.%d", c->dir, i);
		if ((log = fopen(path, "w")) == NULL)
			_exit(1);
		child_read(fd, log);
		fclose(log);
		/* The client may stop reading (a capped download). */
		for (off = 0; off < c->len[i]; off += (size_t)w)
			if ((w = write(fd, c->answer[i] + off, c->len[i] - off)) <= 0)
				break;
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	_exit(0);
}

/* Start serving the answers queued. */
static inline void
serve(struct canned *c)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int lfd;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", c->sock);
	assert_true((lfd = socket(AF_UNIX, SOCK_STREAM, 0)) != -1);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	assert_int_equal(listen(lfd, 8), 0);
	assert_true((c->pid = fork()) != -1);
	if (c->pid == 0)
		child_serve(c, lfd);
	close(lfd);
}

/* Wait for the server to have served everything. */
static inline void
served(struct canned *c)
{
	int st;

	assert_int_equal(waitpid(c->pid, &st, 0), c->pid);
	c->pid = -1;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* Request i as the server read it, new. */
static inline char *
request(struct canned *c, int i)
{
	char path[128], *s;
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/req.%d", c->dir, i);
	assert_non_null(f = fopen(path, "r"));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	assert_non_null(s = calloc(1, (size_t)n + 1));
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

static inline void
assert_has(const char *s, const char *sub)
{
	if (strstr(s, sub) == NULL)
		fail_msg("\"%s\" not in:\n%s", sub, s);
}

#endif
