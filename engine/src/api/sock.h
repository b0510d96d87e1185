/* Pieces the two socket APIs (udp, raw) share. */
#ifndef CNFPERF_SOCK_H
#define CNFPERF_SOCK_H

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "api.h"

/* A blocking socket still wakes up every 100 ms so a role notices SIGINT,
 * the end of its run or an interval record while no packet arrives. */
#define SOCK_WAKE_US 100000

/* Their own options (api_ops.opts, own_size = sizeof(struct sock_own)). */
struct sock_own {
	bool mmsg;               /* sendmmsg/recvmmsg: one system call per burst */
	bool blocking;           /* blocking sockets, waking every SOCK_WAKE_US */
};

extern const struct api_opt sock_opts[];

int sock_setup(int fd, bool blocking, bool rx, bool tx);

/* errors that mean "try later", counted as tx refusals, not failures */
static inline bool sock_full(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS || err == EINTR;
}

#endif
