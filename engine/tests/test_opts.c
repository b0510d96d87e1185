/* Option validation: every bad value is refused with one line that names
 * the option; good command lines parse into the values they say. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../src/api/api.h"
#include "../src/api/sock.h"
#include "../src/opts.h"
#include "../src/roles/roles.h"

#define ARGV(...) ((char *[]){ "cnfperf-engine", __VA_ARGS__, NULL })
#define ARGC(v) argc_of(v)

static int argc_of(char **v)
{
	int n = 0;
	while (v[n])
		n++;
	return n;
}

static char err[256];             /* the last refusal's message */

static void bad(char **argv, const char *names)
{
	struct conf o;
	enum opts_result r = opts_parse(ARGC(argv), argv, &o, err, sizeof(err));
	char line[256] = "";

	for (int i = 1; argv[i] && strlen(line) + 2 < sizeof(line); i++) {
		strncat(line, argv[i], sizeof(line) - strlen(line) - 2);
		strcat(line, " ");
	}
	CHECK(r == OPTS_ERROR, "accepted: %s", line);
	CHECK(strstr(err, names) != NULL, "message for [%s] does not name %s: %s", line, names, err);
	CHECK(!strchr(err, '\n') && strlen(err) > strlen(names) + 5, "one line with a reason: %s", err);
}

static void *last_own;           /* the last good parse's api block: checks look at one at a time */

static struct conf good(char **argv)
{
	struct conf o;

	free(last_own);
	enum opts_result r = opts_parse(ARGC(argv), argv, &o, err, sizeof(err));
	last_own = o.api_own;

	CHECK(r == OPTS_RUN, "refused %s ...: %s", argv[1], err);
	return o;
}

#define NF_RAW "nf", "--api", "raw", "--iface", "eth0"
#define MAC_A "02:00:00:00:00:0a"
#define MAC_B "02:00:00:00:00:0b"

/* nf --threads: a thread per queue, a CPU each from --cpu's list */
static void queue_options(void)
{
	struct conf o = good(ARGV(NF_RAW, "--dst-mac", MAC_A, "--cpu", "0,1"));
	CHECK(o.threads == 2 && o.ncpus == 2 && o.cpus[1] == 1 && o.cpu == 0, "--cpu 0,1: two threads");
	o = good(ARGV(NF_RAW, "--dst-mac", MAC_A, "--threads", "2"));
	CHECK(o.threads == 2 && o.ncpus == 0 && o.cpu == -1, "--threads 2, unpinned");
	o = good(ARGV(NF_RAW, "--dst-mac", MAC_A));
	CHECK(o.threads == 1, "nf: one thread by default");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--cpu", "0,1", "--threads", "3"), "--cpu");
	CHECK(strstr(err, "2 CPUs for 3 threads"), "%s", err);
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--cpu", "0,0"), "--cpu");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--cpu", "0,"), "--cpu");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--threads", "17"), "--threads");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--threads", "2", "--policer", "1000,10"), "--threads");
	CHECK(strstr(err, "--policer is one bucket"), "%s", err);
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--threads", "2", "--rx-cpu", "1"), "--rx-cpu");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--cpu", "0,1"), "--cpu");
	CHECK(strstr(err, "only send, recv and nf run"), "%s", err);
	bad(ARGV("recv", "--threads", "2"), "--threads");
}

