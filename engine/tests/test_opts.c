/* Option validation: every bad value is refused with one line that names
 * the option; good command lines parse into the values they say. */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
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

static void bad(char **argv, const char *names)
{
	struct opts o;
	char err[256];
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

static struct opts good(char **argv)
{
	struct opts o;
	char err[256];
	enum opts_result r = opts_parse(ARGC(argv), argv, &o, err, sizeof(err));

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
	bad(ARGV("recv", "--bogus"), "--bogus");
	bad(ARGV("recv", "-z"), "-z");
	bad(ARGV("recv", "--rate"), "--rate");
	bad(ARGV("recv", "-b"), "--burst");
	bad(ARGV("recv", "stray"), "stray");
	bad(ARGV("send"), "--dst-ip");
	bad(ARGV("send", "-R", "eth0", "--dst-ip", "198.18.0.2", "--src-ip", "198.18.0.1"), "--dst-mac");
	bad(ARGV("send", "-R", "eth0", "--dst-ip", "198.18.0.2", "--dst-mac", "02:00:00:00:00:02"), "--src-ip");
	bad(ARGV("fwd", "--dst-mac", "02:00:00:00:00:02"), "--api");
	bad(ARGV("fwd", "-R", "eth0"), "--dst-mac");
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
	bad(ARGV("client", "--dst-ip", "198.18.0.2", "--threads", "1", "--rx-cpu", "0"), "--rx-cpu");

	/* good ones */
	struct opts o = good(ARGV("send", "--dst-ip", "198.18.0.2", "-r", "2.5M", "-p", "1518", "-b", "64", "-c", "-m",
				  "-B", "-s", "--flows", "8", "--duration", "1.5", "--warmup", "0.5"));
	CHECK(o.role == ROLE_SEND && o.rate == 2.5e6 && o.size == 1518 && o.burst == 64, "numbers");
	CHECK(o.touch && o.mmsg && o.blocking && o.quiet && o.flows == 8, "flags");
	CHECK(o.duration == 1.5 && o.warmup == 0.5 && o.dst_ip == htonl(0xc6120002), "times and address");
	CHECK(!strcmp(o.api, "udp") && o.sport == 9000 && o.dport == 9000 && o.interval == 1 && o.drain == 0.5,
	      "defaults");
	o = good(ARGV("recv", "-r", "500k"));
	CHECK(o.rate == 500000, "500k");
	o = good(ARGV("recv", "-r", "0", "--duration", "0", "--interval", "0"));
	CHECK(o.rate == 0 && o.duration == 0 && o.interval == 0, "zeros allowed");
	o = good(ARGV("fwd", "-R", "cnfp0", "--dst-mac", "02:00:00:00:00:0a", "--iface2", "cnfp1", "--src-ip", "10.0.0.1"));
	CHECK(!strcmp(o.api, "raw") && !strcmp(o.iface, "cnfp0") && !strcmp(o.iface2, "cnfp1"), "-R");
	CHECK(o.has_dst_mac && o.dst_mac[5] == 0x0a && !o.has_src_mac, "mac");
	o = good(ARGV("send", "-R", "cnfp0", "--api", "udp", "--dst-ip", "198.18.0.2"));
	CHECK(!strcmp(o.api, "udp") && !strcmp(o.iface, "cnfp0"), "later --api overrides -R's");
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
	char err[64];
	CHECK(opts_parse(2, ARGV("--version"), &v, err, sizeof(err)) == OPTS_VERSION, "--version");
	CHECK(opts_parse(3, ARGV("recv", "--help"), &v, err, sizeof(err)) == OPTS_HELP, "--help");
	return check_done("opts");
}
