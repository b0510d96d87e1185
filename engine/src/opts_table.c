/* The options every role and api shares, one row each (struct opt in
 * opts.h), and the setters the rows name: each checks its value and writes
 * it into struct conf, most of them at the row's `at` within the row's range. */
#include "parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/packet.h"
#include "core/seq.h"

/* The option being set, as messages name it. */
static const char *here(const struct parse *p)
{
	return opt_label(p->opt->name, p->opt->letter);
}

/* The conf field the option being set writes. */
static void *field(const struct parse *p, struct conf *cf)
{
	return (char *)cf + p->opt->at;
}

/* s as a number in the option's range: whole (digits only), or any decimal for seconds. */
static bool num_in(struct parse *p, const char *s, bool secs, double *out)
{
	double min = p->opt->min, max = p->opt->max;
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*out) || *out < min || *out > max ||
	    (!secs && s[strspn(s, "0123456789")]))
		return fail(p, "%s: '%s' is not %s from %g to %g", here(p), s,
			    secs ? "a number of seconds" : "a whole number", min, max);
	return true;
}

/* s as one of the option's words (--poll, --nf), its index in *out. */
static bool word_of(struct parse *p, const char *s, size_t *out)
{
	char list[96] = "";
	const char *w;

	for (size_t i = 0; (w = p->opt->words(i)); i++) {
		if (!strcmp(s, w)) {
			*out = i;
			return true;
		}
		list_add(list, sizeof(list), w);
	}
	return fail(p, "%s: '%s' is not one of %s", here(p), s, list);
}

/* The setters most rows share: where they write is the row's `at`. */

static bool set_flag(struct parse *p, struct conf *cf, const char *arg)
{
	(void)arg;
	*(bool *)field(p, cf) = true;
	return true;
}

static bool set_secs(struct parse *p, struct conf *cf, const char *arg)
{
	return num_in(p, arg, true, field(p, cf));
}

static bool set_count(struct parse *p, struct conf *cf, const char *arg)
{
	double v;

	return num_in(p, arg, false, &v) && (*(unsigned *)field(p, cf) = (unsigned)v, true);
}

static bool set_port(struct parse *p, struct conf *cf, const char *arg)
{
	double v;

	return num_in(p, arg, false, &v) && (*(uint16_t *)field(p, cf) = (uint16_t)v, true);
}

static bool set_name(struct parse *p, struct conf *cf, const char *arg)
{
	*(const char **)field(p, cf) = arg;
	return *arg || fail(p, "%s: empty interface name", here(p));
}

static bool set_mac(struct parse *p, struct conf *cf, const char *arg)
{
	struct conf_mac *mac = field(p, cf);
	unsigned v[6];
	char tail;

	if (sscanf(arg, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6 ||
	    strlen(arg) != 17)
		return fail(p, "%s: '%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", here(p), arg);
	for (int i = 0; i < 6; i++)
		mac->addr[i] = (uint8_t)v[i];
	return (mac->given = true);
}

static bool set_ip(struct parse *p, struct conf *cf, const char *arg)
{
	struct in_addr a;

	if (inet_pton(AF_INET, arg, &a) != 1 || a.s_addr == 0)
		return fail(p, "%s: '%s' is not an IPv4 address", here(p), arg);
	*(uint32_t *)field(p, cf) = a.s_addr;
	return true;
}

static bool set_cpu(struct parse *p, struct conf *cf, const char *arg)
{
	double v;
	cpu_set_t set;

	if (!num_in(p, arg, false, &v))
		return false;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && !CPU_ISSET((int)v, &set))
		return fail(p, "%s: CPU %g is not one this process may run on", here(p), v);
	*(int *)field(p, cf) = (int)v;
	return true;
}

