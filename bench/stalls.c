/*
 * The machine's own stalls, the baseline under the loop's p99. One thread
 * reads the monotonic clock in a loop on the core it is pinned to (taskset)
 * for SECS seconds and counts the gaps between two reads: time the thread
 * did not run although it never slept (interrupts, another process, the
 * hypervisor's scheduling of the virtual CPU). Prints one line:
 *   "gaps over 0.5 ms N, over 1 ms N, over 2 ms N, longest M µs, lost P %"
 * With -k it spins for SECS seconds and counts nothing: under SCHED_IDLE
 * (`chrt -i 0`) it only runs when nothing else wants the core, and keeps
 * a virtual CPU that would halt when idle from halting (on this machine
 * kind the guest's cpuidle halts at once, and the next wake-up of that
 * CPU goes through the host).
 *   stalls SECS | stalls -k SECS
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

int
main(int argc, char **argv)
{
	volatile unsigned long spins = 0;
	double secs, t, last, end, gap, longest = 0, lost = 0;
	long over[3] = { 0, 0, 0 };
	int keep = argc == 3 && strcmp(argv[1], "-k") == 0;

	if (argc != 2 && !keep) {
		fprintf(stderr, "usage: stalls SECS | stalls -k SECS\n");
		return 2;
	}
	secs = atof(argv[argc - 1]);
	last = now_us();
	end = last + secs * 1e6;
	/* Bounded, so that a spinner its script lost still ends. */
	if (keep) {
		while (now_us() < end)
			for (int i = 0; i < 100000; i++)
				spins++;
		return 0;
	}
	while ((t = now_us()) < end) {
		gap = t - last;
		last = t;
		if (gap > longest)
			longest = gap;
		if (gap <= 500)
			continue;
		lost += gap;
		over[0]++;
		over[1] += gap > 1000;
		over[2] += gap > 2000;
	}
	printf("gaps over 0.5 ms %ld, over 1 ms %ld, over 2 ms %ld, longest "
	    "%.0f µs, lost %.2f %%\n", over[0], over[1], over[2], longest,
	    100 * lost / (secs * 1e6));
	return 0;
}
