/* What the options say together, once each was taken alone: which roles
 * take which, what an nf kind needs, how many threads a client runs. Role
 * and kind are asked by their properties (roles/roles.c, core/nf.c), never
 * by name, and messages name the roles and kinds that have one. */
#include "parse.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "roles/roles.h"

/* A receive that sleeps or waits would hold the one thread past its next
 * burst, and two spinning threads plus a server are more than a small
 * machine's cores: so one thread when it spins (--poll busy), two when it
 * sleeps (or when a CPU was named for the receive thread). */
static bool client_threads(struct parse *p, struct conf *cf)
{
	if (!cf->threads)
		cf->threads = poll_modes[cf->poll].sleeps || cf->rx_cpu >= 0 ? 2 : 1;
	if (cf->threads == 1 && poll_modes[cf->poll].sleeps)
		return fail(p, "--threads: 1 needs --poll busy (drop --poll %s, or use --threads 2)",
			    poll_modes[cf->poll].name);
	if (cf->threads == 1 && cf->rx_cpu >= 0)
		return fail(p, "--rx-cpu: a one-thread client has no receive thread (--threads 2 has one)");
	if (cf->threads > 2)
		return fail(p, "--threads: a client runs 1 or 2 (a generator and a receive thread)");
	return true;
}

/* "raw, mmap, xdp, dpdk": the compiled-in apis with a property (an offset
 * of a bool in struct api_ops), for messages. */
static const char *apis_with(size_t prop, char *buf, size_t len)
{
	const struct api_ops *o;

	buf[0] = '\0';
	for (size_t i = 0; (o = api_at(i)); i++)
		if (*(const bool *)((const char *)o + prop))
			list_add(buf, len, o->name);
	return buf;
}

#define APIS_WITH(prop) apis_with(offsetof(struct api_ops, prop), (char[96]){ 0 }, 96)

