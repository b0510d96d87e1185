#include "sock.h"

static bool set_mmsg(void *own, const char *arg, char *why, size_t whylen)
{
	(void)arg; (void)why; (void)whylen;
	((struct sock_own *)own)->mmsg = true;
	return true;
}

const struct api_opt sock_opts[] = {
	{ .name = "mmsg", .letter = 'm', .help = "sendmmsg/recvmmsg: one system call per burst", .set = set_mmsg },
	{ .name = NULL },
};

void sock_setup(int fd, bool rx)
{
	/* A receiver that is descheduled for a moment must not drop what the
	 * kernel could have queued: ask for 4 MB (FORCE works as root). */
	int size = 4 << 20;

	if (rx && setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}
