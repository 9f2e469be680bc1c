/*
 * The seccomp filter of every local kernel, built once with libseccomp
 * and handed to bubblewrap (--seccomp) as a BPF program. Everything is
 * allowed but the kernel's attack surface no Python cell needs: io_uring,
 * bpf, userfaultfd, perf, keyrings, ptrace, module and mount calls,
 * namespaces. io_uring and clone3 answer ENOSYS, so libraries and libc
 * fall back to what they used before those existed; the rest EPERM.
 * Other ABIs (i386, x32) are killed by libseccomp's bad-arch action.
 */
#include <sys/mman.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <seccomp.h>

#include "sbxd.h"

static const char *const enosys[] = {
	"io_uring_setup", "io_uring_enter", "io_uring_register", "clone3",
	NULL,
};

static const char *const eperm[] = {
	"bpf", "userfaultfd", "perf_event_open",
	"keyctl", "add_key", "request_key",
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp",
	"pidfd_getfd",
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module",
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen",
	"fsconfig", "fsmount", "fspick", "mount_setattr",
	"setns", "unshare",
	"open_by_handle_at", "name_to_handle_at",
	"swapon", "swapoff", "reboot", "syslog", "acct", "quotactl",
	"quotactl_fd", "lookup_dcookie", "fanotify_init",
	"iopl", "ioperm", "uselib", "vhangup",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"sethostname", "setdomainname",
	NULL,
};

/* Add a rule per name this architecture knows; others are skipped. */
static int
deny(scmp_filter_ctx ctx, const char *const names[], uint32_t action)
{
	size_t i;
	int nr;

	for (i = 0; names[i] != NULL; i++) {
		if ((nr = seccomp_syscall_resolve_name(names[i])) == __NR_SCMP_ERROR)
			continue;
		if (seccomp_rule_add(ctx, action, nr, 0) != 0)
			return -1;
	}
	return 0;
}

int
sg_sbxd_seccomp(struct sg_buf *bpf, char *why, size_t whysz)
{
	scmp_filter_ctx ctx;
	char chunk[4096];
	ssize_t n;
	int fd = -1, rc = -1;

	memset(bpf, 0, sizeof(*bpf));
	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL) {
		snprintf(why, whysz, "libseccomp: cannot make a filter");
		return -1;
	}
	if (deny(ctx, enosys, SCMP_ACT_ERRNO(ENOSYS)) == -1 ||
	    deny(ctx, eperm, SCMP_ACT_ERRNO(EPERM)) == -1) {
		snprintf(why, whysz, "libseccomp: cannot add a rule");
		goto out;
	}
	if ((fd = memfd_create("sandgate-seccomp", MFD_CLOEXEC)) == -1 ||
	    seccomp_export_bpf(ctx, fd) != 0 || lseek(fd, 0, SEEK_SET) == -1) {
		snprintf(why, whysz, "libseccomp: cannot export the filter");
		goto out;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		if (sg_buf_add(bpf, chunk, (size_t)n) == -1)
			break;
	rc = n == 0 && bpf->len > 0 ? 0 : -1;
	if (rc == -1)
		snprintf(why, whysz, "libseccomp: cannot read the filter back");
out:
	if (fd != -1)
		close(fd);
	seccomp_release(ctx);
	return rc;
}
