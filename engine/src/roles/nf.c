/* nf: a network function between one or two ports. With two,
 * it forwards both ways: what comes in on port 1 leaves by port 2 and the
 * other way round (l3: by its route); with one it hairpins, and mirror always
 * does. What it does to a frame is its kind (core/nf.h), chosen once.
 *
 * Frames move without a copy when they stay on one api instance or the
 * egress api accepts foreign frames (tx_foreign); otherwise they are copied
 * into egress buffers and given back to the ingress instance. nf counts every
 * frame per port (rx and drops at the ingress port, tx and tx_refused at the
 * egress one); it does not read payload headers, so it has no warm-up split.
 *
 * --policer drops the frames of an ingress port beyond its token bucket
 * before they are forwarded; --shaper holds what would leave an egress port
 * beyond its bucket in a queue of its own (copies: no api's ring is held) and
 * sends it when tokens come, dropping what finds the queue full. Both count
 * at the ingress port with the other drops (`policer`, `shaper`); what waited
 * is `delayed` at the egress port (core/bucket.h).
 *
 * Its state is a queue's (struct nf_queue): what one thread polls, forwards
 * and counts; the role's records sum its queues. */
#include "roles.h"
#include "../core/json.h"
#include "../core/bucket.h"
#include "../core/nf.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct port_counts {
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_refused;
	struct nf_drops drop;
	uint64_t policer, shaper;   /* drops: beyond the policer's bucket, the shaper's queue */
};

/* One thread's: queue q of each port, its NF state and counters. Only its
 * thread writes them; the records read the counters as they stand. */
struct nf_queue {
	struct run *r;                 /* its timeline */
	struct nf nf;
	struct api *port[2];
	unsigned nports;
	struct port_counts pc[2];
	uint64_t first_tx_wall_ns;     /* CLOCK_REALTIME of the first frame forwarded, 0 = none yet */
	struct nf_out out;
	struct pkt pkts[2][API_MAX_BURST];
	bool police, shape;
	struct bucket policer[2];      /* per ingress port */
	struct shaper shaper[2];       /* per egress port */
	unsigned q;                    /* which queue of each port */
	int cpu;                       /* its thread's, -1: not pinned */
	uint64_t first_rx;             /* queues past 0: tick of its first frame, 0 = none yet
	                                * (read by the main thread: start_at_first) */
};

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sent_wall(struct nf_queue *s)
{
	if (!s->first_tx_wall_ns)
		s->first_tx_wall_ns = wall_ns();
}

/* Sends the n frames in f, received on port `in`, out of port e. */
static void send_out(struct nf_queue *s, unsigned in, unsigned e, struct pkt *f, uint16_t n)
{
	struct api *src = s->port[in], *dst = s->port[e];
	struct pkt *sent = f, tx[API_MAX_BURST];
	uint16_t m = n, k;

	if (dst != src && !dst->ops->tx_foreign) {
		uint16_t got = dst->ops->tx_alloc(dst, tx, n);
		m = 0;
		for (uint16_t i = 0; i < got; i++) {
			if (f[i].len > tx[m].len) /* larger than egress buffers: refused below */
				continue;
			memcpy(tx[m].data, f[i].data, f[i].len);
			tx[m].len = f[i].len;
			m++;
		}
		if (m < got)
			dst->ops->release(dst, tx + m, (uint16_t)(got - m));
		src->ops->release(src, f, n);
		sent = tx;
	}
	k = m ? dst->ops->tx_burst(dst, sent, m) : 0;
	if (k < m)
		dst->ops->release(dst, sent + k, (uint16_t)(m - k));
	s->pc[e].tx_packets += k;
	s->pc[e].tx_refused += n - k;
	for (uint16_t i = 0; i < k; i++)
		s->pc[e].tx_bytes += wire_bytes(sent[i].len);
	if (k)
		sent_wall(s);
}

/* What the shaper of egress port e lets go at tick now: copied into the
 * port's buffers and sent; what the port refuses stays queued (its tokens
 * untaken) for the next round. */
