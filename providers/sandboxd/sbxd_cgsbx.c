/*
 * A sandbox's own cgroup (see sbxd_cgroup.c for the hierarchy and the
 * gateway's group it sits in): made with its limits, entered by its
 * kernel, killed and removed as a whole; and every process in this
 * gateway's sandbox groups, for the sweep of what a dead sandboxd left.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sbxd.h"

#define PERIOD_US	100000
#define KILL_ROUNDS	300	/* of 10 ms: how long a kill may take */

static int
each_dir(const struct sg_cg *cg, const char *id, char out[][600], int *n)
{
	int i, j;

	*n = 0;
	for (i = 0; i < SG_CG_NCTL; i++) {
		if (cg->dir[i][0] == '\0')
			continue;
		for (j = 0; j < *n; j++)
			if (strncmp(out[j], cg->dir[i], strlen(cg->dir[i])) == 0)
				break;
		if (j == *n && sg_cg_join(out[*n], 600, cg->dir[i], id) == 0)
			(*n)++;
	}
	return *n;
}

/* Write value into the sandbox's file in ctl's hierarchy. optional: a
 * file this kernel lacks (swap accounting off) is fine. */
static int
limit(const struct sg_cg *cg, int ctl, const char *id, const char *file,
    const char *value, int optional)
{
	char d[600];

	if (sg_cg_join(d, sizeof(d), cg->dir[ctl], id) == -1)
		return -1;
	return sg_cg_put(d, file, value) == -1 &&
	    !(optional && errno == ENOENT) ? -1 : 0;
}

/* The sandbox's limits, in v1's files or v2's. No swap: memsw (memory +
 * swap) is set to the memory limit, swap.max to 0. */
static int
limits(const struct sg_cg *cg, const char *id, long long bytes,
    int max_procs, int cpus)
{
	int v2 = cg->mode == SG_CG_V2;
	char mem[32], procs[16], quota[48];

	snprintf(mem, sizeof(mem), "%lld", bytes);
	snprintf(procs, sizeof(procs), "%d", max_procs);
	if (v2)
		snprintf(quota, sizeof(quota), "%lld %d",
		    (long long)cpus * PERIOD_US, PERIOD_US);
	else
		snprintf(quota, sizeof(quota), "%lld", (long long)cpus * PERIOD_US);
	if (limit(cg, SG_CG_MEMORY, id, v2 ? "memory.max" :
	    "memory.limit_in_bytes", mem, 0) == -1 ||
	    limit(cg, SG_CG_MEMORY, id, v2 ? "memory.swap.max" :
	    "memory.memsw.limit_in_bytes", v2 ? "0" : mem, 1) == -1 ||
	    limit(cg, SG_CG_PIDS, id, "pids.max", procs, 0) == -1)
		return -1;
	if (cg->dir[SG_CG_CPU][0] == '\0')
		return 0;
	if (v2)
		return limit(cg, SG_CG_CPU, id, "cpu.max", quota, 0);
	return limit(cg, SG_CG_CPU, id, "cpu.cfs_period_us", "100000", 0) ==
	    -1 || limit(cg, SG_CG_CPU, id, "cpu.cfs_quota_us", quota, 0) == -1 ?
	    -1 : 0;
}

int
sg_cg_create(const struct sg_cg *cg, const char *id, int memory_mb,
    int max_procs, int cpus, char *why, size_t whysz)
{
	char dirs[SG_CG_NCTL][600];
	long long bytes = (long long)memory_mb << 20;
	int i, n, rc;

	each_dir(cg, id, dirs, &n);
	for (i = 0; i < n; i++)
		if (mkdir(dirs[i], 0755) == -1 && errno != EEXIST)
			break;
	rc = i < n ? -1 : limits(cg, id, bytes, max_procs, cpus);
	if (rc == -1) {
		snprintf(why, whysz, "cannot set the sandbox's cgroup limits: %s",
		    strerror(errno));
		sg_cg_destroy(cg, id);
	}
	return rc;
}

int
sg_cg_enter(const struct sg_cg *cg, const char *id)
{
	char dirs[SG_CG_NCTL][600], pid[24];
	int i, n;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	each_dir(cg, id, dirs, &n);
	for (i = 0; i < n; i++)
		if (sg_cg_put(dirs[i], "cgroup.procs", pid) == -1)
			return -1;
	return 0;
}

/* SIGKILL what dir holds; 1 when it held anything. */
static int
kill_listed(const char *dir)
{
	char buf[65536], *p, *end;
	int any = 0;

	if (sg_cg_get(dir, "cgroup.procs", buf, sizeof(buf)) < 0)
		return 0;
	for (p = buf; (end = strchr(p, '\n')) != NULL; p = end + 1) {
		*end = '\0';
		if (atoi(p) > 0 && kill(atoi(p), SIGKILL) == 0)
			any = 1;
	}
	return any;
}

void
sg_cg_destroy(const struct sg_cg *cg, const char *id)
{
	char dirs[SG_CG_NCTL][600], buf[16];
	int i, n, round;

	if (cg->mode == SG_CG_NONE || each_dir(cg, id, dirs, &n) == 0)
		return;
	/* v2 (5.14+) kills the whole group at once; otherwise the pids
	 * hierarchy lists every process of the sandbox. Forks racing the
	 * kill are bounded by pids.max: a few rounds catch them all. */
	if (cg->mode == SG_CG_V2)
		sg_cg_put(dirs[0], "cgroup.kill", "1");
	for (round = 0; round < KILL_ROUNDS; round++) {
		for (i = 0; i < n; i++)
			kill_listed(dirs[i]);
		for (i = 0; i < n; i++)
			if (sg_cg_get(dirs[i], "cgroup.procs", buf,
			    sizeof(buf)) > 0)
				break;
		if (i == n)
			break;
		usleep(10000);
	}
	sg_cg_remove(cg, id);
}

void
sg_cg_remove(const struct sg_cg *cg, const char *id)
{
	char dirs[SG_CG_NCTL][600];
	int i, n, round;

	if (cg->mode == SG_CG_NONE || each_dir(cg, id, dirs, &n) == 0)
		return;
	for (i = 0; i < n; i++)
		for (round = 0; round < 50 && rmdir(dirs[i]) == -1 &&
		    errno == EBUSY; round++)
			usleep(10000);
}

int
sg_cg_each_proc(const struct sg_cg *cg, int (*fn)(const char *, pid_t, void *),
    void *arg)
{
	const char *top = cg->dir[SG_CG_PIDS];
	char dir[600], buf[65536], *p, *end;
	struct dirent *de;
	int sum = 0;
	DIR *d;

	if (cg->mode == SG_CG_NONE || (d = opendir(top)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "cntr_", 5) != 0 ||
		    sg_cg_join(dir, sizeof(dir), top, de->d_name) == -1 ||
		    sg_cg_get(dir, "cgroup.procs", buf, sizeof(buf)) <= 0)
			continue;
		for (p = buf; (end = strchr(p, '\n')) != NULL; p = end + 1)
			if (atoi(p) > 0)
				sum += fn(de->d_name, (pid_t)atoi(p), arg);
	}
	closedir(d);
	return sum;
}