/* --cpu N[,N…]: the main thread's CPU, and nf's queue threads' in turn. */
static bool set_cpus(struct parse *p, struct conf *cf, const char *arg)
{
	char one[16];
	const char *s = arg;

	cf->ncpus = 0;
	do {
		size_t n = strcspn(s, ",");
		if (cf->ncpus == QUEUES_MAX)
			return fail(p, "%s: more than %d CPUs", here(p), QUEUES_MAX);
		if (n == 0 || n >= sizeof(one))
			return fail(p, "%s: '%s' is not a CPU or a list of them (2 or 2,3)", here(p), arg);
		memcpy(one, s, n);
		one[n] = '\0';
		if (!set_cpu(p, cf, one))
			return false;
		for (unsigned i = 0; i < cf->ncpus; i++)
			if (cf->cpus[i] == cf->cpu)
				return fail(p, "%s: CPU %d twice", here(p), cf->cpu);
		cf->cpus[cf->ncpus++] = cf->cpu;
		s += n;
	} while (*s++ == ',');
	cf->cpu = cf->cpus[0];
	return true;
}

/* The setters of one option each. */

static bool set_api(struct parse *p, struct conf *cf, const char *arg)
{
	(void)p;
	cf->api = arg;   /* checked once the whole line is read: chosen() */
	return true;
}

static bool set_poll(struct parse *p, struct conf *cf, const char *arg)
{
	size_t i;

	return word_of(p, arg, &i) && (cf->poll = (enum poll_mode)i, true);
}

static bool set_nf(struct parse *p, struct conf *cf, const char *arg)
{
	size_t i;

	return word_of(p, arg, &i) && (cf->nf = nf_kind_at(i));
}

/* A rate in frames per second: 20000, 500k, 2.5M (false when it is none). */
static bool pps_of(const char *arg, double *out)
{
	char *end;
	double mult = 1;

	errno = 0;
	*out = strtod(arg, &end);
	if (end != arg && *end && !end[1]) {
		switch (*end) {
		case 'k': case 'K': mult = 1e3; end++; break;
		case 'm': case 'M': mult = 1e6; end++; break;
		case 'g': case 'G': mult = 1e9; end++; break;
		}
	}
	*out *= mult;
	return !(end == arg || *end || errno || !isfinite(*out) || *out < 0 || *out > PPS_MAX || arg[0] < '0' ||
		 arg[0] > '9');
}

static bool set_rate(struct parse *p, struct conf *cf, const char *arg)
{
	if (!pps_of(arg, &cf->rate))
		return fail(p, "%s: '%s' is not a rate in packets per second (e.g. 20000, 500k, 2.5M; 0 = as fast as"
			    " possible)", here(p), arg);
	return true;
}

/* RATE,BUCKET (and ,QUEUE when `parts` is 3): a token bucket's rate above 0
 * in frames per second, its size and a queue in frames, 1 and up. */
static bool bucket_of(struct parse *p, struct conf_bucket *b, const char *arg, unsigned parts)
{
	const char *form = parts == 3 ? "RATE,BUCKET,QUEUE (e.g. 20k,32,1000)" : "RATE,BUCKET (e.g. 20k,32)";
	char buf[64], *part[3] = { buf, NULL, NULL };
	unsigned n = 1;

	if (strlen(arg) >= sizeof(buf))
		return fail(p, "%s: '%s' is not %s", here(p), arg, form);
	strcpy(buf, arg);
	for (char *c = buf; *c; c++)
		if (*c == ',') {
			if (n == parts)
				return fail(p, "%s: '%s' is not %s", here(p), arg, form);
			*c = '\0';
			part[n++] = c + 1;
		}
	if (n != parts)
		return fail(p, "%s: '%s' is not %s", here(p), arg, form);
	if (!pps_of(part[0], &b->rate) || b->rate <= 0)
		return fail(p, "%s: '%s': '%s' is not a rate above 0 in frames per second (e.g. 20000, 500k)",
			    here(p), arg, part[0]);
	for (unsigned i = 1; i < parts; i++) {
		const char *s = part[i];
		unsigned max = i == 2 ? QUEUE_MAX : BUCKET_MAX;
		if (!*s || s[strspn(s, "0123456789")] || strlen(s) > 7 || atol(s) < 1 || (unsigned long)atol(s) > max)
			return fail(p, "%s: '%s': %s '%s' is not a whole number of frames from 1 to %u", here(p), arg,
				    i == 2 ? "queue" : "bucket", s, max);
		*(i == 2 ? &b->queue : &b->size) = (unsigned)atol(s);
	}
	return (b->given = true);
}

