/* cnfperf-engine ROLE [options] [-- EAL args]: parse, open the api(s),
 * run the role. Exit 0 done, 2 bad option, 1 system failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/clock.h"
#include "core/packet.h"
#include "core/run.h"
#include "opts.h"
#include "roles/roles.h"

#ifndef ENGINE_VERSION
#define ENGINE_VERSION "0.0.0"
#endif

static void print_version(void)
{
	const char *names = api_names();
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", names);
	printf("{\"version\": \"%s\", \"apis\": [", ENGINE_VERSION);
	int i = 0;
	for (char *save, *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		printf("%s\"%s\"", i++ ? ", " : "", t);
	printf("]}\n");
}

static struct api_conf conf_of(const struct opts *o)
{
	bool sender = o->role == ROLE_SEND || o->role == ROLE_CLIENT;
	struct api_conf c = {
		.iface = o->iface,
		.burst = o->burst,
		.frame_size = o->size - FCS_LEN,
		.rx = o->role != ROLE_SEND,
		.tx = o->role != ROLE_RECV,
		.hold = o->hold,
		.src_ip = o->src_ip,
		.sport = o->sport,
		.flows = sender ? o->flows : 1,
		.eal_argc = o->eal_argc,
		.eal_argv = o->eal_argv,
	};
	if (sender) { /* the udp api connects to a peer it is given */
		c.dst_ip = o->dst_ip;
		c.dport = o->dport;
	}
	if (o->role == ROLE_FWD) {
		/* any frame the link carries may pass, not just our own size */
		if (c.frame_size < 1514)
			c.frame_size = 1514;
		if (o->iface2 || o->egress)
			c.tx = false;
	}
	return c;
}

static int run_role(struct run *r)
{
	switch (r->o->role) {
	case ROLE_SEND: return role_send(r);
	case ROLE_RECV: return role_recv(r);
	case ROLE_CLIENT: return role_client(r);
	case ROLE_SERVER: return role_server(r);
	case ROLE_FWD: return role_fwd(r);
	}
	return 1;
}

int main(int argc, char **argv)
{
	struct opts o;
	char err[256];
	struct clock clk;
	struct run r;
	struct api *a = NULL, *a2 = NULL;
	static const uint8_t zero[6];
	int rc = 1;

	switch (opts_parse(argc, argv, &o, err, sizeof(err))) {
	case OPTS_ERROR:
		fprintf(stderr, "cnfperf-engine: %s\n", err);
		return 2;
	case OPTS_HELP:
		opts_usage(stdout);
		return 0;
	case OPTS_VERSION:
		print_version();
		return 0;
	case OPTS_RUN:
		break;
	}
	clock_init(&clk);
	run_signals();
	struct api_conf conf = conf_of(&o);
	if (!(a = api_open(o.api, &conf, o.api_own)))
		goto out;
	if (o.role == ROLE_FWD && (o.iface2 || o.egress)) {
		struct api_conf c2 = conf;
		c2.iface = o.iface2 ? o.iface2 : o.iface;
		c2.egress = true;
		c2.rx = false;
		c2.tx = true;
		if (!(a2 = api_open(o.api, &c2, o.api_own)))
			goto out;
	}
	if (a->ops->l2 && !o.has_src_mac && !memcmp(a->mac, zero, 6) && o.role != ROLE_FWD &&
	    o.role != ROLE_SERVER) {
		fprintf(stderr, "cnfperf-engine: --src-mac: required with --api %s (the port's MAC is unknown)\n", o.api);
		rc = 2;
		goto out;
	}
	if (run_pin(o.cpu)) {
		fprintf(stderr, "cnfperf-engine: --cpu %d: cannot pin to that CPU\n", o.cpu);
		goto out;
	}
	if (run_init(&r, &o, a, &clk, o.role == ROLE_RECV || o.role == ROLE_CLIENT))
		goto out;
	r.api2 = a2;
	rc = run_role(&r);
	run_free(&r);
	if (rc == 0 && o.hold)
		run_hold();
out:
	api_close(a2);
	api_close(a);
	free(o.api_own);
	return rc;
}
