#include "opts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/packet.h"
#include "core/seq.h"

enum {
	O_API = 256, O_IFACE, O_IFACE2, O_PORT, O_PORT2, O_QUEUE, O_XDP_MODE,
	O_SRC_MAC, O_SRC_IP, O_SPORT, O_DST_MAC, O_DST_IP, O_DPORT,
	O_DURATION, O_WARMUP, O_DRAIN, O_INTERVAL, O_FLOWS, O_CPU, O_RX_CPU, O_THREADS, O_HOLD, O_VERSION,
};

static const struct option longopts[] = {
	{ "api", required_argument, NULL, O_API },
	{ "iface", required_argument, NULL, O_IFACE },
	{ "raw", required_argument, NULL, 'R' },
	{ "iface2", required_argument, NULL, O_IFACE2 },
	{ "port", required_argument, NULL, O_PORT },
	{ "port2", required_argument, NULL, O_PORT2 },
	{ "queue", required_argument, NULL, O_QUEUE },
	{ "xdp-mode", required_argument, NULL, O_XDP_MODE },
	{ "src-mac", required_argument, NULL, O_SRC_MAC },
	{ "src-ip", required_argument, NULL, O_SRC_IP },
	{ "sport", required_argument, NULL, O_SPORT },
	{ "dst-mac", required_argument, NULL, O_DST_MAC },
	{ "dst-ip", required_argument, NULL, O_DST_IP },
	{ "dport", required_argument, NULL, O_DPORT },
	{ "rate", required_argument, NULL, 'r' },
	{ "size", required_argument, NULL, 'p' },
	{ "burst", required_argument, NULL, 'b' },
	{ "touch", no_argument, NULL, 'c' },
	{ "mmsg", no_argument, NULL, 'm' },
	{ "blocking", no_argument, NULL, 'B' },
	{ "quiet", no_argument, NULL, 's' },
	{ "duration", required_argument, NULL, O_DURATION },
	{ "warmup", required_argument, NULL, O_WARMUP },
	{ "drain", required_argument, NULL, O_DRAIN },
	{ "interval", required_argument, NULL, O_INTERVAL },
	{ "flows", required_argument, NULL, O_FLOWS },
	{ "cpu", required_argument, NULL, O_CPU },
	{ "rx-cpu", required_argument, NULL, O_RX_CPU },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "hold", no_argument, NULL, O_HOLD },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, O_VERSION },
	{ NULL, 0, NULL, 0 },
};

static const char *const role_names[] = { "send", "recv", "client", "server", "fwd" };

struct parse {
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 2, 3)))
static bool fail(struct parse *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	return false;
}

/* The name users typed for an option, for messages: "-r/--rate" or "--sport". */
static const char *optname(int code)
{
	static char buf[48];

	for (const struct option *lo = longopts; lo->name; lo++) {
		if (lo->val != code)
			continue;
		if (code < 256)
			snprintf(buf, sizeof(buf), "-%c/--%s", code, lo->name);
		else
			snprintf(buf, sizeof(buf), "--%s", lo->name);
		return buf;
	}
	snprintf(buf, sizeof(buf), "-%c", code);
	return buf;
}

static bool uint_in(struct parse *p, int code, const char *s, unsigned long min, unsigned long max,
		    unsigned long *out)
{
	char *end = NULL;

	errno = 0;
	*out = 0;
	if (*s >= '0' && *s <= '9')
		*out = strtoul(s, &end, 10);
	if (!end || errno || *end || *out < min || *out > max)
		return fail(p, "%s: '%s' is not a whole number from %lu to %lu", optname(code), s, min, max);
	return true;
}

static bool real_in(struct parse *p, int code, const char *s, double min, double max, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*out) || *out < min || *out > max)
		return fail(p, "%s: '%s' is not a number of seconds from %g to %g", optname(code), s, min, max);
	return true;
}

