/* libcnfperf-vhost-retry.so: preloaded into OVS's ovs-vswitchd (LD_PRELOAD),
 * so that a vhost-user client port reconnects within milliseconds of its
 * server's socket appearing instead of within a second.
 *
 * OVS's dpdkvhostuserclient ports are DPDK vhost-user clients. A client whose
 * server is not there is retried by DPDK's "vhost_reconn" thread, which tries
 * every pending socket and then calls sleep(1). Between two points of a run
 * that keeps its switch, the engines are new processes with new sockets, and
 * each point waited for that tick: up to a second, half of one on average.
 * This sleep() shortens that one thread's pause to RETRY_NS; every other
 * caller gets sleep() as usual. A retry is one connect() per missing socket. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RECONNECT_THREAD "vhost_reconn"
#define RETRY_NS 10000000L   /* 10 ms */

unsigned int sleep(unsigned int seconds)
{
	struct timespec t = { .tv_sec = seconds }, left;
	char name[16];

	if (seconds == 1 && pthread_getname_np(pthread_self(), name, sizeof name) == 0 &&
	    strcmp(name, RECONNECT_THREAD) == 0)
		t = (struct timespec){ .tv_nsec = RETRY_NS };
	if (nanosleep(&t, &left) == 0 || errno != EINTR)
		return 0;
	/* as sleep(3): the seconds left, rounded up, when a signal cut it short */
	return (unsigned int)left.tv_sec + (left.tv_nsec > 0);
}