static bool set_policer(struct parse *p, struct conf *cf, const char *arg)
{
	return bucket_of(p, &cf->policer, arg, 2);
}

static bool set_shaper(struct parse *p, struct conf *cf, const char *arg)
{
	return bucket_of(p, &cf->shaper, arg, 3);
}

static bool set_conformance(struct parse *p, struct conf *cf, const char *arg)
{
	return bucket_of(p, &cf->conformance, arg, 2);
}

static bool set_interval(struct parse *p, struct conf *cf, const char *arg)
{
	if (!num_in(p, arg, true, &cf->interval))
		return false;
	return cf->interval == 0 || cf->interval >= 0.01 ||
	       fail(p, "--interval: '%s' is shorter than 0.01 s (0 turns interval records off)", arg);
}

/* --route PREFIX/LEN,PORT: an IPv4 network (no host bits set), LEN 0..32,
 * PORT 1 or 2; into the table kept longest prefix first. */
static bool set_route(struct parse *p, struct conf *cf, const char *s)
{
	char buf[48], *slash, *comma;
	struct in_addr a;

	if (strlen(s) >= sizeof(buf) || !(slash = strchr(strcpy(buf, s), '/')) || !(comma = strchr(slash, ',')))
		return fail(p, "--route: '%s' is not PREFIX/LEN,PORT (e.g. 198.18.2.0/24,2)", s);
	*slash++ = '\0';
	*comma++ = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return fail(p, "--route: '%s': '%s' is not an IPv4 address", s, buf);
	if (!*slash || slash[strspn(slash, "0123456789")] || strlen(slash) > 2 || atoi(slash) > 32)
		return fail(p, "--route: '%s': length '%s' is not 0 to 32", s, slash);
	if (strcmp(comma, "1") && strcmp(comma, "2"))
		return fail(p, "--route: '%s': port '%s' is not 1 or 2", s, comma);
	unsigned len = (unsigned)atoi(slash);
	uint32_t net = ntohl(a.s_addr), mask = len ? ~0u << (32 - len) : 0;
	if (net & ~mask) {
		struct in_addr n = { htonl(net & mask) };
		char name[INET_ADDRSTRLEN];
		return fail(p, "--route: '%s': address bits set past /%u (the network is %s/%u)", s, len,
			    inet_ntop(AF_INET, &n, name, sizeof(name)), len);
	}
	if (!nf_route_add(&cf->routes, net, len, (unsigned)(comma[0] - '1')))
		return fail(p, "--route: more than %d routes", NF_MAX_ROUTES);
	return true;
}

/* --clock: whose clock the peer's timestamps are on; the index is clock_other. */
static const char *clock_word(size_t i)
{
	static const char *const words[] = { "mine", "other" };

	return i < 2 ? words[i] : NULL;
}

static bool set_clock(struct parse *p, struct conf *cf, const char *arg)
{
	size_t i;

	return word_of(p, arg, &i) && (cf->clock_other = i == 1, true);
}

static const char *api_word(size_t i)
{
	const struct api_ops *ops = api_at(i);

	return ops ? ops->name : NULL;
}

static const char *poll_word(size_t i)
{
	return i < POLL_MODES ? poll_modes[i].name : NULL;
}

static const char *nf_word(size_t i)
{
	const struct nf_kind *k = nf_kind_at(i);

	return k ? k->name : NULL;
}

/* Each setter's kind of value, as --describe names it (the orchestrator checks
 * the command lines it builds against it): one list beside the setters, so a
 * row's type is its setter's and cannot say otherwise. */
static const struct {
	bool (*set)(struct parse *p, struct conf *cf, const char *arg);
	const char *type;
} types[] = {
	{ set_flag, "flag" }, { set_secs, "seconds" }, { set_interval, "seconds" },
	{ set_count, "integer" }, { set_port, "integer" }, { set_cpu, "integer" },
	{ set_cpus, "cpus" },
	{ set_name, "name" }, { set_mac, "mac" }, { set_ip, "ipv4" }, { set_rate, "rate" },
	{ set_policer, "bucket" }, { set_shaper, "bucket" }, { set_conformance, "bucket" },
	{ set_route, "route" },
};

