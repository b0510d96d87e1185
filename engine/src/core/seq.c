#include "seq.h"

#include <stdlib.h>
#include <string.h>

/* A flow's next number before its first frame: no sequence number is this
 * large (bit 63 is the warm-up mark, taken off before). */
#define UNANCHORED UINT64_MAX

struct seq_tracker *seq_new(uint64_t start_ns)
{
	struct seq_tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (!(t->flows = calloc(SEQ_MAX_FLOWS, sizeof(*t->flows)))) {
		free(t);
		return NULL;
	}
	t->start_ns = start_ns;
	return t;
}

void seq_reshift(struct seq_tracker *t, uint64_t shift)
{
	uint64_t quicker = t->shift - shift;

	if (quicker > SEQ_QUEUED_NS)
		return;
	for (unsigned i = 0; i < t->nflows; i++) {
		t->flows[i].head_ts -= quicker;
		t->flows[i].run_ts -= quicker;
	}
	t->shift = shift;
}

void seq_free(struct seq_tracker *t)
{
	if (t)
		free(t->flows);
	free(t);
}

static inline bool seen(const struct flow_seq *f, uint64_t s)
{
	return f->seen[(s / 64) % (SEQ_WINDOW / 64)] >> (s % 64) & 1;
}

static inline void unmark(struct flow_seq *f, uint64_t s)
{
	f->seen[(s / 64) % (SEQ_WINDOW / 64)] &= ~(UINT64_C(1) << (s % 64));
}

static void start_counting(struct flow_seq *f, uint64_t s)
{
	f->counting = true;
	f->count_from = s >= f->next ? s : f->next;
}

/* Whether `frames` numbers fit into the nanoseconds from `from` to `to` (two
 * plausible timestamps: their difference fits an int64), plus the slack. */
static inline bool fits(uint64_t frames, uint64_t from, uint64_t to)
{
	int64_t room = (int64_t)(to - from) + SEQ_FRAME_SLACK;

	return room >= 0 && frames <= (uint64_t)room;
}

/* The flow from frame s on, as if s were its first: in order next. */
static void anchor(struct flow_seq *f, uint64_t s, uint64_t ts)
{
	f->next = s;
	f->head_ts = ts;
	memset(f->seen, 0, sizeof(f->seen));
}

/* A frame outside the bounds: false, unless it completes a run of SEQ_RUN
 * (seq.h): then the flow starts again from it, and the caller takes it in
 * order. */
static bool refuse(struct flow_seq *f, uint64_t s, uint64_t ts, struct seq_counts *c)
{
	if (f->run_len && s == f->run_next && ts >= f->run_ts)
		f->run_len++;
	else
		f->run_len = 1;
	f->run_next = s + 1;
	f->run_ts = ts;
	if (f->run_len < SEQ_RUN)
		return false;
	f->run_len = 0;
	c->lost -= (int64_t)f->lost;   /* gaps against an anchor the flow left */
	f->lost = 0;
	anchor(f, s, ts);
	if (f->counting)
		f->count_from = s;
	return true;
}

/* Frame s in order: the flow's new head. */
static inline void take(struct flow_seq *f, uint64_t s, uint64_t ts, bool count)
{
	if (count && !f->counting)
		start_counting(f, s);
	seq_mark(f, s);
	f->next = s + 1;
	f->head_ts = ts;
	f->run_len = 0;
}

/* A counted gap of `lost` frames between the head (stamped head_ts) and a
 * frame stamped ts: the outage when it is the longest yet (seq.h). */
static void gap_time(struct seq_counts *c, uint64_t lost, uint64_t head_ts, uint64_t ts)
{
	if (ts <= head_ts)
		return;
	uint64_t span = ts - head_ts, outage = span - span / (lost + 1);
	if (outage > c->outage_ns) {
		c->outage_ns = outage;
		c->outage_lost = lost;
		c->outage_from_ns = head_ts;
	}
}

/* Everything but the next number sent about when the head was (seq_track). */
static bool __attribute__((noinline)) track_slow(struct seq_tracker *t, struct flow_seq *f, uint64_t s,
						 uint64_t ts, bool count, uint64_t now_ns,
						 struct seq_counts *c)
{
	/* ts > now + future, or ts < start - past (ts + past cannot wrap: it is
	 * not in the future) */
	if (ts > now_ns + SEQ_FUTURE_NS || ts + SEQ_PAST_NS < t->start_ns)
		return false;
	if (f->next == UNANCHORED) {
		if (!fits(s, t->start_ns, ts > t->start_ns ? ts : t->start_ns) && !refuse(f, s, ts, c))
			return false;
		anchor(f, s, ts);
		take(f, s, ts, count);
		return true;
	}
	if (s == f->next) {          /* sent long before the head */
		if (!refuse(f, s, ts, c))
			return false;
		take(f, s, ts, count);
		return true;
	}
	if (s > f->next) {
		uint64_t gap = s - f->next;
		if (!fits(gap + 1, f->head_ts, ts)) {
			if (!refuse(f, s, ts, c))
				return false;
			take(f, s, ts, count);
			return true;
		}
		if (count && !f->counting)
			start_counting(f, s);
		if (gap >= SEQ_WINDOW)
			memset(f->seen, 0, sizeof(f->seen));
		else
			for (uint64_t m = f->next; m < s; m++)
				unmark(f, m);
		if (count) {
			uint64_t from = f->next > f->count_from ? f->next : f->count_from;
			if (s > from) {
				f->lost += s - from;
				c->lost += (int64_t)(s - from);
				gap_time(c, s - f->next, f->head_ts, ts);
			}
		}
		take(f, s, ts, count);
		return true;
	}
	/* late: s < next */
	if (!fits(f->next - 1 - s, ts, f->head_ts)) {
		if (!refuse(f, s, ts, c))
			return false;
		take(f, s, ts, count);
		return true;
	}
	f->run_len = 0;
	if (count && !f->counting)
		start_counting(f, s);
	bool in_window = f->next - s <= SEQ_WINDOW;
	if (in_window && seen(f, s)) {
		if (count)
			c->duplicate++;
		return true;
	}
	if (in_window)
		seq_mark(f, s);
	if (count)
		c->reordered++;
	if (f->counting && s >= f->count_from && f->lost) {
		f->lost--;
		c->lost--;
	}
	return true;
}

bool seq_track_slow(struct seq_tracker *t, uint16_t key, uint64_t s, uint64_t ts, bool count,
		    uint64_t now_ns, struct seq_counts *c)
{
	unsigned slot = t->slot[key];

	if (__builtin_expect(!slot, 0)) {
		if (t->nflows == SEQ_MAX_FLOWS) {
			t->untracked++;
			return true;
		}
		slot = t->slot[key] = (uint16_t)++t->nflows;
		t->flows[slot - 1].next = UNANCHORED;
	}
	struct flow_seq *f = &t->flows[slot - 1];
	/* seq_track()'s inline case, and a flow's first counted frame in order:
	 * the next number (never UNANCHORED), sent no earlier than the slack
	 * before the head and not in the future (lo <= hi: seq.h). */
	uint64_t lo = f->head_ts - (SEQ_FRAME_SLACK - 1), hi = now_ns + SEQ_FUTURE_NS;
	if (__builtin_expect(s == f->next && ts - lo <= hi - lo, 1)) {
		take(f, s, ts, count);
		return true;
	}
	return track_slow(t, f, s, ts, count, now_ns, c);
}
