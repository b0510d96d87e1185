/* Command line of cnfperf-engine: parsed and validated here, before anything
 * is opened, so a mistake costs one line on stderr and exit code 2. Kept
 * apart from main.c so the unit tests can call it without running a role. */
#ifndef CNFPERF_OPTS_H
#define CNFPERF_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/nf.h"
#include "core/poll.h"

enum role { ROLE_SEND, ROLE_RECV, ROLE_CLIENT, ROLE_SERVER, ROLE_NF, ROLE_TESTER };

struct opts {
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

enum opts_result { OPTS_RUN, OPTS_HELP, OPTS_VERSION, OPTS_IDLE, OPTS_ERROR };

/* Fills o; on OPTS_ERROR, err holds one line (no newline) naming the option.
 * Later options override earlier ones. argv is not modified. After OPTS_RUN
 * the caller frees o->api_own. */
enum opts_result opts_parse(int argc, char **argv, struct opts *o, char *err, size_t errlen);
void opts_usage(void *stream);

#endif
