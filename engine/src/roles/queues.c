/* The ends on several queues (send and recv with --threads N): each queue of
 * the port is polled by a thread of its own, which runs the role's loop on a
 * silent copy of the run (its own counters, sequence tracker, histograms,
 * poller and stalls), so the hot loops are the one-queue loops, unchanged and
 * unshared. The main thread only reports: it sleeps, and at each interval
 * prints the queues' counters summed (read as they stand); the summary folds
 * every queue's counts, windows, stalls and latencies into one, with each
 * queue's own beside it.
 *
 * A generator's flows are dealt out to its queues (flow f to queue f mod N),
 * each queue paced at its flows' share of the rate, so every flow leaves in
 * order from one thread. Loss and order stay exact as long as a flow also
 * arrives on one queue: memif and vhost-user take a queue to the same queue
 * of the peer, RSS and PACKET_FANOUT_HASH hash a flow to one queue, and a veth
 * delivers to the queue the sender's CPU picked. A flow seen on two queues
 * is told (split_flows and a warning): its two halves were tracked apart.
 *
 * Interval records carry no latency (each queue's histogram is its thread's
 * until the end); the summary's is every queue's. */
#include "roles.h"
#include "../core/json.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The reporter looks at the queues' threads this often at least. */
#define REPORT_CHECK_S 0.05

struct queue_set {
	struct run *q;        /* the queues' runs, q[0] … q[n-1] */
	unsigned n;
	const struct queue_role *qr;
	_Atomic unsigned finished;
	int err;              /* a thread could not be pinned, or its loop failed */
	uint64_t split;       /* flows seen on more than one queue (fold) */
};

struct queue_thread {
	struct queue_set *set;
	struct run *r;
};

/* x, read while its queue's thread may write it (a counter as it stands) */
#define NOW(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static void add_counters(struct counters *to, const struct counters *c)
{
	to->tx_packets += NOW(c->tx_packets);
	to->tx_bytes += NOW(c->tx_bytes);
	to->tx_refused += NOW(c->tx_refused);
	to->tx_skipped += NOW(c->tx_skipped);
	to->rx_packets += NOW(c->rx_packets);
	to->rx_bytes += NOW(c->rx_bytes);
	to->bad += NOW(c->bad);
	to->other += NOW(c->other);
	to->corrupt += NOW(c->corrupt);
	to->warmup_packets += NOW(c->warmup_packets);
	to->warmup_tx_packets += NOW(c->warmup_tx_packets);
	to->seq.lost += NOW(c->seq.lost);
	to->seq.reordered += NOW(c->seq.reordered);
	to->seq.duplicate += NOW(c->seq.duplicate);
	/* the longest gap of any queue's flows, with its own frames and start */
	uint64_t outage = NOW(c->seq.outage_ns);
	if (outage > to->seq.outage_ns) {
		to->seq.outage_ns = outage;
		to->seq.outage_lost = NOW(c->seq.outage_lost);
		to->seq.outage_from_ns = NOW(c->seq.outage_from_ns);
	}
}

/* The role's totals are the queues' sums (interval records, the summary). */
static void collect(struct run *r)
{
	const struct queue_set *set = r->collect_arg;

	memset(&r->c, 0, sizeof(r->c));
	for (unsigned q = 0; q < set->n; q++)
		add_counters(&r->c, &set->q[q].c);
}

static void queues_json(struct run *r, struct json *j)
{
	const struct queue_set *set = r->collect_arg;

	json_u64(j, "split_flows", set->split);
	json_open(j, "queues", '[');
	for (unsigned q = 0; q < set->n; q++) {
		const struct run *t = &set->q[q];
		const struct conf *cf = r->conf;
		json_open(j, NULL, '{');
		json_u64(j, "queue", q);
		if (q < cf->ncpus)
			json_u64(j, "cpu", (uint64_t)cf->cpus[q]);
		else
			json_null(j, "cpu");
		json_u64(j, "tx_packets", t->c.tx_packets);
		json_u64(j, "rx_packets", t->c.rx_packets);
		json_i64(j, "lost", t->c.seq.lost);
		json_u64(j, "reordered", t->c.seq.reordered);
		json_u64(j, "flows_seen", t->seq ? t->seq->nflows : 0);
		json_close(j, '{');
	}
	json_close(j, '[');
}

