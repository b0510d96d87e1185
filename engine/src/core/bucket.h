/* Token buckets: the policer and the shaper an nf applies before it forwards
 * (--policer, --shaper), and the conformance a receiver measures of what it
 * got (--conformance). Pure arithmetic on ticks, no api calls: unit-tested
 * with made-up times (tests/test_bucket.c).
 *
 * A bucket of `bucket` frames filled at `rate` frames per second, full at the
 * start: a frame conforms when a token is there, and takes it. Kept as the
 * equivalent GCRA (ITU-T I.371's virtual scheduling): `tat`, the time at which
 * the bucket would be full again, moves on by one frame's cost (hz / rate
 * ticks, its fraction carried in 32.32 fixed point as the pacer's) per frame
 * taken; a frame at tick t conforms when tat <= t + tolerance, the tolerance
 * being (bucket - 1) frames' cost. One compare per frame, no division.
 *
 * Frames of one rx burst share the tick the loop read once for the burst (no
 * frame has a time of its own), so a burst is met by the tokens there were
 * when it was seen. */
#ifndef CNFPERF_BUCKET_H
#define CNFPERF_BUCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bucket {
	uint64_t period;     /* one frame's cost in ticks, integer part */
	uint32_t frac;       /* its fraction, 1/2^32 ticks */
	uint32_t frac_acc;
	uint64_t tolerance;  /* (bucket - 1) frames' cost */
	uint64_t tat;        /* when the bucket is full again; 0 = full from the start */
};

/* rate > 0 frames per second, size >= 1 frames, hz ticks per second. */
void bucket_init(struct bucket *b, double rate, unsigned size, uint64_t hz);

/* Whether a frame at tick `now` finds a token. */
static inline bool bucket_conforms(const struct bucket *b, uint64_t now)
{
	return b->tat <= now + b->tolerance;
}

/* Takes a token for a frame at tick `now` (that conforms). */
static inline void bucket_take(struct bucket *b, uint64_t now)
{
	if (b->tat < now) {          /* the bucket was full: the debt starts now */
		b->tat = now;
		b->frac_acc = 0;
	}
	uint64_t acc = (uint64_t)b->frac_acc + b->frac;
	b->tat += b->period + (acc >> 32);
	b->frac_acc = (uint32_t)acc;
}

/* How many of n frames at tick `now` find a token (each takes one): a policer
 * passes them, and drops the rest. */
static inline unsigned bucket_pass(struct bucket *b, uint64_t now, unsigned n)
{
	unsigned k = 0;

	while (k < n && bucket_conforms(b, now)) {
		bucket_take(b, now);
		k++;
	}
	return k;
}

/* The tick at which the next frame finds a token (now or earlier: one does). */
static inline uint64_t bucket_due(const struct bucket *b)
{
	return b->tat > b->tolerance ? b->tat - b->tolerance : 0;
}

/* A receiver's view of what it got against a contract (rate, bucket): `sigma`,
 * the smallest bucket the stream conforms to at that rate (the most a bucket
 * drained at the rate ever held: q = max(0, q - rate * dt) + frames, online),
 * and `exceeded`, the frames a policer of the contract would have dropped (its
 * bucket as above). Per rx burst of measured frames. */
struct conformance {
	double rate, per_tick;      /* frames per second, per tick */
	unsigned size;              /* the contract's bucket */
	struct bucket b;
	double q, sigma;
	uint64_t last, frames, exceeded;
	bool seen;
};

void conformance_init(struct conformance *c, double rate, unsigned size, uint64_t hz);
void conformance_add(struct conformance *c, uint64_t now, unsigned frames);

/* The shaper's queue of one egress port: frames copied in as they come (a
 * frame of any api waits in a buffer of ours, so no api's ring is held), out
 * as tokens allow. Slots are fixed-size; a frame larger than a slot is dropped
 * as one beyond the queue would be. */
struct shaper {
	struct bucket b;
	unsigned cap, head, n;      /* ring of cap slots */
	unsigned slot;              /* bytes per slot */
	uint8_t *data;              /* cap * slot bytes */
	uint16_t *len;
	uint64_t *since;            /* tick each frame came in */
	uint64_t delayed, dropped, delay_max;   /* frames that waited; turned away; the longest wait */
};

/* 0, or -1 (out of memory). */
int shaper_init(struct shaper *s, double rate, unsigned bucket, unsigned queue, unsigned slot, uint64_t hz);
void shaper_free(struct shaper *s);

/* A frame into the queue at tick now; false when it is full (the frame is
 * dropped, counted). A frame that finds the queue empty and a token goes
 * straight through the queue on the next shaper_out() of the same tick. */
bool shaper_in(struct shaper *s, const uint8_t *frame, uint16_t len, uint64_t now);

/* The frames that may leave at tick now, at most max, oldest first: their
 * count; shaper_peek(s, i) is the i-th of them. shaper_done(s, k, now) takes
 * the first k out (they left: each takes its token, a frame that waited
 * counts as delayed). */
unsigned shaper_ready(const struct shaper *s, uint64_t now, unsigned max);
static inline const uint8_t *shaper_peek(const struct shaper *s, unsigned i, uint16_t *len)
{
	unsigned at = (s->head + i) % s->cap;

	*len = s->len[at];
	return s->data + (size_t)at * s->slot;
}
void shaper_done(struct shaper *s, unsigned k, uint64_t now);

/* The tick at which the head frame may leave; UINT64_MAX with none queued. */
static inline uint64_t shaper_due(const struct shaper *s)
{
	return s->n ? bucket_due(&s->b) : UINT64_MAX;
}

#endif
