/* cnfperf-engine ROLE [options] [-- EAL args]: parse, open the api(s),
 * run the role. Exit 0 done, 2 bad option, 1 system failure. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/packet.h"
#include "core/run.h"
#include "opts.h"

#ifndef ENGINE_VERSION
#define ENGINE_VERSION "0.0.0"
#endif

/* One JSON line: what this engine is and has, from the api and NF kind tables. */
static void print_version(void)
{
	const struct api_ops *ops;
	const struct nf_kind *k;

	printf("{\"version\": \"%s\", \"apis\": [", ENGINE_VERSION);
	for (size_t i = 0; (ops = api_at(i)); i++)
		printf("%s\"%s\"", i ? ", " : "", ops->name);
	printf("], \"nfs\": [");
	for (size_t i = 0; (k = nf_kind_at(i)); i++)
		printf("%s\"%s\"", i ? ", " : "", k->name);
	printf("]}\n");
}

/* --idle: the init of a container whose image holds nothing but this engine
 * (no shell, no sleep). As pid 1 of its pid namespace it would ignore every
 * signal it has no handler for; blocked signals are queued instead, so it
 * waits for them: SIGTERM or SIGINT end it (exit 0), SIGCHLD reaps whatever
 * the namespace reparented to it. */
static int idle(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return 1;
	for (;;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		if (sigwait(&set, &sig))
			return 1;
		if (sig != SIGCHLD)
			return 0;
	}
}

/* Whether the role opens a second api instance: one that takes two ports on
 * --iface2 or --port2, and a udp path's always (its frames come back to a
 * socket of their own, bound to the far end's address). */
static bool second_port(const struct conf *cf, const struct api_ops *ops)
{
	if (!cf->role->two_ports)
		return false;
	return cf->iface2 || cf->egress || (cf->role->path && !ops->l2);
}

static struct api_conf api_conf_of(const struct conf *cf, bool two)
{
	const struct role *role = cf->role;
	struct api_conf c = {
		.iface = cf->iface,
		.burst = cf->burst,
		.frame_size = cf->size - FCS_LEN,
		.rx = role->rx && !(role->path && two),
		.tx = role->tx,
		.hold = cf->hold,
		.forwards = role->forwards,
		.src_ip = cf->src_ip,
		.sport = cf->sport,
		.flows = role->generates ? cf->flows : 1,
		.queues = role->queues ? cf->threads : 1,
		.eal_argc = cf->eal_argc,
		.eal_argv = cf->eal_argv,
	};
	if (role->generates) { /* the udp api connects to a peer it is given */
		c.dst_ip = cf->dst_ip;
		c.dport = cf->dport;
	}
	/* any frame the link carries may pass an nf, not just our own size */
	if (role->forwards && c.frame_size < 1514)
		c.frame_size = 1514;
	/* Rx interrupts for interrupt only: a peer may not signal (VPP's
	 * vhost-user side often does not kick), and adaptive's waits would then
	 * run to their timeout while the ring overflows; it backs off instead */
	c.rx_intr = c.rx && poll_modes[cf->poll].interrupts;
	c.rx_intr_required = c.rx && poll_modes[cf->poll].interrupts;
	return c;
}

/* The second port: nf's forwards both ways; a path's (tester) only receives. */
static struct api_conf api_conf2_of(const struct conf *cf, const struct api_conf *c1)
{
	struct api_conf c = *c1;

	c.iface = cf->iface2 ? cf->iface2 : cf->iface;
	c.egress = true;
	c.rx = true;
	c.tx = cf->role->forwards;
	c.rx_intr = poll_modes[cf->poll].interrupts;   /* as the first port's */
	c.rx_intr_required = poll_modes[cf->poll].interrupts;
	if (cf->role->path) {
		/* udp: bound to the far end's address, which the frames are sent to */
		c.src_ip = cf->dst_ip;
		c.sport = cf->dport;
		c.dst_ip = 0;
		c.dport = 0;
		c.flows = 1;
	}
	return c;
}

/* --keep, before another trial: what the ports' receive queues still hold
 * (a frame of the last trial's that came after its summary) is let go, so
 * the trial starts as on ports just opened. At most FLUSH_MAX frames a port. */