/* --poll, and nf's kinds, routes and second next hop */
static void nf_options(void)
{
	bad(ARGV("recv", "--poll", "sometimes"), "--poll");
	CHECK(strstr(err, "not one of busy, adaptive, interrupt"), "%s", err);
	bad(ARGV("recv", "--poll"), "--poll");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--nf", "bridge"), "--nf");
	CHECK(strstr(err, "not one of l2, mirror, strip-encap, l3"), "%s", err);
	bad(ARGV("recv", "--nf", "l2"), "--nf");
	bad(ARGV("recv", "--route", "10.0.0.0/8,1"), "--route");
	bad(ARGV("recv", "--dst-mac2", MAC_A), "--dst-mac2");
	bad(ARGV("send", "--dst-ip", "198.18.0.2", "--src-mac2", MAC_A), "--src-mac2");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--dst-mac2", "02:00"), "--dst-mac2");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--iface2", "eth1"), "--dst-mac2");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--dst-mac2", MAC_B), "--dst-mac2");
	CHECK(strstr(err, "no second port"), "%s", err);
	bad(ARGV(NF_RAW, "--nf", "strip-encap"), "--dst-mac");
	bad(ARGV(NF_RAW, "--nf", "mirror", "--iface2", "eth1"), "--iface2");
	CHECK(strstr(err, "one port"), "%s", err);
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--route", "10.0.0.0/8,1"), "--route");
	CHECK(strstr(err, "only --nf l3 routes"), "%s", err);
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--nf", "l3"), "--route");
	/* each part of a route */
	static const char *const routes[] = {
		"10.0.0.0/8", "10.0.0.0,1", "10.0.0/8,1", "10.0.0.0/33,1", "10.0.0.0/-1,1", "10.0.0.0/,1",
		"10.0.0.0/8,3", "10.0.0.0/8,0", "10.0.0.0/8,", "10.0.0.0/8,1x", "10.1.0.0/8,1", "any/0,1",
		"10.0.0.0/8/8,1", "10.0.0.0/008,1",
	};
	for (unsigned i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		bad(ARGV(NF_RAW, "--nf", "l3", "--dst-mac", MAC_A, "--route", (char *)routes[i]), "--route");
	bad(ARGV(NF_RAW, "--nf", "l3", "--dst-mac", MAC_A, "--route", "10.1.0.0/8,1"), "--route");
	CHECK(strstr(err, "the network is 10.0.0.0/8"), "host bits: %s", err);
	bad(ARGV(NF_RAW, "--nf", "l3", "--dst-mac", MAC_A, "--route", "10.0.0.0/8,2"), "--route");
	CHECK(strstr(err, "second port"), "a route to port 2 without one: %s", err);
	bad(ARGV(NF_RAW, "--nf", "l3", "--iface2", "eth1", "--dst-mac", MAC_A, "--route", "10.0.0.0/8,2"),
	    "--dst-mac2");
	bad(ARGV(NF_RAW, "--nf", "l3", "--iface2", "eth1", "--dst-mac2", MAC_B, "--route", "10.0.0.0/8,1"),
	    "--dst-mac");

	/* good ones: the table is kept longest prefix first, a prefix given
	 * again replaces its port */
	struct conf o = good(ARGV(NF_RAW, "--nf", "l3", "--iface2", "eth1", "--dst-mac2", MAC_B,
				  "--route", "0.0.0.0/0,2", "--route", "198.18.2.0/24,2", "--route", "198.18.0.0/15,2",
				  "--route", "198.18.2.128/25,2", "--route", "198.18.0.0/15,2", "--poll", "adaptive"));
	CHECK(o.nf == nf_kind_find("l3") && o.poll == POLL_ADAPTIVE && o.routes.n == 4, "%u routes", o.routes.n);
	CHECK(o.routes.r[0].len == 25 && o.routes.r[1].len == 24 && o.routes.r[2].len == 15 && o.routes.r[3].len == 0,
	      "longest first");
	CHECK(o.routes.r[1].net == 0xc6120200 && o.routes.r[1].mask == 0xffffff00 && o.routes.r[1].port == 1,
	      "198.18.2.0/24 -> port 2 (index 1)");
	o = good(ARGV(NF_RAW, "--nf", "mirror"));
	CHECK(o.nf == nf_kind_find("mirror") && !o.dst_mac.given, "mirror needs no MAC");
	o = good(ARGV(NF_RAW, "--nf", "strip-encap", "--dst-mac", MAC_A, "--src-mac", MAC_B));
	CHECK(o.nf == nf_kind_find("strip-encap") && o.src_mac.given, "strip-encap, one port");
	o = good(ARGV(NF_RAW, "--nf", "l3", "--dst-mac", MAC_A, "--route", "10.0.0.0/8,1", "--route", "10.0.0.0/8,1"));
	CHECK(o.routes.n == 1 && o.routes.r[0].port == 0, "the same route twice is one");
	char *many[2 * NF_MAX_ROUTES + 12] = { "cnfperf-engine", NF_RAW, "--nf", "l3", "--dst-mac", MAC_A };
	static char names[NF_MAX_ROUTES + 1][32];
	int n = 10;
	for (int i = 0; i <= NF_MAX_ROUTES; i++) {
		snprintf(names[i], sizeof(names[i]), "10.%d.%d.0/24,1", i / 256, i % 256);
		many[n++] = "--route";
		many[n++] = names[i];
	}
	many[n] = NULL;
	bad(many, "--route");
	CHECK(strstr(err, "more than 256"), "%s", err);
	many[n - 2] = NULL;
	o = good(many);
	CHECK(o.routes.n == NF_MAX_ROUTES, "%u routes", o.routes.n);
}

