#include "run.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"
#include "packet.h"

/* How often a thread re-anchors its TSC mapping. CLOCK_MONOTONIC is itself
 * steered (NTP, the hypervisor): measured slopes against the TSC wander by
 * ~10 ppm from one 100 ms to the next, so a 1 s anchor could be microseconds
 * off. Every 10 ms keeps two processes within ~0.1 us for ~0.5 us of work. */
#define REANCHOR_PER_S 100

volatile sig_atomic_t run_stop;

static void on_signal(int sig)
{
	(void)sig;
	run_stop = 1;
}

void run_signals(void)
{
	/* no SA_RESTART: a wait or a sleep returns EINTR and the loop sees the flag */
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void run_hold(void)
{
	char buf[256];

	fflush(stdout);
	run_stop = 0;
	while (!run_stop) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		/* the timeout bounds the race between the flag test and poll() */
		int n = poll(&p, 1, 100);

		if (n < 0 && errno != EINTR)
			return;
		if (n > 0) {
			ssize_t k = read(STDIN_FILENO, buf, sizeof(buf));
			if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
				return;  /* end of file, or no usable stdin at all */
		}
	}
}

/* One line of stdin, a byte at a time (the next trial's line comes only after
 * this trial's summary: nothing is read ahead). 1: a line; 0: end of file or a
 * signal; -1: a line too long. */
static int read_line(char *buf, size_t size)
{
	size_t n = 0;

	fflush(stdout);
	while (!run_stop) {
		struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
		int k = poll(&p, 1, 100);   /* the timeout bounds the race with the flag */

		if (k < 0 && errno != EINTR)
			return 0;
		if (k <= 0)
			continue;
		char c;
		ssize_t got = read(STDIN_FILENO, &c, 1);
		if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
			return 0;
		if (got < 0)
			continue;
		if (c == '\n') {
			buf[n] = '\0';
			return 1;
		}
		if (n + 1 == size)
			return -1;
		buf[n++] = c;
	}
	return 0;
}

int run_next(struct conf *cf)
{
	char line[128], end;
	double rate, duration, warmup;

	run_stop = 0;
	int got = read_line(line, sizeof(line));
	if (got <= 0) {
		if (got < 0)
			fprintf(stderr, "cnfperf-engine: --keep: a line longer than %zu bytes\n", sizeof(line));
		return got;
	}
	if (sscanf(line, "%lf %lf %lf %c", &rate, &duration, &warmup, &end) != 3 || rate < 0 ||
	    duration < 0 || warmup < 0 || (cf->onoff && rate <= 0)) {
		fprintf(stderr, "cnfperf-engine: --keep: '%s' is not RATE DURATION WARMUP (pps, s, s; "
			"a rate above 0 with --onoff)\n", line);
		return -1;
	}
	cf->rate = rate;
	if (cf->role->generates) {
		cf->duration = duration;
		cf->warmup = warmup;
	}
	return 1;
}

int run_pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int run_init(struct run *r, const struct conf *cf, struct api *a, const struct clock *clk, bool latency)
{
	memset(r, 0, sizeof(*r));
	r->conf = cf;
	r->api = a;
	r->clk = *clk;
	r->reanchor = true;
	r->wake = UINT64_MAX;
	r->poll.epfd = -1;       /* the role sets its poller up; until then it holds nothing */
	r->t_next_anchor = clock_ticks() + clk->hz / REANCHOR_PER_S;
	drain_init(&r->drain, clock_s_to_ticks(clk, DRAIN_QUIET_MIN_S));
	r->t_next = r->t_next_anchor;
	stalls_init(&r->stalls, (uint64_t)((u128)cf->stall_us * clk->hz / 1000000u));
	if ((r->conforms = cf->conformance.given))
		conformance_init(&r->conform, cf->conformance.rate, cf->conformance.size, clk->hz);
	if (latency) {
		r->lat = malloc(sizeof(*r->lat));
		r->lat_ival = malloc(sizeof(*r->lat_ival));
		if (!r->lat || !r->lat_ival) {
			fprintf(stderr, "cnfperf-engine: out of memory for latency histograms\n");
			run_free(r);
			return -1;
		}
		hist_reset(r->lat);
		hist_reset(r->lat_ival);
	}
	return 0;
}

