/* Plain receivers, the reference for the engine's kernel apis' `recv`:
 * each takes frames off an interface the usual way and only counts them
 * (no classifying, no sequence, no timestamp, no latency), busy polling on
 * one core as the engine does. bench/recv_kernel.py builds and runs it.
 *
 *   rx_plain raw|mmap|xdp IFACE SECONDS
 *
 *   raw   an AF_PACKET socket, recvmmsg() 32 frames at a time, non-blocking
 *   mmap  an AF_PACKET TPACKET_V3 receive ring: blocks walked, handed back
 *   xdp   an AF_XDP socket (libxdp's default program, copy mode), its fill
 *         ring refilled with what the receive ring gave
 *
 * Prints one JSON line: frames, seconds. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_XDP
#include <linux/if_link.h>
#include <xdp/xsk.h>
#endif

#define BURST 32

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int packet_socket(const char *iface)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
				   .sll_ifindex = (int)if_nametoindex(iface) };

	/* the socket options the engine's apis ask for: a 4 MB receive buffer
	 * (a reader descheduled for a moment drops nothing), not its own frames */
	int size = 4 << 20, one = 1;

	if (fd < 0 || !sll.sll_ifindex || setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		perror("rx_plain: packet socket");
		exit(1);
	}
	return fd;
}

static unsigned long long raw(const char *iface, double end)
{
	static char buf[BURST][2048];
	struct mmsghdr m[BURST];
	struct iovec iov[BURST];
	unsigned long long frames = 0;
	int fd = packet_socket(iface);

	for (int i = 0; i < BURST; i++) {
		iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
		m[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
	}
	for (unsigned spin = 0;; spin++) {
		int n = recvmmsg(fd, m, BURST, 0, NULL);
		if (n > 0)
			frames += (unsigned)n;
		if (!(spin & 255) && now_s() >= end)
			break;
	}
	close(fd);
	return frames;
}

static unsigned long long ring(const char *iface, double end)
{
	/* what the engine's mmap api asks for: 64 blocks of 64 KiB */
	struct tpacket_req3 req = { .tp_block_size = 1 << 16, .tp_block_nr = 64, .tp_frame_size = 2048,
				    .tp_frame_nr = (1 << 16) / 2048 * 64, .tp_retire_blk_tov = 1 };
	int fd = packet_socket(iface), v = TPACKET_V3;
	unsigned long long frames = 0;

	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req))) {
		perror("rx_plain: PACKET_RX_RING");
		exit(1);
	}
	size_t size = (size_t)req.tp_block_size * req.tp_block_nr;
	uint8_t *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("rx_plain: mmap");
		exit(1);
	}
	for (unsigned b = 0, spin = 0;; spin++) {
		struct tpacket_block_desc *bd = (void *)(map + (size_t)b * req.tp_block_size);
		if (__atomic_load_n(&bd->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) {
			frames += bd->hdr.bh1.num_pkts;
			__atomic_store_n(&bd->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
			b = (b + 1) % req.tp_block_nr;
		}
		if (!(spin & 255) && now_s() >= end)
			break;
	}
	munmap(map, size);
	close(fd);
	return frames;
}

#ifdef HAVE_XDP
static unsigned long long xdp(const char *iface, double end)
{
	enum { FRAMES = 4096, SIZE = 2048 };
	struct xsk_ring_prod fq;
	struct xsk_ring_cons cq, rx;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_socket_config cfg = { .rx_size = 2048, .tx_size = 2048,
					 .xdp_flags = XDP_FLAGS_DRV_MODE, .bind_flags = XDP_COPY };
	struct xsk_umem_config ucfg = { .fill_size = FRAMES, .comp_size = 2048, .frame_size = SIZE };
	void *area = mmap(NULL, (size_t)FRAMES * SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long long frames = 0;
	uint32_t idx;
	int err;

	if (area == MAP_FAILED || (err = xsk_umem__create(&umem, area, (size_t)FRAMES * SIZE, &fq, &cq, &ucfg)) ||
	    (err = xsk_socket__create(&xsk, iface, 0, umem, &rx, NULL, &cfg))) {
		fprintf(stderr, "rx_plain: AF_XDP socket on %s: %s\n", iface, strerror(errno));
		exit(1);
	}
	if (xsk_ring_prod__reserve(&fq, FRAMES, &idx) != FRAMES)
		exit(1);
	for (uint32_t i = 0; i < FRAMES; i++)
		*xsk_ring_prod__fill_addr(&fq, idx + i) = (uint64_t)i * SIZE;
	xsk_ring_prod__submit(&fq, FRAMES);
	for (unsigned spin = 0;; spin++) {
		uint32_t at, n = xsk_ring_cons__peek(&rx, BURST, &at);
		if (n) {
			uint32_t put;
			while (xsk_ring_prod__reserve(&fq, n, &put) != n)
				;
			for (uint32_t i = 0; i < n; i++)
				*xsk_ring_prod__fill_addr(&fq, put + i) = xsk_ring_cons__rx_desc(&rx, at + i)->addr;
			xsk_ring_prod__submit(&fq, n);
			xsk_ring_cons__release(&rx, n);
			frames += n;
		}
		if (!(spin & 255) && now_s() >= end)
			break;
	}
	xsk_socket__delete(xsk);
	xsk_umem__delete(umem);
	return frames;
}
#endif

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: rx_plain raw|mmap|xdp IFACE SECONDS\n");
		return 2;
	}
	double start = now_s(), end = start + atof(argv[3]);
	unsigned long long frames;

	if (!strcmp(argv[1], "raw"))
		frames = raw(argv[2], end);
	else if (!strcmp(argv[1], "mmap"))
		frames = ring(argv[2], end);
#ifdef HAVE_XDP
	else if (!strcmp(argv[1], "xdp"))
		frames = xdp(argv[2], end);
#endif
	else {
		fprintf(stderr, "rx_plain: no receiver %s\n", argv[1]);
		return 2;
	}
	printf("{\"frames\": %llu, \"seconds\": %.3f}\n", frames, now_s() - start);
	return 0;
}
