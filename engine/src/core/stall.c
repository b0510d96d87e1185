#include "stall.h"

#include <string.h>

void stalls_init(struct stalls *s, uint64_t threshold_ticks)
{
	memset(s, 0, sizeof(*s));
	s->threshold = threshold_ticks;
	s->pollers = 1;
}

void stalls_add(struct stalls *s, uint64_t gap)
{
	if (!s->on)
		return;
	s->live.count++;
	s->live.total += gap;
	if (gap > s->live.max)
		s->live.max = gap;
}

void stalls_merge(struct stalls *to, const struct stalls *from)
{
	to->kept.count += from->kept.count;
	to->kept.total += from->kept.total;
	if (from->kept.max > to->kept.max)
		to->kept.max = from->kept.max;
	to->pollers += from->pollers;
}
