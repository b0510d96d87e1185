/* Sequence tracking: loss, reordering, duplicates, warm-up, flows, and the
 * bounds a frame's own timestamp puts on its number. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../src/core/seq.h"

#define MS UINT64_C(1000000)
#define S_NS UINT64_C(1000000000)
#define START (UINT64_C(400000) * S_NS)   /* the tracker's start: a host up 111 hours */
#define GAP UINT64_C(1000)                 /* the sender in most tests: a frame every µs */

/* Frame s of a sender that started with the tracker, received 1 µs after it left. */
static bool track(struct seq_tracker *t, uint16_t key, uint64_t s, bool count, struct seq_counts *c)
{
	uint64_t ts = START + s * GAP;

	return seq_track(t, key, s, ts, count, ts + 1000, c);
}

static struct seq_counts feed(const uint64_t *s, size_t n, bool count)
{
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };

	for (size_t i = 0; i < n; i++)
		track(t, 9000, s[i], count, &c);
	seq_free(t);
	return c;
}

#define FEED(...) ({ static const uint64_t s_[] = { __VA_ARGS__ }; feed(s_, sizeof(s_) / sizeof(s_[0]), true); })

static void cases(void)
{
	struct seq_counts c;

	c = FEED(0, 1, 2, 3, 4);
	CHECK(c.lost == 0 && c.reordered == 0 && c.duplicate == 0, "in order");
	c = FEED(5, 6, 7);
	CHECK(c.lost == 0, "a flow may start at any number its sender could have reached");
	c = FEED(0, 1, 4, 5);
	CHECK(c.lost == 2 && c.reordered == 0, "gap of two: lost %lld", (long long)c.lost);
	c = FEED(0, 1, 3, 2, 4);
	CHECK(c.lost == 0 && c.reordered == 1 && c.duplicate == 0, "swap: lost %lld reordered %llu",
	      (long long)c.lost, (unsigned long long)c.reordered);
	c = FEED(0, 3, 2, 1, 4);
	CHECK(c.lost == 0 && c.reordered == 2, "late pair fills the gap");
	c = FEED(0, 1, 1, 2, 2, 2);
	CHECK(c.duplicate == 3 && c.lost == 0 && c.reordered == 0, "duplicates %llu", (unsigned long long)c.duplicate);
	c = FEED(0, 2, 1, 1);
	CHECK(c.duplicate == 1 && c.reordered == 1 && c.lost == 0, "late then duplicate of the late one");
	c = FEED(0, 5000, 1);
	CHECK(c.lost == 4998 && c.reordered == 1, "beyond the window: reordered, one less lost (%lld)",
	      (long long)c.lost);
	c = FEED(0, 1, 2, 3000, 3001, 2);
	CHECK(c.duplicate == 0 && c.reordered == 1 && c.lost == 2996,
	      "too old to tell a duplicate: reordered, lost stays >= 0 (%lld)", (long long)c.lost);
}

static void window_wrap(void)
{
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };

	/* long in-order run across many window wraps, one duplicate at the end */
	for (uint64_t s = 0; s < 100000; s++)
		track(t, 1, s, true, &c);
	seq_track(t, 1, 99990, START + 99990 * GAP, true, START + 100000 * GAP, &c);
	CHECK(c.lost == 0 && c.reordered == 0 && c.duplicate == 1, "wraps: dup %llu", (unsigned long long)c.duplicate);
	seq_free(t);
}

