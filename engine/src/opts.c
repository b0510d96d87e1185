/* The parse: getopt's tables made from the common options (opts_table.c) and
 * every api's own, the options taken one by one, the api's handed to it,
 * then checked together (opts_check.c); and --help, made from the same tables. */
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roles/roles.h"

static bool takes_value(const struct opt *o)
{
	return o->value || o->words;
}

static int val_of(const struct opt *o)
{
	return o->letter ? o->letter : COMMON_VAL + (int)(o - opts_common);
}

/* The common option getopt returned code c for, or NULL (an api's). */
static const struct opt *row_of(int c)
{
	for (size_t i = 0; i < opts_ncommon; i++)
		if (val_of(&opts_common[i]) == c)
			return &opts_common[i];
	return NULL;
}

/* Every default that is written in the table, through its row's setter. */
static void defaults(struct conf *cf)
{
	struct parse p = { .err = (char[160]){ 0 }, .errlen = 160 };

	memset(cf, 0, sizeof(*cf));
	cf->api = api_at(0)->name;
	cf->cpu = -1;
	cf->rx_cpu = -1;
	for (p.opt = opts_common; p.opt < opts_common + opts_ncommon; p.opt++)
		if (p.opt->def && !p.opt->set(&p, cf, p.opt->def))
			fprintf(stderr, "cnfperf-engine: internal: default of --%s: %s\n", p.opt->name, p.err);
}

/* getopt must know every api's options before it has seen --api: lo gets the
 * common ones, then one entry per api option name, and shorts their letters.
 * Two apis may share an option only if they spell it alike. */
static void add_short(char *shorts, char letter, bool value)
{
	size_t m = strlen(shorts);

	shorts[m++] = letter;
	if (value)
		shorts[m++] = ':';
	shorts[m] = '\0';
}

static bool add_api_opt(struct parse *p, struct option *lo, size_t *k, char *shorts, const struct api_opt *a,
			const char *api)
{
	int has = a->value ? required_argument : no_argument;
	size_t j = 0;

	while (j < *k && strcmp(lo[j].name, a->name))
		j++;
	int val = a->letter ? a->letter : API_OPT_VAL + (int)j;
	if (j < *k && (j < opts_ncommon || lo[j].val != val || lo[j].has_arg != has))
		return fail(p, "internal: --%s of --api %s clashes with another option", a->name, api);
	if (j < *k)
		return true;
	if (a->letter && strchr(shorts, a->letter))
		return fail(p, "internal: -%c of --api %s clashes with another option", a->letter, api);
	lo[(*k)++] = (struct option){ a->name, has, NULL, val };
	if (a->letter)
		add_short(shorts, a->letter, has);
	return true;
}

static bool getopt_tables(struct parse *p, struct option *lo, char *shorts)
{
	const struct api_ops *ops;
	size_t k = opts_ncommon;

	/* '+': stop at the first argument that is not an option; ':': say when a value is missing */
	strcpy(shorts, "+:");
	for (size_t i = 0; i < opts_ncommon; i++) {
		const struct opt *o = &opts_common[i];
		lo[i] = (struct option){ o->name, takes_value(o) ? required_argument : no_argument, NULL, val_of(o) };
		if (o->letter)
			add_short(shorts, o->letter, takes_value(o));
	}
	for (size_t i = 0; (ops = api_at(i)); i++)
		for (const struct api_opt *a = ops->opts; a && a->name; a++)
			if (!add_api_opt(p, lo, &k, shorts, a, ops->name))
				return false;
	lo[k] = (struct option){ NULL, 0, NULL, 0 };
	return true;
}

/* The name users typed for an option getopt knows, for messages. */
static const char *optname(const struct parse *p, int code)
{
	static char buf[48];

	for (const struct option *lo = p->lo; lo->name; lo++)
		if (lo->val == code)
			return opt_label(lo->name, code < COMMON_VAL ? (char)code : 0);
	snprintf(buf, sizeof(buf), "-%c", code);
	return buf;
}

/* The table entry of an api option getopt returned, or NULL for a common one. */
static const struct option *api_entry(const struct parse *p, int c)
{
	for (const struct option *lo = p->lo + opts_ncommon; lo->name; lo++)
		if (lo->val == c)
			return lo;
	return NULL;
}

/* An api option as given: its entry in the table and its value. */
struct given {
	const struct option *lo;
	char *arg;
};

