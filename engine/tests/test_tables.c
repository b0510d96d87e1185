/* The tables the engine is made from: common options (opts.c), roles
 * (roles/roles.c), NF kinds (core/nf.c), poll modes (core/poll.c). Every row
 * complete, no two alike, and --help and --describe naming each of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../src/api/api.h"
#include "../src/parse.h"
#include "../src/roles/roles.h"

/* An option of the table or of an api, as getopt would see it. */
static void no_clash(const char *name, char letter, const char *what)
{
	static const char *names[256];
	static char letters[256];
	static size_t n;

	for (size_t i = 0; i < n; i++) {
		CHECK(strcmp(names[i], name), "--%s twice (%s)", name, what);
		CHECK(!letter || letters[i] != letter, "-%c twice (--%s, --%s)", letter, names[i], name);
	}
	if (n < 256) {
		names[n] = name;
		letters[n++] = letter;
	}
}

static void options(void)
{
	const struct opt *o;
	struct conf cf;
	char err[160];
	struct parse p = { .err = err, .errlen = sizeof(err) };

	for (size_t i = 0; (o = opts_at(i)); i++) {
		CHECK(o->name && o->name[0] && o->name[0] != '-', "row %zu has a name", i);
		CHECK(o->help && o->help[0] && o->help[strlen(o->help) - 1] != '\n', "--%s has help", o->name);
		CHECK(!o->set != !o->ends, "--%s sets a value or ends the parse, one of them", o->name);
		CHECK(!(o->value && o->words), "--%s: a value's name or its words, not both", o->name);
		no_clash(o->name, o->letter, "common");
		CHECK(opt_type(o), "--%s: its setter has a type for --describe (opts_table.c, types)", o->name);
		CHECK(!opt_ranged(o) || o->min < o->max, "--%s: a range from min to max", o->name);
		if (opt_ranged(o) && o->def)
			CHECK(strtod(o->def, NULL) >= o->min && strtod(o->def, NULL) <= o->max,
			      "--%s: its default '%s' is in its range", o->name, o->def);
		if (!o->def)
			continue;
		memset(&cf, 0, sizeof(cf));
		p.opt = o;
		err[0] = '\0';
		CHECK(o->set(&p, &cf, o->def), "--%s: its default '%s' is refused: %s", o->name, o->def, err);
	}
	CHECK(opts_at(0) && !opts_at(opts_ncommon), "the table ends");
	CHECK(opts_ncommon < API_OPT_VAL - COMMON_VAL, "getopt codes of common options stay below the apis'");
}

/* Two apis may share an option if they spell it alike; none shares a common one's. */
static void api_options(void)
{
	const struct api_ops *ops;

	for (size_t i = 0; (ops = api_at(i)); i++)
		for (const struct api_opt *a = ops->opts; a && a->name; a++) {
			bool seen = false;
			for (size_t j = 0; j < i && !seen; j++)
				for (const struct api_opt *b = api_at(j)->opts; b && b->name; b++)
					seen |= !strcmp(a->name, b->name) && a->letter == b->letter;
			CHECK(a->help && a->help[0], "--%s of --api %s has help", a->name, ops->name);
			if (!seen)
				no_clash(a->name, a->letter, ops->name);
		}
}

static void roles(void)
{
	const struct role *r;

	for (size_t i = 0; (r = role_at(i)); i++) {
		CHECK(r->name && r->run, "role %zu: a name and a function", i);
		CHECK(role_find(r->name) == r, "%s: found by its name, once", r->name);
		CHECK(r->rx || r->tx, "%s: receives or sends", r->name);
		CHECK(!r->path || (r->two_ports && r->generates), "%s: a path is two ports, and sends", r->name);
		CHECK(!r->forwards || r->two_ports, "%s: a forwarder may take two ports", r->name);
	}
	CHECK(role_find("tester") && !role_find("fwd"), "role_find");
}

static void nf_kinds(void)
{
	const struct nf_kind *k;

	for (size_t i = 0; (k = nf_kind_at(i)); i++) {
		CHECK(k->name && k->burst, "kind %zu: a name and a burst function", i);
		CHECK(nf_kind_find(k->name) == k, "%s: found by its name, once", k->name);
		CHECK(!(k->hairpin && k->routed), "%s: a hairpin has no route to take", k->name);
	}
	CHECK(!strcmp(nf_kind_at(0)->name, "l2"), "l2 is the default kind");
}

/* Each poll mode says what it is, and the properties agree: a mode that
 * neither spins nor sleeps would never poll again; only busy never sleeps
 * (the default, and what a one-thread client needs). */