static void warmup(void)
{
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };

	/* warm-up 0..9 with a gap at 4, measured from 10 on */
	for (uint64_t s = 0; s < 10; s++)
		if (s != 4)
			track(t, 7, s, false, &c);
	CHECK(c.lost == 0, "warm-up gaps are not counted");
	track(t, 7, 12, true, &c);  /* 10 and 11 lost? they were warm-up-marked or not yet sent */
	CHECK(c.lost == 0, "gap before the first counted packet is not counted (%lld)", (long long)c.lost);
	seq_track(t, 7, 4, START + 4 * GAP, false, START + 13 * GAP, &c);  /* very late warm-up packet */
	CHECK(c.lost == 0 && c.reordered == 0, "late warm-up packet changes nothing counted");
	track(t, 7, 13, true, &c);
	track(t, 7, 15, true, &c);
	CHECK(c.lost == 1, "gap after counting began is counted");
	seq_track(t, 7, 14, START + 14 * GAP, true, START + 16 * GAP, &c);
	CHECK(c.lost == 0 && c.reordered == 1, "and filled by its late packet");
	seq_free(t);
}

static void flows(void)
{
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };

	/* two flows interleaved, each in order: no loss */
	for (uint64_t s = 0; s < 100; s++) {
		track(t, 9000, s, true, &c);
		track(t, 9001, s, true, &c);
	}
	CHECK(c.lost == 0 && c.reordered == 0 && c.duplicate == 0, "flows are independent");
	track(t, 9001, 105, true, &c);
	CHECK(c.lost == 5, "loss in one flow");
	CHECK(t->nflows == 2, "two flows seen");
	for (unsigned k = 2; k < SEQ_MAX_FLOWS + 10; k++)
		track(t, (uint16_t)(10000 + k), 0, true, &c);
	CHECK(t->nflows == SEQ_MAX_FLOWS && t->untracked == 10, "flows beyond the table are untracked (%llu)",
	      (unsigned long long)t->untracked);
	seq_free(t);
}

/* A flow of n frames `gap` ns apart from the tracker's start, frame `odd` with
 * number `stray` instead (n: none), each received 1 µs after it left; how
 * many were refused. */
static unsigned flow(struct seq_tracker *t, uint64_t n, uint64_t gap, uint64_t odd, uint64_t stray,
		     struct seq_counts *c)
{
	unsigned bad = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t ts = START + (i + 1) * gap;
		bad += !seq_track(t, 9000, i == odd ? stray : i, ts, true, ts + 1000, c);
	}
	return bad;
}

/* Two strays seen amid real flows: before, one flipped bit gave bad 0, lost
 * 2,147,483,149, reordered 499; a stray first frame made all 1,000 real ones bad. */
static void strays(void)
{
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };
	unsigned bad = flow(t, 1000, MS, 500, 500 ^ (UINT64_C(1) << 31), &c);

	/* frame 500 is the bad one: its own number is missing, one lost */
	CHECK(bad == 1 && c.lost == 1 && c.reordered == 0 && c.duplicate == 0,
	      "bit 31 flipped: bad %u lost %lld reordered %llu", bad, (long long)c.lost,
	      (unsigned long long)c.reordered);
	seq_free(t);

	t = seq_new(START);
	c = (struct seq_counts){ 0 };
	bad = !seq_track(t, 9000, UINT64_C(1) << 48, START + 100, true, START + 1100, &c);
	bad += flow(t, 1000, MS, 1000, 0, &c);
	CHECK(bad == 1 && c.lost == 0 && c.reordered == 0, "a stray 2^48 first: bad %u lost %lld", bad,
	      (long long)c.lost);
	seq_free(t);

	t = seq_new(START);
	c = (struct seq_counts){ 0 };
	bad = flow(t, 1000, MS, 500, UINT64_C(0x2c5c1f0ea3b411d7) & ((UINT64_C(1) << 62) - 1), &c);
	CHECK(bad == 1 && c.lost == 1 && c.reordered == 0 && c.duplicate == 0,
	      "a random 62-bit number amid a flow: bad %u lost %lld", bad, (long long)c.lost);
	seq_free(t);
}

