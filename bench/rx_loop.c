/* The raw api's receive loop as `recv` runs it (rx_burst, classify, release),
 * with PACKET_AUXDATA on the socket or off: bench/raw_auxdata.py builds it
 * against the engine's static library and runs it on a veth.
 *
 *   rx_loop IFACE SECONDS AUXDATA(0|1) MMSG(0|1)
 *
 * Prints one JSON line: frames taken, the engine's own among them, the
 * seconds, the ns per frame spent in bursts that brought frames (rx_burst
 * to release: the work a frame costs, without the empty polls) and what the
 * kernel dropped before the socket. */
#include <stdio.h>
#include <stdlib.h>
#include <linux/if_packet.h>
#include <sys/socket.h>

#include "api/api.h"
#include "api/sock.h"
#include "core/clock.h"
#include "core/packet.h"

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: rx_loop IFACE SECONDS AUXDATA MMSG\n");
		return 2;
	}
	struct api_conf conf = { .iface = argv[1], .burst = 32, .frame_size = FRAME_MIN_LEN, .rx = true };
	struct sock_own own = { .mmsg = atoi(argv[4]) != 0 };
	struct clock clk;
	struct api *a = api_open("raw", &conf, &own);
	int fd, aux = atoi(argv[3]) != 0;

	if (!a)
		return 1;
	if (a->ops->rx_fds(a, &fd, 1) != 1 ||
	    setsockopt(fd, SOL_PACKET, PACKET_AUXDATA, &aux, sizeof(aux))) {
		perror("rx_loop: PACKET_AUXDATA");
		return 1;
	}
	clock_init(&clk);
	const struct rx_filter f = { .ip = 0, .port_lo = 9000, .port_hi = 9000, .l2 = true };
	struct pkt pkts[32];
	uint64_t frames = 0, ours = 0, busy = 0, start = clock_ticks();
	uint64_t end = start + clock_s_to_ticks(&clk, atof(argv[2]));

	for (;;) {
		uint64_t t0 = clock_ticks();
		if (t0 >= end)
			break;
		uint16_t n = a->ops->rx_burst(a, pkts, 32);
		if (!n)
			continue;
		for (uint16_t i = 0; i < n; i++)
			ours += frame_classify(pkts[i].data, pkts[i].len, &f) == RX_OURS;
		a->ops->release(a, pkts, n);
		frames += n;
		busy += clock_ticks() - t0;
	}
	uint64_t dropped = 0, tx_errors = 0;
	a->ops->stats(a, &dropped, &tx_errors);
	double seconds = clock_ticks_to_s(&clk, clock_ticks() - start);
	printf("{\"frames\": %llu, \"ours\": %llu, \"seconds\": %.3f, \"busy_ns_per_frame\": %.1f, "
	       "\"dropped\": %llu}\n", (unsigned long long)frames, (unsigned long long)ours, seconds,
	       frames ? clock_ticks_to_s(&clk, busy) * 1e9 / (double)frames : 0.0, (unsigned long long)dropped);
	api_close(a);
	return 0;
}
