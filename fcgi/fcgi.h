/*
 * fcgi/: the FastCGI front. Private header of the master, the responders
 * and the listen socket; nothing outside fcgi/ includes it.
 */
#ifndef SG_FCGI_H
#define SG_FCGI_H

#include <sys/types.h>

#include <stdint.h>

#include "../core/config.h"

#define SG_SLOTS 512	/* scoreboard size: workers_max <= 256, plus room
			 * for a retiring generation after SIGHUP */

enum sg_slot_state {
	SG_SLOT_FREE = 0,
	SG_SLOT_STARTING,	/* forked, not yet accepting */
	SG_SLOT_IDLE,		/* in accept() */
	SG_SLOT_BUSY,		/* handling a request */
	SG_SLOT_RETIRING,	/* told to exit; no longer counts */
};

struct sg_slot {
	pid_t		 pid;
	int		 state;		/* enum sg_slot_state, atomic */
	int64_t		 since_ms;	/* when state last changed */
	int64_t		 started_ms;
};

/* Shared memory made by the master before the first fork. */
struct sg_board {
	struct sg_slot	 slots[SG_SLOTS];
	uint64_t	 requests[6];	/* by status class: 1xx..5xx, other */
	uint64_t	 duration_ms;	/* summed over all requests */
};

/* Everything a responder inherits from the master. */
struct sg_env {
	const struct sg_cfg	*cfg;
	struct sg_board		*board;
	int			 listen_fd;
	int			 wake_fd;	/* write end: "a responder got busy" */
};

/* listen.c: a listening socket for --listen, close-on-exec, backlog 1024. */
int	 sg_listen_open(const char *spec, const struct sg_cfg *, char *err,
	    size_t errsz);
/* 0 when fd is a listening socket (FastCGI on fd 0). */
int	 sg_listen_check(int fd);

/* responder.c: the signal handling of every child of the master: on_stop
 * for SIGTERM and SIGINT (no SA_RESTART), SIGHUP and SIGPIPE ignored. */
void	 sg_child_signals(void (*on_stop)(int));

/* responder.c: serve requests until told to stop; never returns. */
void	 sg_responder_run(const struct sg_env *, int slot)
	    __attribute__((noreturn));

/* reaper.c: sweep expired sandboxes every half minute; never returns. */
void	 sg_reaper_run(const struct sg_cfg *) __attribute__((noreturn));

/* privs.c: become cfg's server.user when root. 0, or -1 logged. */
int	 sg_drop_privileges(const struct sg_cfg *);

/* privs.c: make the store's directory the service user's and bring its
 * schema up to date, in a child running as that user (so the master
 * never holds a SQLite connection, and root never owns -wal/-shm). */
int	 sg_prepare_store(const struct sg_cfg *, char *err, size_t errsz);

/* master.c */
int	 sg_master_run(struct sg_cfg *, int listen_fd, const char *listen_spec,
	    const char *kernel_src);

#endif
