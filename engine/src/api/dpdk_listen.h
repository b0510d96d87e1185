/* virtio-user ports that listen (server=1), probed side by side (dpdk_listen.c). */
#ifndef CNFPERF_DPDK_LISTEN_H
#define CNFPERF_DPDK_LISTEN_H

/* Takes the listening virtio-user --vdev arguments out of argv (argc
 * updated) when there are two or more, to be probed by listen_probe()
 * after rte_eal_init(). Returns how many it took. */
int listen_take(int *argc, char **argv);

/* Probes what listen_take() took, each as soon as the one before listens;
 * 0 when every one is up, else -1 (the reason on stderr). */
int listen_probe(void);

#endif