static bool rate_of(struct parse *p, const char *s, double *out)
{
	char *end;
	double mult = 1;

	errno = 0;
	*out = strtod(s, &end);
	if (end != s && *end && !end[1]) {
		switch (*end) {
		case 'k': case 'K': mult = 1e3; end++; break;
		case 'm': case 'M': mult = 1e6; end++; break;
		case 'g': case 'G': mult = 1e9; end++; break;
		}
	}
	*out *= mult;
	if (end == s || *end || errno || !isfinite(*out) || *out < 0 || *out > 1e9 || (s[0] < '0' || s[0] > '9'))
		return fail(p, "-r/--rate: '%s' is not a rate in packets per second (e.g. 20000, 500k, 2.5M; 0 = as fast as possible)", s);
	return true;
}

static bool mac_of(struct parse *p, int code, const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6 ||
	    strlen(s) != 17)
		return fail(p, "%s: '%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", optname(code), s);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return true;
}

static bool ip_of(struct parse *p, int code, const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1 || a.s_addr == 0)
		return fail(p, "%s: '%s' is not an IPv4 address", optname(code), s);
	*ip = a.s_addr;
	return true;
}

static bool cpu_of(struct parse *p, int code, const char *s, int *cpu)
{
	unsigned long v;
	cpu_set_t set;

	if (!uint_in(p, code, s, 0, CPU_SETSIZE - 1, &v))
		return false;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && !CPU_ISSET(v, &set))
		return fail(p, "%s: CPU %lu is not one this process may run on", optname(code), v);
	*cpu = (int)v;
	return true;
}

bool opts_l2_api(const char *api)
{
	const struct api_ops *ops = api_find(api);

	return ops ? ops->l2 : strcmp(api, "udp") != 0;
}

static void defaults(struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->api = "udp";
	o->port2 = -1;
	o->xdp_mode = "auto";
	o->sport = 9000;
	o->dport = 9000;
	o->size = 64;
	o->burst = 32;
	o->duration = 10;
	o->drain = 0.5;
	o->interval = 1;
	o->flows = 1;
	o->cpu = -1;
	o->rx_cpu = -1;
}

static bool one(struct parse *p, struct opts *o, int c, char *arg)
{
	unsigned long v;

	switch (c) {
	case O_API: o->api = arg; return true;
	case O_IFACE: o->iface = arg; return *arg || fail(p, "--iface: empty interface name");
	case 'R': o->api = "raw"; o->iface = arg; return *arg || fail(p, "-R/--raw: empty interface name");
	case O_IFACE2: o->iface2 = arg; return *arg || fail(p, "--iface2: empty interface name");
	case O_PORT: return uint_in(p, c, arg, 0, 1023, &v) && (o->port = (int)v, true);
	case O_PORT2: return uint_in(p, c, arg, 0, 1023, &v) && (o->port2 = (int)v, true);
	case O_QUEUE: return uint_in(p, c, arg, 0, 65535, &v) && (o->queue = (int)v, true);
	case O_XDP_MODE:
		o->xdp_mode = arg;
		if (strcmp(arg, "auto") && strcmp(arg, "copy") && strcmp(arg, "zerocopy") && strcmp(arg, "skb"))
			return fail(p, "--xdp-mode: '%s' is not one of auto, copy, zerocopy, skb", arg);
		return true;
	case O_SRC_MAC: return (o->has_src_mac = mac_of(p, c, arg, o->src_mac));
	case O_DST_MAC: return (o->has_dst_mac = mac_of(p, c, arg, o->dst_mac));
	case O_SRC_IP: return ip_of(p, c, arg, &o->src_ip);
	case O_DST_IP: return ip_of(p, c, arg, &o->dst_ip);
	case O_SPORT: return uint_in(p, c, arg, 1, 65535, &v) && (o->sport = (uint16_t)v, true);
	case O_DPORT: return uint_in(p, c, arg, 1, 65535, &v) && (o->dport = (uint16_t)v, true);
	case 'r': return rate_of(p, arg, &o->rate);
	case 'p': return uint_in(p, c, arg, FRAME_MIN_LEN + FCS_LEN, FRAME_MAX + FCS_LEN, &v) && (o->size = (unsigned)v, true);
	case 'b': return uint_in(p, c, arg, 1, API_MAX_BURST, &v) && (o->burst = (unsigned)v, true);
	case 'c': o->touch = true; return true;
	case 'm': o->mmsg = true; return true;
	case 'B': o->blocking = true; return true;
	case 's': o->quiet = true; return true;
	case O_DURATION: return real_in(p, c, arg, 0, 1e7, &o->duration);
	case O_WARMUP: return real_in(p, c, arg, 0, 1e7, &o->warmup);
	case O_DRAIN: return real_in(p, c, arg, 0, 3600, &o->drain);
	case O_INTERVAL:
		if (!real_in(p, c, arg, 0, 3600, &o->interval))
			return false;
		return o->interval == 0 || o->interval >= 0.01 ||
		       fail(p, "--interval: '%s' is shorter than 0.01 s (0 turns interval records off)", arg);
	case O_FLOWS: return uint_in(p, c, arg, 1, SEQ_MAX_FLOWS, &v) && (o->flows = (unsigned)v, true);
	case O_CPU: return cpu_of(p, c, arg, &o->cpu);
	case O_RX_CPU: return cpu_of(p, c, arg, &o->rx_cpu);
	case O_HOLD: o->hold = true; return true;
	case O_THREADS:
		if (strcmp(arg, "1") && strcmp(arg, "2"))
			return fail(p, "--threads: '%s' is not 1 or 2", arg);
		o->threads = (unsigned)(arg[0] - '0');
		return true;
	}
	return fail(p, "internal: option %d not handled", c);
}

