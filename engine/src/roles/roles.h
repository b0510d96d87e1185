/* Roles: what an endpoint does. Each takes a prepared run (api open, clock
 * calibrated, options checked), prints ready / interval / summary records and
 * returns the process exit code. Each is one file named after it and one
 * line in the table (roles.c), which says what it is (struct role). */
#ifndef CNFPERF_ROLES_H
#define CNFPERF_ROLES_H

#include <stdatomic.h>
#include <stddef.h>

#include "../core/packet.h"
#include "../core/run.h"

/* The table, in the order --help lists the roles: the i-th (NULL past the
 * last), or the one of that name (NULL: none). */
const struct role *role_at(size_t i);
const struct role *role_find(const char *name);

int role_send(struct run *r);
int role_recv(struct run *r);
int role_client(struct run *r);
int role_server(struct run *r);
int role_nf(struct run *r);
int role_tester(struct run *r);

/* The client's tx thread publishes its counters here for the rx thread's
 * interval records and the summary; single writer, relaxed stores. */
struct gen_pub {
	_Atomic uint64_t tx_packets, tx_bytes, tx_refused, tx_skipped, warmup_tx_packets;
	/* --settle: set by the return side once a frame of ours came back; the
	 * generator's wait for it, in ticks (written before its warm-up starts) */
	_Atomic bool back;
	uint64_t settle_ticks;
};

/* Called by the generator when no burst is due (instead of idling), with the
 * tick by which it needs the thread back, and after every burst with `until`
 * = now (take what is there, do not wait): a one-thread client receives its
 * echoes there, the tester what came through the path. */
struct gen_idle {
	void (*fn)(void *arg, uint64_t until);
	void *arg;
};

/* The paced generator (send.c) shared by send, client and tester; pub and idle may be
 * NULL. Without idle, it pauses between bursts with r->poll (poller_pause). */
int gen_run(struct run *r, struct gen_pub *pub, const struct gen_idle *idle);

void role_addresses(const struct run *r, struct frame_addr *fa);

/* A role that may poll a queue per thread (send, recv: --threads N), as its
 * parts: prepare a queue's run (its poller, its tracker), run its loop until
 * the run ends, free what prepare made. queues_run() runs them on the main
 * thread for one queue, else a thread per queue (queues.c); it prints the
 * ready record and the summary, and returns the exit code. */
struct queue_role {
	int (*prepare)(struct run *q);   /* 0, or 1 after a message */
	int (*loop)(struct run *q);      /* 0, or 1 after a message */
	void (*finish)(struct run *q);
};

int queues_run(struct run *r, const struct queue_role *qr);

#endif
