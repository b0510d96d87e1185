#include "seq.h"

#include <stdlib.h>
#include <string.h>

struct seq_tracker *seq_new(void)
{
	struct seq_tracker *t = calloc(1, sizeof(*t));

	if (t && !(t->flows = calloc(SEQ_MAX_FLOWS, sizeof(*t->flows)))) {
		free(t);
		return NULL;
	}
	return t;
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

static inline void mark(struct flow_seq *f, uint64_t s)
{
	f->seen[(s / 64) % (SEQ_WINDOW / 64)] |= UINT64_C(1) << (s % 64);
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

bool seq_track(struct seq_tracker *t, uint16_t key, uint64_t s, uint64_t ts, bool count,
	       uint64_t now_ns, struct seq_counts *c)
{
	unsigned slot = t->slot[key];
	struct flow_seq *f;

	if (ts > now_ns + SEQ_FUTURE_NS)
		return false;
	if (__builtin_expect(!slot, 0)) {
		if (s > now_ns + SEQ_FRAME_SLACK)
			return false;
		if (t->nflows == SEQ_MAX_FLOWS) {
			t->untracked++;
			return true;
		}
		slot = t->slot[key] = (uint16_t)++t->nflows;
		f = &t->flows[slot - 1];
		f->next = s;
		f->head_ts = ts;
	}
	f = &t->flows[slot - 1];

	if (__builtin_expect(s == f->next, 1)) {
		if (!fits(1, f->head_ts, ts))
			return false;
		if (count && !f->counting)
			start_counting(f, s);
		mark(f, s);
		f->next++;
		f->head_ts = ts;
		return true;
	}
	if (s > f->next) {
		uint64_t gap = s - f->next;
		if (!fits(gap + 1, f->head_ts, ts))
			return false;
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
			}
		}
		mark(f, s);
		f->next = s + 1;
		f->head_ts = ts;
		return true;
	}
	/* late: s < next */
	if (!fits(f->next - 1 - s, ts, f->head_ts))
		return false;
	if (count && !f->counting)
		start_counting(f, s);
	bool in_window = f->next - s <= SEQ_WINDOW;
	if (in_window && seen(f, s)) {
		if (count)
			c->duplicate++;
		return true;
	}
	if (in_window)
		mark(f, s);
	if (count)
		c->reordered++;
	if (f->counting && s >= f->count_from && f->lost) {
		f->lost--;
		c->lost--;
	}
	return true;
}
