/* Pieces the two socket APIs (udp, raw) share. */
#ifndef CNFPERF_SOCK_H
#define CNFPERF_SOCK_H

#include <errno.h>
#include <stdbool.h>
#include <sys/socket.h>

/* A blocking socket still wakes up every 100 ms so a role notices SIGINT,
 * the end of its run or an interval record while no packet arrives. */
#define SOCK_WAKE_US 100000

int sock_setup(int fd, bool blocking, bool rx, bool tx);

/* errors that mean "try later", counted as tx refusals, not failures */
static inline bool sock_full(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS || err == EINTR;
}

#endif
