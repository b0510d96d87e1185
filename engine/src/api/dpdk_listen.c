/* A virtio-user port that listens (server=1) is probed by waiting in accept()
 * for its peer's connection, and the EAL probes its --vdev arguments one at a
 * time: the second port's socket exists only once the first has a peer. A
 * peer that connects on a timer, as OVS's vhost-user client does (every
 * second), then costs one tick per port. So a process with two or more such
 * ports probes them itself after rte_eal_init(), each on a thread of its own,
 * the next one started once the one before listens (its socket is there):
 * every socket exists at once, and the ports keep their order (a port's id
 * is allocated before its socket is made). */
#include "dpdk_listen.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <rte_dev.h>
#include <rte_errno.h>

#define MAX_LISTEN 8
#define PATH_LEN 108   /* sun_path */

static struct listener {
	const char *devargs;
	char path[PATH_LEN];
	pthread_t th;
	int rc;
	atomic_bool done;
} listeners[MAX_LISTEN];
static int nlisteners;

static bool listens(const char *devargs)
{
	return strncmp(devargs, "net_virtio_user", 15) == 0 && strstr(devargs, "server=1") != NULL;
}

/* path=... of the devargs, up to the next comma */
static void path_of(const char *devargs, char *path)
{
	const char *p = strstr(devargs, "path=");
	size_t n = 0;

	if (p) {
		p += 5;
		n = strcspn(p, ",");
		if (n >= PATH_LEN)
			n = PATH_LEN - 1;
		memcpy(path, p, n);
	}
	path[n] = '\0';
}

int listen_take(int *argc, char **argv)
{
	int found = 0;

	for (int i = 0; i + 1 < *argc; i++)
		found += strcmp(argv[i], "--vdev") == 0 && listens(argv[i + 1]);
	if (found < 2 || found > MAX_LISTEN)
		return 0;
	int out = 0;
	for (int i = 0; i < *argc; i++) {
		if (i + 1 < *argc && strcmp(argv[i], "--vdev") == 0 && listens(argv[i + 1])) {
			struct listener *l = &listeners[nlisteners++];
			l->devargs = argv[++i];
			path_of(l->devargs, l->path);
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	*argc = out;
	return nlisteners;
}

static void *probe_one(void *arg)
{
	struct listener *l = arg;

	l->rc = rte_dev_probe(l->devargs);
	atomic_store(&l->done, true);
	return NULL;
}

static bool socket_there(const char *path)
{
	struct stat st;

	return *path && stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

int listen_probe(void)
{
	int started = 0, rc = 0;

	for (; started < nlisteners; started++) {
		struct listener *l = &listeners[started];
		if ((errno = pthread_create(&l->th, NULL, probe_one, l))) {
			perror("dpdk: a thread to probe a listening port");
			rc = -1;
			break;
		}
		/* bind() and listen() take microseconds; accept() then waits */
		while (!atomic_load(&l->done) && !socket_there(l->path))
			nanosleep(&(struct timespec){ .tv_nsec = 200000 }, NULL);
	}
	for (int i = 0; i < started; i++) {
		pthread_join(listeners[i].th, NULL);
		if (listeners[i].rc < 0) {
			fprintf(stderr, "dpdk: cannot probe %s: %s\n", listeners[i].devargs,
				rte_strerror(-listeners[i].rc));
			rc = -1;
		}
	}
	nlisteners = 0;
	return rc;
}
