/*
 * Internet for a local sandbox without the host's network: the sandbox
 * keeps its own network namespace and slirp4netns, running as the
 * sandbox's own uid, carries its traffic from user space. A firewall
 * table of sandgate's own (nftables, installed by root at start) rejects
 * every socket of the sandbox uids towards the host's own addresses,
 * loopback and the private ranges, so what slirp4netns connects to is the
 * internet and the host's DNS resolvers, nothing else.
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sbxd.h"

#define NET_WAIT_MS 5000	/* bubblewrap's info, slirp4netns ready */

/*
 * Only sockets of the sandbox uids jump to the rejecting chain: packets
 * the kernel sends on its own (a TCP reset, an ICMP error) have no socket
 * and must pass untouched.
 */
static const char rules_head[] =
    "table inet sandgate\n"
    "delete table inet sandgate\n"
    "table inet sandgate {\n"
    " chain sandboxes {\n";

static const char rules_tail[] =
    "  fib daddr type { local, broadcast, multicast, anycast } reject\n"
    "  ip daddr { 0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, "
    "169.254.0.0/16, 172.16.0.0/12, 192.0.0.0/24, 192.168.0.0/16, "
    "198.18.0.0/15, 224.0.0.0/3 } reject\n"
    "  ip6 daddr { ::/127, ::ffff:0:0/96, 64:ff9b:1::/48, fc00::/7, "
    "fe80::/10, ff00::/8 } reject\n"
    " }\n"
    " chain output {\n"
    "  type filter hook output priority 0; policy accept;\n";

/* "ip daddr X udp dport 53 accept" lines for the host's resolvers: they
 * are often on loopback or a private address, and sandboxes need DNS. */
static void
resolvers(struct sg_buf *b)
{
	char line[512], addr[128], rule[256];
	unsigned char bin[16];
	FILE *f;

	if ((f = fopen("/etc/resolv.conf", "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		int v6;

		if (sscanf(line, " nameserver %127s", addr) != 1)
			continue;
		v6 = strchr(addr, ':') != NULL;
		if (inet_pton(v6 ? AF_INET6 : AF_INET, addr, bin) != 1)
			continue;
		snprintf(rule, sizeof(rule), "  %s daddr %s meta l4proto { tcp, "
		    "udp } th dport 53 accept\n", v6 ? "ip6" : "ip", addr);
		sg_buf_add(b, rule, strlen(rule));
	}
	fclose(f);
}

/* Run nft -f - on text; 0 when it exits 0. */
static int
nft(const char *text, size_t len)
{
	int in[2], status = -1;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) == -1)
		return -1;
	if ((pid = fork()) == 0) {
		char *const argv[] = { SG_SBXD_NFT, "-f", "-", NULL };
		char *const envp[] = { NULL };
		int devnull = open("/dev/null", O_WRONLY);

		dup2(in[0], 0);
		dup2(devnull, 1);
		execve(SG_SBXD_NFT, argv, envp);
		_exit(127);
	}
	close(in[0]);
	if (pid > 0 && write(in[1], text, len) != (ssize_t)len)
		kill(pid, SIGKILL);
	close(in[1]);
	while (pid > 0 && waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int
sg_sbxd_firewall(unsigned uid_base, unsigned n, char *why, size_t whysz)
{
	struct sg_buf b = { 0 };
	char line[128];
	int rc;

	if (access(SG_SBXD_NFT, X_OK) != 0) {
		snprintf(why, whysz, "nftables (%s) is not installed", SG_SBXD_NFT);
		return -1;
	}
	sg_buf_add(&b, rules_head, strlen(rules_head));
	resolvers(&b);
	sg_buf_add(&b, rules_tail, strlen(rules_tail));
	snprintf(line, sizeof(line), "  meta skuid %u-%u jump sandboxes\n }\n}\n",
	    uid_base, uid_base + n - 1);
	sg_buf_add(&b, line, strlen(line));
	rc = b.p != NULL ? nft(b.p, b.len) : -1;
	free(b.p);
	if (rc == -1)
		snprintf(why, whysz, "cannot install sandgate's nftables table "
		    "(inet sandgate): nft failed");
	return rc;
}

int
sg_sbxd_net_usable(char *why, size_t whysz)
{
	struct stat st;

	if (access(SG_SBXD_SLIRP, X_OK) != 0) {
		snprintf(why, whysz, "slirp4netns (%s) is not installed",
		    SG_SBXD_SLIRP);
		return 0;
	}
	/* slirp4netns runs as the sandbox's uid: the device must be open to
	 * everyone, as Debian's udev rules make it. */
	if (stat("/dev/net/tun", &st) == -1 || !S_ISCHR(st.st_mode) ||
	    (st.st_mode & 0006) != 0006) {
		snprintf(why, whysz, "/dev/net/tun is missing or not mode 0666");
		return 0;
	}
	return 1;
}

/* bubblewrap's "child-pid": the sandbox's first process. */
static pid_t
sandbox_pid(int fd)
{
	int64_t until = sg_now_ms() + NET_WAIT_MS;
	char buf[1024];
	size_t len = 0;
	ssize_t n;
	json_t *j;
	pid_t pid = -1;

	while (len < sizeof(buf) - 1 && memchr(buf, '}', len) == NULL &&
	    sg_sbxd_readable(fd, until - sg_now_ms()) &&
	    (n = sg_sbxd_read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	if ((j = json_loadb(buf, len, JSON_DISABLE_EOF_CHECK, NULL)) != NULL)
		pid = (pid_t)json_integer_value(json_object_get(j, "child-pid"));
	json_decref(j);
	return pid > 0 ? pid : -1;
}

/*
 * The sandbox is held by bubblewrap (--block-fd) until slirp4netns has
 * its tap device up in the sandbox's namespace; then it is let go.
 */
int
sg_sbxd_net_start(const struct sg_sbxd_spec *s, int info, int block,
    pid_t *net_pid, int *net_exit)
{
	int ready[2], ex[2];
	pid_t sbx, pid;
	char c;

	if ((sbx = sandbox_pid(info)) == -1 ||
	    pipe2(ready, O_CLOEXEC) == -1)
		return -1;
	if (pipe2(ex, O_CLOEXEC) == -1) {
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	if ((pid = fork()) == 0)
		sg_sbxd_exec_net(s, sbx, ready[1], ex[0]);
	close(ready[1]);
	close(ex[0]);
	*net_pid = pid > 0 ? pid : 0;
	*net_exit = ex[1];
	if (pid <= 0 || !sg_sbxd_readable(ready[0], NET_WAIT_MS) ||
	    sg_sbxd_read(ready[0], &c, 1) != 1) {
		close(ready[0]);
		return -1;
	}
	close(ready[0]);
	return write(block, "1", 1) == 1 ? 0 : -1;
}