void run_free(struct run *r)
{
	free(r->lat);
	free(r->lat_ival);
	seq_free(r->seq);
	r->lat = r->lat_ival = NULL;
	r->seq = NULL;
}

static void schedule(struct run *r)
{
	uint64_t t = r->reanchor ? r->t_next_anchor : UINT64_MAX;

	if (r->started) {
		if (r->ival && r->t_next_ival < t)
			t = r->t_next_ival;
		if (!r->measuring && r->t_measure < t)
			t = r->t_measure;
		if (r->t_end && !r->done && r->t_end < t)
			t = r->t_end;
	}
	r->t_next = t;
}

void run_start(struct run *r, uint64_t now)
{
	const struct conf *cf = r->conf;

	r->started = true;
	r->t_start = now;
	/* Polls count from here: a receiver or NF that spun idle until the first
	 * frame would otherwise look idle however saturated it was afterwards. */
	memset(&r->poll.s, 0, sizeof(r->poll.s));
	for (unsigned i = 0; i < POLL_STREAMS; i++)
		r->poll.arr[i].n = 0;
	memset(&r->poll_more, 0, sizeof(r->poll_more));
	r->t_measure = now + clock_s_to_ticks(&r->clk, cf->warmup);
	r->measuring = cf->warmup == 0;
	r->t_end = cf->duration > 0 ? r->t_measure + clock_s_to_ticks(&r->clk, cf->duration) : 0;
	r->ival = cf->quiet || r->silent || cf->interval == 0 ? 0 : clock_s_to_ticks(&r->clk, cf->interval);
	r->t_next_ival = now + r->ival;
	r->t_last_ival = now;
	/* a generator's window is its measured seconds; a receiver's opens at
	 * its first measured frame (run_rx_window) */
	r->stalls.last = now;
	r->stalls.on = r->measuring && !r->rx_window;
	schedule(r);
}

static void latency_fields(struct json *j, const struct hist *h, bool full)
{
	bool any = h->count > 0;
	static const struct { const char *key; double p; } pct[] = {
		{ "p50_ns", 50 }, { "p90_ns", 90 }, { "p99_ns", 99 }, { "p999_ns", 99.9 }, { "p9999_ns", 99.99 },
	};

	json_u64(j, "count", h->count);
	if (any) {
		json_u64(j, "min_ns", h->min);
		json_num(j, "mean_ns", hist_mean(h), 1);
	} else {
		json_null(j, "min_ns");
		json_null(j, "mean_ns");
	}
	if (full) {
		if (any)
			json_num(j, "stddev_ns", hist_stddev(h), 1);
		else
			json_null(j, "stddev_ns");
	}
	for (unsigned i = 0; i < sizeof(pct) / sizeof(pct[0]); i++) {
		if (!full && pct[i].p != 50 && pct[i].p != 99)
			continue;
		if (any)
			json_u64(j, pct[i].key, hist_percentile(h, pct[i].p));
		else
			json_null(j, pct[i].key);
	}
	if (any)
		json_u64(j, "max_ns", h->max);
	else
		json_null(j, "max_ns");
}

