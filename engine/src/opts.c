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
#include "roles/roles.h"

enum {
	O_API = 256, O_IFACE, O_IFACE2,
	O_SRC_MAC, O_SRC_IP, O_SPORT, O_DST_MAC, O_DST_IP, O_DPORT,
	O_DURATION, O_WARMUP, O_DRAIN, O_INTERVAL, O_FLOWS, O_CPU, O_RX_CPU, O_THREADS, O_HOLD, O_VERSION,
	O_POLL, O_NF, O_ROUTE, O_SRC_MAC2, O_DST_MAC2,
	O_API_OPT = 512,        /* + its place in the table: an api's option without a letter */
};

#define SHORTS "+:r:p:b:csh"

/* What every api and role shares; each api's own options join them (api.h). */
static const struct option common[] = {
	{ "api", required_argument, NULL, O_API },
	{ "iface", required_argument, NULL, O_IFACE },
	{ "iface2", required_argument, NULL, O_IFACE2 },
	{ "src-mac", required_argument, NULL, O_SRC_MAC },
	{ "src-ip", required_argument, NULL, O_SRC_IP },
	{ "sport", required_argument, NULL, O_SPORT },
	{ "dst-mac", required_argument, NULL, O_DST_MAC },
	{ "dst-ip", required_argument, NULL, O_DST_IP },
	{ "dport", required_argument, NULL, O_DPORT },
	{ "src-mac2", required_argument, NULL, O_SRC_MAC2 },
	{ "dst-mac2", required_argument, NULL, O_DST_MAC2 },
	{ "poll", required_argument, NULL, O_POLL },
	{ "nf", required_argument, NULL, O_NF },
	{ "route", required_argument, NULL, O_ROUTE },
	{ "rate", required_argument, NULL, 'r' },
	{ "size", required_argument, NULL, 'p' },
	{ "burst", required_argument, NULL, 'b' },
	{ "touch", no_argument, NULL, 'c' },
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
};

#define NCOMMON (sizeof(common) / sizeof(common[0]))

struct parse {
	char *err;
	size_t errlen;
	const struct option *lo;           /* common, then every api's options */
	const struct api_opt *egress_by;   /* given, names a second port */
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
static const char *optname(const struct parse *p, int code)
{
	static char buf[48];

	for (const struct option *lo = p->lo; lo->name; lo++) {
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

/* s as a number from min to max: whole (digits only), or any decimal for seconds. */
static bool num_in(struct parse *p, int code, const char *s, double min, double max, bool secs, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*out) || *out < min || *out > max ||
	    (!secs && s[strspn(s, "0123456789")]))
		return fail(p, "%s: '%s' is not %s from %g to %g", optname(p, code), s,
			    secs ? "a number of seconds" : "a whole number", min, max);
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
		return fail(p, "%s: '%s' is not a MAC address (aa:bb:cc:dd:ee:ff)", optname(p, code), s);
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return true;
}

static bool ip_of(struct parse *p, int code, const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1 || a.s_addr == 0)
		return fail(p, "%s: '%s' is not an IPv4 address", optname(p, code), s);
	*ip = a.s_addr;
	return true;
}

static bool cpu_of(struct parse *p, int code, const char *s, int *cpu)
{
	double v;
	cpu_set_t set;

	if (!num_in(p, code, s, 0, CPU_SETSIZE - 1, false, &v))
		return false;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && !CPU_ISSET((int)v, &set))
		return fail(p, "%s: CPU %g is not one this process may run on", optname(p, code), v);
	*cpu = (int)v;
	return true;
}

/* The names an option's value is one of: the i-th, NULL past the last. */
typedef const char *(*name_at_fn)(size_t i);

static const char *poll_name_at(size_t i)
{
	return i < POLL_MODES ? poll_mode_names[i] : NULL;
}

static const char *nf_name_at(size_t i)
{
	const struct nf_kind *k = nf_kind_at(i);

	return k ? k->name : NULL;
}

/* s as one of the names (--poll, --nf), its index in *out. */
static bool word_of(struct parse *p, const char *opt, const char *s, name_at_fn name_at, size_t *out)
{
	char list[96] = "";
	const char *name;

	for (size_t i = 0; (name = name_at(i)); i++) {
		if (!strcmp(s, name)) {
			*out = i;
			return true;
		}
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "", name);
	}
	return fail(p, "%s: '%s' is not one of %s", opt, s, list);
}

