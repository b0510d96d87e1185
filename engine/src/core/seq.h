/* Per-flow sequence tracking: loss, reordering and duplicates.
 *
 * A flow is keyed by a UDP port (the sender's source port for recv, our own
 * port for the echoes a client gets back). Each flow remembers the next
 * expected sequence number and which of the last SEQ_WINDOW numbers arrived:
 *  - seq == next: in order;
 *  - seq >  next: the numbers skipped are counted lost (for now);
 *  - seq <  next: within the window and not seen: reordered, and one less lost;
 *                 seen: duplicate; older than the window: reordered (cannot
 *                 tell it from a duplicate).
 * Loss at the tail of a run (nothing arrives after it) is invisible here: the
 * orchestrator compares the sender's tx with the receiver's rx for that.
 *
 * Warm-up packets (count == false) keep the state continuous without being
 * counted; gaps are counted only from the first counted packet on.
 *
 * Counts are bounded by what the frame's own sender could have sent. Its
 * timestamp says when it left (the sender's CLOCK_MONOTONIC, the receiver's
 * too: sender and receiver share a host), and no sender sends more than one
 * frame per nanosecond (a 400 GbE link carries 595 Mpps of 64-byte frames).
 * A sender stamps a burst (at most 1024 frames) once, and takes back the
 * numbers of frames its api refused, so a flow's numbers and timestamps rise
 * together. A frame is `bad` (seq_track() returns false, the flow is left as
 * it was) when:
 *  - its timestamp is in the receiver's future (by more than SEQ_FUTURE_NS)
 *    or before the tracker started (by more than SEQ_PAST_NS);
 *  - it is ahead of the flow's head (the frame at next - 1) by more frames
 *    than nanoseconds passed between the two timestamps, plus
 *    SEQ_FRAME_SLACK (a few bursts); or behind it by more than the
 *    nanoseconds from its timestamp to the head's, plus the same slack;
 *  - it is a flow's first, and its number is above the nanoseconds from the
 *    tracker's start (before the receiver opened its ports) to its timestamp
 *    (none for a frame sent before), plus the slack: a sender numbers from 0,
 *    and cnfperf starts its receivers before their senders.
 * So one frame with a stray number (a random 62-bit value, one bit flipped)
 * costs one bad frame, not billions lost and every later frame reordered,
 * and a stray first frame does not anchor its flow.
 *
 * Those bounds can refuse real frames: a receiver started after its sender
 * (numbers too high for a first frame), a flow anchored by a stray that got
 * through. Refused frames that form a run of their own, SEQ_RUN consecutive
 * numbers with timestamps that do not go back, re-anchor the flow at the
 * run's last frame: the run's first SEQ_RUN - 1 frames stay counted bad, the
 * old anchor's missing frames are no longer counted lost, and the flow goes
 * on from there. That costs a real flow SEQ_RUN - 1 bad frames once, and a
 * stream of stray frames would need consecutive numbers to get in.
 *
 * A sender on another host stamps its frames with its own host's clock, whose
 * CLOCK_MONOTONIC (time since that host booted) has nothing to do with ours:
 * every frame would be bad. A receiver told so (--clock other) moves each
 * timestamp onto its own clock by the offset the first frame gave, as if that
 * frame took no time to arrive (seq_shift()), and checks the bounds above on
 * the moved timestamps. They hold as they do on one clock. A frame that
 * arrives more than SEQ_QUICKER_NS quicker than any before it (the first one
 * waited in a queue: an emulated NIC's, a busy host's) gives the offset from
 * then on, as the first did, and every flow's timestamps move with it
 * (seq_reshift()); one quicker by more than SEQ_QUEUED_NS is refused, as a
 * stray. The two clocks' drift (NTP slews by at most 500 ppm: 5 ms in 10 s)
 * moves it likewise, once in a while.
 * A moved timestamp says nothing of how long a frame took: such a receiver
 * measures no one-way latency.
 *
 * The outage: of every counted gap (a jump ahead past numbers never seen),
 * the longest in time, by the sender's stamps: the time from the last frame
 * before it (the head) to the first after it, less one frame interval (the
 * gap's own, span / (frames lost + 1): the pacer's interval when the sender
 * paces one frame at a time), and the frames lost in it. A link cut for T
 * seconds loses the frames sent in those T seconds: the outage is T, to a
 * frame interval (to a burst's time with bursts of several frames: a burst
 * is stamped once). A late frame that lands in that gap later does not
 * shorten it (a cut link reorders nothing); loss at the end of a run, with
 * nothing after it, is no gap (seq.h above). */
