/* What every receiving role does with a frame it took in, written once:
 * classify it (count it as other or bad if it is not ours), and, for roles
 * that measure (recv, the client's echoes), track its sequence, tell warm-up
 * from measured, count it, check its payload and take its latency. Inline:
 * this is the per-packet hot path. */
#ifndef CNFPERF_RX_H
#define CNFPERF_RX_H

#include "hist.h"
#include "packet.h"
#include "run.h"
#include "seq.h"

#include <limits.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The headers of the last frame of ours that rx_classify() took whole:
 * Ethernet, IPv4, UDP and the payload's magic, RX_HEAD bytes. A sender
 * writes them once per flow, so almost every frame repeats them byte for
 * byte, and a frame that does is ours for the same reasons (classify reads
 * nothing else but the frame's length, held to `need`): three 16-byte
 * compares, not the header's fields one by one and its checksum summed. */
#define RX_HEAD (OFF_SEQ)
#define RX_PREFETCH 4             /* frames ahead a receiving loop prefetches */

struct rx_known {
	uint8_t head[RX_HEAD];
	unsigned need;            /* bytes the frame must have: its IP packet, at least FRAME_MIN_LEN */
};

static inline void rx_known_init(struct rx_known *k)
{
	k->need = UINT_MAX;       /* matches no frame */
}

static inline bool rx_known_same(const struct rx_known *k, const uint8_t *d, unsigned len)
{
	if (len < k->need)
		return false;
#ifdef __SSE2__
	/* bytes 0-15, 16-31 and 28-43 (RX_HEAD is 44: the last load overlaps) */
	__m128i a = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)d),
				   _mm_loadu_si128((const __m128i *)k->head));
	__m128i b = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(d + 16)),
				   _mm_loadu_si128((const __m128i *)(k->head + 16)));
	__m128i e = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(d + RX_HEAD - 16)),
				   _mm_loadu_si128((const __m128i *)(k->head + RX_HEAD - 16)));
	return _mm_movemask_epi8(_mm_and_si128(_mm_and_si128(a, b), e)) == 0xffff;
#else
	return memcmp(d, k->head, RX_HEAD) == 0;
#endif
}

/* RX_OURS, or the class the frame was counted under. */
static inline enum rx_class rx_classify(struct counters *c, const uint8_t *d, unsigned len,
					const struct rx_filter *f)
{
	enum rx_class cls = frame_classify(d, len, f);

	if (cls == RX_OTHER)
		c->other++;
	else if (cls == RX_BAD)
		c->bad++;
	return cls;
}

/* rx_classify(), and a frame of ours becomes the known one. */
static inline enum rx_class rx_classify_known(struct counters *c, const uint8_t *d, unsigned len,
					      const struct rx_filter *f, struct rx_known *k)
{
	enum rx_class cls = rx_classify(c, d, len, f);

	if (cls == RX_OURS) {
		unsigned need = OFF_IP + rd16(d + OFF_IP_LEN);
		memcpy(k->head, d, RX_HEAD);
		k->need = need < FRAME_MIN_LEN ? FRAME_MIN_LEN : need;
	}
	return cls;
}

/* One frame of ours. `flow` keys its sequence (the sender's port, or ours
 * for echoes); `warm` says the role is still warming up on its side, besides
 * what the sender marked. `other_clock` (--clock other, a constant where it
 * is called: the receiver's loop is built with and without it) moves the
 * sender's timestamp onto our clock and takes no latency (seq.h). True when
 * the frame was measured. */
