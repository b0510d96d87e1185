/* The return side of client and tester (probe.c): what comes back of what
 * the generator sent, measured on the generator's clock. */
#ifndef CNFPERF_PROBE_H
#define CNFPERF_PROBE_H

#include "roles.h"
#include "../core/rx.h"

struct probe {
	struct run rx;            /* the return timeline: owned by whoever calls probe_poll() */
	struct api *api;          /* where frames come back */
	unsigned flow_off;        /* what keys a flow's sequence: the client's own port (its
	                           * echoes' destination), or the tester's (their source) */
	struct gen_pub pub;       /* written by the generator */
	_Atomic uint64_t tx_stop; /* tick the generator stopped at, 0 while sending */
	struct rx_filter f;
	struct rx_known known;    /* the headers its frames repeat (rx.h) */
	uint64_t drain;           /* ticks: the longest the drain waits (--drain) */
	struct drain quiet;       /* the silences it is held to (core/drain.h) */
	bool thread;              /* probe_poll() is a loop of its own (--threads 2): it counts its
	                           * stalls; else it is the generator's idle time, whose loop does */
	bool told;                /* pub.back is set: the return side's own copy, so that its
	                           * bursts do not write the generator's line again */
	int err;
};

/* Runs the generator on tx and takes back into pr (api, flow_off and f set
 * by the role) until the drain after the last send is over (probe.c); prints ready and summary,
 * latency of kind lat_kind ("rtt", "one_way"). Returns the exit code. */
int probe_run(struct run *tx, struct probe *pr, const char *lat_kind);

#endif
