/*
 * fcgi/: the FastCGI front. Private header of the master, the responders
 * and the listen socket; nothing outside fcgi/ includes it.
 */
#ifndef SG_FCGI_H
#define SG_FCGI_H

#include <sys/types.h>

#include <stdint.h>

#include "../core/config.h"

/* Room for a reason that names a path or two (a store's path may be
 * long): a truncated line loses the part that says why. */
#define SG_ERR_MAX	8192

#define SG_RESERVE	2	/* responders beyond workers_max, for light
				 * routes while workers_max are busy */
#define SG_SLOTS	(2 * (256 + SG_RESERVE))	/* workers_max <= 256,
				 * plus room for a retiring generation */

enum sg_slot_state {
	SG_SLOT_FREE = 0,
	SG_SLOT_STARTING,	/* forked, not yet accepting */
	SG_SLOT_IDLE,		/* in accept() */
	SG_SLOT_BUSY,		/* from accept to the end of the request */
	SG_SLOT_KEPT,		/* waiting on a kept (FCGI_KEEP_CONN)
				 * connection: cannot accept, not busy */
};

enum sg_slot_class {
	SG_CLASS_NONE = 0,	/* busy reading a request, not yet routed */
	SG_CLASS_LIGHT,		/* /healthz, /metrics, GET /v1/models */
	SG_CLASS_HEAVY,		/* model and sandbox routes */
};

/*
 * One responder's entry. Shared memory every responder can write, so it
 * holds only what responders report; the master keeps the pids it forked
 * (and whatever else it acts on) in its own memory and never trusts a
 * value read from here to name a process.
 */
struct sg_slot {
	int		 state;		/* enum sg_slot_state, atomic */
	int		 cls;		/* enum sg_slot_class while busy */
	uint64_t	 tenant;	/* whom it serves while busy; 0: none */
	int64_t		 since_ms;	/* when state last changed */
};

/* Shared memory made by the master before the first fork. */
struct sg_board {
	struct sg_slot	 slots[SG_SLOTS];
	int		 used;		/* slots ever given a responder: scans
					 * stop there */
	uint64_t	 requests[6];	/* by status class: 1xx..5xx, other */
	uint64_t	 duration_ms;	/* summed over all requests */
	uint64_t	 refused[2];	/* enum sg_refusal */
};

enum sg_refusal {
	SG_REFUSED_KEY = 0,	/* the key's max_concurrent */
	SG_REFUSED_CAPACITY,	/* workers_max heavy requests under way */
};

/* Everything a responder inherits from the master. */
struct sg_env {
	const struct sg_cfg	*cfg;
	struct sg_board		*board;
	int			 listen_fd;
	int			 wake_fd;	/* write end: "a responder got busy" */
	int			 reserve;	/* serve one connection, then exit */
};

/* What admission and /metrics need to find a responder's slot. */
struct sg_seat {
	struct sg_board		*board;
	int			 slot;
	const struct sg_cfg	*cfg;
};

struct sg_cfg_key;
struct sg_error;
struct sg_req;

/* board.c: set a slot's state (clearing its tenant and route class). */
void	 sg_board_set(struct sg_board *, int slot, int state);
/* board.c: 1 when fewer than n slots are idle or starting. */
int	 sg_board_short(const struct sg_board *, int n);
/* board.c: sg_admit_fn and sg_metrics_fn over the scoreboard; arg is a
 * struct sg_seat. */
int	 sg_board_admit(void *arg, const char *tenant,
	    const struct sg_cfg_key *, int heavy, struct sg_error *);
size_t	 sg_board_metrics(void *arg, char *buf, size_t bufsz);
/* board.c: count an answered request for /metrics. */
void	 sg_board_count(struct sg_board *, int status, int64_t ms);

/* log.c: the one line every request leaves on stderr. */
void	 sg_log_request(const struct sg_req *, int status, int64_t ms);

/* listen.c: a listening socket for --listen, close-on-exec, backlog 1024. */
int	 sg_listen_open(const char *spec, const struct sg_cfg *, char *err,
	    size_t errsz);
/* 0 when fd is a listening socket (FastCGI on fd 0). */
int	 sg_listen_check(int fd);

/* master.c: the master's pid, set before its first fork. */
extern pid_t sg_master_pid;

/* responder.c: the signal handling of every child of the master: on_stop
 * for SIGTERM and SIGINT (no SA_RESTART), SIGHUP and SIGPIPE ignored. */
void	 sg_child_signals(void (*on_stop)(int));
/* responder.c: SIGTERM when the master dies; once privileges are dropped. */
void	 sg_child_follow(void);

/* responder.c: serve requests until told to stop; never returns. */
void	 sg_responder_run(const struct sg_env *, int slot)
	    __attribute__((noreturn));

/* reaper.c: sweep expired sandboxes every half minute; never returns. */
void	 sg_reaper_run(const struct sg_cfg *) __attribute__((noreturn));
/* reaper.c: delete every sandbox of each tool old has and cfg has not,
 * with old's settings (the only ones that can reach them); never
 * returns. */
void	 sg_reaper_removed(const struct sg_cfg *old, const struct sg_cfg *cfg)
	    __attribute__((noreturn));

/* privs.c: become cfg's server.user when root. 0, or -1 logged. */
int	 sg_drop_privileges(const struct sg_cfg *);

/* privs.c: make the store's directory the service user's and bring its
 * schema up to date, in a child running as that user (so the master
 * never holds a SQLite connection, and root never owns -wal/-shm). */
int	 sg_prepare_store(const struct sg_cfg *, char *err, size_t errsz);

/* master.c; workers: --workers MIN, MAX, kept across reloads ({0, 0}:
 * the config's). */
int	 sg_master_run(struct sg_cfg *, int listen_fd, const char *listen_spec,
	    const char *kernel_src, const int workers[2]);

#endif
