/* Pieces the two socket APIs (udp, raw) share. */
#ifndef CNFPERF_SOCK_H
#define CNFPERF_SOCK_H

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "api.h"

/* Their own options (api_ops.opts, own_size = sizeof(struct sock_own)). */
struct sock_own {
	bool mmsg;               /* sendmmsg/recvmmsg: one system call per burst */
};

extern const struct api_opt sock_opts[];

/* Sockets are always non-blocking (MSG_DONTWAIT): a role that waits for
 * frames does so in poll() on them (--poll interrupt, core/poll.h). */
void sock_setup(int fd, bool rx);

/* errors that mean "try later", counted as tx refusals, not failures */
static inline bool sock_full(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS || err == EINTR;
}

#endif
