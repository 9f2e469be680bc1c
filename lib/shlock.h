#ifndef SG_SHLOCK_H
#define SG_SHLOCK_H

/*
 * A lock in memory shared with processes that may lie: the holder's pid
 * in a word, taken with an exchange. Every responder can write the pages
 * it shares with the others (one could be made to scribble on them), so
 * nothing a word holds may stall the others for good: a holder that is
 * gone loses the lock at once, and one seen holding it past
 * SG_SHLOCK_STALE_MS loses it then. Only for what takes microseconds
 * under it. A robust pthread mutex is not: garbage naming a live process
 * as its owner (or a kind that never unlocks) keeps it locked for good.
 *
 * All zero is unlocked.
 */
struct sg_shlock {
	int	word;		/* the holder's pid; 0: free */
	int	waiters;	/* how many sleep on word */
};

#define SG_SHLOCK_STALE_MS	1000

void	 sg_shlock_take(struct sg_shlock *);
void	 sg_shlock_give(struct sg_shlock *);

#endif
