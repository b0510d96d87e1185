/* --describe: what this engine is, has and takes, as one JSON document, read
 * from the tables the engine itself runs on (roles/roles.c, api/api.c,
 * core/nf.c, core/poll.c, opts_table.c): the orchestrator derives its lists
 * from it, or its tests hold its own copies to it. The shape is in
 * engine/README.md (--describe). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "parse.h"
#include "roles/roles.h"

#ifndef ENGINE_VERSION
#define ENGINE_VERSION "0.0.0"
#endif

/* A number as JSON: whole numbers without a fraction, others as short as exact. */
static void number(struct json *j, const char *k, double v)
{
	json_key(j, k);
	fprintf(j->f, "%.15g", v);
}

static void roles(struct json *j)
{
	const struct role *r;

	json_open(j, "roles", '[');
	for (size_t i = 0; (r = role_at(i)); i++) {
		json_open(j, NULL, '{');
		json_str(j, "name", r->name);
		json_bool(j, "generates", r->generates);
		json_bool(j, "end", r->end);
		json_bool(j, "rx", r->rx);
		json_bool(j, "tx", r->tx);
		json_bool(j, "latency", r->latency);
		json_bool(j, "two_ports", r->two_ports);
		json_bool(j, "forwards", r->forwards);
		json_bool(j, "path", r->path);
		json_bool(j, "threads", r->threads);
		json_bool(j, "peer_stamps", r->peer_stamps);
		json_bool(j, "queues", r->queues);
		json_close(j, '{');
	}
	json_close(j, '[');
}

static void letter(struct json *j, char c)
{
	char s[2] = { c, 0 };

	json_str(j, "letter", c ? s : NULL);
}

/* Each api built in, with its own options (they have no type beyond the
 * value's name: their set() hooks are the api's). */
static void apis(struct json *j)
{
	const struct api_ops *ops;
	const char *name;

	json_open(j, "apis", '[');
	for (size_t i = 0; (ops = api_at(i)); i++) {
		json_open(j, NULL, '{');
		json_str(j, "name", ops->name);
		json_bool(j, "l2", ops->l2);
		json_bool(j, "needs_iface", ops->needs_iface);
		json_bool(j, "queues", ops->queues);
		json_open(j, "options", '[');
		for (const struct api_opt *a = ops->opts; a && a->name; a++) {
			json_open(j, NULL, '{');
			json_str(j, "name", a->name);
			letter(j, a->letter);
			json_str(j, "type", a->value ? "value" : "flag");
			json_str(j, "value", a->value);
			json_bool(j, "egress", a->egress);
			json_str(j, "help", a->help);
			json_close(j, '{');
		}
		json_close(j, '[');
		json_close(j, '{');
	}
	json_close(j, '[');
	json_open(j, "known_apis", '[');
	for (size_t i = 0; (name = api_known_at(i)); i++)
		json_str(j, NULL, name);
	json_close(j, '[');
}

static void nfs(struct json *j)
{
	const struct nf_kind *k;

	json_open(j, "nfs", '[');
	for (size_t i = 0; (k = nf_kind_at(i)); i++) {
		json_open(j, NULL, '{');
		json_str(j, "name", k->name);
		json_u64(j, "ports", k->hairpin ? 1 : 2);
		json_bool(j, "next_hop", k->next_hop);
		json_bool(j, "routed", k->routed);
		json_close(j, '{');
	}
	json_close(j, '[');
}

static void polls(struct json *j)
{
	json_open(j, "polls", '[');
	for (size_t i = 0; i < POLL_MODES; i++) {
		const struct poll_props *m = &poll_modes[i];
		json_open(j, NULL, '{');
		json_str(j, "name", m->name);
		json_bool(j, "spins", m->spins);
		json_bool(j, "sleeps", m->sleeps);
		json_bool(j, "paced", m->paced);
		json_bool(j, "interrupts", m->interrupts);
		json_close(j, '{');
	}
	json_close(j, '[');
}

/* The default as --help shows it: the row's, else a choice's first word;
 * a number for a number, false for a flag. */
static void default_of(struct json *j, const struct opt *o)
{
	const char *def = o->def ? o->def : o->words ? o->words(0) : NULL;

	if (!o->set)
		json_null(j, "default");
	else if (!def && !o->value && !o->words)
		json_bool(j, "default", false);
	else if (def && opt_ranged(o))
		number(j, "default", strtod(def, NULL));
	else
		json_str(j, "default", def);
}

/* A bucket's parts, each a number in its range: RATE above its min (frames
 * per second, as --rate writes it), BUCKET and QUEUE whole frames. */
static void parts(struct json *j, const struct opt *o)
{
	static const struct { const char *name, *type; double min, max; bool above; } all[] = {
		{ "RATE", "rate", 0, PPS_MAX, true },
		{ "BUCKET", "integer", 1, BUCKET_MAX, false },
		{ "QUEUE", "integer", 1, QUEUE_MAX, false },
	};
	size_t n = 1;

	for (const char *c = o->value; *c; c++)
		n += *c == ',';
	json_open(j, "parts", '[');
	for (size_t i = 0; i < n && i < 3; i++) {
		json_open(j, NULL, '{');
		json_str(j, "name", all[i].name);
		json_str(j, "type", all[i].type);
		number(j, "min", all[i].min);
		number(j, "max", all[i].max);
		json_bool(j, "above_min", all[i].above);
		json_close(j, '{');
	}
	json_close(j, '[');
}

static void options(struct json *j)
{
	const struct opt *o;

	json_open(j, "options", '[');
	for (size_t i = 0; (o = opts_at(i)); i++) {
		json_open(j, NULL, '{');
		json_str(j, "name", o->name);
		letter(j, o->letter);
		json_str(j, "type", opt_type(o));
		json_str(j, "value", o->value);
		if (o->words) {
			json_open(j, "words", '[');
			for (size_t w = 0; o->words(w); w++)
				json_str(j, NULL, o->words(w));
			json_close(j, '[');
		}
		if (!strcmp(opt_type(o), "bucket"))
			parts(j, o);
		if (opt_ranged(o)) {
			number(j, "min", o->min);
			number(j, "max", o->max);
		}
		default_of(j, o);
		json_bool(j, "ends", o->ends != OPTS_RUN);
		json_str(j, "help", o->help);
		json_close(j, '{');
	}
	json_close(j, '[');
}

void opts_describe(void *stream)
{
	struct json j;

	json_begin(&j, stream);
	json_str(&j, "version", ENGINE_VERSION);
	roles(&j);
	apis(&j);
	nfs(&j);
	polls(&j);
	options(&j);
	json_end(&j);
}
