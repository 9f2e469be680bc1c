/*
 * sandboxd's private parts (its sbxd_*.c), shared with sandboxd.c
 * and nothing else: the kernel's files held in memory, the seccomp
 * filter, cgroups, user-mode networking, the exec of one kernel, the
 * sandboxes' uids; and its runtime directory and sockets, whose
 * addressing local.c (the responders' side) uses too.
 */
#ifndef SG_SBXD_H
#define SG_SBXD_H

#include <sys/types.h>
#include <sys/un.h>

#include "sandboxd.h"
#include "../../lib/util.h"

#define SG_SBXD_BWRAP	"/usr/bin/bwrap"
#define SG_SBXD_PYTHON	"/usr/bin/python3"
#define SG_SBXD_SLIRP	"/usr/bin/slirp4netns"
#define SG_SBXD_NFT	"/usr/sbin/nft"
#define SG_SBXD_MAX	1024	/* kernels at once; uids uid_base + 0..MAX-1 */

/* ---- sbxd_files.c: what a kernel's /sandgate holds, read once ---- */
struct sg_sbxd_file {
	char	*dest;		/* path inside the sandbox */
	char	*data;
	size_t	 len;
};
struct sg_sbxd_files {
	struct sg_sbxd_file f[16];
	size_t	 n;
	const char *script;	/* what python runs: kernel.py, or its .pyc */
};
/* Reads the kernel's files (kernel.py, sg_cells.py, sg_ipython.py,
 * sg_mpl.py) from src, compiles them (their .pyc are kept too), builds
 * matplotlib's font list
 * in rundir/mpl (rundir is sandboxd's runtime directory, open as
 * rundir_fd; see sbxd_files.c for why there) and keeps it too. 0, or -1
 * with why. */
int	 sg_sbxd_files_load(struct sg_sbxd_files *, const char *src,
	    const char *rundir, int rundir_fd, char *why, size_t whysz);
void	 sg_sbxd_files_free(struct sg_sbxd_files *);
/* A new memfd (not close-on-exec) holding buf, positioned at 0, so a
 * child can hand bubblewrap data no path on the host holds. -1 on error. */
int	 sg_sbxd_memfd(const char *name, const void *buf, size_t len);
/* Wait until fd is readable or ms pass: 1 or 0. A signal (SIGCHLD of a
 * sandbox ending) is no reason to give up: these retry on EINTR. */
int	 sg_sbxd_readable(int fd, int64_t ms);
ssize_t	 sg_sbxd_read(int fd, void *buf, size_t len);
/* All of p to fd: 0, or -1 (errno kept). An interrupted write is tried
 * again, SG_SBXD_EINTR_MAX times in a row at most: cgroup v1's memory
 * files answer EINTR whenever any signal is pending (a kernel's SIGCHLD
 * is enough), and a bound keeps a storm of signals from holding us. */
#define SG_SBXD_EINTR_MAX	100
int	 sg_sbxd_write_all(int fd, const char *p, size_t len);
/* Remove name in at and, if it is a directory, what it holds (depth
 * levels down at most), never following a link. */
void	 sg_sbxd_rmtree(int at, const char *name, int depth);

/* ---- sbxd_sock.c: the runtime directory and its Unix sockets ---- */
/* The address of socket name in the directory open as dirfd, whatever
 * the length of that directory's path: /proc/self/fd/N/name, usable while
 * dirfd is open. 0, or -1 (EINVAL, ENAMETOOLONG). */
int	 sg_sbxd_sun(struct sockaddr_un *, int dirfd, const char *name);
/* The same for the socket at path: its directory is opened (O_PATH,
 * close-on-exec). That fd, which the caller closes once connected (or
 * once libcurl is done with sun_path), or -1 with errno. */
int	 sg_sbxd_sun_path(struct sockaddr_un *, const char *path);
/* A listening socket name in dirfd (a directory of ours: what is there
 * is replaced), the gateway user's alone (mode 0600), close-on-exec. -1
 * with errno. */
int	 sg_sbxd_listen(int dirfd, const char *name, int backlog);
/*
 * Several gateways (masters) may share one store, and so one runtime
 * directory beside it: each sandboxd has an instance directory of its
 * own there, base/INST (INST: "m" and its master's pid), holding its
 * socket, its kernels' sockets and records (sbxd_orphans.c) in kernels/
 * and a lock it holds for its life, so anyone can tell a live instance
 * from one a killed sandboxd left. Stale entries older than this are
 * removed by the next start, or by a live sandboxd's periodic sweep.
 */
