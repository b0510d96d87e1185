#include "pacer.h"

#include <math.h>
#include <string.h>

void pacer_init(struct pacer *p, double rate_pps, unsigned burst, uint64_t hz, uint64_t now)
{
	memset(p, 0, sizeof(*p));
	if (rate_pps <= 0) {
		p->unpaced = true;
		return;
	}
	double period = (double)burst * (double)hz / rate_pps;
	double whole = floor(period);

	p->period = (uint64_t)whole;
	p->frac = (uint32_t)((period - whole) * 4294967296.0);
	p->next = now;
	p->max_lag = (uint64_t)(period * PACER_CATCHUP);
}

void pacer_forgive(struct pacer *p, uint64_t now)
{
	uint64_t upto = now - p->max_lag;   /* bursts due before this are dropped */
	uint64_t first = p->next > p->from ? p->next : p->from;

	if (p->period && upto > first)
		p->forgiven += (upto - first) / p->period;
	p->next = upto;
}

void pacer_count_from(struct pacer *p, uint64_t from)
{
	p->from = from;
}

uint64_t pacer_owed(const struct pacer *p, uint64_t end)
{
	uint64_t first = p->next > p->from ? p->next : p->from;

	if (p->unpaced || !p->period || end <= first)
		return 0;
	return (end - first) / p->period;
}
