#include "arrivals.h"

#include <string.h>

void arrivals_init(struct arrivals *a, uint64_t hz, double rate)
{
	memset(a, 0, sizeof(*a));
	a->pause = (uint64_t)((double)ARRIVALS_PAUSE_NS * (double)hz / 1e9);
	if (rate > 0) {
		a->known = (uint64_t)((double)hz / rate);
		a->gap = a->known;
		a->dev = a->known / 4;
	}
}
