/* The helpers every part of the parse shares (parse.h): a refusal's one
 * line, an option's spelling in it, and lists of words. */
#include "parse.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

bool fail(struct parse *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	return false;
}

const char *opt_label(const char *name, char letter)
{
	static char buf[48];

	if (letter)
		snprintf(buf, sizeof(buf), "-%c/--%s", letter, name);
	else
		snprintf(buf, sizeof(buf), "--%s", name);
	return buf;
}

void list_add(char *buf, size_t len, const char *word)
{
	size_t n = strlen(buf);

	snprintf(buf + n, len - n, "%s%s", n ? ", " : "", word);
}
