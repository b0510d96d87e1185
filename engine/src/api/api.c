/* Registry of the packet I/O APIs; adding one is a line in APIS. */
#include "api.h"

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Every api this engine knows, in the order --version lists them; the first is
 * the default. X(name, built): built is 1, or the HAVE_API_<NAME> that meson
 * defines when it found the api's dependencies. One left out stays known by
 * name, so --api can say it is not built in rather than unknown. */
#define APIS(X) \
	X(udp, 1) \
	X(raw, 1) \
	X(mmap, HAVE_API_MMAP) \
	X(xdp, HAVE_API_XDP) \
	X(dpdk, HAVE_API_DPDK)

/* BUILT(flag, ops): ops when flag is 1, else NULL, so the ops of an api left
 * out are never referenced (the kernel's IS_ENABLED trick: BUILT_1 turns into
 * a comma that shifts ops into SECOND's place). */
#define BUILT_1 ,
#define SECOND(a, b, ...) b
#define BUILT(flag, ops) BUILT_(BUILT_##flag, ops)
#define BUILT_(maybe_comma, ops) SECOND(maybe_comma ops, NULL, ~)

#define DECLARE(name, built) extern const struct api_ops api_##name##_ops;
#define ENTRY(name, built) { #name, BUILT(built, &api_##name##_ops) },

APIS(DECLARE)

static const struct {
	const char *name;
	const struct api_ops *ops;       /* NULL: not built in */
} registry[] = { APIS(ENTRY) };

#define NAPIS (sizeof(registry) / sizeof(registry[0]))

const struct api_ops *api_find(const char *name)
{
	for (size_t i = 0; i < NAPIS; i++)
		if (registry[i].ops && !strcmp(registry[i].name, name))
			return registry[i].ops;
	return NULL;
}

const struct api_ops *api_at(size_t i)
{
	for (size_t k = 0; k < NAPIS; k++)
		if (registry[k].ops && i-- == 0)
			return registry[k].ops;
	return NULL;
}

bool api_known(const char *name)
{
	for (size_t i = 0; i < NAPIS; i++)
		if (!strcmp(registry[i].name, name))
			return true;
	return false;
}

const char *api_known_at(size_t i)
{
	return i < NAPIS ? registry[i].name : NULL;
}

const char *api_names(void)
{
	static char names[64];
	const struct api_ops *ops;

	if (!names[0])
		for (size_t i = 0; (ops = api_at(i)); i++) {
			if (i)
				strcat(names, " ");
			strcat(names, ops->name);
		}
	return names;
}

bool api_opt_uint(const char *s, unsigned long max, unsigned long *out, char *why, size_t whylen)
{
	char *end = NULL;

	errno = 0;
	*out = 0;
	if (*s >= '0' && *s <= '9')
		*out = strtoul(s, &end, 10);
	if (!end || errno || *end || *out > max) {
		snprintf(why, whylen, "'%s' is not a whole number from 0 to %lu", s, max);
		return false;
	}
	return true;
}

int api_one_rx_fd(int fd, int *fds, int max)
{
	if (fd < 0)
		return 0;
	if (max > 0)
		fds[0] = fd;
	return 1;
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

struct api *api_open(const char *name, const struct api_conf *conf, const void *own)
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
	a->own = own;
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