#define SG_SBXD_STALE_S	60

struct sg_sbxd_dirs {
	int	 base;		/* base, the runtime directory */
	int	 dir;		/* base/INST */
	int	 kernels;	/* base/INST/kernels */
	int	 lock;		/* base/INST/lock, locked: keep it open */
};
struct sg_sbxd_sweep;

/* As the gateway's user: base and base/inst and its kernels/, ours (mode
 * 0700; a link or a file in their place is replaced), the instance's lock
 * taken, what a previous sandboxd of this instance left in kernels/ and
 * what dead instances left in base removed (sg_sbxd_dead). Records in
 * those kernels/ go to sweep first (NULL: none). Close-on-exec fds in
 * dirs. 0, or -1 with why. */
int	 sg_sbxd_rundir(const char *base, const char *inst,
	    struct sg_sbxd_dirs *dirs, struct sg_sbxd_sweep *sweep, char *why,
	    size_t whysz);
/* Each instance in the directory open as base but self that no live
 * sandboxd holds: the records in its kernels/ to sweep (NULL: none); then
 * removed once it is SG_SBXD_STALE_S old. */
void	 sg_sbxd_dead(int base, const char *self, struct sg_sbxd_sweep *sweep);
/* 1 when instance name in the directory open as base is held by a live
 * sandboxd, else 0. */
int	 sg_sbxd_alive(int base, const char *name);
/* The name of a live instance in base into name[namesz]: 0, or -1. */
int	 sg_sbxd_live_instance(int base, char *name, size_t namesz);

/* ---- sbxd_seccomp.c ---- */
/* The seccomp filter every kernel runs under, as a BPF program for
 * bubblewrap's --seccomp. 0, or -1 with why. */
int	 sg_sbxd_seccomp(struct sg_buf *bpf, char *why, size_t whysz);

/* ---- sbxd_cgroup.c: the hierarchy and the gateway's group in it ---- */
enum sg_cg_mode {
	SG_CG_NONE = 0,
	SG_CG_V1,	/* controllers on their own hierarchies */
	SG_CG_V2,	/* the unified hierarchy, delegated to us */
};
enum { SG_CG_MEMORY, SG_CG_PIDS, SG_CG_CPU, SG_CG_NCTL };

struct sg_cg {
	enum sg_cg_mode mode;
	/* Where the sandboxes' parent groups are: for v2 all three are
	 * one directory; for v1 one per controller ("" when the cpu
	 * controller cannot be had). */
	char	 dir[SG_CG_NCTL][512];
	char	 why[512];	/* SG_CG_NONE: why */
	/* For tests: a fake /sys/fs/cgroup and /proc/self files. */
	const char *mountinfo, *self_cgroup;
};
/*
 * Find a usable cgroup hierarchy and make this gateway's group in it
 * (kept across restarts; what a dead sandboxd left in it is removed): as
 * root, created and given to owner (only inside directories root owns,
 * never following a link); as a user, inside its own cgroup when that is
 * delegated (writable). On v1 the group is named after owner and home
 * (the local sandboxes' directory), so gateways of other users or stores
 * on the host have their own. Leaves mode NONE with why when nothing
 * works.
 */
void	 sg_cg_setup(struct sg_cg *, const char *home, uid_t owner,
	    gid_t group);
const char *sg_cg_describe(const struct sg_cg *);
/* The group files, never following a link: out = a/b (b NULL: a), 0 or
 * -1 when it does not fit; write text to dir/file, 0 or -1 (errno set);
 * read dir/file into buf (NUL-ended), its bytes or -1. */
int	 sg_cg_join(char *out, size_t sz, const char *a, const char *b);
int	 sg_cg_put(const char *dir, const char *file, const char *text);
ssize_t	 sg_cg_get(const char *dir, const char *file, char *buf, size_t sz);

/* ---- sbxd_cgsbx.c: one cgroup per sandbox ---- */
/* The sandbox's group with its limits. 0, or -1 with why. */
int	 sg_cg_create(const struct sg_cg *, const char *id, int memory_mb,
	    int max_procs, int cpus, char *why, size_t whysz);