/* What the frame's own timestamp allows, each way. */
static void bounded(void)
{
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };
	uint64_t head = START + 100 * GAP;

	for (uint64_t s = 0; s <= 100; s++)
		track(t, 9000, s, true, &c);          /* the head: 100, at `head` */
	/* ahead: 2 ms after the head, at most 2,000,000 + the slack frames on */
	uint64_t ts = head + 2 * MS, far = 100 + 2 * MS + SEQ_FRAME_SLACK + 1;
	CHECK(!seq_track(t, 9000, far, ts, true, ts, &c), "ahead by more than 1 frame/ns: refused");
	CHECK(seq_track(t, 9000, far - 1, ts, true, ts, &c) && c.lost == (int64_t)(far - 1 - 101),
	      "ahead by as many: a real gap (lost %lld)", (long long)c.lost);
	head = ts;
	/* behind: by the ns from its timestamp to the head's, plus the slack */
	CHECK(!seq_track(t, 9000, far - 1 - 10000, head - 1000, true, head, &c) && c.reordered == 0,
	      "10,000 frames behind, sent 1 µs before the head: refused");
	CHECK(seq_track(t, 9000, far - 1 - 10000, head - 10000, true, head, &c) && c.reordered == 1,
	      "sent 10 µs before: late");
	CHECK(!seq_track(t, 9000, 150, START + 150 * GAP, true, head, &c), "far behind: refused");
	/* in order, but sent long before the head */
	CHECK(!seq_track(t, 9000, far, head - MS, true, head, &c), "in order but 1 ms older than the head");
	CHECK(seq_track(t, 9000, far, head, true, head, &c) && c.lost == (int64_t)(far - 1 - 101) - 1,
	      "in order (lost %lld)", (long long)c.lost);
	/* timestamps the receiver's clock rules out */
	CHECK(!seq_track(t, 9000, far + 1, head + SEQ_FUTURE_NS + 1, true, head, &c), "sent in the future");
	CHECK(!seq_track(t, 9000, far + 1, START - SEQ_PAST_NS - 1, true, head, &c), "before the start");
	CHECK(seq_track(t, 9000, far + 1, head + SEQ_FUTURE_NS, true, head, &c), "clocks a little apart");
	/* a first frame: at most the ns since the start, plus the slack */
	CHECK(!seq_track(t, 9001, MS + SEQ_FRAME_SLACK + 1, START + MS, true, START + MS, &c) && t->nflows == 2,
	      "a first number its sender could not have reached");
	CHECK(seq_track(t, 9002, MS + SEQ_FRAME_SLACK, START + MS, true, START + MS, &c), "one it could");
	CHECK(seq_track(t, 9003, SEQ_FRAME_SLACK, START - 100 * MS, true, START + MS, &c),
	      "the start of a stream sent before the start (in flight while the port opened)");
	CHECK(!seq_track(t, 9004, SEQ_FRAME_SLACK + 1, START - 100 * MS, true, START + MS, &c),
	      "but no more than the slack");
	seq_free(t);
}

/* Refused frames with consecutive numbers and timestamps that do not go back
 * re-anchor their flow; anything less does not. */
