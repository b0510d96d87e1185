/* What a run is asked to do: the role, its ports and its traffic. The option
 * parser (opts.c) fills it; core/ and the roles read it and never see how it
 * was spelled, so they do not depend on the command line. */
#ifndef CNFPERF_CONF_H
#define CNFPERF_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "nf.h"
#include "poll.h"

enum role { ROLE_SEND, ROLE_RECV, ROLE_CLIENT, ROLE_SERVER, ROLE_NF, ROLE_TESTER };

struct conf {
	enum role role;
	const char *role_name;
	const char *api;
	void *api_own;             /* the api's own options as its hooks set them (api.h) */
	bool egress;               /* one of them names a second port (nf, tester): a second instance */
	enum poll_mode poll;       /* --poll: what rx loops do without frames, senders between bursts */
	const char *iface, *iface2;
	uint8_t src_mac[6], dst_mac[6];
	bool has_src_mac, has_dst_mac;
	uint8_t src_mac2[6], dst_mac2[6];  /* nf: the same for frames leaving the second port */
	bool has_src_mac2, has_dst_mac2;
	enum nf_kind nf;           /* nf: what it does to a frame (--nf) */
	bool has_nf;
	struct nf_routes routes;   /* nf l3: --route, longest prefix first */
	uint32_t src_ip, dst_ip;   /* network byte order, 0 = not given */
	uint16_t sport, dport;
	double rate;               /* pps, 0 = as fast as possible */
	unsigned size;             /* RFC 2544 frame size, with FCS */
	unsigned burst;
	bool touch, quiet;
	bool hold;                 /* keep the ports open after the summary until released */
	double duration, warmup, drain, interval;
	unsigned flows;
	int cpu, rx_cpu;           /* -1 = not pinned */
	unsigned threads;          /* client: 1 or 2 once parsed; 0 for the other roles */
	int eal_argc;
	char **eal_argv;
};

#endif