static void emit_interval(struct run *r, uint64_t now)
{
	struct json j;
	const struct counters *c = &r->c, *p = &r->prev;
	double span = clock_ticks_to_s(&r->clk, now - r->t_last_ival);

	if (r->collect)
		r->collect(r);
	json_begin(&j, stdout);
	json_str(&j, "type", "interval");
	json_str(&j, "role", r->conf->role->name);
	json_num(&j, "elapsed_s", clock_ticks_to_s(&r->clk, now - r->t_start), 3);
	json_num(&j, "interval_s", span, 3);
	json_str(&j, "phase", r->measuring ? "measure" : "warmup");
	json_u64(&j, "tx_packets", c->tx_packets - p->tx_packets);
	json_u64(&j, "tx_refused", c->tx_refused - p->tx_refused);
	json_u64(&j, "rx_packets", c->rx_packets - p->rx_packets);
	json_u64(&j, "bad", c->bad - p->bad);
	json_u64(&j, "other", c->other - p->other);
	json_u64(&j, "corrupt", c->corrupt - p->corrupt);
	json_i64(&j, "lost", c->seq.lost - p->seq.lost);
	json_u64(&j, "reordered", c->seq.reordered - p->seq.reordered);
	json_u64(&j, "duplicate", c->seq.duplicate - p->seq.duplicate);
	json_u64(&j, "warmup_packets", c->warmup_packets - p->warmup_packets);
	json_num(&j, "tx_pps", span > 0 ? (double)(c->tx_packets - p->tx_packets) / span : 0, 1);
	json_num(&j, "rx_pps", span > 0 ? (double)(c->rx_packets - p->rx_packets) / span : 0, 1);
	if (r->lat_ival) {
		hist_run_flush(r->lat_ival, &r->lat_run);
		json_open(&j, "latency", '{');
		latency_fields(&j, r->lat_ival, false);
		json_close(&j, '{');
		hist_merge(r->lat, r->lat_ival);
		hist_reset(r->lat_ival);
	}
	json_end(&j);
	r->prev = *c;
	r->t_last_ival = now;
}

void run_tick(struct run *r, uint64_t now)
{
	if (r->reanchor && now >= r->t_next_anchor) {
		clock_reanchor(&r->clk);
		r->t_next_anchor = now + r->clk.hz / REANCHOR_PER_S;
	}
	if (r->started) {
		if (!r->measuring && now >= r->t_measure) {
			r->measuring = true;
			r->stalls.on = !r->rx_window;
			/* a stall across the window's start: its part in the window
			 * counts, as the pacer counts the bursts it skipped there */
			if (now - r->t_measure > r->stalls.threshold)
				stalls_add(&r->stalls, now - r->t_measure);
		}
		if (r->t_end && now >= r->t_end) {
			r->done = true;
			r->stalls.on = false;
		}
		if (r->ival && now >= r->t_next_ival) {
			emit_interval(r, now);
			r->t_next_ival += r->ival;
			if (r->t_next_ival <= now) /* after a stall: no burst of records */
				r->t_next_ival = now + r->ival;
		}
	}
	schedule(r);
}