static void tester_options(void)
{
	bad(ARGV("tester"), "--dst-ip");
	bad(ARGV("tester", "--api", "raw", "--iface", "eth0", "--dst-ip", "198.18.0.2", "--src-ip", "198.18.0.1"),
	    "--dst-mac");
	bad(ARGV("tester", "--api", "raw", "--iface", "eth0", "--dst-ip", "198.18.0.2", "--dst-mac", MAC_A), "--src-ip");
	bad(ARGV("tester", "--dst-ip", "198.18.0.2", "--threads", "2"), "--threads");
	bad(ARGV("tester", "--dst-ip", "198.18.0.2", "--nf", "l2"), "--nf");
	struct conf o = good(ARGV("tester", "--api", "raw", "--iface", "eth0", "--iface2", "eth1", "--dst-ip",
				  "198.18.2.1", "--src-ip", "198.18.1.1", "--dst-mac", MAC_A, "--poll", "interrupt",
				  "--drain", "0.2"));
	CHECK(o.role == role_find("tester") && !strcmp(o.iface2, "eth1") && o.poll == POLL_INTERRUPT && o.drain == 0.2 &&
	      o.threads == 0, "tester");
}

/* --clock: only a receiver of another engine's timestamps takes it. */
static void clock_options(void)
{
	struct conf o = good(ARGV("recv", "--clock", "other"));
	CHECK(o.clock_other, "recv --clock other");
	o = good(ARGV("recv"));
	CHECK(!o.clock_other, "recv: its own clock by default");
	o = good(ARGV("recv", "--clock", "mine"));
	CHECK(!o.clock_other, "recv --clock mine");
	bad(ARGV("recv", "--clock", "theirs"), "--clock");
	CHECK(strstr(err, "mine") && strstr(err, "other"), "the words: %s", err);
	bad(ARGV("send", "--dst-ip", "198.18.0.2", "--clock", "other"), "--clock");
	CHECK(strstr(err, "only recv"), "which role takes it: %s", err);
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--clock", "other"), "--clock");
	bad(ARGV("tester", "--dst-ip", "198.18.0.2", "--clock", "other"), "--clock");
	o = good(ARGV("send", "--dst-ip", "198.18.0.2", "--clock", "mine"));
	CHECK(!o.clock_other, "--clock mine is every role's default");
}

