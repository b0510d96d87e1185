/* What the kernel-interface apis (raw, mmap, xdp) ask of an interface. */
#ifndef CNFPERF_IFACE_H
#define CNFPERF_IFACE_H

#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The interface's MTU, or -1. */
static inline int iface_mtu(const char *iface)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), mtu = -1;

	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", iface);
	if (ioctl(fd, SIOCGIFMTU, &ifr) == 0)
		mtu = ifr.ifr_mtu;
	close(fd);
	return mtu;
}

/* The largest frame an interface of this MTU carries, without FCS: the
 * Ethernet header and a VLAN tag besides the MTU. A role that sends on what
 * it receives (nf, server) needs buffers that large, whatever --size says:
 * a jumbo frame would be refused. */
static inline unsigned iface_frame_max(int mtu)
{
	return (unsigned)mtu + 14 + 4;
}

/* A frame longer than MTU + Ethernet header would be dropped by the kernel
 * after the api accepted it, so it is refused at open instead (the engine's
 * own frames carry no VLAN tag). */
static inline int iface_check_frame(const char *api, const char *iface, unsigned frame_size)
{
	int mtu = iface_mtu(iface);

	if (mtu > 0 && frame_size > (unsigned)mtu + 14) {
		fprintf(stderr, "%s: %u-byte frames do not fit the MTU %d of %s\n", api, frame_size + 4, mtu, iface);
		return -1;
	}
	return 0;
}

#endif