static void runs(void)
{
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };
	unsigned bad = 0;

	/* a stray first frame its timestamp allows anchors the flow; the real
	 * frames are far behind it and refused, SEQ_RUN - 1 of them */
	CHECK(seq_track(t, 9000, 5 * MS, START + 10 * MS, true, START + 10 * MS, &c), "a plausible stray");
	for (uint64_t s = 0; s < 100; s++) {
		uint64_t ts = START + 10 * MS + (s + 1) * GAP;
		bad += !seq_track(t, 9000, s, ts, true, ts, &c);
	}
	CHECK(bad == SEQ_RUN - 1 && c.lost == 0 && c.reordered == 0 && c.duplicate == 0,
	      "re-anchored: bad %u lost %lld reordered %llu", bad, (long long)c.lost,
	      (unsigned long long)c.reordered);
	CHECK(t->flows[0].next == 100, "the flow follows the real frames (next %llu)",
	      (unsigned long long)t->flows[0].next);
	seq_free(t);

	/* a receiver started after its sender: numbers too high for a first frame */
	t = seq_new(START);
	c = (struct seq_counts){ 0 };
	bad = 0;
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t ts = START + MS + i * GAP;
		bad += !seq_track(t, 9000, 7 * S_NS + i, ts, true, ts, &c);
	}
	CHECK(bad == SEQ_RUN - 1 && c.lost == 0, "a late receiver: bad %u", bad);
	seq_free(t);

	/* a stray ahead, its timestamp just inside the receiver's future, counted
	 * 9,000,000 lost: undone when the real frames re-anchor the flow */
	t = seq_new(START);
	c = (struct seq_counts){ 0 };
	bad = 0;
	for (uint64_t s = 0; s < 10; s++)
		track(t, 9000, s, true, &c);
	uint64_t now = START + 10 * GAP;
	CHECK(seq_track(t, 9000, 9 + 9 * MS, now + 9 * MS, true, now, &c) && c.lost == (int64_t)(9 * MS - 1),
	      "the stray's gap (lost %lld)", (long long)c.lost);
	for (uint64_t s = 10; s < 100; s++) {
		uint64_t ts = now + MS + s * GAP;
		bad += !seq_track(t, 9000, s, ts, true, ts, &c);
	}
	CHECK(bad == SEQ_RUN - 1 && c.lost == 0 && c.reordered == 0, "undone: bad %u lost %lld", bad,
	      (long long)c.lost);
	seq_free(t);

	/* strays that do not follow each other, or whose timestamps go back */
	t = seq_new(START);
	c = (struct seq_counts){ 0 };
	bad = 0;
	for (uint64_t s = 0; s < 100; s++) {
		uint64_t ts = START + (s + 1) * GAP;
		CHECK(seq_track(t, 9000, s, ts, true, ts, &c), "real %llu", (unsigned long long)s);
		bad += !seq_track(t, 9001, UINT64_C(1) << 40 | s << 1, ts, true, ts, &c);
		bad += !seq_track(t, 9002, UINT64_C(1) << 40 | s, START + (200 - s) * GAP, true, ts, &c);
	}
	CHECK(bad == 200 && c.lost == 0 && c.reordered == 0 && t->flows[0].next == 100,
	      "never a run: bad %u lost %lld", bad, (long long)c.lost);
	seq_free(t);
}

/* A sender on another host: its clock `ahead` ns ahead of ours (behind when
 * negative, modulo 2^64), a frame every GAP, each taking `took` ns to come
 * (the first `first` ns more: it waited in a queue). Frames 0..n-1, skipping
 * `skip`; returns the frames refused. */
static unsigned other_host_queued(struct seq_tracker *t, bool shift, uint64_t ahead, uint64_t took,
				  uint64_t first, uint64_t n, uint64_t skip, struct seq_counts *c)
{
	unsigned bad = 0;

	for (uint64_t s = 0; s < n; s++) {
		if (s == skip)
			continue;
		uint64_t sent = START + MS + s * GAP, ts = sent + ahead;
		uint64_t now = sent + took + (s == 0 ? first : s % 7 * 100);   /* some jitter */
		if (shift)
			ts = seq_shift(t, ts, now);
		bad += !seq_track(t, 9000, s, ts, true, now, c);
	}
	return bad;
}

static unsigned other_host(struct seq_tracker *t, bool shift, uint64_t ahead, uint64_t took, uint64_t n,
			   uint64_t skip, struct seq_counts *c)
{
	return other_host_queued(t, shift, ahead, took, 0, n, skip, c);
}