/* --route PREFIX/LEN,PORT: an IPv4 network (no host bits set), LEN 0..32,
 * PORT 1 or 2; into the table kept longest prefix first. */
static bool route_of(struct parse *p, struct conf *cf, const char *s)
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

static void defaults(struct conf *cf)
{
	memset(cf, 0, sizeof(*cf));
	cf->api = api_at(0)->name;
	cf->sport = 9000;
	cf->dport = 9000;
	cf->size = 64;
	cf->burst = 32;
	cf->duration = 10;
	cf->drain = 0.5;
	cf->interval = 1;
	cf->flows = 1;
	cf->cpu = -1;
	cf->rx_cpu = -1;
}

static bool one(struct parse *p, struct conf *cf, int c, char *arg)
{
	double v;
	size_t w = 0;

	switch (c) {
	case O_API: cf->api = arg; return true;
	case O_IFACE: cf->iface = arg; return *arg || fail(p, "--iface: empty interface name");
	case O_IFACE2: cf->iface2 = arg; return *arg || fail(p, "--iface2: empty interface name");
	case O_SRC_MAC: return (cf->has_src_mac = mac_of(p, c, arg, cf->src_mac));
	case O_DST_MAC: return (cf->has_dst_mac = mac_of(p, c, arg, cf->dst_mac));
	case O_SRC_MAC2: return (cf->has_src_mac2 = mac_of(p, c, arg, cf->src_mac2));
	case O_DST_MAC2: return (cf->has_dst_mac2 = mac_of(p, c, arg, cf->dst_mac2));
	case O_POLL: return word_of(p, "--poll", arg, poll_name_at, &w) &&
			    (cf->poll = (enum poll_mode)w, true);
	case O_NF: return word_of(p, "--nf", arg, nf_name_at, &w) && (cf->nf = nf_kind_at(w));
	case O_ROUTE: return route_of(p, cf, arg);
	case O_SRC_IP: return ip_of(p, c, arg, &cf->src_ip);
	case O_DST_IP: return ip_of(p, c, arg, &cf->dst_ip);
	case O_SPORT: return num_in(p, c, arg, 1, 65535, false, &v) && (cf->sport = (uint16_t)v, true);
	case O_DPORT: return num_in(p, c, arg, 1, 65535, false, &v) && (cf->dport = (uint16_t)v, true);
	case 'r': return rate_of(p, arg, &cf->rate);
	case 'p': return num_in(p, c, arg, FRAME_MIN_LEN + FCS_LEN, FRAME_MAX + FCS_LEN, false, &v) &&
			 (cf->size = (unsigned)v, true);
	case 'b': return num_in(p, c, arg, 1, API_MAX_BURST, false, &v) && (cf->burst = (unsigned)v, true);
	case 'c': cf->touch = true; return true;
	case 's': cf->quiet = true; return true;
	case O_DURATION: return num_in(p, c, arg, 0, 1e7, true, &cf->duration);
	case O_WARMUP: return num_in(p, c, arg, 0, 1e7, true, &cf->warmup);
	case O_DRAIN: return num_in(p, c, arg, 0, 3600, true, &cf->drain);
	case O_INTERVAL:
		if (!num_in(p, c, arg, 0, 3600, true, &cf->interval))
			return false;
		return cf->interval == 0 || cf->interval >= 0.01 ||
		       fail(p, "--interval: '%s' is shorter than 0.01 s (0 turns interval records off)", arg);
	case O_FLOWS: return num_in(p, c, arg, 1, SEQ_MAX_FLOWS, false, &v) && (cf->flows = (unsigned)v, true);
	case O_CPU: return cpu_of(p, c, arg, &cf->cpu);
	case O_RX_CPU: return cpu_of(p, c, arg, &cf->rx_cpu);
	case O_HOLD: cf->hold = true; return true;
	case O_THREADS:
		if (strcmp(arg, "1") && strcmp(arg, "2"))
			return fail(p, "--threads: '%s' is not 1 or 2", arg);
		cf->threads = (unsigned)(arg[0] - '0');
		return true;
	}
	return fail(p, "internal: option %d not handled", c);
}