#define FLUSH_MAX 1000000
static void flush(struct api *const qapi[][2], unsigned queues)
{
	struct pkt pkts[API_MAX_BURST];

	for (unsigned q = 0; q < queues; q++)
		for (unsigned i = 0; i < 2; i++) {
			struct api *a = qapi[q][i];
			if (!a || !a->conf.rx)
				continue;
			for (unsigned got = 0, n; got < FLUSH_MAX; got += n) {
				if (!(n = a->ops->rx_burst(a, pkts, API_MAX_BURST)))
					break;
				a->ops->release(a, pkts, (uint16_t)n);
			}
		}
}

int main(int argc, char **argv)
{
	struct conf cf;
	char err[256];
	struct clock clk;
	struct run r;
	struct api *a = NULL, *a2 = NULL;
	struct api *qapi[QUEUES_MAX][2] = { { NULL } };   /* --threads: a queue of each port each */
	static const uint8_t zero[6];
	int rc = 1;

	switch (opts_parse(argc, argv, &cf, err, sizeof(err))) {
	case OPTS_ERROR:
		fprintf(stderr, "cnfperf-engine: %s\n", err);
		return 2;
	case OPTS_HELP:
		opts_usage(stdout);
		return 0;
	case OPTS_VERSION:
		print_version();
		return 0;
	case OPTS_DESCRIBE:
		opts_describe(stdout);
		return 0;
	case OPTS_IDLE:
		return idle();
	case OPTS_RUN:
		break;
	}
	unsigned queues = cf.role->queues ? cf.threads : 1;
	/* calibrated over the time the ports take to open (clock.h) */
	clock_begin(&clk);
	run_signals();
	/* no frame a port receives was sent to it before it was opened (seq.h) */
	uint64_t open_ns = mono_ns();
	bool two = second_port(&cf, api_find(cf.api));
	struct api_conf ac = api_conf_of(&cf, two);
	struct api_conf c2 = api_conf2_of(&cf, &ac);
	/* queue 0 of every port first: a dpdk port is set up by it (api/dpdk.c) */
	for (unsigned q = 0; q < queues; q++) {
		ac.queue = c2.queue = q;
		if (!(qapi[q][0] = api_open(cf.api, &ac, cf.api_own)))
			goto out;
		if (two && !(qapi[q][1] = api_open(cf.api, &c2, cf.api_own)))
			goto out;
	}
	a = qapi[0][0];
	a2 = qapi[0][1];
	if (a->ops->l2 && !cf.src_mac.given && !memcmp(a->mac, zero, 6) && cf.role->end) {
		fprintf(stderr, "cnfperf-engine: --src-mac: required with --api %s (the port's MAC is unknown)\n", cf.api);
		rc = 2;
		goto out;
	}
	clock_end(&clk);
	if (run_pin(cf.cpu)) {
		fprintf(stderr, "cnfperf-engine: --cpu %d: cannot pin to that CPU\n", cf.cpu);
		goto out;
	}
	/* --keep: trial after trial on the open ports, each as a fresh engine's
	 * (its own counters, trackers, timeline and records), until released */
	for (;;) {
		/* another host's timestamps give no latency on ours (core/seq.h) */
		if (run_init(&r, &cf, a, &clk, cf.role->latency && !cf.clock_other)) {
			rc = 1;
			break;
		}
		r.api2 = a2;
		r.queues = queues;
		memcpy(r.qapi, qapi, sizeof(qapi));
		r.open_ns = open_ns;
		rc = cf.role->run(&r);
		run_free(&r);
		if (rc != 0 || !cf.keep)
			break;
		int next = run_next(&cf);
		if (next <= 0) {
			rc = next < 0 ? 2 : 0;
			break;
		}
		flush(qapi, queues);
		/* what the last trial sent is no frame of this one's (core/seq.h) */
		open_ns = mono_ns();
	}
	if (rc == 0 && cf.hold && !cf.keep)
		run_hold();
out:
	for (unsigned q = queues; q-- > 0;) {   /* a dpdk port's first queue last */
		api_close(qapi[q][1]);
		api_close(qapi[q][0]);
	}
	free(cf.api_own);
	return rc;
}