static void other_clock(void)
{
	const uint64_t ahead[] = { 3600 * S_NS, -(3600 * S_NS), 50 * MS, UINT64_C(1) << 62, 0 };

	for (size_t i = 0; i < sizeof(ahead) / sizeof(ahead[0]); i++) {
		struct seq_tracker *t = seq_new(START);
		struct seq_counts c = { 0 };
		unsigned bad = other_host(t, true, ahead[i], 20000, 1000, 500, &c);
		CHECK(bad == 0 && c.lost == 1 && c.reordered == 0 && c.duplicate == 0,
		      "a clock %lld ns ahead, moved: bad %u lost %lld", (long long)ahead[i], bad, (long long)c.lost);
		CHECK(t->shift == -ahead[i] + 20000, "the first frame gives the shift (as if it took no time)");
		seq_free(t);
		if (!ahead[i])
			continue;
		t = seq_new(START);
		c = (struct seq_counts){ 0 };
		bad = other_host(t, false, ahead[i], 20000, 1000, 500, &c);
		CHECK(bad == 999 && c.lost == 0, "not moved: every frame bad (%u)", bad);
		seq_free(t);
	}

	/* the bounds still hold on moved timestamps: a frame stamped a second
	 * after its neighbours, and one that arrives far quicker than the first */
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };
	other_host(t, true, 3600 * S_NS, 20000, 100, UINT64_MAX, &c);
	uint64_t now = START + MS + 100 * GAP + 20000;
	CHECK(!seq_track(t, 9000, 100, seq_shift(t, now - 20000 + 3600 * S_NS + S_NS, now), true, now, &c),
	      "a timestamp a second in the future, moved, is refused");
	CHECK(!seq_track(t, 9000, 101, seq_shift(t, now + 3600 * S_NS + 300 * MS, now), true, now, &c),
	      "a frame 300 ms quicker than the first was is refused (SEQ_QUEUED_NS)");
	CHECK(seq_track(t, 9000, 100, seq_shift(t, now - 20000 + 3600 * S_NS, now), true, now, &c) &&
	      c.lost == 0 && c.reordered == 0, "the real next frame is taken");
	seq_free(t);

	/* the first frame waited 50 ms in a queue (an emulated NIC's): the next,
	 * 50 ms quicker, gives the offset from then on, and none is refused */
	t = seq_new(START);
	c = (struct seq_counts){ 0 };
	unsigned bad = other_host_queued(t, true, 3600 * S_NS, 20000, 50 * MS, 1000, UINT64_MAX, &c);
	CHECK(bad == 0 && c.lost == 0 && c.reordered == 0, "a first frame queued: bad %u lost %lld",
	      bad, (long long)c.lost);
	CHECK(t->shift - (-(3600 * S_NS) + 20000) <= 600,
	      "the second frame gives the shift (within its jitter): the first's wait is gone");
	seq_free(t);
}

/* seq_track()'s inline part takes only what seq_track_slow() would take the
 * same way: one random stream (in order mostly; losses, late and duplicate
 * frames, warm-up frames, strays far ahead, timestamps in the future, a few
 * flows) fed to two trackers, one through seq_track(), one through
 * seq_track_slow() alone, leaves the same counts, the same verdicts and the
 * same flows. */
static void inline_path(void)
{
	struct seq_tracker *a = seq_new(START), *b = seq_new(START);
	struct seq_counts ca = { 0 }, cb = { 0 };
	uint64_t next[3] = { 0, 0, 0 };
	unsigned differ = 0;

	srand(25);
	for (int i = 0; i < 300000; i++) {
		unsigned f = (unsigned)rand() % 3, r = (unsigned)rand() % 1000;
		uint64_t s = next[f], now = START + (uint64_t)i * GAP + 5000;
		bool count = i > 1000 || r < 500;
		if (r < 20)
			s += (uint64_t)(rand() % 50);          /* a gap */
		else if (r < 40 && s > 100)
			s -= (uint64_t)(rand() % 100);         /* late or a duplicate */
		else if (r == 40)
			s += UINT64_C(1) << 40;                /* a stray far ahead */
		uint64_t ts = r == 41 ? now + 2 * SEQ_FUTURE_NS : now - 4000;
		if (s >= next[f] && r != 40)
			next[f] = s + 1;
		bool va = seq_track(a, (uint16_t)(9000 + f), s, ts, count, now, &ca);
		bool vb = seq_track_slow(b, (uint16_t)(9000 + f), s, ts, count, now, &cb);
		differ += va != vb;
	}
	CHECK(differ == 0, "%u verdicts differ", differ);
	CHECK(ca.lost == cb.lost && ca.reordered == cb.reordered && ca.duplicate == cb.duplicate,
	      "counts: lost %lld/%lld reordered %llu/%llu duplicate %llu/%llu", (long long)ca.lost,
	      (long long)cb.lost, (unsigned long long)ca.reordered, (unsigned long long)cb.reordered,
	      (unsigned long long)ca.duplicate, (unsigned long long)cb.duplicate);
	CHECK(ca.lost > 0 && ca.reordered > 0 && ca.duplicate > 0, "the stream had every kind");
	CHECK(a->nflows == 3 && b->nflows == 3 && !memcmp(a->flows, b->flows, 3 * sizeof(*a->flows)),
	      "the same flows");
	seq_free(a);
	seq_free(b);
}

