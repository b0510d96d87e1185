/* dpdk: any DPDK poll-mode driver through ethdev (virtio_user, vhost, memif,
 * af_packet, af_xdp, a PCI VF), one rx and one tx queue per instance: --threads
 * T (nf, send, recv) opens a port T times, queue 0's instance sets the port up
 * with T queues (from --queue on) and starts it, the others poll one of them
 * each, on threads registered with the EAL (dpdk_thread).
 *
 * Frames are mbufs: tx_alloc takes them from the port's pool, pkt.priv is the
 * mbuf, release frees it, and an rx mbuf may be handed to tx_burst as is. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "api.h"
#include "../core/packet.h"
#include "dpdk_listen.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_branch_prediction.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#define POOL_CACHE 256
#define MAX_POOLS 8
/* A sender without a link can only refuse packets, so it waits longer than a
 * role that merely answers what arrives. */
#define LINK_WAIT_SENDER_MS 10000
#define LINK_WAIT_OTHER_MS 5000
#define PEER_SETTLE_MS 100
#define PEER_DRAIN_MS 200
#define WIRE_DRAIN_MS 10
/* A frame larger than the default 2 KB data room gets an mbuf of whole pages
 * holding it plus FRAME_SLACK (virtio's header and a VLAN tag count against
 * the room). The af_packet PMD needs a data room as large as its TPACKET slot,
 * and the orchestrator sizes that slot by the same rule (dpdk_args.py). */
#define FRAME_SLACK 128
#define JUMBO_UNIT 4096

/* Its own options (api_ops.opts); zero is each default. */
struct dpdk_own {
	unsigned port, queue;
	unsigned port2;          /* the second port of nf or tester, when has_port2 */
	bool has_port2;
};

struct dpdk {
	uint16_t port;
	uint16_t queue;
	int intr_fd;             /* --poll other than busy: the queue's Rx event fd, else -1 */
	struct rte_mempool *pool;
	uint16_t capacity;       /* bytes a fresh mbuf offers after its headroom */
	unsigned drain_ms;       /* how long close() lets the peer take what we queued */
	bool queue_only;         /* a queue past an nf's first: the port is its first queue's
	                          * instance's to set up, start and close */
	bool finish_csum;        /* a PMD on a kernel interface, and a role that sends frames
	                          * on (nf): finish checksums the sending kernel left
	                          * unfinished (see rx) */
	char name[RTE_ETH_NAME_MAX_LEN];
};

/* The EAL is one per process and rte_eal_init() may succeed only once, yet
 * `nf` (and `tester`) open two ports as two api instances: the first open
 * initialises the EAL, the last close cleans it up. Pools outlive their own
 * port until then, because nf moves mbufs of one port's pool into the other port's tx ring.
 * Only the main thread opens and closes apis, so no lock is needed. */
static struct {
	int users;
	bool tried;
	struct rte_mempool *pools[MAX_POOLS];
	unsigned npools;
} eal;

/* ---- the EAL, once per process */

/* Our stdout carries JSON lines only, but the EAL prints its usage and some
 * PMDs print with printf. While DPDK sets up or tears down, fd 1 points to
 * stderr; the hot path never prints. */
static int stdout_to_stderr(void)
{
	int saved;

	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	if (saved >= 0)
		dup2(STDERR_FILENO, STDOUT_FILENO);
	return saved;
}

static void stdout_back(int saved)
{
	if (saved < 0)
		return;
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
}


static bool lcore_option(const char *arg)
{
	static const char *const opts[] = { "-l", "-c", "--lcores", "--main-lcore", "--master-lcore" };
	for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
		size_t n = strlen(opts[i]);
		if (strncmp(arg, opts[i], n) == 0 && (n == 2 || arg[n] == '\0' || arg[n] == '='))
			return true;
	}
	return false;
}

