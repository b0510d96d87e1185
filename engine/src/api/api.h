/* Packet I/O APIs behind one ops table (fio's ioengines are the model).
 *
 * Roles (send, recv, client, server, fwd) only ever see this header: adding an
 * API is adding one file and one line in api.c, never a branch in a role.
 *
 * Buffer ownership, the one rule every API keeps:
 *  - tx_alloc() hands the caller up to n writable frame buffers (len = capacity).
 *  - rx_burst() hands the caller up to n received frames.
 *  - tx_burst(pkts, n) takes ownership of pkts[0..k) and returns k; pkts[k..n)
 *    stay the caller's, to retry or to give back with release().
 *    A frame from rx_burst() of the same api may be passed to tx_burst() as is
 *    (server/fwd turn packets around without a copy where the API allows it).
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

/* What open() needs; filled by main.c from the options. */
struct api_conf {
	const char *iface;       /* kernel interface (raw, mmap, xdp; udp: optional bind) */
	int port;                /* dpdk: port id */
	int queue;               /* NIC queue (xdp, dpdk) */
	unsigned burst;          /* largest burst the role will use */
	unsigned frame_size;     /* largest frame the role will send, without FCS */
	bool mmsg;               /* udp/raw: sendmmsg/recvmmsg */
	bool blocking;           /* udp/raw: blocking sockets */
	bool rx, tx;             /* which directions the role needs */
	const char *xdp_mode;    /* xdp: "auto" | "copy" | "zerocopy" | "skb" */
	bool hold;               /* the peer stopped polling before close(): no drain wait */
	/* udp only: the kernel builds the headers, so it needs the addresses. */
	uint32_t src_ip, dst_ip; /* network byte order */
	uint16_t sport, dport;   /* host byte order */
	unsigned flows;          /* udp: sport .. sport+flows-1 need sockets/sources */
	int eal_argc;            /* dpdk: arguments after "--" */
	char **eal_argv;
};

struct api;

struct api_ops {
	const char *name;
	bool l2;                 /* frames include Ethernet/IP/UDP headers built by the engine */
	bool thread_safe_rxtx;   /* rx on one thread and tx on another is safe */
	bool tx_foreign;         /* tx_burst() also takes frames that another instance's
	                          * rx_burst() returned (fwd between two ports without a
	                          * copy: dpdk mbufs); when false fwd copies into tx_alloc()
	                          * buffers and releases the frames to their own instance */
	size_t priv_size;        /* bytes of per-instance state allocated for the API */
	/* 0, or -errno after printing one line on stderr saying what failed */
	int (*open)(struct api *a, const struct api_conf *conf);
	uint16_t (*tx_alloc)(struct api *a, struct pkt *pkts, uint16_t n);
	uint16_t (*tx_burst)(struct api *a, struct pkt *pkts, uint16_t n);
	uint16_t (*rx_burst)(struct api *a, struct pkt *pkts, uint16_t n);
	void (*release)(struct api *a, struct pkt *pkts, uint16_t n);
	/* optional: counters the API itself sees (ring drops, …); may be NULL */
	void (*stats)(struct api *a, uint64_t *rx_dropped, uint64_t *tx_errors);
	void (*close)(struct api *a);
};

struct api {
	const struct api_ops *ops;
	struct api_conf conf;
	void *priv;
	uint8_t mac[6];          /* the port's MAC if open() knows it; api_open() fills it
	                          * from conf.iface when open() left it zero */
};

/* Registry (api.c). */
const struct api_ops *api_find(const char *name);
const char *api_names(void);     /* "udp raw mmap xdp dpdk" as compiled in */
struct api *api_open(const char *name, const struct api_conf *conf); /* NULL + message on stderr */
void api_close(struct api *a);

/* Roles always exchange whole Ethernet/IPv4/UDP frames with an API, so they never
 * branch on it. For udp (l2 == false) the kernel owns the headers: on tx the API
 * sends what follows the UDP header from the socket bound to the frame's UDP
 * source port (one socket per flow) to the frame's destination; on rx it writes
 * synthetic headers (peer and local address/port from the socket) in front of
 * the payload. Roles skip MAC and checksum checks when !l2. */

#endif