/* --policer, --shaper (nf), --onoff (generators), --conformance (receiving ends) */
static void rate_options(void)
{
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--policer", "10k,0"), "--policer");
	CHECK(strstr(err, "bucket '0'"), "a bucket of 0: %s", err);
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--policer", "0,32"), "--policer");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--policer", "lots,32"), "--policer");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--policer", "10k"), "--policer");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--policer", "10k,32,5"), "--policer");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--shaper", "10k,32"), "--shaper");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--shaper", "10k,32,0"), "--shaper");
	bad(ARGV(NF_RAW, "--dst-mac", MAC_A, "--shaper", "10k,32,70000"), "--shaper");
	bad(ARGV("recv", "--policer", "10k,32"), "--policer");
	bad(ARGV("send", "--dst-ip", "10.0.0.1", "--shaper", "10k,32,100"), "--shaper");
	bad(ARGV("recv", "--onoff", "64"), "--onoff");
	bad(ARGV("send", "--dst-ip", "10.0.0.1", "--onoff", "64"), "--onoff");   /* unpaced */
	bad(ARGV("send", "--dst-ip", "10.0.0.1", "-r", "1k", "--onoff", "x"), "--onoff");
	bad(ARGV("server", "--conformance", "1k,32"), "--conformance");
	bad(ARGV("recv", "--conformance", "1k,-1"), "--conformance");

	struct conf o = good(ARGV(NF_RAW, "--dst-mac", MAC_A, "--policer", "2.5k,16", "--shaper", "1M,32,1000"));
	CHECK(o.policer.given && o.policer.rate == 2500 && o.policer.size == 16, "policer %g,%u", o.policer.rate,
	      o.policer.size);
	CHECK(o.shaper.given && o.shaper.rate == 1e6 && o.shaper.size == 32 && o.shaper.queue == 1000, "shaper");
	o = good(ARGV("send", "--dst-ip", "10.0.0.1", "-r", "640", "--onoff", "64"));
	CHECK(o.onoff == 64 && !o.policer.given, "onoff %u", o.onoff);
	o = good(ARGV("recv", "--conformance", "200,16"));
	CHECK(o.conformance.given && o.conformance.rate == 200 && o.conformance.size == 16, "conformance");
	o = good(ARGV("recv"));
	CHECK(!o.conformance.given && !o.onoff, "none by default");
}

