#include "bucket.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void bucket_init(struct bucket *b, double rate, unsigned size, uint64_t hz)
{
	double cost = (double)hz / rate, whole = floor(cost);

	memset(b, 0, sizeof(*b));
	b->period = (uint64_t)whole;
	b->frac = (uint32_t)((cost - whole) * 4294967296.0);
	b->tolerance = (uint64_t)(cost * (double)(size - 1));
}

void conformance_init(struct conformance *c, double rate, unsigned size, uint64_t hz)
{
	memset(c, 0, sizeof(*c));
	c->rate = rate;
	c->per_tick = rate / (double)hz;
	c->size = size;
	bucket_init(&c->b, rate, size, hz);
}

void conformance_add(struct conformance *c, uint64_t now, unsigned frames)
{
	if (!frames)
		return;
	if (c->seen) {
		c->q -= (double)(now - c->last) * c->per_tick;
		if (c->q < 0)
			c->q = 0;
	}
	c->seen = true;
	c->last = now;
	c->q += frames;
	if (c->q > c->sigma)
		c->sigma = c->q;
	c->frames += frames;
	c->exceeded += frames - bucket_pass(&c->b, now, frames);
}

int shaper_init(struct shaper *s, double rate, unsigned bucket, unsigned queue, unsigned slot, uint64_t hz)
{
	memset(s, 0, sizeof(*s));
	bucket_init(&s->b, rate, bucket, hz);
	s->cap = queue;
	s->slot = slot;
	/* calloc: pages are touched only as the queue grows into them */
	s->data = calloc(queue, slot);
	s->len = calloc(queue, sizeof(*s->len));
	s->since = calloc(queue, sizeof(*s->since));
	if (!s->data || !s->len || !s->since) {
		shaper_free(s);
		return -1;
	}
	return 0;
}

void shaper_free(struct shaper *s)
{
	free(s->data);
	free(s->len);
	free(s->since);
	s->data = NULL;
	s->len = NULL;
	s->since = NULL;
}

bool shaper_in(struct shaper *s, const uint8_t *frame, uint16_t len, uint64_t now)
{
	if (s->n == s->cap || len > s->slot) {
		s->dropped++;
		return false;
	}
	unsigned at = (s->head + s->n) % s->cap;
	memcpy(s->data + (size_t)at * s->slot, frame, len);
	s->len[at] = len;
	s->since[at] = now;
	s->n++;
	return true;
}

unsigned shaper_ready(const struct shaper *s, uint64_t now, unsigned max)
{
	struct bucket b = s->b;

	return bucket_pass(&b, now, s->n < max ? s->n : max);
}

void shaper_done(struct shaper *s, unsigned k, uint64_t now)
{
	for (unsigned i = 0; i < k; i++) {
		uint64_t since = s->since[s->head];
		if (now > since) {
			s->delayed++;
			if (now - since > s->delay_max)
				s->delay_max = now - since;
		}
		bucket_take(&s->b, now);
		s->head = (s->head + 1) % s->cap;
		s->n--;
	}
}
