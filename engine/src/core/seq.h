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
 * Counts are bounded by what a sender could have sent: no sender sends more
 * than one frame per nanosecond (a 400 GbE link carries 595 Mpps of 64-byte
 * frames). A number further ahead of the flow than the nanoseconds since its
 * last frame in order, or behind it by more than a frame could be overtaken,
 * plus SEQ_SLACK either way for the difference in two frames' latencies, or
 * a new flow's first number above the nanoseconds the clock has counted
 * (CLOCK_MONOTONIC: since boot), comes from no sender of ours: seq_track()
 * leaves the flow as it was and the receiver counts the frame `bad`. One
 * stray number (a random 62-bit value) thus costs one bad frame, not ~2^61
 * lost ones and every later frame counted reordered. */
#ifndef CNFPERF_SEQ_H
#define CNFPERF_SEQ_H

#include <stdbool.h>
#include <stdint.h>

#define SEQ_WINDOW 1024
#define SEQ_MAX_FLOWS 4096
#define SEQ_SLACK (UINT64_C(1) << 32)   /* 4.3 s of latency difference at 1 frame/ns */

struct flow_seq {
	uint64_t next;
	uint64_t count_from;  /* gaps at or above this were counted as lost */
	uint64_t lost;        /* still-missing packets of this flow */
	bool counting;
	uint64_t head_ns;     /* when the flow last moved ahead (the receiver's clock) */
	uint64_t seen[SEQ_WINDOW / 64];
};

struct seq_counts {
	int64_t lost;         /* may go down when a late packet fills a gap */
	uint64_t reordered, duplicate;
};

struct seq_tracker {
	uint16_t slot[65536]; /* port -> 1 + index into flows; 0 = not seen yet */
	struct flow_seq *flows;
	unsigned nflows;
	uint64_t untracked;   /* packets of flows beyond SEQ_MAX_FLOWS */
};

struct seq_tracker *seq_new(void);
void seq_free(struct seq_tracker *t);
/* now_ns: the receiver's CLOCK_MONOTONIC ns when the frame came. false: a
 * number no sender could have reached (see above), not tracked. */
bool seq_track(struct seq_tracker *t, uint16_t key, uint64_t seq, bool count, uint64_t now_ns,
	       struct seq_counts *c);

#endif
