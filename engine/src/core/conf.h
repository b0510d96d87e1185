/* What a run is asked to do: the role, its ports and its traffic. The option
 * parser (opts.c) fills it; core/ and the roles read it and never see how it
 * was spelled, so they do not depend on the command line. */
#ifndef CNFPERF_CONF_H
#define CNFPERF_CONF_H

#include <stdbool.h>
#include <stdint.h>

#include "nf.h"
#include "poll.h"

struct run;

/* nf, send, recv --threads: at most this many, a queue of each port each */
#define QUEUES_MAX 16

/* A role: what an endpoint does, and what the rest of the engine needs to
 * know of it. Code asks these properties, never a role's name, so a new role
 * is its file and one line in the table (roles/roles.c). */
struct role {
	const char *name;
	int (*run)(struct run *r);  /* the role itself; returns the exit code */
	bool generates;    /* a paced generator (roles/send.c): --dst-ip required, --flows,
	                    * offered_pps and warmup_tx_packets in its summary */
	bool end;          /* one end of the measured traffic: it sends frames from its port's
	                    * MAC or takes frames sent to it, so a port without one needs --src-mac */
	bool rx, tx;       /* receives on port 1 (with a second port, see path), transmits */
	bool latency;      /* measures latency: keeps histograms */
	bool two_ports;    /* may take a second port (--iface2, an api's egress option) */
	bool forwards;     /* sends on frames others made: has an nf kind, routes and a next hop
	                    * per port, needs an api that sees Ethernet frames */
	bool path;         /* holds both ends of a path: port 2 takes back what port 1 sent, and
	                    * a udp one always has it (a socket bound to the far end's address) */
	bool threads;      /* may receive on a thread of its own (--threads, --rx-cpu) */
	bool queues;       /* polls a thread per queue of its ports (--threads, a --cpu each) */
	bool peer_stamps;  /* checks timestamps another engine stamped, on its own clock
	                    * unless told they are another host's (--clock other) */
};

/* A token bucket from the command line (--policer, --shaper, --conformance):
 * frames per second, its size in frames, a shaper's queue in frames. */
struct conf_bucket {
	double rate;
	unsigned size, queue;
	bool given;
};

/* A MAC address from the command line, and whether it was given. */
struct conf_mac {
	uint8_t addr[6];
	bool given;
};

struct conf {
	const struct role *role;
	const char *api;
	void *api_own;             /* the api's own options as its hooks set them (api.h) */
	bool egress;               /* one of them names a second port (nf, tester): a second instance */
	enum poll_mode poll;       /* --poll: what rx loops do without frames, senders between bursts */
	const char *iface, *iface2;
	struct conf_mac src_mac, dst_mac;
	struct conf_mac src_mac2, dst_mac2;  /* nf: the same for frames leaving the second port */
	const struct nf_kind *nf;  /* nf: what it does to a frame (--nf); NULL: not given */
	struct nf_routes routes;   /* nf l3: --route, longest prefix first */
	uint32_t src_ip, dst_ip;   /* network byte order, 0 = not given */
	uint16_t sport, dport;
	double rate;               /* pps, 0 = as fast as possible */
	unsigned onoff;            /* generators: frames back to back per on period, 0 = steady */
	struct conf_bucket policer, shaper;  /* nf: before it forwards */
	struct conf_bucket conformance;      /* receivers: the contract what they got is held to */
	unsigned size;             /* RFC 2544 frame size, with FCS */
	unsigned burst;
	bool touch, quiet;
	bool hold;                 /* keep the ports open after the summary until released */
	bool keep;                 /* and run the next trial a line on stdin asks for (run_next) */
	bool clock_other;          /* --clock other: the peer stamps frames on another host's clock */
	double duration, warmup, drain, interval;
	double settle;             /* client, tester: at most this long for the path to carry a frame */
	unsigned flows;
	unsigned stall_us;          /* a gap longer than this between two polls is a stall (core/stall.h) */
	unsigned ip_span;           /* flows' destinations: --dst-ip + flow % ip_span; receivers accept as many */
	int cpu, rx_cpu;           /* -1 = not pinned */
	int cpus[QUEUES_MAX];   /* --cpu's list (cpus[0] = cpu): the queues' threads in turn */
	unsigned ncpus;
	unsigned threads;          /* client: 1 or 2 once parsed; nf, send, recv: 1 to QUEUES_MAX;
	                            * 0 for the others */
	int eal_argc;
	char **eal_argv;
};

#endif