static long free_hugepages(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	long n = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "HugePages_Free: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

static const char *eal_hint(int argc, char **argv)
{
	bool no_huge = false;
	for (int i = 0; i < argc; i++)
		no_huge |= strcmp(argv[i], "--no-huge") == 0;
	if (geteuid() != 0)
		return " (the EAL needs root, or CAP_SYS_ADMIN and CAP_IPC_LOCK)";
	if (!no_huge && free_hugepages() == 0)
		return " (no free hugepages: reserve some, e.g. echo 64 > /proc/sys/vm/nr_hugepages, or pass --no-huge)";
	return "";
}

static int eal_init(const struct api_conf *conf)
{
	int argc = 0;
	char **argv = calloc((size_t)conf->eal_argc + 2, sizeof *argv);
	bool pinned_by_eal = false;
	cpu_set_t before;
	int ret;

	if (!argv) {
		fprintf(stderr, "dpdk: out of memory\n");
		return -1;
	}
	/* rte_eal_init() permutes its argv and keeps pointers into it. */
	argv[argc++] = "cnfperf-engine";
	for (int i = 0; i < conf->eal_argc; i++) {
		if (i == 0 && strcmp(conf->eal_argv[i], "--") == 0)
			continue;
		pinned_by_eal |= lcore_option(conf->eal_argv[i]);
		argv[argc++] = conf->eal_argv[i];
	}
	/* two or more listening virtio-user ports: probed side by side below */
	bool listeners = listen_take(&argc, argv) > 0;
	/* DPDK 22.11 logs to stdout by default, and stdout carries our JSON.
	 * Its start-up INFO lines would bury our own errors; --log-level after
	 * -- still overrides this. */
	rte_openlog_stream(stderr);
	rte_log_set_global_level(RTE_LOG_WARNING);
	pthread_getaffinity_np(pthread_self(), sizeof before, &before);

	/* vhost-user and memif talk to their peer over a unix socket without
	 * MSG_NOSIGNAL: a peer that exits first must not kill us with SIGPIPE
	 * while we close. */
	struct sigaction old;
	if (sigaction(SIGPIPE, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);

	eal.tried = true;
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		int err = rte_errno;
		/* The EAL may have made /var/run/dpdk/PREFIX before failing. If the
		 * prefix is in use by another process, its files keep rmdir from
		 * touching it. */
		if (*rte_eal_get_runtime_dir())
			rmdir(rte_eal_get_runtime_dir());
		fprintf(stderr, "dpdk: EAL initialisation failed: %s%s\n", rte_strerror(err), eal_hint(argc, argv));
		return -1;
	}
	/* Without -l/--lcores the EAL pins the main thread to the first allowed
	 * core, which would silently undo the engine's --cpu; keep ours then. */
	if (!pinned_by_eal)
		pthread_setaffinity_np(pthread_self(), sizeof before, &before);
	if (listeners && listen_probe() != 0)
		return -1;
	return 0;
}

/* The telemetry socket outlives rte_eal_cleanup() and, with --in-memory,
 * is all that keeps the runtime directory (/var/run/dpdk/PREFIX) alive. The
 * prefix is this process's own, so nobody else can be using either. */
static void remove_runtime_dir(const char *dir)
{
	static const char *const sockets[] = { "dpdk_telemetry.v2", "telemetry" };
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof sockets / sizeof *sockets; i++) {
		if (snprintf(path, sizeof path, "%s/%s", dir, sockets[i]) < (int)sizeof path)
			unlink(path);
	}
	rmdir(dir);              /* fails, as it should, if other files remain */
}

static void eal_release(void)
{
	char dir[PATH_MAX];

	if (--eal.users > 0)
		return;
	for (unsigned i = 0; i < eal.npools; i++)
		rte_mempool_free(eal.pools[i]);
	eal.npools = 0;
	bool have_dir = snprintf(dir, sizeof dir, "%s", rte_eal_get_runtime_dir()) < (int)sizeof dir;
	rte_eal_cleanup();
	if (have_dir)
		remove_runtime_dir(dir);
}

/* ---- links: when a port is worth using, and when it is empty */