void run_ready(const struct run *r)
{
	struct json j;
	struct timespec wall;

	json_begin(&j, stdout);
	json_str(&j, "type", "ready");
	json_str(&j, "role", r->conf->role->name);
	json_str(&j, "api", r->conf->api);
	json_str(&j, "iface", r->conf->iface);
	if (r->conf->iface2)
		json_str(&j, "iface2", r->conf->iface2);
	json_i64(&j, "pid", (int64_t)getpid());
	json_str(&j, "clock", clock_uses_tsc ? "tsc" : "clock_gettime");
	json_u64(&j, "tick_hz", r->clk.hz);
	/* the wall clock when the ports were up: the orchestrator lines it up with
	 * container creation and the first forwarded frame (nf's first_tx_wall_ns) */
	clock_gettime(CLOCK_REALTIME, &wall);
	json_u64(&j, "wall_ns", (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec);
	json_end(&j);
}

/* The wall clock as the generator's warm-up begins, after its --settle: the
 * measured window opens --warmup seconds later (the orchestrator times a
 * fault inside it by this). */
void run_started(const struct run *r)
{
	struct json j;
	struct timespec wall;

	clock_gettime(CLOCK_REALTIME, &wall);
	json_begin(&j, stdout);
	json_str(&j, "type", "start");
	json_str(&j, "role", r->conf->role->name);
	json_u64(&j, "wall_ns", (uint64_t)wall.tv_sec * 1000000000u + (uint64_t)wall.tv_nsec);
	json_num(&j, "warmup_s", r->conf->warmup, 3);
	json_end(&j);
}

static void api_counters(const struct api *a, uint64_t *rx_dropped, uint64_t *tx_errors)
{
	uint64_t d = 0, e = 0;

	if (a && a->ops->stats) {
		a->ops->stats((struct api *)a, &d, &e);
		*rx_dropped += d;
		*tx_errors += e;
	}
}

static double per_s(double n, double s)
{
	return s > 0 ? n / s : 0;
}

/* empty_polls / polls tells a loop that is CPU-bound (almost never empty)
 * from an idle one; late_ns_mean is what a sleep costs beyond what it asked. */
static void poll_fields(struct json *j, const struct run *r)
{
	struct poll_stats s = r->poll.s;

	poll_stats_add(&s, &r->poll_more);
	json_open(j, "poll", '{');
	json_str(j, "mode", poll_modes[r->conf->poll].name);
	json_u64(j, "polls", s.polls);
	json_u64(j, "empty_polls", s.empty_polls);
	json_u64(j, "sleeps", s.sleeps);
	json_num(j, "slept_s", (double)s.slept_ns / 1e9, 6);
	if (s.sleeps)
		json_num(j, "late_ns_mean", ((double)s.slept_ns - (double)s.asked_ns) / (double)s.sleeps, 1);
	else
		json_null(j, "late_ns_mean");
	json_u64(j, "waits", s.waits);
	json_num(j, "waited_s", (double)s.waited_ns / 1e9, 6);
	json_u64(j, "woken", s.woken);
	/* adaptive: the pace it followed, and how often a frame came while it
	 * was yielding (on time) rather than sleeping or waiting */
	json_u64(j, "arrivals", poller_arrivals(&r->poll));
	json_u64(j, "on_time", s.on_time);
	if (poller_gap_ns(&r->poll))
		json_u64(j, "gap_ns", poller_gap_ns(&r->poll));
	else
		json_null(j, "gap_ns");
	json_close(j, '{');
}

static uint64_t ticks_ns(const struct run *r, uint64_t ticks)
{
	return (uint64_t)((u128)ticks * 1000000000u / r->clk.hz);
}

/* What the role's polling loops lost in the window (core/stall.h): pollers
 * is how many loops are summed (a two-thread client's two) */
static void stall_fields(struct json *j, const struct run *r)
{
	const struct stalls *s = &r->stalls;

	json_open(j, "stalls", '{');
	json_u64(j, "threshold_ns", (uint64_t)r->conf->stall_us * 1000u);
	json_u64(j, "count", s->kept.count);
	json_u64(j, "total_ns", ticks_ns(r, s->kept.total));
	json_u64(j, "max_ns", ticks_ns(r, s->kept.max));
	json_u64(j, "pollers", s->pollers);
	json_close(j, '{');
}

void run_summary(struct run *r)
{
	const struct conf *cf = r->conf;
	const struct counters *c = &r->c;
	struct json j;
	double dur, rx_pps;
	uint64_t rx_dropped = 0, tx_errors = 0;

	if (r->collect)
		r->collect(r);
	if (r->lat_ival) {
		hist_run_flush(r->lat_ival, &r->lat_run);
		hist_merge(r->lat, r->lat_ival);
		hist_reset(r->lat_ival);
	}
	if (r->rx_window) {
		/* first..last measured frame; the first burst arrived at the window's
		 * start, so it is not part of the rate over the window */
		dur = clock_ticks_to_s(&r->clk, r->t_last_rx - r->t_first_rx);
		rx_pps = per_s((double)(c->rx_packets - r->first_burst), dur);
	} else {
		dur = r->measuring && r->t_stop > r->t_measure ? clock_ticks_to_s(&r->clk, r->t_stop - r->t_measure) : 0;
		rx_pps = per_s((double)c->rx_packets, dur);
	}
	/* a socket's counters are its queue's, a DPDK port's the whole port's */
	const unsigned instances = r->api && r->api->ops->stats_port ? 1 : (r->queues ? r->queues : 1);
	for (unsigned q = 0; q < instances; q++) {
		api_counters(q ? r->qapi[q][0] : r->api, &rx_dropped, &tx_errors);
		api_counters(q ? r->qapi[q][1] : r->api2, &rx_dropped, &tx_errors);
	}

	json_begin(&j, stdout);
	json_str(&j, "type", "summary");
	json_str(&j, "role", cf->role->name);
	json_str(&j, "api", cf->api);
	json_str(&j, "iface", cf->iface);
	if (cf->iface2)
		json_str(&j, "iface2", cf->iface2);
	/* receivers report the mean size they saw, senders the size they sent */
	json_u64(&j, "size", r->rx_window && c->rx_packets ? (c->rx_bytes + c->rx_packets / 2) / c->rx_packets : cf->size);
	json_u64(&j, "burst", cf->burst);
	json_u64(&j, "flows", cf->flows);
	json_num(&j, "duration_s", dur, 6);
	json_num(&j, "warmup_s", cf->warmup, 3);
	/* offered: the rate asked for (RFC 2544's offered load); tx: what left */
	if (cf->role->generates)
		json_num(&j, "offered_pps", cf->rate, 1);
	else
		json_null(&j, "offered_pps");
	json_num(&j, "tx_pps", per_s((double)c->tx_packets, dur), 1);
	json_u64(&j, "tx_packets", c->tx_packets);
	json_u64(&j, "tx_bytes", c->tx_bytes);
	json_num(&j, "tx_bps", per_s((double)c->tx_bytes * 8, dur), 1);
	json_u64(&j, "tx_refused", c->tx_refused);
	json_u64(&j, "tx_skipped", c->tx_skipped);
	json_u64(&j, "rx_packets", c->rx_packets);
	json_u64(&j, "rx_bytes", c->rx_bytes);
	json_num(&j, "rx_pps", rx_pps, 1);
	json_num(&j, "rx_bps", c->rx_packets ? rx_pps * (double)c->rx_bytes * 8 / (double)c->rx_packets : 0, 1);
	json_u64(&j, "bad", c->bad);
	json_u64(&j, "other", c->other);
	json_u64(&j, "corrupt", c->corrupt);
	json_i64(&j, "lost", c->seq.lost);
	json_u64(&j, "reordered", c->seq.reordered);
	json_u64(&j, "duplicate", c->seq.duplicate);
	json_u64(&j, "warmup_packets", c->warmup_packets);
	if (cf->role->generates)
		json_u64(&j, "warmup_tx_packets", c->warmup_tx_packets);
	json_u64(&j, "flows_seen", r->seq ? r->seq->nflows : 0);
	/* the longest gap in time (seq.h), null where no sequence is tracked */
	if (r->seq && c->seq.outage_lost) {
		json_u64(&j, "outage_ns", c->seq.outage_ns);
		json_u64(&j, "outage_lost", c->seq.outage_lost);
		json_u64(&j, "outage_from_ns", c->seq.outage_from_ns);
	} else if (r->seq) {
		json_u64(&j, "outage_ns", 0);
		json_u64(&j, "outage_lost", 0);
		json_null(&j, "outage_from_ns");
	} else {
		json_null(&j, "outage_ns");
		json_null(&j, "outage_lost");
		json_null(&j, "outage_from_ns");
	}
	json_u64(&j, "api_rx_dropped", rx_dropped);
	json_u64(&j, "api_tx_errors", tx_errors);
	poll_fields(&j, r);
	stall_fields(&j, r);
	if (r->summary_more)
		r->summary_more(r, &j);
	if (r->conforms) {
		const struct conformance *k = &r->conform;
		json_open(&j, "conformance", '{');
		json_num(&j, "rate_pps", k->rate, 1);
		json_u64(&j, "bucket", k->size);
		json_u64(&j, "frames", k->frames);
		if (k->frames)
			json_num(&j, "sigma", k->sigma, 3);
		else
			json_null(&j, "sigma");
		json_u64(&j, "exceeded", k->exceeded);
		json_close(&j, '{');
	}
	if (r->lat) {
		char item[80];
		json_open(&j, "latency", '{');
		json_str(&j, "kind", r->lat_kind);
		latency_fields(&j, r->lat, true);
		json_open(&j, "histogram", '[');
		for (unsigned i = 0; i < HIST_BUCKETS; i++) {
			uint64_t lo, hi;
			if (!r->lat->bucket[i])
				continue;
			hist_bounds(i, &lo, &hi);
			snprintf(item, sizeof(item), "[%llu, %llu, %llu]", (unsigned long long)lo,
				 (unsigned long long)hi, (unsigned long long)r->lat->bucket[i]);
			json_raw_item(&j, item);
		}
		json_close(&j, '[');
		json_close(&j, '{');
	}
	json_end(&j);
}
