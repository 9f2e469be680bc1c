/*
 * fcgi/: the FastCGI front. Private header of the master, the responders
 * and the listen socket; nothing outside fcgi/ includes it.
 */
#ifndef SG_FCGI_H
#define SG_FCGI_H

#include <sys/types.h>

#include <stdint.h>

#include "../core/config/config.h"
#include "../core/state/stats.h"
#include "../lib/shlock.h"

/* Room for a reason that names a path or two (a store's path may be
 * long): a truncated line loses the part that says why. */
#define SG_ERR_MAX	8192

#define SG_RESERVE	2	/* responders beyond the pool's most, for
				 * light routes while every one is taken */
/* Responders the pool may hold once workers_max heavy requests are under
 * way: as many again (at least 64) holding the requests that wait their
 * turn, so that the queue sees every key that waits, not only the first
 * ones in the listen backlog. */
#define SG_POOL_MAX(wmax)	((wmax) + ((wmax) < 64 ? 64 : (wmax)))
#define SG_SLOTS	(2 * (SG_POOL_MAX(SG_CFG_WORKERS_MAX) + SG_RESERVE))	/* plus room
				 * for a retiring generation */

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
	int		 q;		/* enum sg_q_state; a futex word */
	int		 cap;		/* its key's max_concurrent; 0: none */
	uint64_t	 ticket;	/* its place in the queue */
};

/* Where a heavy request stands in the queue (queue.c). */
enum sg_q_state {
	SG_Q_NONE = 0,		/* no heavy request */
	SG_Q_WAITING,		/* read, waiting for its turn */
	SG_Q_RUNNING,		/* admitted: counts against workers_max */
};

/* Shared memory made by the master before the first fork. */
struct sg_board {
	struct sg_slot	 slots[SG_SLOTS];
	int		 used;		/* slots ever given a responder: scans
					 * stop there */
	uint64_t	 requests[6];	/* by status class: 1xx..5xx, other */
	uint64_t	 duration_ms;	/* summed over all requests */
	uint64_t	 refused[2];	/* enum sg_refusal */
	/* The queue's lock (queue.c): responders only, never the master. */
	struct sg_shlock qlock;
	uint64_t	 qticket;	/* the next arrival's place */
	uint64_t	 waited;	/* requests that had to wait */
	uint64_t	 waited_ms;	/* and how long, summed */
	/* The master looks at the pool again within SG_GROW_WAIT_MS on its
	 * own: a responder going busy need not wake it. */
	int		 watching;
};

/* None free, but every busy responder busy for less than this: the pool
 * waits for one to finish before growing (sg_board_grow). */
#define SG_GROW_WAIT_MS	25

enum sg_refusal {
	SG_REFUSED_KEY = 0,	/* the key's max_concurrent, past the wait */
	SG_REFUSED_CAPACITY,	/* workers_max heavy requests, past the wait */
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
	int			 reserve;	/* a reserve responder */
};

struct sg_error;
struct sg_out;
struct sg_req;

/* board.c: set a slot's state (clearing its tenant, route class and
 * place in the queue). */
void	 sg_board_set(struct sg_board *, int slot, int state);
/* board.c: how many slots to scan: the master's count, bounded (every
 * responder can write the board). */
int	 sg_board_used(const struct sg_board *);
/* board.c: how many responders to fork now; 0 with *recheck_at set
 * when growth waits for a quick request to end (SG_GROW_WAIT_MS). */
int	 sg_board_grow(int live, int spare, int min, int most,
	    int64_t held_since, int64_t now, int64_t *recheck_at);
/* board.c: whether the master forks a reserve now, the pool full (want),
 * a connection seen in the backlog (seen) at *since, SG_GROW_WAIT_MS
 * ago. */
int	 sg_board_backlog(int want, int seen, int64_t now, int64_t *since);
/* board.c: busy slots on heavy routes, running or waiting their turn. */
int	 sg_board_heavy(const struct sg_board *);
/* board.c: 1 when fewer than n slots are idle or starting. */
int	 sg_board_short(const struct sg_board *, int n);
/* board.c: sg_metrics_fn over the scoreboard; arg is a struct sg_seat. */
size_t	 sg_board_metrics(void *arg, char *buf, size_t bufsz);
/* board.c: sg_load_fn (core/state/stats.h), the same. */
void	 sg_board_load(void *arg, struct sg_st_load *);

/* queue.c: sg_admit_fn over the board; arg is a struct sg_seat. */
int	 sg_queue_admit(void *arg, const struct sg_req *, int heavy,
	    struct sg_out *, struct sg_error *);