enum link_kind { LINK_WIRE, LINK_PEER_LISTENER, LINK_PEER_CONNECTOR };

/* Two ways a link comes up: the PMD reports a wire (PCI, af_packet, af_xdp:
 * at once or within seconds), or a peer process joins over a unix socket
 * (vhost-user, memif) and one side listens for the other. */
static enum link_kind link_kind(const struct rte_eth_dev_info *info)
{
	const struct rte_devargs *da = info->device ? rte_dev_devargs(info->device) : NULL;
	const char *args = da && da->args ? da->args : "";
	const char *drv = info->driver_name ? info->driver_name : "";
	bool listener;

	if (strcmp(drv, "net_vhost") == 0)
		listener = !strstr(args, "client=1");
	else if (strcmp(drv, "net_memif") == 0)
		listener = !strstr(args, "role=client") && !strstr(args, "role=slave");
	else if (strcmp(drv, "net_virtio_user") == 0)
		listener = strstr(args, "server=1") != NULL;
	else
		return LINK_WIRE;
	return listener ? LINK_PEER_LISTENER : LINK_PEER_CONNECTOR;
}

static void sleep_ms(unsigned ms)
{
	nanosleep(&(struct timespec){ .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 }, NULL);
}

/* A listener that receives must not wait: its peer is started only once it
 * is ready. Nor must the second port of nf or tester (opened second), whose
 * peer also waits for it to be ready. Everyone else waits for a peer that comes
 * on its own (OVS connecting, a receiver started first), a sender longest.
 * A peer link reports up when the handshake is done, but the far side still
 * enables its rings one by one (vhost) or has not reached its poll loop: the
 * first bursts would be refused or dropped, so give it a moment. */
static void wait_link(struct dpdk *d, enum link_kind kind, const struct api_conf *conf)
{
	int wait_ms = conf->rx ? LINK_WAIT_OTHER_MS : LINK_WAIT_SENDER_MS;
	struct rte_eth_link link;

	if (kind == LINK_PEER_LISTENER && (conf->rx || eal.users > 1))
		return;
	for (int waited = 0;; waited += 10) {
		memset(&link, 0, sizeof link);
		if (rte_eth_link_get_nowait(d->port, &link) != 0)
			return;          /* no link report at all counts as up */
		if (link.link_status == RTE_ETH_LINK_UP) {
			if (kind != LINK_WIRE)
				sleep_ms(PEER_SETTLE_MS);
			return;
		}
		if (waited >= wait_ms)
			break;
		sleep_ms(10);
	}
	fprintf(stderr, "dpdk: port %u (%s) link still down after %d s, going on\n",
		d->port, d->name, wait_ms / 1000);
}

/* Frames a PMD has accepted may still wait in a ring for the other side:
 * virtio_user and memif leave them in shared memory for the peer process,
 * which may be descheduled for a while on a busy host, and stopping the port
 * drops them. vhost copies into the peer's ring inside tx_burst; a NIC
 * empties its ring in microseconds. These PMDs cannot tell when their ring
 * is empty (no tx_descriptor_status, no tx_done_cleanup), so close() waits. */
static unsigned drain_ms(const struct rte_eth_dev_info *info, enum link_kind kind)
{
	if (kind == LINK_WIRE)
		return WIRE_DRAIN_MS;
	return strcmp(info->driver_name, "net_vhost") == 0 ? 0 : PEER_DRAIN_MS;
}

/* ---- port set-up */

static unsigned pool_size(unsigned nq, unsigned nb_rxd, unsigned nb_txd, unsigned burst)
{
	/* Every rx descriptor holds an mbuf, a full tx ring holds the rest, the
	 * role holds a few bursts and the lcore cache may keep 1.5x its size. */
	unsigned need = nq * (nb_rxd + nb_txd) + 4 * burst + POOL_CACHE * 3 / 2 + POOL_CACHE;
	unsigned n = 1024;
	while (n - 1 < need)
		n <<= 1;
	return n - 1;            /* 2^k - 1 is the mempool's best size */
}

