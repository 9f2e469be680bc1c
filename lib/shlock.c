#include <sys/syscall.h>

#include <linux/futex.h>

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "shlock.h"
#include "util.h"

#define NAP_MS	5	/* a waiter looks again this often */

void
sg_shlock_take(struct sg_shlock *l)
{
	int free_word, seen, last = 0;
	int64_t since = 0, now;
	struct timespec ts = { 0, NAP_MS * 1000000L };

	for (;;) {
		free_word = 0;
		if (__atomic_compare_exchange_n(&l->word, &free_word, sg_pid(),
		    0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		seen = free_word;
		now = sg_now_ms();
		if (seen != last) {
			last = seen;
			since = now;
		} else if ((now - since >= SG_SHLOCK_STALE_MS ||
		    (now - since >= NAP_MS && (seen <= 0 || (kill(seen, 0) ==
		    -1 && errno == ESRCH)))) && __atomic_compare_exchange_n(
		    &l->word, &seen, sg_pid(), 0, __ATOMIC_ACQUIRE,
		    __ATOMIC_RELAXED))
			return;
		__atomic_fetch_add(&l->waiters, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &l->word, FUTEX_WAIT, last, &ts, NULL, 0);
		__atomic_fetch_sub(&l->waiters, 1, __ATOMIC_SEQ_CST);
	}
}

void
sg_shlock_give(struct sg_shlock *l)
{
	__atomic_store_n(&l->word, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&l->waiters, __ATOMIC_SEQ_CST) != 0)
		syscall(SYS_futex, &l->word, FUTEX_WAKE, 1, NULL, NULL, 0);
}