/* "-m/--mmsg" or "--queue": how an api's option is spelled in messages. */
static const char *label(const struct api_opt *a)
{
	static char buf[48];

	if (a->letter)
		snprintf(buf, sizeof(buf), "-%c/--%s", a->letter, a->name);
	else
		snprintf(buf, sizeof(buf), "--%s", a->name);
	return buf;
}

/* Appends word to a ", "-separated list in buf. */
static void add(char *buf, size_t len, const char *word)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%s%s", n ? ", " : "", word);
}

/* getopt must know every api's options before it has seen --api: lo gets the
 * common ones, then one entry per api option name, and shorts their letters.
 * Two apis may share an option only if they spell it alike. */
static bool table(struct parse *p, struct option *lo, char *shorts)
{
	const struct api_ops *ops;
	size_t k = NCOMMON;

	memcpy(lo, common, sizeof(common));
	strcpy(shorts, SHORTS);
	for (size_t i = 0; (ops = api_at(i)); i++)
		for (const struct api_opt *a = ops->opts; a && a->name; a++) {
			int has = a->value ? required_argument : no_argument;
			size_t j = 0;
			while (j < k && strcmp(lo[j].name, a->name))
				j++;
			int val = a->letter ? a->letter : O_API_OPT + (int)j;
			if (j < k && (j < NCOMMON || lo[j].val != val || lo[j].has_arg != has))
				return fail(p, "internal: --%s of --api %s clashes with another option",
					    a->name, ops->name);
			if (j < k)
				continue;
			if (a->letter && strchr(shorts, a->letter))
				return fail(p, "internal: -%c of --api %s clashes with another option",
					    a->letter, ops->name);
			lo[k++] = (struct option){ a->name, has, NULL, val };
			if (a->letter) {
				size_t m = strlen(shorts);
				shorts[m++] = a->letter;
				if (has)
					shorts[m++] = ':';
				shorts[m] = '\0';
			}
		}
	lo[k] = (struct option){ NULL, 0, NULL, 0 };
	return true;
}

/* The table entry of an api option getopt returned, or NULL for a common one. */
static const struct option *api_entry(const struct parse *p, int c)
{
	for (const struct option *lo = p->lo + NCOMMON; lo->name; lo++)
		if (lo->val == c)
			return lo;
	return NULL;
}

/* An api option as given: its entry in the table and its value. */
struct given {
	const struct option *lo;
	char *arg;
};

/* Runs the chosen api's hooks on the options collected for it, in order. */
static bool api_options(struct parse *p, struct conf *cf, const struct api_ops *ops, const struct given *g, int n)
{
	char why[160], has[160] = "";

	if (ops->own_size && !(cf->api_own = calloc(1, ops->own_size)))
		return fail(p, "--api: out of memory");
	for (int i = 0; i < n; i++) {
		const struct api_opt *a = ops->opts;
		while (a && a->name && strcmp(a->name, g[i].lo->name))
			a++;
		if (!a || !a->name) {
			for (a = ops->opts; a && a->name; a++)
				add(has, sizeof(has), label(a));
			return fail(p, "%s: not an option of --api %s (%s%s)", optname(p, g[i].lo->val), cf->api,
				    has[0] ? "its options: " : "it has none of its own", has);
		}
		if (!a->set(cf->api_own, g[i].arg, why, sizeof(why)))
			return fail(p, "%s: %s", label(a), why);
		if (a->egress)
			p->egress_by = a;
	}
	cf->egress = p->egress_by != NULL;
	return true;
}

/* A receive that sleeps or waits would hold the one thread past its next
 * burst, and two spinning threads plus a server are more than a small
 * machine's cores: so one thread when it spins (--poll busy), two when it
 * sleeps (or when a CPU was named for the receive thread). */
static bool client_threads(struct parse *p, struct conf *cf)
{
	if (!cf->threads)
		cf->threads = cf->poll != POLL_BUSY || cf->rx_cpu >= 0 ? 2 : 1;
	if (cf->threads == 1 && cf->poll != POLL_BUSY)
		return fail(p, "--threads: 1 needs --poll busy (drop --poll %s, or use --threads 2)",
			    poll_mode_names[cf->poll]);
	if (cf->threads == 1 && cf->rx_cpu >= 0)
		return fail(p, "--rx-cpu: a one-thread client has no receive thread (--threads 2 has one)");
	return true;
}