/* A port's pool is named after it: the port's other queues find it (queue_open). */
struct pool_name {
	char s[RTE_MEMPOOL_NAMESIZE];
};

static struct pool_name pool_name(uint16_t port)
{
	struct pool_name n;

	snprintf(n.s, sizeof n.s, "cnfp_mbuf_%u", port);
	return n;
}

/* What an instance takes of its port, set up: its name, MAC, and whether its
 * frames come from a kernel (finish_csum). */
static void port_facts(struct api *a, struct dpdk *d, const struct rte_eth_dev_info *info,
		       const struct api_conf *conf)
{
	struct rte_ether_addr mac;

	if (rte_eth_macaddr_get(d->port, &mac) == 0)
		memcpy(a->mac, mac.addr_bytes, sizeof a->mac);
	d->finish_csum = conf->forwards && (strcmp(info->driver_name, "net_af_packet") == 0 ||
					    strcmp(info->driver_name, "net_af_xdp") == 0);
}

static int setup_queues(struct dpdk *d, const struct rte_eth_dev_info *info, const struct api_conf *conf)
{
	uint16_t nq = (uint16_t)(d->queue + (conf->queues ? conf->queues : 1));
	uint16_t nb_rxd = info->default_rxportconf.ring_size ? info->default_rxportconf.ring_size
							     : RTE_ETH_DEV_FALLBACK_RX_RINGSIZE;
	uint16_t nb_txd = info->default_txportconf.ring_size ? info->default_txportconf.ring_size
							     : RTE_ETH_DEV_FALLBACK_TX_RINGSIZE;
	struct rte_eth_conf eth = { 0 };
	unsigned room = RTE_MBUF_DEFAULT_DATAROOM;
	unsigned n;
	int ret;

	if (nq > info->max_rx_queues || nq > info->max_tx_queues) {
		fprintf(stderr, "dpdk: port %u (%s) has %u rx / %u tx queues, queue %u does not exist%s\n",
			d->port, d->name, info->max_rx_queues, info->max_tx_queues, nq - 1,
			nq > 1 ? " (--threads: a queue per thread; a vdev says how many it has, e.g. qpairs=)" : "");
		return -1;
	}
	if (conf->frame_size > RTE_ETHER_MAX_LEN - RTE_ETHER_CRC_LEN) {
		uint32_t mtu = conf->frame_size - RTE_ETHER_HDR_LEN;
		/* memif and af_packet report 1518-byte frames yet carry what their
		 * ring buffers hold (the orchestrator sizes those): ask only where
		 * the PMD can say yes. */
		if (mtu <= info->max_mtu && conf->frame_size + RTE_ETHER_CRC_LEN <= info->max_rx_pktlen)
			eth.rxmode.mtu = mtu;
		/* one mbuf per frame: rx never scatters */
		if (conf->frame_size + FRAME_SLACK > room)
			room = RTE_ALIGN_CEIL(conf->frame_size + FRAME_SLACK, JUMBO_UNIT);
	}
	/* DPDK 22.11's virtio_user registers a link-state interrupt callback on
	 * its own when it (re)connects as a vhost-user server, and on close
	 * frees the interrupt handle and closes its socket without taking the
	 * callback back unless link-state interrupts were asked for; the EAL's
	 * interrupt thread then meets the closed socket the next time it
	 * rebuilds its epoll set (rte_eal_cleanup makes it) and panics ("Error
	 * adding fd ... Bad file descriptor", exit 134). Asking for them makes
	 * dev_stop unregister the callback before the handle goes. */
	if (strcmp(info->driver_name, "net_virtio_user") == 0 && info->dev_flags &&
	    (*info->dev_flags & RTE_ETH_DEV_INTR_LSC))
		eth.intr_conf.lsc = 1;
	/* Rx interrupts only when asked for: a PMD sets up event fds for them */
	eth.intr_conf.rxq = conf->rx_intr;
	/* RSS over the queues where the PMD has it (a NIC, af_xdp); a vdev that
	 * spreads frames itself (af_packet's fanout) or a peer that picks the
	 * queue (memif, vhost-user) has none to ask for */
	if (nq > 1 && info->flow_type_rss_offloads) {
		eth.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		eth.rx_adv_conf.rss_conf.rss_hf = info->flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
	}
	ret = rte_eth_dev_configure(d->port, nq, nq, &eth);
	if (ret == 0)
		ret = rte_eth_dev_adjust_nb_rx_tx_desc(d->port, &nb_rxd, &nb_txd);
	if (ret != 0) {
		fprintf(stderr, "dpdk: cannot configure port %u (%s): %s\n", d->port, d->name, rte_strerror(-ret));
		return -1;
	}

	n = pool_size(nq, nb_rxd, nb_txd, conf->burst);
	d->pool = rte_pktmbuf_pool_create(pool_name(d->port).s, n, POOL_CACHE, 0,
					  (uint16_t)(RTE_PKTMBUF_HEADROOM + room), SOCKET_ID_ANY);
	if (!d->pool) {
		fprintf(stderr, "dpdk: cannot create a pool of %u mbufs (%.1f MB) for port %u: %s"
			" (give the EAL more hugepage memory, e.g. -m 64)\n",
			n, n * (double)(RTE_PKTMBUF_HEADROOM + room + sizeof(struct rte_mbuf)) / 1e6,
			d->port, rte_strerror(rte_errno));
		return -1;
	}
	eal.pools[eal.npools++] = d->pool;
	d->capacity = (uint16_t)room;

	int sock = rte_eth_dev_socket_id(d->port);
	unsigned socket = sock < 0 ? (unsigned)SOCKET_ID_ANY : (unsigned)sock;
	for (uint16_t q = 0; q < nq; q++) {
		ret = rte_eth_rx_queue_setup(d->port, q, nb_rxd, socket, NULL, d->pool);
		if (ret == 0)
			ret = rte_eth_tx_queue_setup(d->port, q, nb_txd, socket, NULL);
		if (ret != 0) {
			fprintf(stderr, "dpdk: cannot set up queue %u of port %u (%s): %s\n",
				q, d->port, d->name, rte_strerror(-ret));
			return -1;
		}
	}
	return 0;
}