static inline bool rx_measure(struct run *r, const uint8_t *d, uint16_t flow, bool warm,
			      uint64_t now_ns, bool other_clock)
{
	struct counters *c = &r->c;
	uint64_t seq = rd64(d + OFF_SEQ), ts = rd64(d + OFF_TS);

	if (other_clock)
		ts = seq_shift(r->seq, ts, now_ns);
	warm |= (seq & SEQ_WARMUP) != 0;
	seq &= ~SEQ_WARMUP;
	if (!seq_track(r->seq, flow, seq, ts, !warm, now_ns, &c->seq)) {
		c->bad++;          /* a frame no sender of ours could have sent */
		return false;
	}
	if (warm) {
		c->warmup_packets++;
		return false;
	}
	unsigned flen = OFF_IP + rd16(d + OFF_IP_LEN);
	c->rx_packets++;
	c->rx_bytes += wire_bytes(flen);
	if (r->conf->touch && !frame_touch_ok(d, flen, seq))
		c->corrupt++;
	if (!other_clock)
		hist_run_add(r->lat_ival, &r->lat_run, now_ns > ts ? now_ns - ts : 0);
	return true;
}

/* rx_measure() for n frames in a row that repeat the known headers (so of
 * one flow, `flow`, and one length): while each is the next number of its
 * flow, they are taken with the flow's state in registers and counted
 * together; the first that is not, and those after it, one by one. What it
 * counts is exactly what rx_measure() on each would. How many were measured. */
static inline unsigned rx_measure_known(struct run *r, const struct rx_known *k, const struct pkt *pkts,
					unsigned n, uint16_t flow, bool warm, uint64_t now_ns, bool other_clock)
{
	struct counters *c = &r->c;
	struct seq_run q;
	unsigned i = 0, measured = 0;

	if (!r->conf->touch && seq_run_begin(&q, r->seq, flow, now_ns)) {
		struct hist_run lat = r->lat_run;   /* in registers while the run lasts */
		for (; i < n; i++) {
			const uint8_t *d = pkts[i].data;
			uint64_t seq = rd64(d + OFF_SEQ), ts = rd64(d + OFF_TS);
			bool w = warm || (seq & SEQ_WARMUP) != 0;

			if (other_clock)
				ts = seq_shift(r->seq, ts, now_ns);
			if (!seq_run_take(&q, seq & ~SEQ_WARMUP, ts, !w))
				break;
			if (w)
				continue;
			measured++;
			if (!other_clock)
				hist_run_add(r->lat_ival, &lat, now_ns > ts ? now_ns - ts : 0);
		}
		r->lat_run = lat;
		seq_run_end(&q);
		c->warmup_packets += i - measured;
		c->rx_packets += measured;
		c->rx_bytes += (uint64_t)measured * wire_bytes(k->need);   /* the same below 60 bytes: 64 */
	}
	for (; i < n; i++)
		measured += rx_measure(r, pkts[i].data, flow, warm, now_ns, other_clock);
	return measured;
}

/* A burst of n frames, classified and measured: the frames that repeat the
 * known headers taken together (rx_measure_known()), the others one by one
 * (a frame of ours among them becomes the known one). A frame's flow is the
 * port at flow_off; `warm` and other_clock as for rx_measure(). A frame's
 * headers are prefetched while its predecessors are checked (a NIC's or
 * memif's frames are in no cache: nothing has read them yet). How many
 * frames were measured. */
static inline __attribute__((always_inline)) unsigned
rx_measure_burst(struct run *r, struct rx_known *k, const struct pkt *pkts, unsigned n, const struct rx_filter *f,
		 unsigned flow_off, bool warm, uint64_t now_ns, bool other_clock)
{
	unsigned measured = 0;

	for (unsigned i = 0; i < n;) {
		unsigned j = i;
		for (; j < n && rx_known_same(k, pkts[j].data, pkts[j].len); j++)
			if (j + RX_PREFETCH < n)
				__builtin_prefetch(pkts[j + RX_PREFETCH].data);
		if (j > i) {
			measured += rx_measure_known(r, k, pkts + i, j - i, rd16(k->head + flow_off), warm, now_ns,
						     other_clock);
			i = j;
			continue;
		}
		const uint8_t *d = pkts[i].data;
		if (i + RX_PREFETCH < n)
			__builtin_prefetch(pkts[i + RX_PREFETCH].data);
		if (rx_classify_known(&r->c, d, pkts[i].len, f, k) == RX_OURS)
			measured += rx_measure(r, d, rd16(d + flow_off), warm, now_ns, other_clock);
		i++;
	}
	return measured;
}

#endif
