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
	uint64_t debt = now - p->next - p->max_lag;

	if (p->period)
		p->forgiven += debt / p->period;
	p->next = now - p->max_lag;
}