static void shaper_flush(struct nf_queue *s, unsigned e, uint64_t now)
{
	struct shaper *sh = &s->shaper[e];
	struct api *dst = s->port[e];
	struct pkt tx[API_MAX_BURST];
	unsigned k;

	while ((k = shaper_ready(sh, now, API_MAX_BURST))) {
		uint16_t got = dst->ops->tx_alloc(dst, tx, (uint16_t)k), sent;
		for (uint16_t i = 0; i < got; i++) {
			uint16_t len;
			const uint8_t *f = shaper_peek(sh, i, &len);
			if (len > tx[i].len)   /* never: the queue's slots are no larger */
				len = tx[i].len;
			memcpy(tx[i].data, f, len);
			tx[i].len = len;
		}
		sent = got ? dst->ops->tx_burst(dst, tx, got) : 0;
		if (sent < got)
			dst->ops->release(dst, tx + sent, (uint16_t)(got - sent));
		shaper_done(sh, sent, now);
		s->pc[e].tx_packets += sent;
		for (uint16_t i = 0; i < sent; i++)
			s->pc[e].tx_bytes += wire_bytes(tx[i].len);
		if (sent)
			sent_wall(s);
		if (sent < k)
			break;
	}
}

/* The burst for egress port e into its shaper's queue (the frames go back to
 * the ingress port's api), then what may leave now. */
static void shape_out(struct nf_queue *s, unsigned in, unsigned e, struct pkt *f, uint16_t n, uint64_t now)
{
	for (uint16_t i = 0; i < n; i++)
		if (!shaper_in(&s->shaper[e], f[i].data, f[i].len, now))
			s->pc[in].shaper++;
	s->port[in]->ops->release(s->port[in], f, n);
	shaper_flush(s, e, now);
}

static void forward(struct nf_queue *s, unsigned in, struct pkt *pkts, uint16_t n, uint64_t now)
{
	struct port_counts *pc = &s->pc[in];

	pc->rx_packets += n;
	for (uint16_t i = 0; i < n; i++)
		pc->rx_bytes += wire_bytes(pkts[i].len);
	if (s->police) {
		uint16_t k = (uint16_t)bucket_pass(&s->policer[in], now, n);
		if (k < n) {
			s->port[in]->ops->release(s->port[in], pkts + k, (uint16_t)(n - k));
			pc->policer += n - k;
			n = k;
		}
		if (!n)
			return;
	}
	nf_burst(&s->nf, in, pkts, n, &s->out, &pc->drop);
	if (s->out.ndrop)
		s->port[in]->ops->release(s->port[in], s->out.drop, s->out.ndrop);
	for (unsigned e = 0; e < s->nports; e++) {
		if (!s->out.ntx[e])
			continue;
		if (s->shape)
			shape_out(s, in, e, s->out.tx[e], s->out.ntx[e], now);
		else
			send_out(s, in, e, s->out.tx[e], s->out.ntx[e]);
	}
}

/* Sends what the shapers let go by now; the tick the next frame may leave. */
static uint64_t shapers_due(struct nf_queue *s, uint64_t now)
{
	uint64_t due = UINT64_MAX;

	if (!s->shape)
		return due;
	for (unsigned e = 0; e < s->nports; e++) {
		if (s->shaper[e].n)
			shaper_flush(s, e, now);
		uint64_t d = shaper_due(&s->shaper[e]);
		if (d < due)
			due = d;
	}
	return due;
}

/* The role: its queues, the first of them polled by the main thread on the
 * role's timeline, each other on a thread of its own with a silent copy of
 * it (no records; the role's sum every queue's counters). */
struct nf_role {
	struct nf_queue *q[QUEUES_MAX];
	unsigned n;
	int err;                 /* a queue's thread could not be pinned */
	uint64_t stop_check;     /* ticks: the longest a queue's thread waits without a look at run_stop */
};

#define STOP_CHECK_S 0.05

/* x, read while its queue's thread may write it (a counter as it stands) */
#define NOW(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Port i's counters summed over the queues, as they stand (the other
 * threads may still count: interval records), or final (the summary). */
static struct port_counts port_sum(const struct nf_role *role, unsigned i)
{
	struct port_counts t = { 0 };

	for (unsigned q = 0; q < role->n; q++) {
		const struct port_counts *pc = &role->q[q]->pc[i];
		t.rx_packets += NOW(pc->rx_packets);
		t.rx_bytes += NOW(pc->rx_bytes);
		t.tx_packets += NOW(pc->tx_packets);
		t.tx_bytes += NOW(pc->tx_bytes);
		t.tx_refused += NOW(pc->tx_refused);
		t.drop.other += NOW(pc->drop.other);
		t.drop.bad += NOW(pc->drop.bad);
		t.drop.no_route += NOW(pc->drop.no_route);
		t.drop.ttl += NOW(pc->drop.ttl);
		t.policer += NOW(pc->policer);
		t.shaper += NOW(pc->shaper);
	}
	return t;
}

