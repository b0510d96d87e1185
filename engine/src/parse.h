/* What opts.c (the options one by one) and opts_check.c (what they say
 * together) share while a command line is parsed. */
#ifndef CNFPERF_PARSE_H
#define CNFPERF_PARSE_H

#include <getopt.h>

#include "api/api.h"
#include "opts.h"

struct parse {
	char *err;                         /* the one line of a refusal */
	size_t errlen;
	const struct option *lo;           /* getopt's: the common options, then every api's */
	const struct opt *opt;             /* the common option being set */
	const struct api_opt *egress_by;   /* given, names a second port */
};

/* The common options (opts_table.c); opts_at() is the same for the tests. */
extern const struct opt opts_common[];
extern const size_t opts_ncommon;

/* The bounds of a rate (--rate, a bucket's RATE: frames per second) and of a
 * bucket's BUCKET and QUEUE (frames); --describe says them. */
#define PPS_MAX 1e9
#define BUCKET_MAX 1000000u
#define QUEUE_MAX 65536u

#define COMMON_VAL 256   /* + its row: getopt's code of a common option without a letter */
#define API_OPT_VAL 512  /* + its place in getopt's table: an api's option without a letter */

/* Writes the refusal into p->err; returns false for `return fail(...)`. */
__attribute__((format(printf, 2, 3)))
bool fail(struct parse *p, const char *fmt, ...);

/* "-r/--rate" or "--sport": how an option is spelled in messages. */
const char *opt_label(const char *name, char letter);

/* Appends word to a ", "-separated list in buf. */
void list_add(char *buf, size_t len, const char *word);

/* The role, the api and the options together, once each was taken alone. */
bool opts_check(struct parse *p, struct conf *cf, const struct api_ops *ops);

#endif