/* "l3": the kinds that route, for messages. */
static const char *routed_kinds(void)
{
	static char list[64];
	const struct nf_kind *k;

	list[0] = '\0';
	for (size_t i = 0; (k = nf_kind_at(i)); i++)
		if (k->routed)
			add(list, sizeof(list), k->name);
	return list;
}

/* A routed kind: at least one route, and the next hops of the ports they name. */
static bool routes_check(struct parse *p, const struct conf *cf, bool two, bool *need1, bool *need2)
{
	if (!cf->routes.n)
		return fail(p, "--route: --nf %s needs at least one (PREFIX/LEN,PORT, e.g. 0.0.0.0/0,1)", cf->nf->name);
	*need1 = *need2 = false;
	for (unsigned i = 0; i < cf->routes.n; i++) {
		const struct nf_route *rt = &cf->routes.r[i];
		if (rt->port == 1 && !two) {
			struct in_addr net = { htonl(rt->net) };
			char name[INET_ADDRSTRLEN];
			return fail(p, "--route: %s/%u,2 leaves by port 2, and there is no second port"
				    " (--iface2, --port2)", inet_ntop(AF_INET, &net, name, sizeof(name)), rt->len);
		}
		*need1 |= rt->port == 0;
		*need2 |= rt->port == 1;
	}
	return true;
}

/* nf: which kind takes how many ports, routes and next hops. */
static bool nf_check(struct parse *p, const struct conf *cf, const struct api_ops *ops)
{
	const struct nf_kind *k = cf->nf;
	bool two = cf->iface2 || cf->egress, need1 = k->next_hop, need2 = two && need1;
	const char *r = cf->role->name, *kind = k->name;

	if (!ops->l2) {
		const struct api_ops *l;
		char l2[96] = "";
		for (size_t i = 0; (l = api_at(i)); i++)
			if (l->l2)
				add(l2, sizeof(l2), l->name);
		return fail(p, "--api: %s needs an api that sees Ethernet frames (%s), not %s", r, l2, cf->api);
	}
	if (k->hairpin && two)
		return fail(p, "%s: --nf %s sends frames back by the port they came in on (one port)",
			    cf->iface2 ? "--iface2" : label(p->egress_by), kind);
	if (cf->routes.n && !k->routed)
		return fail(p, "--route: only --nf %s routes (this is --nf %s)", routed_kinds(), kind);
	if (k->routed && !routes_check(p, cf, two, &need1, &need2))
		return false;
	if ((cf->has_dst_mac2 || cf->has_src_mac2) && !two)
		return fail(p, "%s: there is no second port (--iface2, --port2)",
			    cf->has_dst_mac2 ? "--dst-mac2" : "--src-mac2");
	if (need1 && !cf->has_dst_mac)
		return fail(p, "--dst-mac: required for %s %s (the next hop of frames leaving port 1)", r, kind);
	if (need2 && !cf->has_dst_mac2)
		return fail(p, "--dst-mac2: required for %s %s with a second port (the next hop of frames leaving it)",
			    r, kind);
	return true;
}

/* "nf", "nf and tester": the roles that have a property (a bool of struct
 * role at offset prop), for messages that say which roles take an option. */
static const char *roles_with(size_t prop, char *buf, size_t len)
{
	const struct role *r;
	size_t n = 0, k = 0;

	for (size_t i = 0; (r = role_at(i)); i++)
		n += *(const bool *)((const char *)r + prop);
	buf[0] = '\0';
	for (size_t i = 0; (r = role_at(i)); i++)
		if (*(const bool *)((const char *)r + prop)) {
			size_t m = strlen(buf);
			snprintf(buf + m, len - m, "%s%s", !k ? "" : k + 1 == n ? " and " : ", ", r->name);
			k++;
		}
	return buf;
}

#define ROLES_WITH(prop) roles_with(offsetof(struct role, prop), (char[64]){ 0 }, 64)

