/* Packet I/O APIs behind one ops table (fio's ioengines are the model).
 *
 * Roles (send, recv, client, server, nf, tester) only ever see this header, and the
 * option parser knows an api only through its ops: a new api is one file
 * defining its api_ops and one line in api.c's registry (and its lines in
 * meson.build), never a branch in a role or in opts.c.
 *
 * Options: struct api_conf is what every api is told (interface, burst, roles'
 * addresses, EAL arguments). What only one api understands is its own: it lists
 * those options in api_ops.opts, and their set() hooks write them into a block
 * of api_ops.own_size bytes that starts zeroed (so zero is each default). The
 * parser collects the options wherever they stand on the command line, and once
 * --api is known runs that api's hooks, so a bad value still costs one line and
 * exit 2 before anything is opened; an option the api does not have is refused.
 * open() then reads the block as a->own.
 *
 * Buffer ownership, the one rule every API keeps:
 *  - tx_alloc() hands the caller up to n writable frame buffers (len = capacity).
 *  - rx_burst() hands the caller up to n received frames.
 *  - tx_burst(pkts, n) takes ownership of pkts[0..k) and returns k; pkts[k..n)
 *    stay the caller's, to retry or to give back with release().
 *    A frame from rx_burst() of the same api may be passed to tx_burst() as is
 *    (server/nf turn packets around without a copy where the API allows it).
 *  - release() gives back buffers from tx_alloc() or rx_burst() that will not be sent.
 * Nothing here is shared between threads unless an API says so: the client role
 * uses one api from two threads, so APIs set `thread_safe_rxtx` when rx on one
 * thread and tx on another are safe (every API we ship: separate rx/tx queues). */
#ifndef CNFPERF_API_H
#define CNFPERF_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define API_MAX_BURST 1024
#define FRAME_MAX 9216           /* largest buffer any API must offer */

struct pkt {
	uint8_t *data;           /* start of the Ethernet header */
	uint16_t len;            /* frame length without FCS */
	void *priv;              /* API-private handle (mbuf, umem address, slot) */
};

/* What open() needs from every role; filled by main.c from the options. */
struct api_conf {
	const char *iface;       /* kernel interface (apis with needs_iface; udp: optional bind) */
	unsigned burst;          /* largest burst the role will use */
	unsigned frame_size;     /* largest frame the role will send, without FCS */
	bool rx, tx;             /* which directions the role needs */
	bool egress;             /* the second port of nf or tester (api options with egress
	                          * say which one) */
	bool rx_intr;            /* --poll interrupt: rx may wait for interrupts (rx_intr
	                          * below); a port that has none opens without (rx_fds: none) */
	bool rx_intr_required;   /* --poll interrupt: a port that has none fails open() */
	bool hold;               /* the peer stopped polling before close(): no drain wait */
	bool forwards;           /* the role sends received frames on as they came (nf): rx
	                          * finishes checksums a sending kernel left unfinished
	                          * (core/packet.h). No other role reads a UDP checksum: the
	                          * server computes its echoes' anew */
	/* udp only: the kernel builds the headers, so it needs the addresses. */
	uint32_t src_ip, dst_ip; /* network byte order */
	uint16_t sport, dport;   /* host byte order */
	unsigned flows;          /* udp: sport .. sport+flows-1 need sockets/sources */
	unsigned queue, queues;  /* --threads: this instance polls queue `queue` of the port's
	                          * `queues` (apis with `queues`; else 0 of 1) */
	int eal_argc;            /* dpdk: arguments after "--" */
	char **eal_argv;
};

/* One option of an api: --name [VALUE], or -letter. An api's option must not
 * share a name or letter with the common ones; two apis may share one (both
 * take --queue) if they spell it alike. */
struct api_opt {
	const char *name;        /* without "--"; NULL ends a table */
	char letter;             /* 0, or the short spelling ('m' for -m) */
	const char *value;       /* NULL for a flag, else the value's name in --help ("N") */
	const char *help;        /* one line for --help */
	/* Stores arg (NULL for a flag) in own, the api's block. false after writing
	 * into why what is wrong with arg; the parser prefixes the option's name. */
	bool (*set)(void *own, const char *arg, char *why, size_t whylen);
	bool egress;             /* names a second port: only nf and tester take it, and
	                          * open a second instance (api_conf.egress) for it */
};

struct api;