/* --poll interrupt (and adaptive, which waits once a frame is overdue),
 * decided at open: a PMD without Rx interrupts (no rx_queue_intr_enable:
 * memif, af_packet, af_xdp in 22.11) fails here under interrupt rather than
 * leave a receiver that never wakes; under adaptive the port opens without
 * (no fd: the poller backs off instead of waiting). Enabling and disabling
 * once is the probe; the queue's event fd is what the poller waits on. */
static int rx_intr_setup(struct dpdk *d, const struct rte_eth_dev_info *info, bool required)
{
	int ret = rte_eth_dev_rx_intr_enable(d->port, d->queue);

	if (ret == 0)
		ret = rte_eth_dev_rx_intr_disable(d->port, d->queue);
	if (ret == 0 && (d->intr_fd = rte_eth_dev_rx_intr_ctl_q_get_fd(d->port, d->queue)) < 0)
		ret = -ENOTSUP;
	if (ret != 0 && !required) {
		d->intr_fd = -1;
		return 0;
	}
	if (ret == -ENOTSUP) {
		fprintf(stderr, "dpdk: --poll interrupt: port %u (%s) has no Rx interrupts\n",
			d->port, info->driver_name);
		return -1;
	}
	if (ret != 0) {
		fprintf(stderr, "dpdk: --poll interrupt: port %u (%s): Rx interrupts: %s\n",
			d->port, info->driver_name, rte_strerror(-ret));
		return -1;
	}
	return 0;
}

static int port_open(struct api *a, const struct api_conf *conf);
static int queue_open(struct api *a, struct dpdk *d, const struct api_conf *conf);

static int dpdk_open(struct api *a, const struct api_conf *conf)
{
	int saved = stdout_to_stderr();
	int ret = port_open(a, conf);

	stdout_back(saved);
	return ret;
}