const char *opt_type(const struct opt *o)
{
	if (!o->set)
		return "flag";   /* --help, --version, --describe: they end the parse */
	if (o->words)
		return "word";
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].set == o->set)
			return types[i].type;
	return NULL;
}

bool opt_ranged(const struct opt *o)
{
	const char *t = opt_type(o);

	return t && (!strcmp(t, "integer") || !strcmp(t, "seconds") || !strcmp(t, "rate") || !strcmp(t, "cpus"));
}

#define AT(f) .at = offsetof(struct conf, f)

/* Every common option, in the order --help lists them. */
const struct opt opts_common[] = {
	{ .name = "api", .words = api_word, .set = set_api,
	  .help = "packet I/O api (each one's own options are below)" },
	{ .name = "iface", .value = "NAME", .set = set_name, AT(iface), .help = "kernel interface" },
	{ .name = "iface2", .value = "NAME", .set = set_name, AT(iface2), .help = "nf, tester: the second one" },
	{ .name = "src-mac", .value = "MAC", .set = set_mac, AT(src_mac),
	  .help = "this endpoint (default: the interface's MAC)" },
	{ .name = "src-ip", .value = "ADDR", .set = set_ip, AT(src_ip),
	  .help = "this endpoint (a receiver binds to it)" },
	{ .name = "sport", .value = "PORT", .set = set_port, AT(sport), .min = 1, .max = 65535, .def = "9000",
	  .help = "this endpoint" },
	{ .name = "dst-mac", .value = "MAC", .set = set_mac, AT(dst_mac),
	  .help = "its peer (nf: the next hop of frames leaving port 1)" },
	{ .name = "dst-ip", .value = "ADDR", .set = set_ip, AT(dst_ip), .help = "its peer" },
	{ .name = "dport", .value = "PORT", .set = set_port, AT(dport), .min = 1, .max = 65535, .def = "9000",
	  .help = "its peer" },
	{ .name = "dst-mac2", .value = "MAC", .set = set_mac, AT(dst_mac2),
	  .help = "nf: next hop of frames leaving port 2" },
	{ .name = "src-mac2", .value = "MAC", .set = set_mac, AT(src_mac2),
	  .help = "nf: source MAC of frames leaving port 2 (default: the port's)" },
	{ .name = "poll", .words = poll_word, .set = set_poll, .def = "busy",
	  .help = "rx without frames: spin, spin then sleep, or wait for the port;\n"
		  "senders other than busy sleep between bursts" },
	{ .name = "nf", .words = nf_word, .set = set_nf, .help = "nf: what it does to a frame" },
	{ .name = "route", .value = "PREFIX/LEN,PORT", .set = set_route,
	  .help = "nf l3: a route (repeatable, PORT 1 or 2)" },
	{ .name = "rate", .letter = 'r', .value = "PPS", .set = set_rate, .max = PPS_MAX, .def = "0",
	  .help = "offered rate (0 = max; 500k, 1M)" },
	{ .name = "onoff", .value = "N", .set = set_count, AT(onoff), .max = 1000000, .def = "0",
	  .help = "senders: N frames back to back, then idle, at --rate on average (0 = steady)" },
	{ .name = "policer", .value = "RATE,BUCKET", .set = set_policer,
	  .help = "nf: drop frames beyond a token bucket (frames per second, frames)" },
	{ .name = "shaper", .value = "RATE,BUCKET,QUEUE", .set = set_shaper,
	  .help = "nf: delay frames beyond a token bucket, queueing up to QUEUE frames" },
	{ .name = "conformance", .value = "RATE,BUCKET", .set = set_conformance,
	  .help = "recv, tester: the smallest bucket what came conforms to at RATE,\n"
		  "and the frames beyond BUCKET" },
	{ .name = "size", .letter = 'p', .value = "BYTES", .set = set_count, AT(size),
	  .min = FRAME_MIN_LEN + FCS_LEN, .max = FRAME_MAX + FCS_LEN, .def = "64",
	  .help = "frame size with FCS (64..9220)" },
	{ .name = "burst", .letter = 'b', .value = "N", .set = set_count, AT(burst), .min = 1, .max = API_MAX_BURST,
	  .def = "32", .help = "frames per burst" },
	{ .name = "touch", .letter = 'c', .set = set_flag, AT(touch),
	  .help = "write every payload byte, check it on receipt" },
	{ .name = "quiet", .letter = 's', .set = set_flag, AT(quiet), .help = "no interval records" },
	{ .name = "duration", .value = "S", .set = set_secs, AT(duration), .max = 1e7, .def = "10",
	  .help = "measured seconds (0 = until SIGINT)" },
	{ .name = "warmup", .value = "S", .set = set_secs, AT(warmup), .max = 1e7, .def = "0",
	  .help = "seconds before the measured ones" },
	{ .name = "drain", .value = "S", .set = set_secs, AT(drain), .max = 3600, .def = "0.5",
	  .help = "client, tester: how long at most to wait for the last frames back" },
	{ .name = "settle", .value = "S", .set = set_secs, AT(settle), .max = 3600, .def = "0",
	  .help = "client, tester: before the warm-up, a frame every 10 ms until one is back (at most S s)" },
	{ .name = "interval", .value = "S", .set = set_interval, AT(interval), .max = 3600, .def = "1",
	  .help = "seconds between interval records (0 = none)" },
	{ .name = "stall-us", .value = "US", .set = set_count, AT(stall_us), .min = 1, .max = 1000000,
	  .def = "200", .help = "a gap between two polls longer than US microseconds is a stall" },
	{ .name = "flows", .value = "N", .set = set_count, AT(flows), .min = 1, .max = SEQ_MAX_FLOWS, .def = "1",
	  .help = "UDP source ports from --sport on" },
	{ .name = "ip-span", .value = "N", .set = set_count, AT(ip_span), .min = 1, .max = 65536, .def = "1",
	  .help = "flows take turns over N destination addresses from --dst-ip (flow % N);\n"
		  "recv and server accept --src-ip .. +N-1, tester --dst-ip .. +N-1" },
	{ .name = "cpu", .value = "N[,N…]", .set = set_cpus, AT(cpu), .max = CPU_SETSIZE - 1,
	  .help = "pin the (main) thread to CPU N; --threads T: its T queues' threads to T CPUs" },
	{ .name = "threads", .value = "N", .set = set_count, AT(threads), .min = 1, .max = QUEUES_MAX,
	  .help = "client: 1|2 (default 2 with --poll other than busy or --rx-cpu, else 1);\n"
		  "nf, send, recv: a thread per queue of each port, frames spread by flow (default 1;\n"
		  "send's flow f leaves on queue f mod N)" },
	{ .name = "rx-cpu", .value = "N", .set = set_cpu, AT(rx_cpu), .max = CPU_SETSIZE - 1,
	  .help = "pin the client's receive thread to CPU N" },
	{ .name = "clock", .words = clock_word, .set = set_clock, .def = "mine",
	  .help = "recv: the sender's timestamps are on this host's clock, or on\n"
		  "another host's (learnt from the first frame; no one-way latency)" },
	{ .name = "hold", .set = set_flag, AT(hold),
	  .help = "after the summary keep the ports open, idle, until stdin ends or a signal" },
	{ .name = "keep", .set = set_flag, AT(keep),
	  .help = "as --hold, and each line on stdin runs another trial on the open ports:\n"
		  "RATE DURATION WARMUP (a generator's; the others take RATE as their pace)" },
	{ .name = "help", .letter = 'h', .ends = OPTS_HELP, .help = "this text" },
	{ .name = "version", .ends = OPTS_VERSION, .help = "what this engine has, as one JSON line" },
	{ .name = "describe", .ends = OPTS_DESCRIBE,
	  .help = "what this engine has and takes (roles, apis, nf kinds, options, poll modes), as JSON" },
};

const size_t opts_ncommon = sizeof(opts_common) / sizeof(opts_common[0]);

const struct opt *opts_at(size_t i)
{
	return i < opts_ncommon ? &opts_common[i] : NULL;
}
