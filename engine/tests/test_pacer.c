/* Pacer spacing, long-run rate, and the catch-up bound after a stall. */
#include "check.h"
#include "../src/core/pacer.h"

static void spacing(void)
{
	struct pacer p;
	uint64_t hz = 1000000000, last = 0;
	int bursts = 0;

	pacer_init(&p, 1e6, 32, hz, 1000); /* 32 us apart */
	for (uint64_t t = 1000; t < 1000 + hz / 100; t += 100) {
		if (!pacer_due(&p, t))
			continue;
		if (bursts)
			CHECK(t - last == 32000, "burst spacing %llu ticks", (unsigned long long)(t - last));
		last = t;
		bursts++;
	}
	CHECK(bursts == 313, "bursts in 10 ms at 1 Mpps / 32: %d", bursts);
}

static void fractional(void)
{
	struct pacer p;
	uint64_t hz = 2400000000ull;
	long bursts = 0;

	/* 1028.57 ticks between bursts: the fraction must not drift */
	pacer_init(&p, 7e6, 3, hz, 0);
	for (uint64_t t = 0; t < hz / 10; t += 7)
		bursts += pacer_due(&p, t);
	long want = (long)(7e6 / 3 / 10);
	CHECK(bursts >= want && bursts <= want + 1, "long-run rate exact: %ld bursts, want %ld", bursts, want);
}

static void catch_up(void)
{
	struct pacer p;
	uint64_t hz = 1000000000;
	uint64_t period = 1000000; /* 1 ms */

	pacer_init(&p, 32000, 32, hz, 0);
	CHECK(pacer_due(&p, 0), "first burst due at once");
	/* a 500 ms stall: 500 bursts owed */
	uint64_t t = 500 * period;
	int back_to_back = 0;
	while (pacer_due(&p, t))
		back_to_back++;
	CHECK(back_to_back >= 1 && back_to_back <= PACER_CATCHUP + 1,
	      "after a stall at most %d bursts back to back, got %d", PACER_CATCHUP + 1, back_to_back);
	CHECK(p.forgiven >= 490, "forgiven bursts counted: %llu", (unsigned long long)p.forgiven);
	/* then the normal spacing again */
	uint64_t next = t;
	while (!pacer_due(&p, next))
		next += 1000;
	CHECK(next - t <= period, "resumes within one period");
	CHECK(!pacer_due(&p, next + period / 2), "and keeps the spacing");
	CHECK(pacer_wait(&p, next + period / 2) > 0, "wait reports time left");
}

/* a stall across the window's start: only the bursts due in the window
 * count as forgiven */
static void counted_from(void)
{
	struct pacer p;
	uint64_t period = 1000000; /* 1 ms */

	pacer_init(&p, 1000, 1, 1000000000, 0);
	pacer_count_from(&p, 100 * period);
	CHECK(pacer_due(&p, 0), "first burst due at once");
	/* stalled from 1 ms to 110 ms: 105 bursts forgiven, 6 of them in the window
	 * (100-105 ms; 106-110 ms are caught up) */
	while (pacer_due(&p, 110 * period))
		;
	CHECK(p.forgiven == 6, "only the window's bursts counted: %llu",
	      (unsigned long long)p.forgiven);
	/* a stall wholly before the window counts nothing */
	pacer_init(&p, 1000, 1, 1000000000, 0);
	pacer_count_from(&p, 100 * period);
	while (pacer_due(&p, 50 * period))
		;
	CHECK(p.forgiven == 0, "a warm-up stall counts nothing: %llu",
	      (unsigned long long)p.forgiven);
}

/* a stall across the window's end: the bursts due before it are owed */
static void owed_at_the_end(void)
{
	struct pacer p;
	uint64_t period = 1000000; /* 1 ms */

	pacer_init(&p, 1000, 1, 1000000000, 0);
	pacer_count_from(&p, 10 * period);
	for (uint64_t t = 0; t <= 20 * period; t += period)
		CHECK(pacer_due(&p, t), "on time at %llu ms", (unsigned long long)(t / period));
	CHECK(pacer_owed(&p, 21 * period) == 0, "on time: the last grain is not owed");
	/* stalled from 20 ms to the end at 23 ms: the bursts due at 21 and 22 ms */
	CHECK(pacer_owed(&p, 23 * period) == 2, "owed: %llu",
	      (unsigned long long)pacer_owed(&p, 23 * period));
	/* nothing owed before the window */
	pacer_init(&p, 1000, 1, 1000000000, 0);
	pacer_count_from(&p, 100 * period);
	CHECK(pacer_owed(&p, 50 * period) == 0, "a warm-up's debt is not the window's");
	pacer_init(&p, 0, 32, 1000000000, 0);
	CHECK(pacer_owed(&p, 50 * period) == 0, "rate 0 owes nothing");
}

static void unpaced(void)
{
	struct pacer p;

	pacer_init(&p, 0, 32, 1000000000, 5);
	for (int i = 0; i < 1000; i++)
		CHECK(pacer_due(&p, 5), "rate 0 is always due");
	CHECK(pacer_wait(&p, 5) == 0, "rate 0 never waits");
}

int main(void)
{
	spacing();
	fractional();
	counted_from();
	catch_up();
	owed_at_the_end();
	unpaced();
	return check_done("pacer");
}