static int port_open(struct api *a, const struct api_conf *conf)
{
	struct dpdk *d = a->priv;
	const struct dpdk_own *own = a->own;
	unsigned port = conf->egress && own->has_port2 ? own->port2 : own->port;
	struct rte_eth_dev_info info;
	int ret;

	if (port >= RTE_MAX_ETHPORTS || own->queue + conf->queue > UINT16_MAX - 1) {
		fprintf(stderr, "dpdk: port %u / queue %u out of range\n", port, own->queue + conf->queue);
		return -1;
	}
	if (eal.npools >= MAX_POOLS) {
		fprintf(stderr, "dpdk: at most %d ports per process\n", MAX_POOLS);
		return -1;
	}
	if (eal.users == 0) {
		if (eal.tried) {
			fprintf(stderr, "dpdk: the EAL cannot be initialised twice in one process\n");
			return -1;
		}
		if (eal_init(conf) != 0)
			return -1;
	}
	eal.users++;

	d->port = (uint16_t)port;
	d->queue = (uint16_t)(own->queue + conf->queue);
	d->intr_fd = -1;
	if (conf->queue > 0)
		return queue_open(a, d, conf);
	if (!rte_eth_dev_is_valid_port(d->port)) {
		fprintf(stderr, "dpdk: port %u not found, the EAL found %u port(s)"
			" (name the device after --, e.g. --vdev net_virtio_user0,path=SOCKET)\n",
			d->port, rte_eth_dev_count_avail());
		goto fail;
	}
	if (rte_eth_dev_get_name_by_port(d->port, d->name) != 0)
		snprintf(d->name, sizeof d->name, "?");
	ret = rte_eth_dev_info_get(d->port, &info);
	if (ret != 0) {
		fprintf(stderr, "dpdk: cannot query port %u (%s): %s\n", d->port, d->name, rte_strerror(-ret));
		goto fail;
	}
	if (setup_queues(d, &info, conf) != 0)
		goto fail;
	ret = rte_eth_dev_start(d->port);
	if (ret != 0) {
		fprintf(stderr, "dpdk: cannot start port %u (%s): %s\n", d->port, d->name, rte_strerror(-ret));
		goto fail;
	}
	/* Receivers must see frames for any MAC; PMDs without a filter say ENOTSUP. */
	ret = rte_eth_promiscuous_enable(d->port);
	if (ret != 0 && ret != -ENOTSUP)
		fprintf(stderr, "dpdk: port %u (%s): promiscuous mode not set: %s\n",
			d->port, d->name, rte_strerror(-ret));
	port_facts(a, d, &info, conf);
	if (conf->rx_intr && rx_intr_setup(d, &info, conf->rx_intr_required) != 0) {
		rte_eth_dev_stop(d->port);   /* a started port cannot be closed */
		goto fail;
	}
	enum link_kind kind = link_kind(&info);
	/* held ports close after the peer has stopped polling: nothing to wait for */
	d->drain_ms = conf->tx && !conf->hold ? drain_ms(&info, kind) : 0;
	wait_link(d, kind, conf);
	return 0;

fail:
	if (rte_eth_dev_is_valid_port(d->port))
		rte_eth_dev_close(d->port);
	eal_release();
	return -1;
}

/* A queue past the first of an nf's port: its first queue's instance opened
 * (main() opens queue 0 of every port first), set up and started the port. */
static int queue_open(struct api *a, struct dpdk *d, const struct api_conf *conf)
{
	struct rte_eth_dev_info info;

	d->queue_only = true;
	if (!rte_eth_dev_is_valid_port(d->port) || !(d->pool = rte_mempool_lookup(pool_name(d->port).s)) ||
	    rte_eth_dev_info_get(d->port, &info) != 0) {
		fprintf(stderr, "dpdk: port %u: queue %u opened before the port\n", d->port, d->queue);
		eal_release();
		return -1;
	}
	if (rte_eth_dev_get_name_by_port(d->port, d->name) != 0)
		snprintf(d->name, sizeof d->name, "?");
	d->capacity = (uint16_t)(rte_pktmbuf_data_room_size(d->pool) - RTE_PKTMBUF_HEADROOM);
	if (conf->rx_intr && rx_intr_setup(d, &info, conf->rx_intr_required) != 0) {
		eal_release();
		return -1;
	}
	port_facts(a, d, &info, conf);
	return 0;
}