/* The outage: the longest counted gap in time, by the sender's stamps, less
 * one frame interval, and the frames lost in it (seq.h). */
static void outage(void)
{
	struct seq_tracker *t = seq_new(START);
	struct seq_counts c = { 0 };

	/* a frame every µs: 10 lost, then 100 (frames 200..299), then 5 */
	for (uint64_t s = 0; s < 500; s++)
		if (!(s >= 50 && s < 60) && !(s >= 200 && s < 300) && !(s >= 400 && s < 405))
			track(t, 9000, s, true, &c);
	CHECK(c.lost == 115, "lost %lld", (long long)c.lost);
	CHECK(c.outage_ns == 100 * GAP && c.outage_lost == 100,
	      "the longest gap: 100 frames of 1 µs (%llu ns, %llu frames)",
	      (unsigned long long)c.outage_ns, (unsigned long long)c.outage_lost);
	CHECK(c.outage_from_ns == START + 199 * GAP, "from the frame before it (%llu)",
	      (unsigned long long)(c.outage_from_ns - START));
	/* a late frame inside it is reordered: the outage stays */
	track(t, 9000, 250, true, &c);
	CHECK(c.reordered == 1 && c.outage_ns == 100 * GAP, "late frame: outage %llu",
	      (unsigned long long)c.outage_ns);
	seq_free(t);

	/* in the warm-up a gap is not counted, nor its time */
	t = seq_new(START);
	memset(&c, 0, sizeof(c));
	for (uint64_t s = 0; s < 100; s++)
		if (s < 20 || s >= 40)
			track(t, 9000, s, s >= 50, &c);
	CHECK(c.lost == 0 && c.outage_ns == 0 && c.outage_lost == 0, "warm-up gap: %llu ns",
	      (unsigned long long)c.outage_ns);
	seq_free(t);

	/* a cut of 3 ms at 10 kpps in bursts of 8 stamped once each: within a burst's time */
	t = seq_new(START);
	memset(&c, 0, sizeof(c));
	uint64_t iv = 100 * UINT64_C(1000), cut_from = START + 20 * MS, cut_to = cut_from + 3 * MS;
	for (uint64_t s = 0; s < 800; s++) {
		uint64_t ts = START + (s / 8) * 8 * iv, at = START + s * iv;
		if (at >= cut_from && at < cut_to)
			continue;
		seq_track(t, 9000, s, ts, true, at + 1000, &c);
	}
	CHECK(c.outage_lost == 30, "30 frames in 3 ms at 10 kpps (%llu)", (unsigned long long)c.outage_lost);
	CHECK(c.outage_ns + 8 * iv >= 3 * MS && c.outage_ns <= 3 * MS + 8 * iv, "3 ms to a burst (%llu ns)",
	      (unsigned long long)c.outage_ns);
	seq_free(t);

	/* several flows: the longest of any flow's gaps */
	t = seq_new(START);
	memset(&c, 0, sizeof(c));
	for (uint64_t s = 0; s < 100; s++) {
		if (s < 10 || s >= 12)
			track(t, 1, s, true, &c);
		if (s < 30 || s >= 70)
			track(t, 2, s, true, &c);
	}
	CHECK(c.outage_lost == 40 && c.outage_ns == 40 * GAP, "flow 2's 40 frames (%llu)",
	      (unsigned long long)c.outage_lost);
	seq_free(t);

	/* a stray frame far ahead is bad, not an outage */
	t = seq_new(START);
	memset(&c, 0, sizeof(c));
	for (uint64_t s = 0; s < 10; s++)
		track(t, 9000, s, true, &c);
	CHECK(!seq_track(t, 9000, UINT64_C(1) << 40, START + 10 * GAP, true, START + 10 * GAP + 1000, &c),
	      "a stray is refused");
	CHECK(c.outage_ns == 0 && c.outage_lost == 0, "and no outage (%llu)", (unsigned long long)c.outage_ns);
	seq_free(t);
}

