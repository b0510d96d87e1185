#include "sock.h"

#include <sys/time.h>

static bool set_mmsg(void *own, const char *arg, char *why, size_t whylen)
{
	(void)arg; (void)why; (void)whylen;
	((struct sock_own *)own)->mmsg = true;
	return true;
}

static bool set_blocking(void *own, const char *arg, char *why, size_t whylen)
{
	(void)arg; (void)why; (void)whylen;
	((struct sock_own *)own)->blocking = true;
	return true;
}

const struct api_opt sock_opts[] = {
	{ .name = "mmsg", .letter = 'm', .help = "sendmmsg/recvmmsg: one system call per burst", .set = set_mmsg },
	{ .name = "blocking", .letter = 'B', .set = set_blocking, .blocks = true,
	  .help = "blocking sockets (woken every 100 ms); a sender sleeps between bursts" },
	{ .name = NULL },
};

int sock_setup(int fd, bool blocking, bool rx, bool tx)
{
	/* A receiver that is descheduled for a moment must not drop what the
	 * kernel could have queued: ask for 4 MB (FORCE works as root). */
	int size = 4 << 20;

	if (rx && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	(void)tx;
	if (blocking) {
		struct timeval tv = { 0, SOCK_WAKE_US };
		if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0)
			return -errno;
	}
	return 0;
}