static bool cross_check(struct parse *p, struct conf *cf, const struct api_ops *ops)
{
	const struct role *role = cf->role;
	bool sender = role->generates;
	const char *r = role->name;

	if (!cf->iface && ops->needs_iface)
		return fail(p, "--iface: required with --api %s", cf->api);
	if (!role->two_ports && cf->iface2)
		return fail(p, "--iface2: only %s use a second interface", ROLES_WITH(two_ports));
	if (!role->two_ports && cf->egress)
		return fail(p, "%s: only %s use a second port", label(p->egress_by), ROLES_WITH(two_ports));
	if (!role->forwards) {
		if (cf->nf)
			return fail(p, "--nf: only the %s role has a kind", ROLES_WITH(forwards));
		if (cf->routes.n)
			return fail(p, "--route: only the %s role routes", ROLES_WITH(forwards));
		if (cf->has_dst_mac2 || cf->has_src_mac2)
			return fail(p, "%s: only %s has a next hop per port", cf->has_dst_mac2 ? "--dst-mac2" : "--src-mac2",
				    ROLES_WITH(forwards));
	} else {
		if (!cf->nf)
			cf->nf = nf_kind_at(0);
		if (!nf_check(p, cf, ops))
			return false;
	}
	if (!role->threads && cf->threads)
		return fail(p, "--threads: only %s can run more than one thread", ROLES_WITH(threads));
	if (!role->threads && cf->rx_cpu >= 0)
		return fail(p, "--rx-cpu: only %s has a receive thread", ROLES_WITH(threads));
	if (role->threads && !client_threads(p, cf))
		return false;
	if (sender && !cf->dst_ip)
		return fail(p, "--dst-ip: required for %s", r);
	if (sender && ops->l2 && !cf->has_dst_mac)
		return fail(p, "--dst-mac: required for %s with --api %s (the engine does no ARP)", r, cf->api);
	if (sender && ops->l2 && !cf->src_ip)
		return fail(p, "--src-ip: required for %s with --api %s (the engine builds the IP header)", r, cf->api);
	if (cf->sport + cf->flows - 1 > 65535)
		return fail(p, "--flows: %u flows from --sport %u run past port 65535", cf->flows, cf->sport);
	return true;
}

/* "send, recv, client, server, nf, tester" */
static const char *role_list(void)
{
	static char list[96];
	const struct role *r;

	list[0] = '\0';
	for (size_t i = 0; (r = role_at(i)); i++)
		add(list, sizeof(list), r->name);
	return list;
}

static bool role_of(struct parse *p, struct conf *cf, const char *s)
{
	return (cf->role = role_find(s)) || fail(p, "ROLE: '%s' is not a role (%s)", s, role_list());
}

/* The api named by --api, or NULL after saying why not. */
static const struct api_ops *chosen(struct parse *p, const struct conf *cf)
{
	const struct api_ops *ops = api_find(cf->api);

	if (!ops && api_known(cf->api))
		fail(p, "--api: '%s' is not built into this engine (it has: %s)", cf->api, api_names());
	else if (!ops)
		fail(p, "--api: '%s' is not an api (one of: %s)", cf->api, api_names());
	return ops;
}

enum opts_result opts_parse(int argc, char **argv, struct conf *cf, char *err, size_t errlen)
{
	struct parse p = { err, errlen, NULL, NULL };
	const struct api_ops *ops;
	size_t napi = 0;

