/* Registry of the packet I/O APIs compiled in; adding one is a line here. */
#include "api.h"

#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

extern const struct api_ops api_udp_ops;
extern const struct api_ops api_raw_ops;
#ifdef HAVE_API_MMAP
extern const struct api_ops api_mmap_ops;
#endif
#ifdef HAVE_API_XDP
extern const struct api_ops api_xdp_ops;
#endif
#ifdef HAVE_API_DPDK
extern const struct api_ops api_dpdk_ops;
#endif

static const struct api_ops *const apis[] = {
	&api_udp_ops,
	&api_raw_ops,
#ifdef HAVE_API_MMAP
	&api_mmap_ops,
#endif
#ifdef HAVE_API_XDP
	&api_xdp_ops,
#endif
#ifdef HAVE_API_DPDK
	&api_dpdk_ops,
#endif
};

#define NAPIS (sizeof(apis) / sizeof(apis[0]))

const struct api_ops *api_find(const char *name)
{
	for (size_t i = 0; i < NAPIS; i++)
		if (!strcmp(apis[i]->name, name))
			return apis[i];
	return NULL;
}

const char *api_names(void)
{
	static char names[64];

	if (!names[0])
		for (size_t i = 0; i < NAPIS; i++) {
			if (i)
				strcat(names, " ");
			strcat(names, apis[i]->name);
		}
	return names;
}

static void iface_mac(const char *iface, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (ioctl(fd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
}

struct api *api_open(const char *name, const struct api_conf *conf)
{
	const struct api_ops *ops = api_find(name);
	struct api *a;
	static const uint8_t zero[6];

	if (!ops) {
		fprintf(stderr, "cnfperf-engine: --api: '%s' is not built in (%s)\n", name, api_names());
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a || (ops->priv_size && !(a->priv = calloc(1, ops->priv_size)))) {
		fprintf(stderr, "cnfperf-engine: %s: out of memory\n", name);
		free(a);
		return NULL;
	}
	a->ops = ops;
	a->conf = *conf;
	if (ops->open(a, &a->conf) != 0) {
		free(a->priv);
		free(a);
		return NULL;
	}
	if (!memcmp(a->mac, zero, 6) && conf->iface)
		iface_mac(conf->iface, a->mac);
	return a;
}

void api_close(struct api *a)
{
	if (!a)
		return;
	a->ops->close(a);
	free(a->priv);
	free(a);
}