/* "l3": the kinds that route, for messages. */
static const char *routed_kinds(void)
{
	static char list[64];
	const struct nf_kind *k;

	list[0] = '\0';
	for (size_t i = 0; (k = nf_kind_at(i)); i++)
		if (k->routed)
			list_add(list, sizeof(list), k->name);
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

	if (!ops->l2)
		return fail(p, "--api: %s needs an api that sees Ethernet frames (%s), not %s", r,
			    APIS_WITH(l2), cf->api);
	if (k->hairpin && two)
		return fail(p, "%s: --nf %s sends frames back by the port they came in on (one port)",
			    cf->iface2 ? "--iface2" : opt_label(p->egress_by->name, p->egress_by->letter), kind);
	if (cf->routes.n && !k->routed)
		return fail(p, "--route: only --nf %s routes (this is --nf %s)", routed_kinds(), kind);
	if (k->routed && !routes_check(p, cf, two, &need1, &need2))
		return false;
	if ((cf->dst_mac2.given || cf->src_mac2.given) && !two)
		return fail(p, "%s: there is no second port (--iface2, --port2)",
			    cf->dst_mac2.given ? "--dst-mac2" : "--src-mac2");
	if (need1 && !cf->dst_mac.given)
		return fail(p, "--dst-mac: required for %s %s (the next hop of frames leaving port 1)", r, kind);
	if (need2 && !cf->dst_mac2.given)
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

/* Options only the roles that forward take. */
static bool forwarder_options(struct parse *p, const struct conf *cf)
{
	if (cf->nf)
		return fail(p, "--nf: only the %s role has a kind", ROLES_WITH(forwards));
	if (cf->routes.n)
		return fail(p, "--route: only the %s role routes", ROLES_WITH(forwards));
	if (cf->dst_mac2.given || cf->src_mac2.given)
		return fail(p, "%s: only %s has a next hop per port", cf->dst_mac2.given ? "--dst-mac2" : "--src-mac2",
			    ROLES_WITH(forwards));
	if (cf->policer.given || cf->shaper.given)
		return fail(p, "%s: only the %s role forwards frames to hold to a bucket",
			    cf->policer.given ? "--policer" : "--shaper", ROLES_WITH(forwards));
	return true;
}

/* --onoff: a generator's, at a paced rate; --conformance: an end that receives. */
static bool rate_options(struct parse *p, const struct conf *cf)
{
	const struct role *role = cf->role;

	if (cf->onoff && !role->generates)
		return fail(p, "--onoff: only %s generate frames", ROLES_WITH(generates));
	if (cf->onoff && cf->rate <= 0)
		return fail(p, "--onoff: needs a paced --rate (its mean rate), not as fast as possible");
	if (cf->conformance.given && !(role->end && role->rx))
		return fail(p, "--conformance: only an end that receives (recv, client, tester) measures it");
	return true;
}

/* Options only the roles with a receive thread take. */
static bool thread_options(struct parse *p, const struct conf *cf)
{
	if (cf->threads)
		return fail(p, "--threads: only %s can run more than one thread", ROLES_WITH(threads));
	if (cf->rx_cpu >= 0)
		return fail(p, "--rx-cpu: only %s has a receive thread", ROLES_WITH(threads));
	return true;
}

/* nf, send, recv: a thread per queue of each port, each on a CPU of --cpu's list when it
 * has one (as many as threads; --threads defaults to its length). A bucket
 * is one thread's, and an api without queues has one. */
static bool queue_threads(struct parse *p, struct conf *cf, const struct api_ops *ops)
{
	if (!cf->threads)
		cf->threads = cf->ncpus > 1 ? cf->ncpus : 1;
	if (cf->ncpus > 1 && cf->ncpus != cf->threads)
		return fail(p, "--cpu: %u CPUs for %u threads (one each)", cf->ncpus, cf->threads);
	if (cf->rx_cpu >= 0)
		return fail(p, "--rx-cpu: only %s has a receive thread", ROLES_WITH(threads));
	if (cf->threads == 1)
		return true;
	if (!ops->queues)
		return fail(p, "--threads: the %s api has one queue per port (one with queues: %s)", cf->api,
			    APIS_WITH(queues));
	if (cf->policer.given || cf->shaper.given || cf->conformance.given)
		return fail(p, "--threads: %s is one bucket, one thread's (--threads 1)",
			    cf->policer.given ? "--policer" : cf->shaper.given ? "--shaper" : "--conformance");
	/* a clump is one pacer's, and a queue paces its own flows */
	if (cf->role->generates && cf->onoff)
		return fail(p, "--threads: --onoff's clumps are one pacer's, one thread's (--threads 1)");
	/* a flow is one queue's (roles/queues.c) */
	if (cf->role->generates && cf->flows < cf->threads)
		return fail(p, "--threads: %u queues need --flows %u at least (a flow leaves on one queue)",
			    cf->threads, cf->threads);
	return true;
}

/* Only a role that checks another engine's timestamps is told whose clock they are on. */
static bool clock_options(struct parse *p, const struct conf *cf)
{
	if (cf->clock_other && !cf->role->peer_stamps)
		return fail(p, "--clock: only %s takes frames another engine stamped (the others "
			    "read their own clock)", ROLES_WITH(peer_stamps));
	return true;
}

/* A generator needs to know where it sends. */
static bool generator_options(struct parse *p, const struct conf *cf, const struct api_ops *ops)
{
	const char *r = cf->role->name;

	if (!cf->dst_ip)
		return fail(p, "--dst-ip: required for %s", r);
	if (ops->l2 && !cf->dst_mac.given)
		return fail(p, "--dst-mac: required for %s with --api %s (the engine does no ARP)", r, cf->api);
	if (ops->l2 && !cf->src_ip)
		return fail(p, "--src-ip: required for %s with --api %s (the engine builds the IP header)", r, cf->api);
	return true;
}

bool opts_check(struct parse *p, struct conf *cf, const struct api_ops *ops)
{
	const struct role *role = cf->role;

	if (!cf->iface && ops->needs_iface)
		return fail(p, "--iface: required with --api %s", cf->api);
	if (!role->two_ports && cf->iface2)
		return fail(p, "--iface2: only %s use a second interface", ROLES_WITH(two_ports));
	if (!role->two_ports && cf->egress)
		return fail(p, "%s: only %s use a second port", opt_label(p->egress_by->name, p->egress_by->letter),
			    ROLES_WITH(two_ports));
	if (role->forwards && !cf->nf)
		cf->nf = nf_kind_at(0);
	if (!(role->forwards ? nf_check(p, cf, ops) : forwarder_options(p, cf)))
		return false;
	if (!(role->threads ? client_threads(p, cf) : role->queues ? queue_threads(p, cf, ops)
									: thread_options(p, cf)))
		return false;
	if (cf->ncpus > 1 && !role->queues)
		return fail(p, "--cpu: one CPU (only %s run a thread per CPU)", ROLES_WITH(queues));
	if (!clock_options(p, cf) || !rate_options(p, cf))
		return false;
	if (role->generates && !generator_options(p, cf, ops))
		return false;
	if (cf->ip_span > 1 && !ops->l2)
		return fail(p, "--ip-span: the %s api's sockets have one address (an L2 api builds its headers)",
			    cf->api);
	if (cf->sport + cf->flows - 1 > 65535)
		return fail(p, "--flows: %u flows from --sport %u run past port 65535", cf->flows, cf->sport);
	return true;
}
