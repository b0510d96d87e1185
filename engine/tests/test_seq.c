/* Sequence tracking: loss, reordering, duplicates, warm-up, flows. */
#include <stdlib.h>

#include "check.h"
#include "../src/core/seq.h"

#define NOW (UINT64_C(1000) * 1000000000)   /* the receiver's clock: 1000 s since boot */
#define S_NS UINT64_C(1000000000)

static struct seq_counts feed(const uint64_t *s, size_t n, bool count)
{
	struct seq_tracker *t = seq_new();
	struct seq_counts c = { 0 };

	for (size_t i = 0; i < n; i++)
		seq_track(t, 9000, s[i], count, NOW, &c);
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
	CHECK(c.lost == 0, "a flow may start at any number");
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
	struct seq_tracker *t = seq_new();
	struct seq_counts c = { 0 };

	/* long in-order run across many window wraps, one duplicate at the end */
	for (uint64_t s = 0; s < 100000; s++)
		seq_track(t, 1, s, true, NOW, &c);
	seq_track(t, 1, 99990, true, NOW, &c);
	CHECK(c.lost == 0 && c.reordered == 0 && c.duplicate == 1, "wraps: dup %llu", (unsigned long long)c.duplicate);
	seq_free(t);
}

static void warmup(void)
{
	struct seq_tracker *t = seq_new();
	struct seq_counts c = { 0 };

	/* warm-up 0..9 with a gap at 4, measured from 10 on */
	for (uint64_t s = 0; s < 10; s++)
		if (s != 4)
			seq_track(t, 7, s, false, NOW, &c);
	CHECK(c.lost == 0, "warm-up gaps are not counted");
	seq_track(t, 7, 12, true, NOW, &c);  /* 10 and 11 lost? they were warm-up-marked or not yet sent */
	CHECK(c.lost == 0, "gap before the first counted packet is not counted (%lld)", (long long)c.lost);
	seq_track(t, 7, 4, false, NOW, &c);  /* very late warm-up packet */
	CHECK(c.lost == 0 && c.reordered == 0, "late warm-up packet changes nothing counted");
	seq_track(t, 7, 13, true, NOW, &c);
	seq_track(t, 7, 15, true, NOW, &c);
	CHECK(c.lost == 1, "gap after counting began is counted");
	seq_track(t, 7, 14, true, NOW, &c);
	CHECK(c.lost == 0 && c.reordered == 1, "and filled by its late packet");
	seq_free(t);
}

static void flows(void)
{
	struct seq_tracker *t = seq_new();
	struct seq_counts c = { 0 };

	/* two flows interleaved, each in order: no loss */
	for (uint64_t s = 0; s < 100; s++) {
		seq_track(t, 9000, s, true, NOW, &c);
		seq_track(t, 9001, s, true, NOW, &c);
	}
	CHECK(c.lost == 0 && c.reordered == 0 && c.duplicate == 0, "flows are independent");
	seq_track(t, 9001, 105, true, NOW, &c);
	CHECK(c.lost == 5, "loss in one flow");
	CHECK(t->nflows == 2, "two flows seen");
	for (unsigned k = 2; k < SEQ_MAX_FLOWS + 10; k++)
		seq_track(t, (uint16_t)(10000 + k), 0, true, NOW, &c);
	CHECK(t->nflows == SEQ_MAX_FLOWS && t->untracked == 10, "flows beyond the table are untracked (%llu)",
	      (unsigned long long)t->untracked);
	seq_free(t);
}

/* Numbers no sender could have reached are refused and change nothing. */
static void bounded(void)
{
	struct seq_tracker *t = seq_new();
	struct seq_counts c = { 0 };
	bool ok = true;

	for (uint64_t s = 0; s < 100; s++)
		ok &= seq_track(t, 9000, s, true, NOW, &c);
	CHECK(ok, "in order");
	CHECK(!seq_track(t, 9000, UINT64_C(0x2c5c1f0ea3b411d7) & ((UINT64_C(1) << 62) - 1), true, NOW, &c),
	      "a random 62-bit number is refused");
	for (uint64_t s = 100; s < 200; s++)
		ok &= seq_track(t, 9000, s, true, NOW, &c);
	CHECK(ok && c.lost == 0 && c.reordered == 0 && c.duplicate == 0,
	      "the flow goes on as if it had not come: lost %lld reordered %llu", (long long)c.lost,
	      (unsigned long long)c.reordered);

	/* ahead: by the nanoseconds since the flow last moved, plus the slack */
	uint64_t far = 200 + 3 * S_NS + SEQ_SLACK;
	CHECK(!seq_track(t, 9000, far, true, NOW + 2 * S_NS, &c), "3 s of frames 2 s later: refused");
	CHECK(seq_track(t, 9000, far, true, NOW + 3 * S_NS, &c) && c.lost == (int64_t)(far - 200),
	      "3 s later: a real gap (lost %lld)", (long long)c.lost);
	CHECK(seq_track(t, 9000, far + 1, true, NOW + 3 * S_NS, &c) && c.lost == (int64_t)(far - 200), "in order again");
	/* behind: by the slack at most */
	CHECK(!seq_track(t, 9000, 150, true, NOW + 3 * S_NS, &c) && c.reordered == 0 && c.duplicate == 0,
	      "a number far behind the flow is refused");
	CHECK(seq_track(t, 9000, far - 5000, true, NOW + 3 * S_NS, &c) && c.reordered == 1, "late within the slack");

	/* a new flow: its first number within the nanoseconds since boot */
	CHECK(!seq_track(t, 9001, UINT64_C(1) << 61, true, NOW, &c) && t->nflows == 1, "absurd first number");
	CHECK(seq_track(t, 9001, NOW / 2, true, NOW, &c) && t->nflows == 2, "a long-running sender's number");
	seq_free(t);
}

int main(void)
{
	cases();
	bounded();
	window_wrap();
	warmup();
	flows();
	return check_done("seq");
}