static void *queue_main(void *arg)
{
	struct queue_thread *t = arg;
	struct run *r = t->r;
	const struct conf *cf = r->conf;
	int cpu = r->queue < cf->ncpus ? cf->cpus[r->queue] : -1;

	if (run_pin(cpu)) {
		fprintf(stderr, "cnfperf-engine: --cpu %d: cannot pin queue %u's thread to that CPU\n", cpu,
			r->queue);
		t->set->err = 1;
	}
	if (r->api->ops->thread)
		r->api->ops->thread(r->api, true);
	if (t->set->qr->loop(r))
		t->set->err = 1;
	if (r->api->ops->thread)
		r->api->ops->thread(r->api, false);
	atomic_fetch_add(&t->set->finished, 1);
	return NULL;
}

/* Flows whose sequence two queues' trackers both followed. */
static uint64_t split_flows(const struct queue_set *set)
{
	uint64_t split = 0;

	if (!set->q[0].seq)
		return 0;
	for (unsigned key = 0; key < 65536; key++) {
		unsigned on = 0;
		for (unsigned q = 0; q < set->n; q++)
			on += set->q[q].seq->slot[key] != 0;
		split += on > 1;
	}
	return split;
}

/* Every queue's window, stalls, polls, latencies and flows, into r. */
static void fold(struct queue_set *set, struct run *r)
{
	r->measuring = false;
	r->t_measure = r->t_stop = 0;
	r->stalls.kept = (struct stall_sum){ 0 };
	r->stalls.pollers = 0;
	memset(&r->poll_more, 0, sizeof(r->poll_more));
	for (unsigned q = 0; q < set->n; q++) {
		struct run *t = &set->q[q];
		if (t->t_first_rx && (!r->t_first_rx || t->t_first_rx < r->t_first_rx)) {
			r->t_first_rx = t->t_first_rx;
			r->first_burst = t->first_burst;
		}
		if (t->t_last_rx > r->t_last_rx)
			r->t_last_rx = t->t_last_rx;
		/* a generator's window: its earliest queue's start to its latest's stop */
		if (t->measuring) {
			if (!r->measuring || t->t_measure < r->t_measure)
				r->t_measure = t->t_measure;
			r->measuring = true;
		}
		if (t->t_stop > r->t_stop)
			r->t_stop = t->t_stop;
		stalls_merge(&r->stalls, &t->stalls);
		poll_stats_add(&r->poll_more, &t->poll.s);
		poll_stats_add(&r->poll_more, &t->poll_more);
		if (t->lat) {
			hist_run_flush(t->lat_ival, &t->lat_run);
			hist_merge(t->lat, t->lat_ival);
			hist_merge(r->lat, t->lat);
		}
	}
	if (set->q[0].seq) {
		unsigned flows = 0;
		for (unsigned q = 0; q < set->n; q++)
			flows += set->q[q].seq->nflows;
		r->seq->nflows = flows;
		if ((set->split = split_flows(set)))
			fprintf(stderr, "cnfperf-engine: %llu flow(s) came on more than one queue: each queue "
				"tracked its part, so their loss and order are not exact (a flow must stay on "
				"one queue)\n", (unsigned long long)set->split);
	}
}

/* The main thread while the queues run: the role's timeline starts at its
 * first queue's, interval records at their times; a stop signal that one
 * thread took is passed to the others, whose waits it must end. */
static void report(struct queue_set *set, struct run *r, const pthread_t *th, unsigned threads)
{
	const uint64_t check = clock_s_to_ticks(&r->clk, REPORT_CHECK_S);
	bool kicked = false;

	while (atomic_load(&set->finished) < threads) {
		if (run_stop && !kicked) {
			for (unsigned q = 0; q < threads; q++)
				pthread_kill(th[q], SIGTERM);
			kicked = true;
		}
		if (!r->started) {
			uint64_t first = 0;
			for (unsigned q = 0; q < set->n; q++)
				if (__atomic_load_n(&set->q[q].started, __ATOMIC_ACQUIRE)) {
					uint64_t t = __atomic_load_n(&set->q[q].t_start, __ATOMIC_RELAXED);
					if (!first || t < first)
						first = t;
				}
			if (first)
				run_start(r, first);
		}
		uint64_t now = clock_ticks();
		if (r->started && now >= r->t_next)
			run_tick(r, now);
		uint64_t until = r->started && r->t_next < now + check ? r->t_next : now + check;
		uint64_t ns = until > now ? (uint64_t)(clock_ticks_to_s(&r->clk, until - now) * 1e9) : 0;
		struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
		nanosleep(&ts, NULL);
	}
}