int main(void)
{
	rate_options();
	/* each bad value, with the option the message must name */
	bad(ARGV("sendx"), "ROLE");
	bad((char *[]){ "cnfperf-engine", NULL }, "ROLE");
	bad(ARGV("recv", "--rate", "fast"), "--rate");
	bad(ARGV("recv", "-r", "-5"), "--rate");
	bad(ARGV("recv", "-r", "1X"), "--rate");
	bad(ARGV("recv", "-r", "2e10"), "--rate");
	bad(ARGV("recv", "-r", "nan"), "--rate");
	bad(ARGV("recv", "-p", "63"), "--size");
	bad(ARGV("recv", "--size", "9221"), "--size");
	bad(ARGV("recv", "--size", "64B"), "--size");
	bad(ARGV("recv", "-b", "0"), "--burst");
	bad(ARGV("recv", "-b", "1025"), "--burst");
	bad(ARGV("recv", "-b", "-1"), "--burst");
	bad(ARGV("recv", "--duration", "-1"), "--duration");
	bad(ARGV("recv", "--duration", "ten"), "--duration");
	bad(ARGV("recv", "--warmup", "inf"), "--warmup");
	bad(ARGV("recv", "--drain", "x"), "--drain");
	bad(ARGV("recv", "--interval", "0.001"), "--interval");
	bad(ARGV("recv", "--stall-us", "0"), "--stall-us");
	bad(ARGV("recv", "--flows", "0"), "--flows");
	bad(ARGV("recv", "--flows", "5000"), "--flows");
	bad(ARGV("recv", "--sport", "65500", "--flows", "100"), "--flows");
	bad(ARGV("recv", "--sport", "0"), "--sport");
	bad(ARGV("recv", "--dport", "65536"), "--dport");
	bad(ARGV("recv", "--src-ip", "300.1.1.1"), "--src-ip");
	bad(ARGV("send", "--dst-ip", "fe80::1"), "--dst-ip");
	bad(ARGV("recv", "--src-mac", "02:00:00:00:00"), "--src-mac");
	bad(ARGV("recv", "--dst-mac", "02:00:00:00:00:zz"), "--dst-mac");
	bad(ARGV("recv", "--cpu", "99999"), "--cpu");
	bad(ARGV("recv", "--cpu", "1023"), "--cpu");
	bad(ARGV("recv", "--api", "carrier-pigeon"), "--api");
	bad(ARGV("recv", "--api", "raw"), "--iface");
	bad(ARGV("recv", "--iface", ""), "--iface");
	bad(ARGV("recv", "--xdp-mode", "fast"), "--xdp-mode");
	bad(ARGV("recv", "--queue", "q"), "--queue");
	bad(ARGV("recv", "--port", "x"), "--port");
	bad(ARGV("recv", "-R", "eth0"), "-R");
	bad(ARGV("recv", "--raw", "eth0"), "--raw");
	bad(ARGV("recv", "--bogus"), "--bogus");
	bad(ARGV("recv", "-z"), "-z");
	bad(ARGV("recv", "--rate"), "--rate");
	bad(ARGV("recv", "-b"), "--burst");
	bad(ARGV("recv", "stray"), "stray");
	bad(ARGV("send"), "--dst-ip");
	bad(ARGV("send", "--api", "raw", "--iface", "eth0", "--dst-ip", "198.18.0.2", "--src-ip", "198.18.0.1"),
	    "--dst-mac");
	bad(ARGV("send", "--api", "raw", "--iface", "eth0", "--dst-ip", "198.18.0.2", "--dst-mac", "02:00:00:00:00:02"),
	    "--src-ip");
	bad(ARGV("nf", "--dst-mac", "02:00:00:00:00:02"), "--api");
	CHECK(strstr(err, "Ethernet frames (raw") && strstr(err, "not udp"), "the l2 apis built in: %s", err);
	bad(ARGV("nf", "--api", "raw", "--iface", "eth0"), "--dst-mac");
	bad(ARGV("fwd", "--api", "raw", "--iface", "eth0"), "ROLE");
	bad(ARGV("recv", "--iface2", "eth1"), "--iface2");
	bad(ARGV("send", "--dst-ip", "198.18.0.2", "--port2", "1"), "--port2");
	bad(ARGV("recv", "--rx-cpu", "0"), "--rx-cpu");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "3"), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "0"), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "1x"), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", ""), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads"), "--threads");
	bad(ARGV("send", "--dst-ip", "198.18.0.2", "--threads", "2"), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--poll", "interrupt", "--threads", "1"), "--threads");
	CHECK(strstr(err, "drop --poll interrupt"), "names the option that sleeps: %s", err);
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "1", "--poll", "adaptive"), "--threads");
	bad(ARGV("recv", "-B"), "-B");
	bad(ARGV("recv", "--blocking"), "--blocking");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "1", "--rx-cpu", "0"), "--rx-cpu");

	nf_options();
	queue_options();
	tester_options();
	clock_options();

	/* an api's own options: refused by the others, checked once --api is known */
	bad(ARGV("recv", "--xdp-mode", "skb"), "--xdp-mode");
	bad(ARGV("recv", "--api", "raw", "--iface", "eth0", "--queue", "1"), "--queue");
	if (api_find("xdp")) {
		bad(ARGV("recv", "--xdp-mode", "skb"), "--xdp-mode");
		CHECK(strstr(err, "not an option of --api udp (its options: -m/--mmsg)"), "%s", err);
		bad(ARGV("recv", "--api", "raw", "--iface", "eth0", "--queue", "1"), "--queue");
		CHECK(strstr(err, "not an option of --api raw"), "%s", err);
	} else {
		/* nothing built in knows it; the api that would is the reason */
		bad(ARGV("recv", "--api", "xdp", "--xdp-mode", "skb"), "--api");
		CHECK(strstr(err, "'xdp' is not built into this engine"), "%s", err);
	}
	bad(ARGV("recv", "--bogus", "--rate", "x"), "--bogus");
	bad(ARGV("recv", "--api", "carrier-pigeon", "--bogus"), "--api");
	if (api_find("mmap")) {
		bad(ARGV("recv", "-m", "--api", "mmap", "--iface", "eth0"), "-m/--mmsg");
		CHECK(strstr(err, "--api mmap (it has none of its own)"), "%s", err);
	}
	if (api_find("xdp")) {
		bad(ARGV("recv", "--api", "xdp", "--iface", "eth0", "--xdp-mode", "fast"), "--xdp-mode");
		CHECK(strstr(err, "'fast' is not one of auto, copy, zerocopy, skb"), "%s", err);
		bad(ARGV("recv", "--xdp-mode", "fast", "--api", "xdp", "--iface", "eth0"), "--xdp-mode");
		bad(ARGV("recv", "--queue", "q", "--api", "xdp", "--iface", "eth0"), "--queue");
		bad(ARGV("recv", "--api", "xdp", "--iface", "eth0", "--queue", "65536"), "--queue");
		bad(ARGV("recv", "--api", "xdp", "--iface", "eth0", "-m"), "-m/--mmsg");
		bad(ARGV("recv", "--api", "xdp"), "--iface");
		good(ARGV("recv", "--xdp-mode", "zerocopy", "--api", "xdp", "--iface", "eth0", "--queue", "3"));
	}
	if (api_find("dpdk")) {
		bad(ARGV("recv", "--api", "dpdk", "--port", "x"), "--port");
		bad(ARGV("recv", "--api", "dpdk", "--port", "1024"), "--port");
		bad(ARGV("send", "--api", "dpdk", "--dst-ip", "198.18.0.2", "--port2", "1"), "--port2");
		CHECK(strstr(err, "only nf and tester use a second port"), "%s", err);
		bad(ARGV("recv", "--api", "dpdk", "--mmsg"), "--mmsg");
		bad(ARGV("nf", "--port", "0", "--port2", "1", "--api", "dpdk", "--dst-mac", "02:00:00:00:00:0a"),
		    "--dst-mac2");
		bad(ARGV("nf", "--api", "dpdk", "--port2", "1", "--nf", "mirror"), "--port2");
		CHECK(strstr(err, "one port"), "mirror takes one port: %s", err);
		struct conf d = good(ARGV("nf", "--port", "0", "--port2", "1", "--api", "dpdk", "--queue", "2",
					  "--dst-mac", "02:00:00:00:00:0a", "--dst-mac2", "02:00:00:00:00:0b"));
		CHECK(d.egress && d.poll == POLL_BUSY && !d.iface && d.nf == nf_kind_find("l2"), "--port2: a second instance");
		d = good(ARGV("tester", "--api", "dpdk", "--port2", "1", "--dst-ip", "198.18.0.2", "--src-ip",
			      "198.18.0.1", "--dst-mac", "02:00:00:00:00:0a"));
		CHECK(d.egress && d.role == role_find("tester"), "a tester's second port");
		d = good(ARGV("recv", "--api", "dpdk"));
		CHECK(!d.egress, "no --port2, no second instance");
	}

	/* good ones */
	struct conf o = good(ARGV("send", "--dst-ip", "198.18.0.2", "-r", "2.5M", "-p", "1518", "-b", "64", "-c", "-m",
				  "--poll", "interrupt", "-s", "--flows", "8", "--duration", "1.5", "--warmup", "0.5"));
	const struct sock_own *so = o.api_own;
	CHECK(o.role == role_find("send") && o.rate == 2.5e6 && o.size == 1518 && o.burst == 64, "numbers");
	CHECK(o.touch && so->mmsg && o.poll == POLL_INTERRUPT && o.quiet && o.flows == 8, "flags");
	CHECK(o.duration == 1.5 && o.warmup == 0.5 && o.dst_ip == htonl(0xc6120002), "times and address");
	CHECK(!strcmp(o.api, "udp") && o.sport == 9000 && o.dport == 9000 && o.interval == 1 && o.drain == 0.5,
	      "defaults");
	CHECK(o.stall_us == 200, "--stall-us: %u by default", o.stall_us);
	CHECK(!strcmp(o.api, api_at(0)->name), "the default api is the registry's first");
	o = good(ARGV("send", "--dst-ip", "198.18.0.2", "--mmsg"));
	so = o.api_own;
	CHECK(so->mmsg && o.poll == POLL_BUSY, "--mmsg alone");
	o = good(ARGV("recv", "-r", "500k"));
	CHECK(o.rate == 500000, "500k");
	o = good(ARGV("recv", "-r", "0", "--duration", "0", "--interval", "0"));
	CHECK(o.rate == 0 && o.duration == 0 && o.interval == 0, "zeros allowed");
	o = good(ARGV("nf", "--api", "raw", "--iface", "cnfp0", "--dst-mac", "02:00:00:00:00:0a", "--iface2", "cnfp1",
		      "--dst-mac2", "02:00:00:00:00:0b", "--src-mac2", "02:00:00:00:00:0c"));
	CHECK(!strcmp(o.api, "raw") && !strcmp(o.iface, "cnfp0") && !strcmp(o.iface2, "cnfp1") && !o.egress, "raw");
	CHECK(o.dst_mac.given && o.dst_mac.addr[5] == 0x0a && !o.src_mac.given, "mac");
	CHECK(o.dst_mac2.given && o.dst_mac2.addr[5] == 0x0b && o.src_mac2.given && o.src_mac2.addr[5] == 0x0c, "mac2");
	CHECK(o.role == role_find("nf") && o.nf == nf_kind_find("l2") && !strcmp(o.role->name, "nf"), "nf l2 is the default kind");
	o = good(ARGV("recv", "-m", "--iface", "cnfp0", "--api", "raw"));
	so = o.api_own;
	CHECK(!strcmp(o.api, "raw") && so->mmsg, "an api option before --api");
	o = good(ARGV("send", "--api", "raw", "--iface", "cnfp0", "--api", "udp", "--dst-ip", "198.18.0.2"));
	CHECK(!strcmp(o.api, "udp") && !strcmp(o.iface, "cnfp0"), "a later --api overrides");
	o = good(ARGV("server", "--sport", "7", "--", "-l", "0", "--vdev", "net_null0"));
	CHECK(o.eal_argc == 4 && !strcmp(o.eal_argv[0], "-l") && !strcmp(o.eal_argv[3], "net_null0"), "EAL args");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "--cpu", "0", "--rx-cpu", "0"));
	CHECK(o.cpu == 0 && o.rx_cpu == 0, "cpus");
	CHECK(o.threads == 2, "a CPU for the receive thread asks for one");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2"));
	CHECK(o.threads == 1, "polling client: one thread");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "--poll", "interrupt"));
	CHECK(o.threads == 2, "waiting client: two threads");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "--poll", "adaptive"));
	CHECK(o.threads == 2 && o.poll == POLL_ADAPTIVE, "sleeping client: two threads");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "--poll", "busy", "--threads", "1"));
	CHECK(o.threads == 1 && o.poll == POLL_BUSY, "--poll busy");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "2"));
	CHECK(o.threads == 2, "--threads 2 with --poll busy");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "--poll", "interrupt", "--threads", "2", "--rx-cpu", "1"));
	CHECK(o.threads == 2 && o.rx_cpu == 1, "--threads 2 --poll interrupt --rx-cpu");
	o = good(ARGV("send", "--dst-ip", "198.18.0.2"));
	CHECK(o.threads == 1 && !o.hold, "send runs one queue's thread, and does not hold");
	bad(ARGV("send", "--dst-ip", "198.18.0.2", "--api", "raw", "--iface", "lo", "--dst-mac", MAC_A,
		 "--src-ip", "198.18.0.1", "--threads", "2"), "--threads");
	CHECK(strstr(err, "need --flows 2"), "%s", err);
	bad(ARGV("send", "--dst-ip", "198.18.0.2", "--api", "raw", "--iface", "lo", "--dst-mac", MAC_A,
		 "--src-ip", "198.18.0.1", "--threads", "2", "--flows", "2", "--rate", "1000", "--onoff", "8"),
	    "--threads");
	CHECK(strstr(err, "--onoff's clumps"), "%s", err);
	o = good(ARGV("recv", "--hold", "--", "--vdev", "net_null0"));
	CHECK(o.hold && o.eal_argc == 2, "--hold");

	struct conf v;
	CHECK(opts_parse(2, ARGV("--version"), &v, err, sizeof(err)) == OPTS_VERSION, "--version");
	CHECK(opts_parse(3, ARGV("recv", "--help"), &v, err, sizeof(err)) == OPTS_HELP, "--help");
	CHECK(opts_parse(2, ARGV("--idle"), &v, err, sizeof(err)) == OPTS_IDLE, "--idle");
	CHECK(opts_parse(3, ARGV("--idle", "x"), &v, err, sizeof(err)) == OPTS_ERROR &&
	      strstr(err, "--idle"), "--idle alone: %s", err);
	free(last_own);
	return check_done("opts");
}