/* A blocking receive would hold the one thread past its next burst, and two
 * spinning threads plus a server are more than a small machine's cores: so
 * one thread polls when nothing blocks, two when the sockets block (or when
 * a CPU was named for the receive thread). */
static bool client_threads(struct parse *p, struct opts *o)
{
	if (!o->threads)
		o->threads = o->blocking || o->rx_cpu >= 0 ? 2 : 1;
	if (o->threads == 1 && o->blocking)
		return fail(p, "--threads: 1 needs non-blocking receive (drop -B/--blocking, or use --threads 2)");
	if (o->threads == 1 && o->rx_cpu >= 0)
		return fail(p, "--rx-cpu: a one-thread client has no receive thread (--threads 2 has one)");
	return true;
}

static bool cross_check(struct parse *p, struct opts *o)
{
	const struct api_ops *ops = api_find(o->api);
	bool sender = o->role == ROLE_SEND || o->role == ROLE_CLIENT;
	const char *r = o->role_name;

	if (!ops) {
		static const char *const known[] = { "udp", "raw", "mmap", "xdp", "dpdk" };
		for (unsigned i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (!strcmp(o->api, known[i]))
				return fail(p, "--api: '%s' is not built into this engine (it has: %s)", o->api, api_names());
		return fail(p, "--api: '%s' is not an api (one of: %s)", o->api, api_names());
	}
	if (!o->iface && (!strcmp(o->api, "raw") || !strcmp(o->api, "mmap") || !strcmp(o->api, "xdp")))
		return fail(p, "--iface: required with --api %s", o->api);
	if (o->role == ROLE_FWD && !ops->l2)
		return fail(p, "--api: fwd needs an api that sees Ethernet frames (raw, mmap, xdp, dpdk), not %s", o->api);
	if (o->role == ROLE_FWD && !o->has_dst_mac)
		return fail(p, "--dst-mac: required for fwd (the next hop's MAC)");
	if (o->role != ROLE_FWD && o->iface2)
		return fail(p, "--iface2: only fwd uses a second interface");
	if (o->role != ROLE_FWD && o->port2 >= 0)
		return fail(p, "--port2: only fwd uses a second port");
	if (o->role != ROLE_CLIENT && o->threads)
		return fail(p, "--threads: only client can run more than one thread");
	if (o->role != ROLE_CLIENT && o->rx_cpu >= 0)
		return fail(p, "--rx-cpu: only client has a receive thread");
	if (o->role == ROLE_CLIENT && !client_threads(p, o))
		return false;
	if (sender && !o->dst_ip)
		return fail(p, "--dst-ip: required for %s", r);
	if (sender && ops->l2 && !o->has_dst_mac)
		return fail(p, "--dst-mac: required for %s with --api %s (the engine does no ARP)", r, o->api);
	if (sender && ops->l2 && !o->src_ip)
		return fail(p, "--src-ip: required for %s with --api %s (the engine builds the IP header)", r, o->api);
	if (o->sport + o->flows - 1 > 65535)
		return fail(p, "--flows: %u flows from --sport %u run past port 65535", o->flows, o->sport);
	return true;
}

static bool role_of(struct parse *p, struct opts *o, const char *s)
{
	for (unsigned i = 0; i < sizeof(role_names) / sizeof(role_names[0]); i++) {
		if (!strcmp(s, role_names[i])) {
			o->role = (enum role)i;
			o->role_name = role_names[i];
			return true;
		}
	}
	return fail(p, "ROLE: '%s' is not a role (send, recv, client, server, fwd)", s);
}

enum opts_result opts_parse(int argc, char **argv, struct opts *o, char *err, size_t errlen)
{
	struct parse p = { err, errlen };
	char *args[argc + 1];

	defaults(o);
	err[0] = '\0';
	if (argc < 2) {
		fail(&p, "ROLE: missing (send, recv, client, server, fwd); --help lists the options");
		return OPTS_ERROR;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return OPTS_VERSION;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return OPTS_HELP;
	if (!role_of(&p, o, argv[1]))
		return OPTS_ERROR;

	/* getopt on a copy: it reorders nothing with '+', but keep argv const anyway */
	memcpy(args, argv + 1, sizeof(char *) * (size_t)(argc - 1));
	args[argc - 1] = NULL;
	int n = argc - 1, c;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(n, args, "+:R:r:p:b:cmBsh", longopts, NULL)) != -1) {
		if (c == 'h')
			return OPTS_HELP;
		if (c == O_VERSION)
			return OPTS_VERSION;
		if (c == '?') {
			if (optopt && optopt < 256)
				fail(&p, "-%c: unknown option", optopt);
			else
				fail(&p, "%s: unknown option", args[optind - 1]);
			return OPTS_ERROR;
		}
		if (c == ':') {
			fail(&p, "%s: needs a value", optopt ? optname(optopt) : args[optind - 1]);
			return OPTS_ERROR;
		}
		if (!one(&p, o, c, optarg))
			return OPTS_ERROR;
	}
	if (optind < n) {
		if (strcmp(args[optind - 1], "--") != 0) {
			fail(&p, "'%s': unexpected argument (EAL arguments go after --)", args[optind]);
			return OPTS_ERROR;
		}
		o->eal_argc = n - optind;
		o->eal_argv = argv + 1 + optind;
	}
	return cross_check(&p, o) ? OPTS_RUN : OPTS_ERROR;
}

