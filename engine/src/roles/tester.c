/* tester: both ends of a path in one process. It sends on port 1 as send
 * does and takes its own frames back on port 2 (or on port 1: a mirror in
 * the path) with probe.c, so its one-way latency reads one clock on both
 * ends. */
#include "probe.h"

/* Its own frames only: to the far end's address and port (--dst-ip, --dport),
 * flows told apart by their source port as recv does. */
int role_tester(struct run *tx)
{
	const struct conf *cf = tx->conf;
	struct api *rx = tx->api2 ? tx->api2 : tx->api;
	struct probe pr = { .api = rx, .flow_off = OFF_UDP_SPORT };

	pr.f = (struct rx_filter){ .ip = cf->dst_ip, .ip_more = cf->ip_span - 1, .port_lo = cf->dport,
				   .port_hi = cf->dport, .l2 = rx->ops->l2 };
	return probe_run(tx, &pr, "one_way");
}
