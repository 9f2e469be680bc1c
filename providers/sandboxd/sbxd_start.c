/*
 * sandboxd's start: what this host lets it do, found once (the uid
 * claims, cgroups and the firewall as root; whether bubblewrap makes our
 * sandbox here), the privileges it keeps, and the lines that say so.
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <unistd.h>

#include <linux/capability.h>

#include "sbxd.h"

/* Can bubblewrap make the sandbox we need here? Asked once at start, as
 * a sandbox uid would, with the seccomp filter every kernel gets. */
void
sg_sbxd_probe_bwrap(const struct sg_sandboxd_conf *conf,
    const struct sg_buf *seccomp, struct sg_sbxd_host *host)
{
	int status = -1;
	pid_t pid;

	if (access(SG_SBXD_BWRAP, X_OK) != 0) {
		snprintf(host->bwrap_why, sizeof(host->bwrap_why), "bubblewrap "
		    "(%s) is not installed; install it, or set isolation = "
		    "\"none\" on the tool (development only)", SG_SBXD_BWRAP);
		return;
	}
	if ((pid = fork()) == 0) {
		char *const envp[] = { NULL };
		int fd = sg_sbxd_memfd("seccomp", seccomp->p, seccomp->len);
		int devnull = open("/dev/null", O_RDWR);
		char fdnum[16];

		dup2(devnull, 1);
		dup2(devnull, 2);
		snprintf(fdnum, sizeof(fdnum), "%d", fd);
		if (conf->per_sandbox_uids && sg_sbxd_become(conf->uid_base) == -1)
			_exit(1);
		execle(SG_SBXD_BWRAP, SG_SBXD_BWRAP, "--unshare-user",
		    "--unshare-pid", "--unshare-net", "--disable-userns",
		    "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
		    "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin",
		    "/bin", "--seccomp", fdnum, "/usr/bin/true", (char *)NULL,
		    envp);
		_exit(1);
	}
	while (pid > 0 && waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	host->bwrap_ok = pid > 0 && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0;
	if (!host->bwrap_ok)
		snprintf(host->bwrap_why, sizeof(host->bwrap_why), "bubblewrap "
		    "cannot make a sandbox on this machine (user namespaces "
		    "disabled, or a setuid bwrap?); set isolation = \"none\" on "
		    "the tool only for development");
}

/*
 * Started as root: keep CAP_SETUID, CAP_SETGID (to start each kernel as
 * its sandbox's uid) and CAP_KILL (to end kernels of other uids) in the
 * permitted set only, drop every other capability from the bounding set,
 * and become the gateway's user.
 */
int
sg_sbxd_drop_privileges(const struct sg_sandboxd_conf *conf)
{
	gid_t gid = conf->owner_gid;
	int c;

	if (!conf->per_sandbox_uids)
		return 0;
	for (c = 0; c <= 63; c++)
		if (c != CAP_SETUID && c != CAP_SETGID && c != CAP_KILL &&
		    prctl(PR_CAPBSET_DROP, (unsigned long)c) == -1 &&
		    errno != EINVAL)
			return -1;
	if (prctl(PR_SET_KEEPCAPS, 1L) == -1 || setgroups(1, &gid) == -1 ||
	    setgid(gid) == -1 || setuid(conf->owner) == -1 ||
	    sg_sbxd_caps_lower() == -1 || prctl(PR_SET_KEEPCAPS, 0L) == -1)
		return -1;
	/* Responders run as this user too: they must not ptrace us. */
	return prctl(PR_SET_DUMPABLE, 0L);
}

/* What needs root happens first, before any file of the gateway's user
 * is touched: the uid claims, cgroups and the firewall. */
void
sg_sbxd_root_steps(const struct sg_sandboxd_conf *conf,
    struct sg_sbxd_host *host)
{
	char why[256];

	if (conf->per_sandbox_uids && (host->uids =
	    sg_sbxd_uids_open(SG_SBXD_UIDS_DIR, why, sizeof(why))) == -1) {
		snprintf(host->uids_why, sizeof(host->uids_why), "local "
		    "sandboxes cannot get a uid of their own: %s", why);
		fprintf(stderr, "sandgate: sandboxd: %s\n", host->uids_why);
	}
	host->cg.mountinfo = host->cg.self_cgroup = NULL;
	sg_cg_setup(&host->cg, conf->dir, conf->owner, conf->owner_gid);
	if (!conf->wants_net)
		snprintf(host->net_why, sizeof(host->net_why), "no tool asked "
		    "for it");
	else if (!conf->per_sandbox_uids)
		snprintf(host->net_why, sizeof(host->net_why), "internet access "
		    "for local sandboxes needs sandgate started as root (a uid "
		    "of its own per sandbox, and a firewall keeping them off the "
		    "host)");
	else if (sg_sbxd_net_usable(host->net_why, sizeof(host->net_why)) &&
	    sg_sbxd_firewall(conf->uid_base, SG_SBXD_MAX, host->net_why,
	    sizeof(host->net_why)) == 0)
		host->net_ok = 1;
}

void
sg_sbxd_say_start(const struct sg_sandboxd_conf *conf,
    const struct sg_sbxd_host *host)
{
	fprintf(stderr, "sandgate: sandboxd: %s; %s\n", host->bwrap_ok ?
	    "bubblewrap works" : host->bwrap_why, conf->per_sandbox_uids ?
	    "one uid per sandbox" : "not root: kernels run as the gateway's "
	    "user, so rlimits are shared");
	fprintf(stderr, "sandgate: sandboxd: limits: %s\n",
	    sg_cg_describe(&host->cg));
	if (conf->wants_net)
		fprintf(stderr, "sandgate: sandboxd: internet access: %s\n",
		    host->net_ok ? "slirp4netns, host and private ranges "
		    "firewalled" : host->net_why);
}