	defaults(cf);
	err[0] = '\0';
	if (argc < 2) {
		fail(&p, "ROLE: missing (%s); --help lists the options", role_list());
		return OPTS_ERROR;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return OPTS_VERSION;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return OPTS_HELP;
	if (!strcmp(argv[1], "--idle")) {
		if (argc > 2) {
			fail(&p, "--idle: takes no other argument ('%s')", argv[2]);
			return OPTS_ERROR;
		}
		return OPTS_IDLE;
	}
	if (!role_of(&p, cf, argv[1]))
		return OPTS_ERROR;
	for (size_t i = 0; (ops = api_at(i)); i++)
		for (const struct api_opt *a = ops->opts; a && a->name; a++)
			napi++;

	struct option lo[NCOMMON + napi + 1];
	char shorts[sizeof(SHORTS) + 2 * napi];
	if (!table(&p, lo, shorts))
		return OPTS_ERROR;
	p.lo = lo;

	/* getopt on a copy: it reorders nothing with '+', but keep argv const anyway */
	char *args[argc + 1];
	struct given given[argc];
	int n = argc - 1, ngiven = 0, c;
	memcpy(args, argv + 1, sizeof(char *) * (size_t)n);
	args[n] = NULL;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(n, args, shorts, lo, NULL)) != -1) {
		if (c == 'h')
			return OPTS_HELP;
		if (c == O_VERSION)
			return OPTS_VERSION;
		/* an unknown option is reported once --api is known: an api not
		 * built in may be why, so after one only --api still counts */
		if (c == '?' && !err[0]) {
			if (optopt && optopt < 256)
				fail(&p, "-%c: unknown option", optopt);
			else
				fail(&p, "%s: unknown option", args[optind - 1]);
		}
		if (err[0]) {
			if (c == O_API)
				cf->api = optarg;
			continue;
		}
		if (c == ':') {
			fail(&p, "%s: needs a value", optopt ? optname(&p, optopt) : args[optind - 1]);
			return OPTS_ERROR;
		}
		/* an api's options wait until --api is known, wherever it stands */
		if ((given[ngiven].lo = api_entry(&p, c)))
			given[ngiven++].arg = optarg;
		else if (!one(&p, cf, c, optarg))
			return OPTS_ERROR;
	}
	if (err[0]) {
		chosen(&p, cf);
		return OPTS_ERROR;
	}
	if (optind < n) {
		if (strcmp(args[optind - 1], "--") != 0) {
			fail(&p, "'%s': unexpected argument (EAL arguments go after --)", args[optind]);
			return OPTS_ERROR;
		}
		cf->eal_argc = n - optind;
		cf->eal_argv = argv + 1 + optind;
	}
	if (!(ops = chosen(&p, cf)) || !api_options(&p, cf, ops, given, ngiven) || !cross_check(&p, cf, ops)) {
		free(cf->api_own);
		cf->api_own = NULL;
		return OPTS_ERROR;
	}
	return OPTS_RUN;
}

static void usage_api(FILE *f, const struct api_ops *ops)
{
	fprintf(f, "api %s%s%s\n", ops->name, ops->needs_iface ? " (needs --iface)" : "",
		ops->opts && ops->opts->name ? ":" : ": no options of its own");
	for (const struct api_opt *a = ops->opts; a && a->name; a++) {
		int w = fprintf(f, "  %s%s%s", label(a), a->value ? " " : "", a->value ? a->value : "");
		fprintf(f, "%*s%s\n", w < 20 ? 20 - w : 1, "", a->help);
	}
}

void opts_usage(void *stream)
{
	const struct api_ops *ops;
	const struct role *r;

	fputs("usage: cnfperf-engine ROLE [options] [-- EAL args]\nroles:", stream);
	for (size_t i = 0; (r = role_at(i)); i++)
		fprintf(stream, " %s", r->name);
	fprintf(stream, "\n"
		"  --api NAME        packet I/O api (built in: %s; default %s)\n", api_names(), api_at(0)->name);
	fputs("  --iface NAME      kernel interface   --iface2 NAME  nf, tester: the second one\n"
	      "  --src-mac --src-ip --sport   this endpoint  --dst-mac --dst-ip --dport  its peer\n"
	      "  --poll busy|adaptive|interrupt   rx without frames: spin, spin then sleep, or wait\n"
	      "                    for the port (default busy); senders other than busy sleep between bursts\n"
	      , stream);
	for (size_t i = 0; nf_name_at(i); i++)
		fprintf(stream, "%s%s", i ? "|" : "  --nf ", nf_name_at(i));
	fputs("    nf: what it does to a frame (default l2)\n"
	      "  --route PREFIX/LEN,PORT          nf l3: a route (repeatable, PORT 1 or 2)\n"
	      "  --dst-mac2 --src-mac2            nf: next hop and source MAC of frames leaving port 2\n"
	      "  -r/--rate PPS (0 = max; 500k, 1M)  -p/--size BYTES (64..9220, with FCS)  -b/--burst N\n"
	      "  -c/--touch  -s/--quiet\n"
	      "  --duration S (0 = until SIGINT)  --warmup S  --drain S  --interval S  --flows N\n"
	      "  --cpu N  --threads 1|2 (client; 2 with --poll other than busy or --rx-cpu, else 1)\n"
	      "  --rx-cpu N (the client's receive thread)\n"
	      "  --hold            after the summary keep the ports open, idle, until stdin ends or a signal\n"
	      "  --version   --help\n"
	      "  --idle            alone: do nothing until SIGTERM or SIGINT, reaping orphans\n"
	      "                    (a container's init when its image holds only this engine)\n"
	      "Each api's own options (before or after --api):\n", stream);
	for (size_t i = 0; (ops = api_at(i)); i++)
		usage_api(stream, ops);
}
