/* Option validation: every bad value is refused with one line that names
 * the option; good command lines parse into the values they say. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../src/api/api.h"
#include "../src/api/sock.h"
#include "../src/opts.h"

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
	struct opts o;
	enum opts_result r = opts_parse(ARGC(argv), argv, &o, err, sizeof(err));
	char line[256] = "";

	for (int i = 1; argv[i]; i++) {
		strncat(line, argv[i], sizeof(line) - strlen(line) - 2);
		strcat(line, " ");
	}
	CHECK(r == OPTS_ERROR, "accepted: %s", line);
	CHECK(strstr(err, names) != NULL, "message for [%s] does not name %s: %s", line, names, err);
	CHECK(!strchr(err, '\n') && strlen(err) > strlen(names) + 5, "one line with a reason: %s", err);
}

static void *last_own;           /* the last good parse's api block: checks look at one at a time */

static struct opts good(char **argv)
{
	struct opts o;

	free(last_own);
	enum opts_result r = opts_parse(ARGC(argv), argv, &o, err, sizeof(err));
	last_own = o.api_own;

	CHECK(r == OPTS_RUN, "refused %s ...: %s", argv[1], err);
	return o;
}

int main(void)
{
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
	bad(ARGV("fwd", "--dst-mac", "02:00:00:00:00:02"), "--api");
	CHECK(strstr(err, "Ethernet frames (raw") && strstr(err, "not udp"), "the l2 apis built in: %s", err);
	bad(ARGV("fwd", "--api", "raw", "--iface", "eth0"), "--dst-mac");
	bad(ARGV("recv", "--iface2", "eth1"), "--iface2");
	bad(ARGV("send", "--dst-ip", "198.18.0.2", "--port2", "1"), "--port2");
	bad(ARGV("recv", "--rx-cpu", "0"), "--rx-cpu");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "3"), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "0"), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "1x"), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", ""), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads"), "--threads");
	bad(ARGV("send", "--dst-ip", "198.18.0.2", "--threads", "2"), "--threads");
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "-B", "--threads", "1"), "--threads");
	CHECK(strstr(err, "drop -B/--blocking"), "names the option that blocks: %s", err);
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "1", "--rx-cpu", "0"), "--rx-cpu");

	/* an api's own options: refused by the others, checked once --api is known */
	bad(ARGV("recv", "--xdp-mode", "skb"), "--xdp-mode");
	bad(ARGV("recv", "--api", "raw", "--iface", "eth0", "--queue", "1"), "--queue");
	if (api_find("xdp")) {
		bad(ARGV("recv", "--xdp-mode", "skb"), "--xdp-mode");
		CHECK(strstr(err, "not an option of --api udp (its options: -m/--mmsg, -B/--blocking)"), "%s", err);
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
		bad(ARGV("recv", "--api", "xdp", "--iface", "eth0", "-B"), "-B/--blocking");
		bad(ARGV("recv", "--api", "xdp"), "--iface");
		good(ARGV("recv", "--xdp-mode", "zerocopy", "--api", "xdp", "--iface", "eth0", "--queue", "3"));
	}
	if (api_find("dpdk")) {
		bad(ARGV("recv", "--api", "dpdk", "--port", "x"), "--port");
		bad(ARGV("recv", "--api", "dpdk", "--port", "1024"), "--port");
		bad(ARGV("send", "--api", "dpdk", "--dst-ip", "198.18.0.2", "--port2", "1"), "--port2");
		CHECK(strstr(err, "only fwd uses a second port"), "%s", err);
		bad(ARGV("recv", "--api", "dpdk", "--mmsg"), "--mmsg");
		struct opts d = good(ARGV("fwd", "--port", "0", "--port2", "1", "--api", "dpdk", "--queue", "2",
					  "--dst-mac", "02:00:00:00:00:0a"));
		CHECK(d.egress && !d.blocking && !d.iface, "--port2: a second instance");
		d = good(ARGV("recv", "--api", "dpdk"));
		CHECK(!d.egress, "no --port2, no second instance");
	}

	/* good ones */
	struct opts o = good(ARGV("send", "--dst-ip", "198.18.0.2", "-r", "2.5M", "-p", "1518", "-b", "64", "-c", "-m",
				  "-B", "-s", "--flows", "8", "--duration", "1.5", "--warmup", "0.5"));
	const struct sock_own *so = o.api_own;
	CHECK(o.role == ROLE_SEND && o.rate == 2.5e6 && o.size == 1518 && o.burst == 64, "numbers");
	CHECK(o.touch && so->mmsg && so->blocking && o.blocking && o.quiet && o.flows == 8, "flags");
	CHECK(o.duration == 1.5 && o.warmup == 0.5 && o.dst_ip == htonl(0xc6120002), "times and address");
	CHECK(!strcmp(o.api, "udp") && o.sport == 9000 && o.dport == 9000 && o.interval == 1 && o.drain == 0.5,
	      "defaults");
	CHECK(!strcmp(o.api, api_at(0)->name), "the default api is the registry's first");
	o = good(ARGV("send", "--dst-ip", "198.18.0.2", "--mmsg"));
	so = o.api_own;
	CHECK(so->mmsg && !so->blocking && !o.blocking, "--mmsg alone");
	o = good(ARGV("recv", "-r", "500k"));
	CHECK(o.rate == 500000, "500k");
	o = good(ARGV("recv", "-r", "0", "--duration", "0", "--interval", "0"));
	CHECK(o.rate == 0 && o.duration == 0 && o.interval == 0, "zeros allowed");
	o = good(ARGV("fwd", "--api", "raw", "--iface", "cnfp0", "--dst-mac", "02:00:00:00:00:0a", "--iface2", "cnfp1",
		      "--src-ip", "10.0.0.1"));
	CHECK(!strcmp(o.api, "raw") && !strcmp(o.iface, "cnfp0") && !strcmp(o.iface2, "cnfp1") && !o.egress, "raw");
	CHECK(o.has_dst_mac && o.dst_mac[5] == 0x0a && !o.has_src_mac, "mac");
	o = good(ARGV("recv", "-B", "--iface", "cnfp0", "--api", "raw"));
	so = o.api_own;
	CHECK(!strcmp(o.api, "raw") && so->blocking && o.blocking, "an api option before --api");
	o = good(ARGV("send", "--api", "raw", "--iface", "cnfp0", "--api", "udp", "--dst-ip", "198.18.0.2"));
	CHECK(!strcmp(o.api, "udp") && !strcmp(o.iface, "cnfp0"), "a later --api overrides");
	o = good(ARGV("server", "--sport", "7", "--", "-l", "0", "--vdev", "net_null0"));
	CHECK(o.eal_argc == 4 && !strcmp(o.eal_argv[0], "-l") && !strcmp(o.eal_argv[3], "net_null0"), "EAL args");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "--cpu", "0", "--rx-cpu", "0"));
	CHECK(o.cpu == 0 && o.rx_cpu == 0, "cpus");
	CHECK(o.threads == 2, "a CPU for the receive thread asks for one");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2"));
	CHECK(o.threads == 1, "polling client: one thread");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "-B"));
	CHECK(o.threads == 2, "blocking client: two threads");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "2"));
	CHECK(o.threads == 2, "--threads 2 without -B");
	o = good(ARGV("client", "--dst-ip", "198.18.0.2", "-B", "--threads", "2", "--rx-cpu", "1"));
	CHECK(o.threads == 2 && o.rx_cpu == 1, "--threads 2 -B --rx-cpu");
	o = good(ARGV("send", "--dst-ip", "198.18.0.2"));
	CHECK(o.threads == 0 && !o.hold, "send has no thread count, and does not hold");
	o = good(ARGV("recv", "--hold", "--", "--vdev", "net_null0"));
	CHECK(o.hold && o.eal_argc == 2, "--hold");

	struct opts v;
	CHECK(opts_parse(2, ARGV("--version"), &v, err, sizeof(err)) == OPTS_VERSION, "--version");
	CHECK(opts_parse(3, ARGV("recv", "--help"), &v, err, sizeof(err)) == OPTS_HELP, "--help");
	free(last_own);
	return check_done("opts");
}
