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
 * counted; gaps are counted only from the first counted packet on. */
#ifndef CNFPERF_SEQ_H
#define CNFPERF_SEQ_H

#include <stdbool.h>
#include <stdint.h>

#define SEQ_WINDOW 1024
#define SEQ_MAX_FLOWS 4096

struct flow_seq {
	uint64_t next;
	uint64_t count_from;  /* gaps at or above this were counted as lost */
	uint64_t lost;        /* still-missing packets of this flow */
	bool counting;
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
void seq_track(struct seq_tracker *t, uint16_t key, uint64_t seq, bool count, struct seq_counts *c);

#endif
