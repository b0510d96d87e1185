/* client: sends timestamped frames to a server and takes its echoes back
 * (round-trip time); the return side is probe.c's, in the generator's idle
 * time (--threads 1) or on a receive thread of its own (--threads 2). */
#include "probe.h"

#include <stdio.h>

int role_client(struct run *tx)
{
	const struct conf *cf = tx->conf;
	struct probe pr = { .api = tx->api, .flow_off = OFF_UDP_DPORT };

	if (cf->threads == 2 && !tx->api->ops->thread_safe_rxtx) {
		fprintf(stderr, "cnfperf-engine: --api %s: cannot receive and send from two threads (use --threads 1)\n",
			cf->api);
		return 1;
	}
	/* the echo of flow sport+i comes back to port sport+i */
	pr.f = (struct rx_filter){ .ip = cf->src_ip, .port_lo = cf->sport,
				   .port_hi = (uint16_t)(cf->sport + cf->flows - 1), .l2 = tx->api->ops->l2 };
	return probe_run(tx, &pr, "rtt");
}