void opts_usage(void *stream)
{
	fputs("usage: cnfperf-engine ROLE [options] [-- EAL args]\n"
	      "roles: send recv client server fwd\n"
	      "  --api NAME        packet I/O api (built in: ", stream);
	fputs(api_names(), stream);
	fputs(")\n"
	      "  --iface NAME      kernel interface; -R/--raw IFACE = --api raw --iface IFACE\n"
	      "  --iface2 NAME     fwd: egress interface     --port N / --port2 N  dpdk ports\n"
	      "  --queue N  --xdp-mode auto|copy|zerocopy|skb\n"
	      "  --src-mac --src-ip --sport   this endpoint  --dst-mac --dst-ip --dport  its peer\n"
	      "  -r/--rate PPS (0 = max; 500k, 1M)  -p/--size BYTES (64..9220, with FCS)  -b/--burst N\n"
	      "  -c/--touch  -m/--mmsg  -B/--blocking  -s/--quiet\n"
	      "  --duration S (0 = until SIGINT)  --warmup S  --drain S  --interval S  --flows N\n"
	      "  --cpu N  --threads 1|2 (client; 2 with -B or --rx-cpu, else 1)  --rx-cpu N (its receive thread)\n"
	      "  --hold            after the summary keep the ports open, idle, until stdin ends or a signal\n"
	      "  --version   --help\n", stream);
}