/* The run's totals are the ports' sums (interval records, the summary). */
static void collect(struct run *r)
{
	const struct nf_role *role = r->collect_arg;
	struct counters *c = &r->c;

	c->rx_packets = c->rx_bytes = c->tx_packets = c->tx_bytes = c->tx_refused = c->other = c->bad = 0;
	for (unsigned i = 0; i < role->q[0]->nports; i++) {
		const struct port_counts pc = port_sum(role, i);
		c->rx_packets += pc.rx_packets;
		c->rx_bytes += pc.rx_bytes;
		c->tx_packets += pc.tx_packets;
		c->tx_bytes += pc.tx_bytes;
		c->tx_refused += pc.tx_refused;
		c->other += pc.drop.other;
		c->bad += pc.drop.bad;
	}
}

/* The earliest first frame forwarded, of any queue (0: none). */
static uint64_t first_tx_wall(const struct nf_role *role)
{
	uint64_t t = 0;

	for (unsigned q = 0; q < role->n; q++) {
		uint64_t w = role->q[q]->first_tx_wall_ns;
		if (w && (!t || w < t))
			t = w;
	}
	return t;
}

/* What each queue's thread took in and sent out: how the ports' frames were
 * spread over the cores. */
static void queues_json(const struct nf_role *role, struct json *j)
{
	json_open(j, "queues", '[');
	for (unsigned q = 0; q < role->n; q++) {
		const struct nf_queue *s = role->q[q];
		uint64_t rx = 0, tx = 0;
		for (unsigned i = 0; i < s->nports; i++) {
			rx += s->pc[i].rx_packets;
			tx += s->pc[i].tx_packets;
		}
		json_open(j, NULL, '{');
		json_u64(j, "queue", q);
		if (s->cpu >= 0)
			json_u64(j, "cpu", (uint64_t)s->cpu);
		else
			json_null(j, "cpu");
		json_u64(j, "rx_packets", rx);
		json_u64(j, "tx_packets", tx);
		json_close(j, '{');
	}
	json_close(j, '[');
}

static void summary_more(struct run *r, struct json *j)
{
	const struct nf_role *role = r->collect_arg;
	const struct nf_queue *s = role->q[0];
	uint64_t first = first_tx_wall(role);

	json_str(j, "nf", s->nf.kind->name);
	if (first)
		json_u64(j, "first_tx_wall_ns", first);
	else
		json_null(j, "first_tx_wall_ns");
	json_open(j, "ports", '[');
	for (unsigned i = 0; i < s->nports; i++) {
		const struct port_counts pc = port_sum(role, i);
		json_open(j, NULL, '{');
		json_u64(j, "port", i + 1);
		json_u64(j, "rx_packets", pc.rx_packets);
		json_u64(j, "rx_bytes", pc.rx_bytes);
		json_u64(j, "tx_packets", pc.tx_packets);
		json_u64(j, "tx_bytes", pc.tx_bytes);
		json_u64(j, "tx_refused", pc.tx_refused);
		json_open(j, "dropped", '{');
		json_u64(j, "other", pc.drop.other);
		json_u64(j, "bad", pc.drop.bad);
		json_u64(j, "no_route", pc.drop.no_route);
		json_u64(j, "ttl", pc.drop.ttl);
		json_u64(j, "policer", pc.policer);
		json_u64(j, "shaper", pc.shaper);
		json_close(j, '{');
		json_u64(j, "delayed", s->shape ? s->shaper[i].delayed : 0);
		json_close(j, '{');
	}
	json_close(j, '[');
	queues_json(role, j);
	/* a bucket is one queue's: the role takes --policer and --shaper on one */
	const struct conf *cf = r->conf;
	if (s->police) {
		json_open(j, "policer", '{');
		json_num(j, "rate_pps", cf->policer.rate, 1);
		json_u64(j, "bucket", cf->policer.size);
		json_u64(j, "dropped", s->pc[0].policer + s->pc[1].policer);
		json_close(j, '{');
	}
	if (s->shape) {
		uint64_t delayed = 0, queued = 0, longest = 0;
		for (unsigned i = 0; i < s->nports; i++) {
			delayed += s->shaper[i].delayed;
			queued += s->shaper[i].n;
			if (s->shaper[i].delay_max > longest)
				longest = s->shaper[i].delay_max;
		}
		json_open(j, "shaper", '{');
		json_num(j, "rate_pps", cf->shaper.rate, 1);
		json_u64(j, "bucket", cf->shaper.size);
		json_u64(j, "queue", cf->shaper.queue);
		json_u64(j, "dropped", s->pc[0].shaper + s->pc[1].shaper);
		json_u64(j, "delayed", delayed);
		json_u64(j, "queued", queued);
		json_u64(j, "delay_max_ns", (uint64_t)(clock_ticks_to_s(&r->clk, longest) * 1e9 + 0.5));
		json_close(j, '{');
	}
}