/* Runs the chosen api's hooks on the options collected for it, in order. */
static bool api_options(struct parse *p, struct conf *cf, const struct api_ops *ops, const struct given *g, int n)
{
	char why[160], has[160] = "";

	if (ops->own_size && !(cf->api_own = calloc(1, ops->own_size)))
		return fail(p, "--api: out of memory");
	for (int i = 0; i < n; i++) {
		const struct api_opt *a = ops->opts;
		while (a && a->name && strcmp(a->name, g[i].lo->name))
			a++;
		if (!a || !a->name) {
			for (a = ops->opts; a && a->name; a++)
				list_add(has, sizeof(has), opt_label(a->name, a->letter));
			return fail(p, "%s: not an option of --api %s (%s%s)", optname(p, g[i].lo->val), cf->api,
				    has[0] ? "its options: " : "it has none of its own", has);
		}
		if (!a->set(cf->api_own, g[i].arg, why, sizeof(why)))
			return fail(p, "%s: %s", opt_label(a->name, a->letter), why);
		if (a->egress)
			p->egress_by = a;
	}
	cf->egress = p->egress_by != NULL;
	return true;
}

/* "send, recv, client, server, nf, tester" */
static const char *role_list(void)
{
	static char list[96];
	const struct role *r;

	list[0] = '\0';
	for (size_t i = 0; (r = role_at(i)); i++)
		list_add(list, sizeof(list), r->name);
	return list;
}

/* The api named by --api, or NULL after saying why not. */
static const struct api_ops *chosen(struct parse *p, const struct conf *cf)
{
	const struct api_ops *ops = api_find(cf->api);

	if (!ops && api_known(cf->api))
		fail(p, "--api: '%s' is not built into this engine (it has: %s)", cf->api, api_names());
	else if (!ops)
		fail(p, "--api: '%s' is not an api (one of: %s)", cf->api, api_names());
	return ops;
}

/* What stands before the role: --version, --describe, --help, --idle, or OPTS_RUN for a role. */
static enum opts_result first(struct parse *p, int argc, char **argv, struct conf *cf)
{
	if (argc < 2)
		return fail(p, "ROLE: missing (%s); --help lists the options", role_list()), OPTS_ERROR;
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))
		return OPTS_VERSION;
	if (!strcmp(argv[1], "--describe"))
		return OPTS_DESCRIBE;
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return OPTS_HELP;
	if (!strcmp(argv[1], "--idle") && argc > 2)
		return fail(p, "--idle: takes no other argument ('%s')", argv[2]), OPTS_ERROR;
	if (!strcmp(argv[1], "--idle"))
		return OPTS_IDLE;
	if (!(cf->role = role_find(argv[1])))
		return fail(p, "ROLE: '%s' is not a role (%s)", argv[1], role_list()), OPTS_ERROR;
	return OPTS_RUN;
}

/* One option getopt returned (c, with optarg). OPTS_RUN: go on. */
static enum opts_result one(struct parse *p, struct conf *cf, int c, char **args, struct given *g, int *ng)
{
	const struct opt *o = row_of(c);

	if (o && o->ends)
		return o->ends;
	/* an unknown option is reported once --api is known: an api not
	 * built in may be why, so after one only --api still counts */
	if (c == '?' && !p->err[0]) {
		if (optopt && optopt < COMMON_VAL)
			fail(p, "-%c: unknown option", optopt);
		else
			fail(p, "%s: unknown option", args[optind - 1]);
	}
	if (p->err[0]) {
		if (o && !strcmp(o->name, "api"))
			cf->api = optarg;
		return OPTS_RUN;
	}
	if (c == ':')
		return fail(p, "%s: needs a value", optopt ? optname(p, optopt) : args[optind - 1]), OPTS_ERROR;
	/* an api's options wait until --api is known, wherever it stands */
	if ((g[*ng].lo = api_entry(p, c))) {
		g[(*ng)++].arg = optarg;
		return OPTS_RUN;
	}
	p->opt = o;
	return o->set(p, cf, optarg) ? OPTS_RUN : OPTS_ERROR;
}

enum opts_result opts_parse(int argc, char **argv, struct conf *cf, char *err, size_t errlen)
{
	struct parse p = { .err = err, .errlen = errlen };
	const struct api_ops *ops;
	enum opts_result r;
	size_t napi = 0;

