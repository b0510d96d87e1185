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

#endif