static void release_all(struct nf_queue *s, const uint16_t *n)
{
	for (unsigned i = 0; i < s->nports; i++)
		if (n[i])
			s->port[i]->ops->release(s->port[i], s->pkts[i], n[i]);
}

/* The queue's shaper slots hold the frames --size says, or a standard Ethernet frame
 * if that is more (a larger one is dropped as one beyond the queue). */
#define SHAPER_SLOT_MIN 1518

/* Queue q of the n the ports r opened have (r->qapi[q]), on its timeline t. */
static int setup(struct nf_queue *s, const struct run *r, unsigned q, unsigned n, struct run *t)
{
	const struct conf *cf = r->conf;
	uint8_t mac[2][6], hop[2][6];

	s->r = t;
	s->q = q;
	s->cpu = q < cf->ncpus ? cf->cpus[q] : -1;   /* queue 0: the main thread, pinned by main() */
	s->port[0] = r->qapi[q][0];
	s->port[1] = r->qapi[q][1] ? r->qapi[q][1] : r->qapi[q][0];
	s->nports = r->qapi[q][1] ? 2 : 1;
	memcpy(mac[0], cf->src_mac.given ? cf->src_mac.addr : s->port[0]->mac, 6);
	memcpy(mac[1], cf->src_mac2.given ? cf->src_mac2.addr : s->port[1]->mac, 6);
	memcpy(hop[0], cf->dst_mac.addr, 6);
	memcpy(hop[1], cf->dst_mac2.addr, 6);
	nf_init(&s->nf, cf->nf, s->nports, (const uint8_t (*)[6])mac, (const uint8_t (*)[6])hop, &cf->routes);
	if ((s->police = cf->policer.given))
		for (unsigned i = 0; i < 2; i++)
			bucket_init(&s->policer[i], cf->policer.rate, cf->policer.size, r->clk.hz);
	if ((s->shape = cf->shaper.given)) {
		unsigned slot = cf->size - FCS_LEN > SHAPER_SLOT_MIN ? cf->size - FCS_LEN : SHAPER_SLOT_MIN;
		for (unsigned i = 0; i < s->nports; i++)
			if (shaper_init(&s->shaper[i], cf->shaper.rate, cf->shaper.size, cf->shaper.queue, slot,
					r->clk.hz)) {
				fprintf(stderr, "cnfperf-engine: out of memory for the shaper's queue\n");
				return -1;
			}
	}
	/* each its own poller, over its own queue's instances */
	if (poller_init(&t->poll, cf->poll, r->clk.hz, s->port[0], s->nports > 1 ? s->port[1] : NULL))
		return -1;
	poller_expect(&t->poll, cf->rate / n);   /* each queue its share */
	poller_streams(&t->poll, s->nports);
	t->poll.stalls = &t->stalls;
	return 0;
}

static void teardown(struct nf_queue *s)
{
	poller_free(&s->r->poll);   /* none set up yet: nothing (run_init's epfd -1) */
	for (unsigned i = 0; i < 2; i++)
		shaper_free(&s->shaper[i]);
	free(s);
}

/* The main thread's queue: the role's timeline starts at the first frame any
 * queue took (its own may take none: one flow hashes to one queue). */
static void start_at_first(const struct nf_role *role, struct run *r)
{
	uint64_t first = 0;

	for (unsigned q = 1; q < role->n; q++) {
		uint64_t t = __atomic_load_n(&role->q[q]->first_rx, __ATOMIC_ACQUIRE);
		if (t && (!first || t < first))
			first = t;
	}
	if (first)
		run_start(r, first);
}