/* Move the calling process into the sandbox's group. */
int	 sg_cg_enter(const struct sg_cg *, const char *id);
/* SIGKILL every process in the sandbox's group until it is empty (at most
 * a few seconds); the caller holds CAP_KILL. Then the group is removed. */
void	 sg_cg_destroy(const struct sg_cg *, const char *id);
/* Remove the sandbox's group, given a moment for its last processes to
 * go; one still busy stays. */
void	 sg_cg_remove(const struct sg_cg *, const char *id);
/* fn(id, pid, arg) for each process of each sandbox's group, as
 * cgroup.procs lists them (v1: in the pids hierarchy, which holds every
 * process). The sum of what fn returns. */
int	 sg_cg_each_proc(const struct sg_cg *,
	    int (*fn)(const char *id, pid_t pid, void *arg), void *arg);

/* ---- sbxd_start.c: what this host lets sandboxd do ---- */
struct sg_sbxd_host {
	int		 bwrap_ok;	/* bubblewrap makes our sandbox */
	char		 bwrap_why[256];
	int		 net_ok;	/* slirp4netns and the firewall */
	char		 net_why[256];
	int		 uids;		/* root: the host's uid claims; -1 */
	char		 uids_why[400];
	struct sg_cg	 cg;
};
/* As root, before any file of the gateway's user is touched: the uid
 * claims, cgroups and the firewall, into host (uids -1 until then). */
void	 sg_sbxd_root_steps(const struct sg_sandboxd_conf *,
	    struct sg_sbxd_host *host);
/* Started as root: keep CAP_SETUID, CAP_SETGID and CAP_KILL, permitted
 * only, and become the gateway's user. 0, or -1 with errno. */
int	 sg_sbxd_drop_privileges(const struct sg_sandboxd_conf *);
/* Whether bubblewrap makes our sandbox here, with the seccomp filter
 * every kernel gets (bpf), as a sandbox uid would: into host. */
void	 sg_sbxd_probe_bwrap(const struct sg_sandboxd_conf *,
	    const struct sg_buf *bpf, struct sg_sbxd_host *host);
/* The start's log lines: isolation, limits, internet access. */
void	 sg_sbxd_say_start(const struct sg_sandboxd_conf *,
	    const struct sg_sbxd_host *host);

/* ---- sbxd_net.c: user-mode networking for internet sandboxes ---- */
/* As root: the firewall that keeps every sandbox uid off the host's own
 * addresses, loopback and private ranges (DNS to the host's resolvers
 * excepted). 0, or -1 with why. */
int	 sg_sbxd_firewall(unsigned uid_base, unsigned n, char *why,
	    size_t whysz);
/* Whether slirp4netns and /dev/net/tun can be used here. */
int	 sg_sbxd_net_usable(char *why, size_t whysz);
struct sg_sbxd_spec;
/* For the kernel just forked, held by bubblewrap's --block-fd: read its
 * first process from bubblewrap's --info-fd, start slirp4netns for it
 * (*net_pid; closing *net_exit ends it), wait until it is up, let the
 * sandbox go. 0, or -1 (the caller kills what there is). */
int	 sg_sbxd_net_start(const struct sg_sbxd_spec *, int info_fd,
	    int block_fd, pid_t *net_pid, int *net_exit);

/* ---- sbxd_exec.c: one kernel ---- */
struct sg_sbxd_spec {
	const char	*id;
	int		 lfd;		/* the kernel's listening socket */
	int		 memory_mb, disk_mb, max_procs, cpus, lifetime;
	int		 net, bwrap;
	int		 cgroup;	/* enter the sandbox's group */
	int		 info_fd, block_fd; /* net: bwrap's info and block */
	uid_t		 uid;		/* the sandbox's uid; 0: ours */
	int		 extra_nproc;	/* RLIMIT_NPROC on top (shared uid) */
	const struct sg_cg	   *cg;
	const struct sg_sbxd_files *files;
	const struct sg_buf	   *seccomp;
	const char		   *kernel_src;	/* isolation "none" */
	const char		   *kernel;	/* auto, ipython or python */
};
/* In a forked child: limits, cgroup, fds, user, then bubblewrap (or the
 * bare kernel) with an empty environment. Never returns. */