	defaults(cf);
	err[0] = '\0';
	if ((r = first(&p, argc, argv, cf)) != OPTS_RUN)
		return r;
	for (size_t i = 0; (ops = api_at(i)); i++)
		for (const struct api_opt *a = ops->opts; a && a->name; a++)
			napi++;

	struct option lo[opts_ncommon + napi + 1];
	char shorts[3 + 2 * (opts_ncommon + napi)];
	if (!getopt_tables(&p, lo, shorts))
		return OPTS_ERROR;
	p.lo = lo;

	/* getopt on a copy: it reorders nothing with '+', but keep argv const anyway */
	char *args[argc + 1];
	struct given given[argc];
	int n = argc - 1, ngiven = 0, c;
	memcpy(args, argv + 1, sizeof(char *) * (size_t)n);
	args[n] = NULL;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(n, args, shorts, lo, NULL)) != -1)
		if ((r = one(&p, cf, c, args, given, &ngiven)) != OPTS_RUN)
			return r;
	if (err[0]) {
		chosen(&p, cf);
		return OPTS_ERROR;
	}
	if (optind < n) {
		if (strcmp(args[optind - 1], "--") != 0) {
			fail(&p, "'%s': unexpected argument (EAL arguments go after --)", args[optind]);
			return OPTS_ERROR;
		}
		cf->eal_argc = n - optind;
		cf->eal_argv = argv + 1 + optind;
	}
	if (!(ops = chosen(&p, cf)) || !api_options(&p, cf, ops, given, ngiven) || !opts_check(&p, cf, ops)) {
		free(cf->api_own);
		cf->api_own = NULL;
		return OPTS_ERROR;
	}
	return OPTS_RUN;
}

#define HELP_COLUMN 24

/* "  -r/--rate PPS         offered rate ..." and the help's further lines
 * under it; a long option and value put the help on the next line. */
static void usage_line(FILE *f, const char *name, char letter, const char *value, opts_words_fn words,
		       const char *help, const char *def)
{
	int w = fprintf(f, "  %s", opt_label(name, letter));

	if (value)
		w += fprintf(f, " %s", value);
	for (size_t i = 0; words && words(i); i++)
		w += fprintf(f, "%c%s", i ? '|' : ' ', words(i));
	if (w >= HELP_COLUMN)
		w = fprintf(f, "\n") - 1;
	for (const char *s = help, *nl;; s = nl + 1, w = 0) {
		nl = strchr(s, '\n');
		int len = nl ? (int)(nl - s) : (int)strlen(s);
		/* the default joins a closing parenthesis: "(0 = max; default 0)" */
		bool join = def && !nl && len && s[len - 1] == ')';
		fprintf(f, "%*s%.*s", HELP_COLUMN - w, "", len - join, s);
		if (!nl) {
			if (def)
				fprintf(f, join ? "; default %s)" : " (default %s)", def);
			break;
		}
		fputc('\n', f);
	}
	fputc('\n', f);
}

static void usage_api(FILE *f, const struct api_ops *ops)
{
	fprintf(f, "api %s%s%s\n", ops->name, ops->needs_iface ? " (needs --iface)" : "",
		ops->opts && ops->opts->name ? ":" : ": no options of its own");
	for (const struct api_opt *a = ops->opts; a && a->name; a++)
		usage_line(f, a->name, a->letter, a->value, NULL, a->help, NULL);
}

void opts_usage(void *stream)
{
	const struct api_ops *ops;
	const struct role *r;

	fputs("usage: cnfperf-engine ROLE [options] [-- EAL args]\n"
	      "       cnfperf-engine --idle   do nothing until SIGTERM or SIGINT, reaping orphans\n"
	      "                               (a container's init when its image holds only this engine)\n"
	      "roles:", stream);
	for (size_t i = 0; (r = role_at(i)); i++)
		fprintf(stream, " %s", r->name);
	fputs("\noptions:\n", stream);
	for (size_t i = 0; i < opts_ncommon; i++) {
		const struct opt *o = &opts_common[i];
		/* a choice without a default of its own takes its first word */
		usage_line(stream, o->name, o->letter, o->value, o->words, o->help,
			   o->def ? o->def : o->words ? o->words(0) : NULL);
	}
	fputs("Each api's own options (before or after --api):\n", stream);
	for (size_t i = 0; (ops = api_at(i)); i++)
		usage_api(stream, ops);
}
