/* A few lines of test harness: every CHECK counts, a failure prints where
 * and why, and the test's exit code is the number of failures. */
#ifndef CNFPERF_CHECK_H
#define CNFPERF_CHECK_H

#include <stdio.h>

static int checks, failures;

#define CHECK(cond, ...) do { \
	checks++; \
	if (!(cond)) { \
		failures++; \
		fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
	} \
} while (0)

static inline int check_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, checks, failures);
	return failures ? 1 : 0;
}

#endif
