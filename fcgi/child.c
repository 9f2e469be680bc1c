/*
 * What every child of the master shares: its signal handling, and its
 * end when the master dies. The responders and the reaper call these.
 */
#include <sys/prctl.h>

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "fcgi.h"

pid_t sg_master_pid;

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

/*
 * A master killed outright (SIGKILL: a web server recycling its FastCGI
 * processes) cannot stop its children: its death does, as a stop would.
 * After the privileges are dropped, as a change of uid clears it; a master
 * gone before is seen by getppid().
 */
void
sg_child_follow(void)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != sg_master_pid)
		raise(SIGTERM);
}