/* The queues' runs: copies of r, each on its queue's port instances, silent,
 * with histograms of its own. */
static int copies(struct queue_set *set, struct run *r)
{
	for (unsigned q = 0; q < set->n; q++) {
		struct run *t = &set->q[q];
		*t = *r;
		t->queue = q;
		t->api = r->qapi[q][0];
		t->api2 = r->qapi[q][1];
		t->silent = true;
		t->collect = NULL;
		t->collect_arg = NULL;
		t->summary_more = NULL;
		t->seq = NULL;
		t->lat = t->lat_ival = NULL;
		t->poll.epfd = -1;
		stalls_init(&t->stalls, r->stalls.threshold);
		if (r->lat) {
			if (!(t->lat = malloc(sizeof(*t->lat))) || !(t->lat_ival = malloc(sizeof(*t->lat_ival)))) {
				fprintf(stderr, "cnfperf-engine: out of memory for latency histograms\n");
				return -1;
			}
			hist_reset(t->lat);
			hist_reset(t->lat_ival);
		}
	}
	return 0;
}

static int many(struct run *r, const struct queue_role *qr)
{
	struct queue_set set = { .n = r->queues, .qr = qr };
	struct queue_thread args[QUEUES_MAX];
	pthread_t th[QUEUES_MAX];
	unsigned prepared = 0, threads = 0;
	struct hist *lat_ival = r->lat_ival;
	int rc = 1;

	if (!(set.q = calloc(set.n, sizeof(*set.q)))) {
		fprintf(stderr, "cnfperf-engine: out of memory\n");
		return 1;
	}
	if (copies(&set, r))
		goto out;
	for (; prepared < set.n; prepared++)
		if (qr->prepare(&set.q[prepared]))
			goto out;
	/* the summary's flows_seen and outage are the tracker's: one for the sums */
	if (set.q[0].seq && !r->seq && !(r->seq = seq_new(r->open_ns))) {
		fprintf(stderr, "cnfperf-engine: out of memory for sequence tracking\n");
		goto out;
	}
	r->collect = collect;
	r->collect_arg = &set;
	r->summary_more = queues_json;
	r->lat_ival = NULL;   /* the aggregate's interval records have no latency */
	run_ready(r);
	for (; threads < set.n; threads++) {
		args[threads] = (struct queue_thread){ &set, &set.q[threads] };
		if ((errno = pthread_create(&th[threads], NULL, queue_main, &args[threads]))) {
			perror("cnfperf-engine: a queue's thread");
			run_stop = 1;
			break;
		}
	}
	report(&set, r, th, threads);
	for (unsigned q = 0; q < threads; q++)
		pthread_join(th[q], NULL);
	if (threads == set.n) {
		fold(&set, r);
		run_summary(r);
		rc = set.err;
	}
out:
	r->lat_ival = lat_ival;
	r->collect = NULL;
	r->summary_more = NULL;
	for (unsigned q = 0; q < prepared; q++)
		qr->finish(&set.q[q]);
	for (unsigned q = 0; q < set.n; q++) {
		free(set.q[q].lat);
		free(set.q[q].lat_ival);
		seq_free(set.q[q].seq);
	}
	free(set.q);
	return rc;
}

int queues_run(struct run *r, const struct queue_role *qr)
{
	if (r->queues > 1)
		return many(r, qr);
	if (qr->prepare(r))
		return 1;
	run_ready(r);
	int rc = qr->loop(r);
	if (rc == 0)
		run_summary(r);
	qr->finish(r);
	return rc;
}
