/*
 * The connection a responder reads a request on: the deadline on what
 * the web server still has to send, and closing it once answered.
 *
 * The deadline is a timer whose SIGALRM cuts the connection's read side,
 * so libfcgi's next read fails wherever the signal lands. Setting it is a
 * system call; a request's reads come a few microseconds apart, so a
 * timer set for the same connection within REARM_MS is left as it is
 * (the peer gets at most that much less than read_timeout).
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <fcgiapp.h>

#include "fcgi.h"
#include "../lib/util.h"

#define REARM_MS	10

static volatile sig_atomic_t deadline_fd = -1;
static int armed_secs;		/* 0: disarmed */
static int64_t armed_ms;

static void
on_alarm(int sig)
{
	int saved = errno;

	(void)sig;
	if (deadline_fd >= 0)
		shutdown(deadline_fd, SHUT_RD);
	errno = saved;
}

void
sg_conn_init(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_alarm;	/* no SA_RESTART: reads must fail */
	sigaction(SIGALRM, &sa, NULL);
}

void
sg_conn_deadline(int fd, int secs)
{
	struct itimerval it = { { 0, 0 }, { secs, 0 } };
	int64_t now = 0;

	if (secs > 0) {
		now = sg_now_ms();
		if (fd == deadline_fd && secs == armed_secs &&
		    now - armed_ms < REARM_MS)
			return;
		deadline_fd = fd;
	} else if (armed_secs == 0)
		return;
	armed_secs = secs;
	armed_ms = now;
	setitimer(ITIMER_REAL, &it, NULL);
	if (secs == 0)
		deadline_fd = -1;
}

/*
 * Close a connection whose request was read to its end and answered
 * whole, when the web server sent nothing since: without libfcgi's
 * lingering close (shut the write side, wait for the peer's close, read
 * it), which costs three system calls and a wait for the web server each
 * request. The linger keeps unread bytes from turning the close into a
 * reset that could lose the answer; with none there is nothing to reset.
 * A kept connection (FCGI_KEEP_CONN) stays open. 1 when closed.
 */
int
sg_conn_close_quiet(FCGX_Request *r)
{
	char c;
	ssize_t n;

	if (r->keepConnection || r->ipcFd < 0)
		return 0;
	n = recv(r->ipcFd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n > 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
		return 0;
	close(r->ipcFd);
	/* libfcgi closes ipcFd at FCGX_Finish_r; -1 makes that a no-op. */
	r->ipcFd = -1;
	return 1;
}