/* seq_run_*() on runs of frames leaves a tracker exactly as seq_track() on
 * each frame does (rx_measure_known()'s use: a run's first frame that is not
 * taken, and the rest, go to seq_track()): random streams of two flows with
 * loss, reordering, duplicates, warm-up frames, strays and stalls, cut into
 * random runs. */
static void run_path(void)
{
	srand(47);
	for (int round = 0; round < 200; round++) {
		struct seq_tracker *a = seq_new(START), *b = seq_new(START);
		struct seq_counts ca = { 0 }, cb = { 0 };
		uint64_t next[2] = { 0, 0 }, now = START;
		bool same = true;

		for (int burst = 0; burst < 60; burst++) {
			uint16_t key = 9000 + (uint16_t)(rand() % 2);
			unsigned n = 1 + (unsigned)(rand() % 70);
			uint64_t s[70], ts[70];
			bool count[70];
			now += GAP * (1 + (uint64_t)(rand() % 100));
			for (unsigned i = 0; i < n; i++) {
				uint64_t *x = &next[key - 9000];
				int r = rand() % 100;
				if (r < 3)
					*x += 1 + (uint64_t)(rand() % 40);           /* loss */
				s[i] = r == 3 && *x > 5 ? *x - 5 : r == 4 ? UINT64_C(1) << 41 : (*x)++;
				ts[i] = r == 5 ? now + 20 * MS : now - 1000;      /* in the future */
				count[i] = burst > 5 && rand() % 10;
			}
			for (unsigned i = 0; i < n; i++)
				seq_track(a, key, s[i], ts[i], count[i], now, &ca);
			for (unsigned i = 0; i < n;) {
				unsigned m = 1 + (unsigned)(rand() % (n - i)), j = i;
				struct seq_run q;
				if (seq_run_begin(&q, b, key, now)) {
					while (j < i + m && seq_run_take(&q, s[j], ts[j], count[j]))
						j++;
					seq_run_end(&q);
				}
				for (; j < i + m; j++)
					seq_track(b, key, s[j], ts[j], count[j], now, &cb);
				i += m;
			}
		}
		same = memcmp(&ca, &cb, sizeof(ca)) == 0 && a->nflows == b->nflows &&
		       memcmp(a->flows, b->flows, a->nflows * sizeof(*a->flows)) == 0;
		CHECK(same, "round %d: runs and single frames agree (lost %lld/%lld, reordered %llu/%llu)", round,
		      (long long)ca.lost, (long long)cb.lost, (unsigned long long)ca.reordered,
		      (unsigned long long)cb.reordered);
		seq_free(a);
		seq_free(b);
	}
}

int main(void)
{
	cases();
	bounded();
	strays();
	runs();
	window_wrap();
	warmup();
	flows();
	other_clock();
	inline_path();
	outage();
	run_path();
	return check_done("seq");
}