static void poll_props(void)
{
	for (size_t i = 0; i < POLL_MODES; i++) {
		const struct poll_props *m = &poll_modes[i];
		CHECK(m->name && m->name[0], "poll mode %zu has a name", i);
		CHECK(m->spins || m->sleeps, "--poll %s spins or sleeps", m->name);
		CHECK(!m->interrupts || !m->spins, "--poll %s: waits for interrupts, so does not spin", m->name);
		CHECK(!m->paced || m->sleeps, "--poll %s: follows a pace by sleeping", m->name);
		CHECK(m->sleeps == (i != POLL_BUSY), "--poll %s: only busy never sleeps", m->name);
	}
}

/* What a printer of the engine's tables wrote, whole (the caller frees it). */
static char *printed(void (*print)(void *stream), size_t *len)
{
	char *text = NULL;
	FILE *f = open_memstream(&text, len);

	print(f);
	fclose(f);
	return text;
}

/* --describe names every role, api, NF kind, poll mode and option, each
 * option with its type. */
static void described(void)
{
	char want[160];
	size_t len = 0;
	char *text = printed(opts_describe, &len);
	const struct opt *o;
	const struct role *r;
	const struct nf_kind *k;
	const struct api_ops *ops;

	CHECK(len > 2 && text[0] == '{' && !strcmp(text + len - 2, "}\n") && strchr(text, '\n') == text + len - 1,
	      "--describe is one JSON object, one line");
	for (size_t i = 0; (o = opts_at(i)); i++) {
		snprintf(want, sizeof(want), "{\"name\": \"%s\", \"letter\": ", o->name);
		char *at = strstr(text, want);
		CHECK(at, "--describe names --%s", o->name);
		snprintf(want, sizeof(want), "\"type\": \"%s\"", opt_type(o));
		CHECK(at && strstr(at, want) == strstr(at, "\"type\""), "--describe gives --%s its type", o->name);
	}
	for (size_t i = 0; (r = role_at(i)); i++) {
		snprintf(want, sizeof(want), "{\"name\": \"%s\", \"generates\"", r->name);
		CHECK(strstr(text, want), "--describe names the role %s", r->name);
	}
	for (size_t i = 0; (ops = api_at(i)); i++) {
		snprintf(want, sizeof(want), "{\"name\": \"%s\", \"l2\": %s", ops->name, ops->l2 ? "true" : "false");
		CHECK(strstr(text, want), "--describe names the api %s", ops->name);
	}
	for (size_t i = 0; (k = nf_kind_at(i)); i++) {
		snprintf(want, sizeof(want), "{\"name\": \"%s\", \"ports\": %d, \"next_hop\": %s, \"routed\": %s}",
			 k->name, k->hairpin ? 1 : 2, k->next_hop ? "true" : "false", k->routed ? "true" : "false");
		CHECK(strstr(text, want), "--describe gives the NF kind %s its properties", k->name);
	}
	for (size_t i = 0; i < POLL_MODES; i++) {
		snprintf(want, sizeof(want), "{\"name\": \"%s\", \"spins\"", poll_modes[i].name);
		CHECK(strstr(text, want), "--describe names the poll mode %s", poll_modes[i].name);
	}
	free(text);
}

/* What follows an option's name in --help: " VALUE", " first|...", or nothing. */
static const char *after_name(const struct opt *o)
{
	static char buf[48];

	snprintf(buf, sizeof(buf), "%s%s", o->value || o->words ? " " : "",
		 o->value ? o->value : o->words ? o->words(0) : "");
	return buf;
}

/* --help names every role, option (with its letter), api option and NF kind. */
static void usage(void)
{
	char want[96];
	size_t len = 0;
	char *text = printed(opts_usage, &len);
	const struct opt *o;
	const struct role *r;
	const struct nf_kind *k;
	const struct api_ops *ops;

	for (size_t i = 0; (o = opts_at(i)); i++) {
		snprintf(want, sizeof(want), "  %s%s", opt_label(o->name, o->letter), after_name(o));
		CHECK(strstr(text, want), "--help names %s", want);
	}
	for (size_t i = 0; (ops = api_at(i)); i++)
		for (const struct api_opt *a = ops->opts; a && a->name; a++) {
			snprintf(want, sizeof(want), "  %s", opt_label(a->name, a->letter));
			CHECK(strstr(text, want), "--help names %s of --api %s", want, ops->name);
		}
	for (size_t i = 0; (r = role_at(i)); i++) {
		snprintf(want, sizeof(want), " %s", r->name);
		CHECK(strstr(strstr(text, "roles:"), want), "--help names the role %s", r->name);
	}
	for (size_t i = 0; (k = nf_kind_at(i)); i++) {
		snprintf(want, sizeof(want), "%c%s%c", i ? '|' : ' ', k->name, nf_kind_at(i + 1) ? '|' : '\n');
		CHECK(strstr(strstr(text, "--nf"), want), "--help lists the NF kind %s", k->name);
	}
	free(text);
}

int main(void)
{
	options();
	api_options();
	roles();
	nf_kinds();
	poll_props();
	usage();
	described();
	return check_done("tables");
}