/* Polls queue s until the run stops (drained after a signal). */
static void poll_loop(const struct nf_role *role, struct nf_queue *s)
{
	struct run *r = s->r;
	const uint16_t burst = (uint16_t)r->conf->burst;
	bool main = s == role->q[0];

	for (;;) {
		uint16_t n[2] = { 0, 0 };
		for (unsigned i = 0; i < s->nports; i++)
			n[i] = s->port[i]->ops->rx_burst(s->port[i], s->pkts[i], burst);
		uint64_t now = clock_ticks();
		unsigned got = n[0] + n[1];

		if (s->nports > 1)   /* each port's pace apart (poll.h) */
			for (unsigned i = 0; i < 2; i++)
				if (n[i])
					poller_arrived(&r->poll, i, now);
		r->wake = shapers_due(s, now);
		if (main && role->n > 1) {
			if (!r->started)
				start_at_first(role, r);
			if (r->t_next < r->wake)   /* the records are this thread's to print */
				r->wake = r->t_next;
		} else if (!main && now + role->stop_check < r->wake) {
			/* a signal wakes one thread's wait, maybe another's: each
			 * looks at run_stop that often however idle */
			r->wake = now + role->stop_check;
		}

		enum rx_step step = run_rx_step(r, got, now);

		if (step == RX_STOP) {
			release_all(s, n);
			break;
		}
		if (step == RX_IDLE)
			continue;
		if (!main && !s->first_rx)
			__atomic_store_n(&s->first_rx, r->t_start, __ATOMIC_RELEASE);
		for (unsigned i = 0; i < s->nports; i++)
			if (n[i])
				forward(s, i, s->pkts[i], n[i], now);
		run_rx_window(r, now, got);
	}
}

struct queue_thread {
	struct nf_role *role;
	struct nf_queue *s;
};

static void *queue_main(void *arg)
{
	struct queue_thread *t = arg;
	struct nf_queue *s = t->s;

	if (run_pin(s->cpu)) {
		fprintf(stderr, "cnfperf-engine: --cpu %d: cannot pin queue %u's thread to that CPU\n", s->cpu,
			s->q);
		t->role->err = 1;
	}
	if (s->port[0]->ops->thread)
		s->port[0]->ops->thread(s->port[0], true);
	stalls_woke(&s->r->stalls, clock_ticks());
	poll_loop(t->role, s);
	if (s->port[0]->ops->thread)
		s->port[0]->ops->thread(s->port[0], false);
	s->r->stalls.kept = s->r->stalls.live;
	return NULL;
}

/* The role's window (its first measured frame to its last) and stalls are
 * every queue's: what the other threads saw is folded into r. */
static void fold(struct nf_role *role, struct run *r)
{
	for (unsigned q = 1; q < role->n; q++) {
		const struct run *t = role->q[q]->r;
		if (!t->t_first_rx)
			continue;
		if (!r->t_first_rx || t->t_first_rx < r->t_first_rx) {
			r->t_first_rx = t->t_first_rx;
			r->first_burst = t->first_burst;
		}
		if (t->t_last_rx > r->t_last_rx)
			r->t_last_rx = t->t_last_rx;
		stalls_merge(&r->stalls, &t->stalls);
	}
}

int role_nf(struct run *r)
{
	struct nf_role role = { .n = r->queues ? r->queues : 1,
				.stop_check = clock_s_to_ticks(&r->clk, STOP_CHECK_S) };
	struct run *own = calloc(role.n, sizeof(*own));
	pthread_t th[QUEUES_MAX];
	struct queue_thread args[QUEUES_MAX];
	unsigned started = 0;
	int rc = 1;

	if (!own) {
		fprintf(stderr, "cnfperf-engine: out of memory\n");
		return 1;
	}
	r->rx_window = true;
	r->collect = collect;
	r->collect_arg = &role;
	r->summary_more = summary_more;
	for (unsigned q = 1; q < role.n; q++) {   /* silent copies: their own poller, stalls, drain */
		own[q] = *r;
		own[q].silent = true;
		own[q].collect = NULL;
		own[q].summary_more = NULL;
	}
	for (unsigned q = 0; q < role.n; q++) {
		if (!(role.q[q] = calloc(1, sizeof(*role.q[q])))) {
			fprintf(stderr, "cnfperf-engine: out of memory\n");
			role.n = q;
			goto out;
		}
		if (setup(role.q[q], r, q, role.n, q ? &own[q] : r)) {
			teardown(role.q[q]);
			role.n = q;
			goto out;
		}
	}
	run_ready(r);
	for (unsigned q = 1; q < role.n; q++) {
		args[q] = (struct queue_thread){ &role, role.q[q] };
		if ((errno = pthread_create(&th[q], NULL, queue_main, &args[q]))) {
			perror("cnfperf-engine: a queue's thread");
			run_stop = 1;
			break;
		}
		started = q;
	}
	poll_loop(&role, role.q[0]);
	for (unsigned q = 1; q <= started; q++)
		pthread_join(th[q], NULL);
	fold(&role, r);
	run_summary(r);
	rc = role.err;
out:
	for (unsigned q = 0; q < role.n; q++)
		teardown(role.q[q]);
	free(own);
	return rc;
}
