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

bool seq_track(struct seq_tracker *t, uint16_t key, uint64_t s, bool count, uint64_t now_ns,
	       struct seq_counts *c)
{
	unsigned slot = t->slot[key];
	struct flow_seq *f;

	if (__builtin_expect(!slot, 0)) {
		if (s > now_ns + SEQ_SLACK)
			return false;
		if (t->nflows == SEQ_MAX_FLOWS) {
			t->untracked++;
			return true;
		}
		slot = t->slot[key] = (uint16_t)++t->nflows;
		f = &t->flows[slot - 1];
		f->next = s;
		f->head_ns = now_ns;
	}
	f = &t->flows[slot - 1];

	if (__builtin_expect(s == f->next, 1)) {
		if (count && !f->counting)
			start_counting(f, s);
		mark(f, s);
		f->next++;
		f->head_ns = now_ns;
		return true;
	}
	if (s > f->next) {
		uint64_t gap = s - f->next;
		uint64_t since = now_ns > f->head_ns ? now_ns - f->head_ns : 0;
		if (gap > since + SEQ_SLACK)
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
		f->head_ns = now_ns;
		return true;
	}
	/* late: s < next */
	if (f->next - s > SEQ_SLACK)
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
