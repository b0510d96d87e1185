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
 * caller gets sleep() as usual. A retry is one connect() per missing socket.
 *
 * While no socket is pending (every port connected: a trial sends) the thread
 * has nothing to retry, and 100 wake-ups a second would only take a core from
 * whoever polls there, the tester's pollers on a small host: so a pass that
 * made no connect() (counted here, per thread) doubles the pause, up to
 * IDLE_NS. A disconnect is then retried within IDLE_NS, and its new server
 * (a new engine process) takes longer than that to appear. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RECONNECT_THREAD "vhost_reconn"
#define RETRY_NS 10000000L   /* 10 ms */
#define IDLE_NS 160000000L   /* 160 ms: 10 ms doubled four times */

static __thread unsigned tried;   /* connect() calls of this thread since its last sleep() */

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static int (*real)(int, const struct sockaddr *, socklen_t);

	if (!real)
		real = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "connect");
	tried++;
	return real(fd, addr, len);
}

/* The reconnect thread's next pause: RETRY_NS after a pass that retried a
 * socket, else twice the last one, at most IDLE_NS. */
static long pause_ns(void)
{
	static __thread long idle = RETRY_NS;

	if (tried)
		idle = RETRY_NS;
	else if (idle < IDLE_NS)
		idle *= 2;
	tried = 0;
	return idle;
}

unsigned int sleep(unsigned int seconds)
{
	struct timespec t = { .tv_sec = seconds }, left;
	char name[16];

	if (seconds == 1 && pthread_getname_np(pthread_self(), name, sizeof name) == 0 &&
	    strcmp(name, RECONNECT_THREAD) == 0)
		t = (struct timespec){ .tv_nsec = pause_ns() };
	if (nanosleep(&t, &left) == 0 || errno != EINTR)
		return 0;
	/* as sleep(3): the seconds left, rounded up, when a signal cut it short */
	return (unsigned int)left.tv_sec + (left.tv_nsec > 0);
}