#ifndef CNFPERF_SEQ_H
#define CNFPERF_SEQ_H

#include <stdbool.h>
#include <stdint.h>

#define SEQ_WINDOW 1024
#define SEQ_MAX_FLOWS 4096
#define SEQ_FRAME_SLACK 4096                         /* frames: four bursts of the largest */
#define SEQ_FUTURE_NS (UINT64_C(10) * 1000000)       /* two engines' clocks agree to ~0.1 us */
#define SEQ_PAST_NS (UINT64_C(1000) * 1000000)       /* frames queued before the start */
#define SEQ_QUICKER_NS (SEQ_FUTURE_NS / 2)           /* --clock other: a new offset (above), */
#define SEQ_QUEUED_NS (UINT64_C(200) * 1000000)      /* up to what a first frame waited */
#define SEQ_RUN 8

struct flow_seq {
	uint64_t next;        /* UINT64_MAX until the flow's first frame is taken */
	uint64_t count_from;  /* gaps at or above this were counted as lost */
	uint64_t lost;        /* still-missing packets of this flow */
	uint64_t head_ts;     /* the sender's timestamp on the frame at next - 1 */
	uint64_t run_next;    /* refused frames in a row: the number the run expects next, */
	uint64_t run_ts;      /* the timestamp of its last frame */
	uint32_t run_len;     /* and how many it has (0: none) */
	bool counting;
	uint64_t seen[SEQ_WINDOW / 64];
};

struct seq_counts {
	int64_t lost;         /* may go down when a late packet fills a gap */
	uint64_t reordered, duplicate;
	/* the longest gap in time (above): its length less one frame interval,
	 * the frames lost in it, and the sender's stamp on the frame before it */
	uint64_t outage_ns, outage_lost, outage_from_ns;
};

struct seq_tracker {
	uint16_t slot[65536]; /* port -> 1 + index into flows; 0 = not seen yet */
	struct flow_seq *flows;
	unsigned nflows;
	uint64_t start_ns;    /* CLOCK_MONOTONIC before the role's ports were opened */
	uint64_t untracked;   /* packets of flows beyond SEQ_MAX_FLOWS */
	uint64_t shift;       /* seq_shift(): our clock minus the sender's */
	bool shifted;         /* and whether the first frame gave it yet */
};

/* start_ns: a time before any frame could have been sent to the role's
 * ports: before they were opened (run.open_ns). */
struct seq_tracker *seq_new(uint64_t start_ns);
void seq_free(struct seq_tracker *t);

/* seq_shift()'s offset becomes `shift`, a frame's that arrived more than
 * SEQ_QUICKER_NS quicker than any before it, and every flow's stamps move
 * with it; kept as it was when the frame is quicker by more than
 * SEQ_QUEUED_NS (a stray: its frame is then refused as from the future). */
void seq_reshift(struct seq_tracker *t, uint64_t shift);

/* Number s of flow f arrived: its bit in the window. */
static inline void seq_mark(struct flow_seq *f, uint64_t s)
{
	f->seen[(s / 64) % (SEQ_WINDOW / 64)] |= UINT64_C(1) << (s % 64);
}

/* Frame s, stamped ts, is the next of a flow whose next number is `next`
 * and whose head was stamped head_ts, sent no earlier than the slack before
 * the head and not after hi (the receiver's now plus SEQ_FUTURE_NS): one
 * unsigned compare, as the head's own timestamp passed the same test, so
 * lo <= hi. A counted frame needs a flow that counts already. */
static inline bool seq_in_order(uint64_t next, uint64_t head_ts, bool counting, uint64_t hi, uint64_t s,
				uint64_t ts, bool count)
{
	uint64_t lo = head_ts - (SEQ_FRAME_SLACK - 1);

	return s == next && ts - lo <= hi - lo && (counting || !count);
}