void	 sg_sbxd_exec(const struct sg_sbxd_spec *) __attribute__((noreturn));
/* In a forked child: slirp4netns for the sandbox whose first process is
 * pid, as the sandbox's user, in its group. Never returns. */
void	 sg_sbxd_exec_net(const struct sg_sbxd_spec *, pid_t pid, int ready_fd,
	    int exit_fd) __attribute__((noreturn));
/* The caps sandboxd keeps (CAP_SETUID, CAP_SETGID, CAP_KILL), raised
 * into the effective set only for the step that needs them: 0 or -1. */
int	 sg_sbxd_caps_raise(unsigned mask);
int	 sg_sbxd_caps_lower(void);
/* Become uid (group uid, no supplementary groups); our caps are gone. */
int	 sg_sbxd_become(uid_t uid);

/* ---- sbxd_uids.c: a uid per sandbox, across the host's gateways ---- */
#define SG_SBXD_UIDS_DIR "/run/sandgate"
/* As root, before dropping privileges: the file in which every gateway
 * on the host claims its sandboxes' uids, dir/uids.lock, made when
 * missing (dir too, mode 0755). Refused when dir or the file is a link,
 * is not ours (root's), or others may change dir or open the file. A
 * close-on-exec fd to keep open, or -1 with why. */
int	 sg_sbxd_uids_open(const char *dir, char *why, size_t whysz);
/* Claim uid in that file (fd): 1 ours until released or until we die, 0
 * someone else's, -1 error. Our own claims are ours again: no conflict. */
int	 sg_sbxd_uid_claim(int fd, uid_t uid);
void	 sg_sbxd_uid_release(int fd, uid_t uid);
/* A slot for a new sandbox, claimed in fd: not taken[] (one byte per
 * slot: our own sandboxes), and no process runs base + slot. The search
 * starts at a random slot. The slot, or -1 when none is free. */
int	 sg_sbxd_uid_pick(int fd, unsigned base, const unsigned char *taken);
/* One pass over /proc: how many processes (threads included, as
 * RLIMIT_NPROC counts) uid runs, and which uids base .. base + MAX - 1
 * any process runs (busy may be NULL). */
int	 sg_sbxd_scan_uids(uid_t uid, unsigned base, unsigned char *busy);

/* ---- sbxd_orphans.c: the sandboxes a dead sandboxd left running ---- */
/* In kernels/ (open as kernels), the record of sandbox id's first process,
 * pid, made before that process may run: ID.pid, "PID START\n" (START its
 * start time, /proc/PID/stat's field 22). 0, or -1 with errno. */
int	 sg_sbxd_record(int kernels, const char *id, pid_t pid);

#define SG_SBXD_SWEEP_GROUPS 32	/* emptied groups removed in one sweep */

struct sg_sbxd_sweep {
	int		 uids;		/* the uid claims; -1: kill nothing */
	unsigned	 base;
	const unsigned char *taken;	/* borrowed: our own sandboxes' slots */
	unsigned char	 held[SG_SBXD_MAX];	/* claimed for this sweep */
	unsigned char	 hit[SG_SBXD_MAX];	/* a process of it killed */
	char		 groups[SG_SBXD_SWEEP_GROUPS][48];	/* emptied */
	int		 ngroups;
};
/*
 * A sweep for leftover sandboxes: processes whose every uid is one sandbox
 * uid, base + slot, that is not one of ours (taken) and that no live
 * sandboxd claims (claimed for the sweep, so none can start a sandbox
 * under it meanwhile). Only those are killed, whatever a record says.
 */
void	 sg_sbxd_sweep_begin(struct sg_sbxd_sweep *, int uids, unsigned base,
	    const unsigned char *taken);
/* The records in kernels/ (a dead sandboxd's; untrusted: its user may
 * write there): each process they name that still runs, started when the
 * record says, killed if a leftover. */
void	 sg_sbxd_sweep_records(struct sg_sbxd_sweep *, int kernels);
/* The leftovers in cg's sandbox groups killed until none is left (a few
 * seconds at most) and their groups removed; the claims released. How
 * many sandboxes (uids) the whole sweep killed processes of. */
int	 sg_sbxd_sweep_end(struct sg_sbxd_sweep *, const struct sg_cg *);

#endif