/* queue.c: the slot's request is answered: its turn passes on. */
void	 sg_queue_release(struct sg_board *, int slot, int workers_max);
/* board.c: count an answered request for /metrics. */
void	 sg_board_count(struct sg_board *, int status, int64_t ms);

/* log.c: the one line every request leaves on stderr. */
void	 sg_log_request(const struct sg_req *, int status, int64_t ms);

/* listen.c: a listening socket for --listen, close-on-exec, backlog 1024. */
int	 sg_listen_open(const char *spec, const struct sg_cfg *, char *err,
	    size_t errsz);
/* 0 when fd is a listening socket (FastCGI on fd 0). */
int	 sg_listen_check(int fd);

/* child.c: the master's pid, set by master.c before its first fork. */
extern pid_t sg_master_pid;

/* child.c: the signal handling of every child of the master: on_stop for
 * SIGTERM and SIGINT (no SA_RESTART), SIGHUP and SIGPIPE ignored. */
void	 sg_child_signals(void (*on_stop)(int));
/* child.c: SIGTERM when the master dies; once privileges are dropped. */
void	 sg_child_follow(void);

/* responder.c: serve requests until told to stop; never returns. */
void	 sg_responder_run(const struct sg_env *, int slot)
	    __attribute__((noreturn));

/* reaper.c: sweep expired sandboxes every half minute, write the ledger,
 * tend the pool and sample the board for the overview; never returns. */
void	 sg_reaper_run(const struct sg_cfg *, struct sg_board *)
	    __attribute__((noreturn));
/* reaper.c: delete every sandbox of each tool old has and cfg has not,
 * with old's settings (the only ones that can reach them); never
 * returns. */
void	 sg_reaper_removed(const struct sg_cfg *old, const struct sg_cfg *cfg)
	    __attribute__((noreturn));

/* runner.c: run background responses until told to stop, as runner
 * index (below SG_CFG_RUNNERS_MAX: its ledger slot); never returns. */
void	 sg_runner_run(const struct sg_cfg *, int index)
	    __attribute__((noreturn));
/* runner.c: the runners the master keeps (its own memory: pids it forked). */
struct sg_runners {
	pid_t	 pid[SG_CFG_RUNNERS_MAX];	/* 0: none */
	int64_t	 after;		/* no start before (a quick death) */
};
/* background.runners of them, each started through fork_fn (0 in the
 * child, which then runs; -1; or the child's pid); one past the count
 * (a reload lowered it) is told to finish its job and go. */
void	 sg_runners_balance(struct sg_runners *, const struct sg_cfg *,
	    int64_t now, pid_t (*fork_fn)(void *), void *arg);
/* pid ended with status: 1 when it was a runner (told, unless stopping),
 * else 0. */
int	 sg_runners_ended(struct sg_runners *, pid_t, int status, int stopping);
/* sig to every runner alive; how many. */
int	 sg_runners_signal(const struct sg_runners *, int sig);

/* privs.c: become cfg's server.user when root. 0, or -1 logged. */
int	 sg_drop_privileges(const struct sg_cfg *);

/* privs.c: make the store's directory the service user's and bring its
 * schema up to date, in a child running as that user (so the master
 * never holds a SQLite connection, and root never owns -wal/-shm). */
int	 sg_prepare_store(const struct sg_cfg *, char *err, size_t errsz);

/* tune.c: executes the program again, once, with a deeper malloc cache
 * in GLIBC_TUNABLES; first thing in main. */
void	 sg_tune_malloc(char *argv[]);

/* master.c; workers: --workers MIN, MAX, kept across reloads ({0, 0}:
 * the config's). */
int	 sg_master_run(struct sg_cfg *, int listen_fd, const char *listen_spec,
	    const char *kernel_src, const int workers[2]);

/* conn.c: SIGALRM cuts the connection under a deadline. */
void	 sg_conn_init(void);
/* conn.c: from now on fd has secs to deliver what is read next; 0
 * disarms. */
void	 sg_conn_deadline(int fd, int secs);
/* conn.c: close r's connection at once when nothing is left to read on
 * it and it is not kept; 1 when closed (libfcgi then closes nothing). */
struct FCGX_Request;
int	 sg_conn_close_quiet(struct FCGX_Request *);

/* The parameters of a request every route needs (params.c): borrowed
 * from envp; NULL when not sent. */
struct sg_params {
	const char	*method, *uri, *authorization, *content_type;
	const char	*content_length, *if_none_match;
};
void	 sg_params_read(char **envp, struct sg_params *);

#endif