/* seq_track() for every frame its inline part does not take (seq.c). */
bool seq_track_slow(struct seq_tracker *t, uint16_t key, uint64_t seq, uint64_t ts, bool count,
		    uint64_t now_ns, struct seq_counts *c);

/* ts: the frame's timestamp; now_ns: the receiver's CLOCK_MONOTONIC ns when
 * it came. false: a frame no sender of ours could have sent (see above),
 * not tracked.
 *
 * Inline, the frame almost every frame is: the next number of a known flow
 * that is already counting (or a warm-up frame), sent no earlier than the
 * slack before the head and not in the future (one unsigned compare: the
 * head's own timestamp passed the same test, so lo <= hi). It becomes the
 * head; everything else is seq_track_slow()'s, which takes this case too. */
static inline bool seq_track(struct seq_tracker *t, uint16_t key, uint64_t s, uint64_t ts, bool count,
			     uint64_t now_ns, struct seq_counts *c)
{
	unsigned slot = t->slot[key];

	if (__builtin_expect(slot != 0, 1)) {
		struct flow_seq *f = &t->flows[slot - 1];
		if (__builtin_expect(seq_in_order(f->next, f->head_ts, f->counting, now_ns + SEQ_FUTURE_NS, s,
						  ts, count), 1)) {
			seq_mark(f, s);
			f->next = s + 1;
			f->head_ts = ts;
			f->run_len = 0;
			return true;
		}
	}
	return seq_track_slow(t, key, s, ts, count, now_ns, c);
}

/* seq_track()'s inline case for frames of one flow in a row, its state
 * kept in registers while they last: seq_run_begin() (false: the flow has no
 * frame yet), seq_run_take() for each frame until it says false (that frame
 * and the rest are seq_track()'s), seq_run_end() before any other call on
 * the tracker. What the flow is left with is exactly what seq_track() on
 * each frame would have left: their bits marked, the last one the head. */
struct seq_run {
	struct flow_seq *f;
	uint64_t first, next, head_ts, hi;
	bool counting;
};

static inline bool seq_run_begin(struct seq_run *q, struct seq_tracker *t, uint16_t key, uint64_t now_ns)
{
	unsigned slot = t->slot[key];

	if (!slot)
		return false;
	q->f = &t->flows[slot - 1];
	q->first = q->next = q->f->next;
	q->head_ts = q->f->head_ts;
	q->counting = q->f->counting;
	q->hi = now_ns + SEQ_FUTURE_NS;
	return true;
}

static inline bool seq_run_take(struct seq_run *q, uint64_t s, uint64_t ts, bool count)
{
	if (!seq_in_order(q->next, q->head_ts, q->counting, q->hi, s, ts, count))
		return false;
	q->next = s + 1;
	q->head_ts = ts;
	return true;
}

static inline void seq_run_end(struct seq_run *q)
{
	struct flow_seq *f = q->f;

	if (q->next == q->first)
		return;
	/* the numbers first .. next - 1, a word of the window at a time */
	for (uint64_t s = q->first; s < q->next;) {
		unsigned bit = (unsigned)(s % 64);
		uint64_t n = q->next - s < 64 - bit ? q->next - s : 64 - bit;
		uint64_t mask = n == 64 ? ~UINT64_C(0) : ((UINT64_C(1) << n) - 1) << bit;
		f->seen[(s / 64) % (SEQ_WINDOW / 64)] |= mask;
		s += n;
	}
	f->next = q->next;
	f->head_ts = q->head_ts;
	f->run_len = 0;
}

/* A timestamp of a sender on another host's clock (--clock other) on ours:
 * moved by what the first frame gave, received at now_ns (see above). The
 * arithmetic is modulo 2^64, so either clock may be ahead. */
static inline uint64_t seq_shift(struct seq_tracker *t, uint64_t ts, uint64_t now_ns)
{
	uint64_t shift = now_ns - ts;

	if (__builtin_expect(!t->shifted, 0)) {
		t->shift = shift;
		t->shifted = true;
	} else if (__builtin_expect((int64_t)(t->shift - shift) > (int64_t)SEQ_QUICKER_NS, 0)) {
		seq_reshift(t, shift);
	}
	return ts + t->shift;
}

#endif
