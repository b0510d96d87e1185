#include "sock.h"

#include <sys/time.h>

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