/* ---- the hot path: thin conversions between struct pkt and mbufs */

/* rte_pktmbuf_alloc_bulk() resets a dozen fields per mbuf; over vhost-user
 * that cost 10 % of the sender's rate. An mbuf in the pool already has
 * refcnt 1, next NULL and nb_segs 1 (rte_pktmbuf_free restores them), lengths
 * are set in tx_burst, so only the headroom and the offload flags (an rx mbuf
 * may come back with rx flags) need setting: what testpmd's txonly does. */
static uint16_t dpdk_tx_alloc(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct dpdk *d = a->priv;
	struct rte_mbuf *m[API_MAX_BURST];

	if (rte_mempool_get_bulk(d->pool, (void **)m, n) != 0)
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		m[i]->data_off = RTE_PKTMBUF_HEADROOM;
		m[i]->ol_flags = 0;
		pkts[i].data = (uint8_t *)m[i]->buf_addr + RTE_PKTMBUF_HEADROOM;
		pkts[i].len = d->capacity;
		pkts[i].priv = m[i];
	}
	return n;
}

static uint16_t dpdk_tx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct dpdk *d = a->priv;
	struct rte_mbuf *m[API_MAX_BURST];

	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *mb = pkts[i].priv;
		/* data may have moved (a role may strip or prepend a header) */
		mb->data_off = (uint16_t)(pkts[i].data - (uint8_t *)mb->buf_addr);
		mb->data_len = pkts[i].len;
		mb->pkt_len = pkts[i].len;
		m[i] = mb;
	}
	return rte_eth_tx_burst(d->port, d->queue, m, n);
}

static uint16_t dpdk_rx_burst(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct dpdk *d = a->priv;
	struct rte_mbuf *m[API_MAX_BURST];
	uint16_t k = rte_eth_rx_burst(d->port, d->queue, m, n);
	const bool finish_csum = d->finish_csum;   /* read once: the stores below may alias it */

	for (uint16_t i = 0; i < k; i++) {
		/* an mbuf holds a whole frame, but a PMD that chains segments
		 * anyway has them joined: roles read a frame in one piece (one
		 * that cannot be joined is counted bad, not misread) */
		if (unlikely(m[i]->nb_segs > 1))
			rte_pktmbuf_linearize(m[i]);
		pkts[i].data = rte_pktmbuf_mtod(m[i], uint8_t *);
		pkts[i].len = m[i]->data_len;
		pkts[i].priv = m[i];
		/* A frame as the wire carries it (core/packet.h), for nf: the
		 * af_packet and af_xdp PMDs pass on a kernel's unfinished UDP
		 * checksum without saying so (af_packet ignores
		 * TP_STATUS_CSUMNOTREADY). The other PMDs join DPDK processes,
		 * whose frames hold what they wrote. */
		if (finish_csum && frame_csum_unfinished(pkts[i].data, pkts[i].len))
			frame_csum_finish(pkts[i].data, pkts[i].len);
	}
	return k;
}

static void dpdk_release(struct api *a, struct pkt *pkts, uint16_t n)
{
	struct rte_mbuf *m[API_MAX_BURST];
	(void)a;
	for (uint16_t i = 0; i < n; i++)
		m[i] = pkts[i].priv;
	rte_pktmbuf_free_bulk(m, n);
}

static int dpdk_rx_fds(struct api *a, int *fds, int max)
{
	return api_one_rx_fd(((struct dpdk *)a->priv)->intr_fd, fds, max);
}

