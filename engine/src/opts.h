/* Command line of cnfperf-engine: parsed and validated here, before anything
 * is opened, so a mistake costs one line on stderr and exit code 2. Kept
 * apart from main.c so the unit tests can call it without running a role. */
#ifndef CNFPERF_OPTS_H
#define CNFPERF_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/conf.h"

enum opts_result { OPTS_RUN, OPTS_HELP, OPTS_VERSION, OPTS_IDLE, OPTS_ERROR };

/* Fills cf; on OPTS_ERROR, err holds one line (no newline) naming the option.
 * Later options override earlier ones. argv is not modified. After OPTS_RUN
 * the caller frees cf->api_own. */
enum opts_result opts_parse(int argc, char **argv, struct conf *cf, char *err, size_t errlen);
void opts_usage(void *stream);

#endif
