/*
 * sandboxd, the local provider's supervisor: the parent of every local
 * kernel, a child of the master (fcgi/master.c starts it). Its clients,
 * the local provider's ops, are providers/local.c.
 */
#ifndef SG_SANDBOXD_H
#define SG_SANDBOXD_H

struct sg_sandboxd_conf {
	const char	*dir;		/* runtime dir: sandboxd.sock, kernels/ */
	const char	*kernel_src;	/* holds kernel.py and its modules */
	unsigned	 owner, owner_gid; /* the gateway user: owns the sockets */
	int		 per_sandbox_uids; /* started as root */
	unsigned	 uid_base;	/* first uid of the reserved range */
	int		 wants_net;	/* a local tool allows the internet */
};
void		 sg_sandboxd_run(const struct sg_sandboxd_conf *)
		    __attribute__((noreturn));

#endif