struct api_ops {
	const char *name;
	bool l2;                 /* frames include Ethernet/IP/UDP headers built by the engine */
	bool thread_safe_rxtx;   /* rx on one thread and tx on another is safe */
	bool tx_foreign;         /* tx_burst() also takes frames that another instance's
	                          * rx_burst() returned (nf between two ports without a
	                          * copy: dpdk mbufs); when false nf copies into tx_alloc()
	                          * buffers and releases the frames to their own instance */
	bool tx_keeps;           /* frames tx_burst() refused may be held across tx_alloc()
	                          * calls and sent later: what tx_alloc() hands out next
	                          * never aliases them (dpdk: mbufs). When false a refused
	                          * frame's buffer may be handed out again by the next
	                          * tx_alloc() (udp, raw: fixed slots), so it is released */
	bool needs_iface;        /* runs on a kernel interface: --iface is required */
	bool queues;             /* opens one instance per queue of a port (api_conf.queue), each
	                          * polled by a thread of its own: the kernel or the NIC spreads
	                          * the port's frames over them by flow (nf, send, recv --threads) */
	const struct api_opt *opts; /* its own options, or NULL */
	size_t own_size;         /* bytes of the block its options fill (see the top) */
	size_t priv_size;        /* bytes of per-instance state allocated for the API */
	/* 0, or -errno after printing one line on stderr saying what failed */
	int (*open)(struct api *a, const struct api_conf *conf);
	uint16_t (*tx_alloc)(struct api *a, struct pkt *pkts, uint16_t n);
	uint16_t (*tx_burst)(struct api *a, struct pkt *pkts, uint16_t n);
	uint16_t (*rx_burst)(struct api *a, struct pkt *pkts, uint16_t n);
	void (*release)(struct api *a, struct pkt *pkts, uint16_t n);
	/* --poll interrupt (core/poll.h). rx_fds: descriptors that become readable
	 * when rx may have frames (sockets: the sockets); fills up to max of them
	 * and returns how many it has (call with max 0 to count). rx_intr: for an
	 * api whose fds signal only when armed (dpdk: a queue's Rx interrupt),
	 * arms (on) or disarms them; its fds are then watched edge-triggered.
	 * Sockets are always non-blocking: waiting is the poller's. Both may be NULL. */
	int (*rx_fds)(struct api *a, int *fds, int max);
	void (*rx_intr)(struct api *a, bool on);
	/* optional: counters the API itself sees (ring drops, …); may be NULL.
	 * stats_port: they are the whole port's, every queue's (dpdk), so one
	 * instance of a port says them all; else each instance its own socket's. */
	void (*stats)(struct api *a, uint64_t *rx_dropped, uint64_t *tx_errors);
	bool stats_port;
	/* optional: a queue's thread, once pinned and before it polls (on), and
	 * once done (off): dpdk gives it an lcore id, so its pool keeps a cache
	 * for it (a thread without one takes every buffer from the shared ring) */
	void (*thread)(struct api *a, bool on);
	void (*close)(struct api *a);
};

struct api {
	const struct api_ops *ops;
	struct api_conf conf;
	const void *own;         /* its options' values (own_size bytes), owned by the caller of
	                          * api_open(), which keeps them until api_close() */
	void *priv;
	uint8_t mac[6];          /* the port's MAC if open() knows it; api_open() fills it
	                          * from conf.iface when open() left it zero */
};

/* Registry (api.c). */
const struct api_ops *api_find(const char *name);  /* compiled in, or NULL */
const struct api_ops *api_at(size_t i);            /* i-th compiled in, NULL past the last; the
                                                    * first is the default api */
bool api_known(const char *name);                  /* an api this engine may be built with */
const char *api_known_at(size_t i);                /* the i-th of those, built in or not; NULL past the last */
const char *api_names(void);     /* "udp raw mmap xdp dpdk" as compiled in */
/* own: the block its options filled (own_size bytes; NULL when own_size is 0) */
struct api *api_open(const char *name, const struct api_conf *conf, const void *own); /* NULL + message on stderr */
void api_close(struct api *a);

/* For set() hooks: s as a whole number from 0 to max, or false with why filled. */
bool api_opt_uint(const char *s, unsigned long max, unsigned long *out, char *why, size_t whylen);

/* rx_fds of an api with one descriptor: fd, or none when fd < 0 (no rx). */
int api_one_rx_fd(int fd, int *fds, int max);

/* Roles always exchange whole Ethernet/IPv4/UDP frames with an API, so they never
 * branch on it. For udp (l2 == false) the kernel owns the headers: on tx the API
 * sends what follows the UDP header from the socket bound to the frame's UDP
 * source port (one socket per flow) to the frame's destination; on rx it writes
 * synthetic headers (peer and local address/port from the socket) in front of
 * the payload. Roles skip MAC and checksum checks when !l2. */

#endif