static void dpdk_rx_intr(struct api *a, bool on)
{
	struct dpdk *d = a->priv;

	if (on)
		rte_eth_dev_rx_intr_enable(d->port, d->queue);
	else
		rte_eth_dev_rx_intr_disable(d->port, d->queue);
}

static void dpdk_thread(struct api *a, bool on)
{
	(void)a;
	if (!on)
		rte_thread_unregister();
	else if (rte_thread_register())   /* it still works, without a pool cache */
		fprintf(stderr, "dpdk: a queue's thread has no lcore id (%s): its buffers come from the "
			"pool's shared ring\n", rte_strerror(rte_errno));
}

static void dpdk_stats(struct api *a, uint64_t *rx_dropped, uint64_t *tx_errors)
{
	struct dpdk *d = a->priv;
	struct rte_eth_stats st;

	if (rte_eth_stats_get(d->port, &st) != 0)
		return;
	*rx_dropped = st.imissed + st.rx_nombuf + st.ierrors;
	*tx_errors = st.oerrors;
}

static void dpdk_close(struct api *a)
{
	struct dpdk *d = a->priv;
	struct rte_eth_stats st;
	int saved, ret;

	if (d->queue_only) {   /* the port is its first queue's to close */
		eal_release();
		return;
	}
	if (d->drain_ms && rte_eth_stats_get(d->port, &st) == 0 && st.opackets)
		sleep_ms(d->drain_ms);
	saved = stdout_to_stderr();
	ret = rte_eth_dev_stop(d->port);
	if (ret != 0)
		fprintf(stderr, "dpdk: stopping port %u (%s): %s\n", d->port, d->name, rte_strerror(-ret));
	rte_eth_dev_close(d->port);
	eal_release();
	stdout_back(saved);
}

static bool set_port(void *own, const char *arg, char *why, size_t whylen)
{
	unsigned long v;

	return api_opt_uint(arg, 1023, &v, why, whylen) && (((struct dpdk_own *)own)->port = (unsigned)v, true);
}

static bool set_port2(void *own, const char *arg, char *why, size_t whylen)
{
	struct dpdk_own *o = own;
	unsigned long v;

	if (!api_opt_uint(arg, 1023, &v, why, whylen))
		return false;
	o->port2 = (unsigned)v;
	o->has_port2 = true;
	return true;
}

static bool set_queue(void *own, const char *arg, char *why, size_t whylen)
{
	unsigned long v;

	return api_opt_uint(arg, 65535, &v, why, whylen) && (((struct dpdk_own *)own)->queue = (unsigned)v, true);
}

static const struct api_opt dpdk_opts[] = {
	{ .name = "port", .value = "N", .help = "port id (default 0)", .set = set_port },
	{ .name = "port2", .value = "N", .help = "nf, tester: the second port (default: none)", .set = set_port2,
	  .egress = true },
	{ .name = "queue", .value = "N", .help = "rx and tx queue (default 0)", .set = set_queue },
	{ .name = NULL },
};

const struct api_ops api_dpdk_ops = {
	.name = "dpdk",
	.l2 = true,
	.thread_safe_rxtx = true,        /* separate rx and tx queues; mempools are MP/MC safe */
	.tx_foreign = true,              /* an mbuf goes back to its own pool whoever frees it */
	.tx_keeps = true,                /* an mbuf is the caller's until sent or freed */
	.queues = true,                  /* one port, a queue per instance (see the top) */
	.opts = dpdk_opts,
	.own_size = sizeof(struct dpdk_own),
	.priv_size = sizeof(struct dpdk),
	.open = dpdk_open,
	.tx_alloc = dpdk_tx_alloc,
	.tx_burst = dpdk_tx_burst,
	.rx_burst = dpdk_rx_burst,
	.release = dpdk_release,
	.rx_fds = dpdk_rx_fds,
	.rx_intr = dpdk_rx_intr,
	.stats = dpdk_stats,
	.stats_port = true,              /* rte_eth_stats: every queue's */
	.thread = dpdk_thread,
	.close = dpdk_close,
};
