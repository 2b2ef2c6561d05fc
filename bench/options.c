#define _GNU_SOURCE
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

typedef enum kind {
	K_U32,
	K_U64,
	K_DURATION,
	K_MODES,
	K_OP,
	K_RATE,
	K_PAUSE,
	K_FENCE,
	K_PAUSE_AT,
	K_PROGRESS,
	K_STRING,
	K_FLAG,
	K_HELP,
	K_VERSION,
} kind;

typedef struct opt {
	const char *name;
	int short_name;  /* 0: long only */
	const char *arg; /* NULL: takes no value */
	kind k;
	size_t off;
	uint64_t min, max; /* K_U32, K_U64 */
	const char *json;  /* key in the JSON "config" echo; NULL: not echoed */
	double json_unit;  /* K_DURATION: ns per unit of the JSON key */
	bool replay;       /* part of the replay command line */
	const char *help;
} opt;

#define OFF(f) offsetof(fb_config, f)

static const opt opts[] = {
        {"threads", 't', "N", K_U32, OFF(threads), 1, FB_MAX_THREADS, "threads", 0, true,
         "worker threads (default: online CPUs)"},
        {"duration", 'd', "D", K_DURATION, OFF(duration_ns), 0, 0, "duration_s", 1e9, true,
         "how long to run; units us ms s m h, bare number = seconds (default 10s)"},
        {"keys", 'k', "N", K_U32, OFF(keys), 1, 1000000, "keys", 0, true,
         "leases (accounts) the workers contend for (default 16)"},
        {"ttl", 0, "D", K_DURATION, OFF(ttl_ns), 0, 0, "ttl_ms", 1e6, true,
         "lease time to live (default 10ms)"},
        {"mode", 0, "LIST", K_MODES, OFF(modes), 0, 0, "modes", 0, true,
         "storage disciplines side by side: fenced,write-fenced,unfenced (default all)"},
        {"op", 0, "OP", K_OP, OFF(op), 0, 0, "op", 0, true,
         "rmw: the client reads and writes balance-1; debit: the store subtracts (default rmw)"},
        {"pause-rate", 0, "R", K_RATE, OFF(pause_rate), 0, 0, "pause_rate", 0, true,
         "injected pauses per second, 0 for none (default 50)"},
        {"pause", 0, "D[-D]", K_PAUSE, OFF(pause_min_ns), 0, 0, "pause_ms", 1e6, true,
         "pause length or range (default 1.5-3 x TTL)"},
        {"pause-at", 0, "WHERE", K_PAUSE_AT, OFF(pause_at), 0, 0, "pause_at", 0, true,
         "any (a signal anywhere), after-read, takeover (the next holder is caught after its read "
         "too), mix (default)"},
        {"fence", 0, "SRC", K_FENCE, OFF(fence), 0, 0, "fence", 0, true,
         "fence source: global (one counter) or per-key (default global)"},
        {"first-fence", 0, "N", K_U64, OFF(first_fence), 1, FB_FENCE_MAX / 2, "first_fence", 0,
         true, "the first fence minted (default 1; the article uses 33)"},
        {"seed", 0, "N", K_U64, OFF(seed), 0, UINT64_MAX, "seed", 0, true,
         "seed of every random choice (default 1; always printed)"},
        {"sample", 0, "N", K_U32, OFF(sample), 1, 1u << 20, "latency_sample", 0, true,
         "time one cycle in N for the latency histograms (default 8)"},
        {"json", 0, "FILE", K_STRING, OFF(json_path), 0, 0, NULL, 0, false,
         "also write the JSON document to FILE"},
        {"results-dir", 'o', "DIR", K_STRING, OFF(results_dir), 0, 0, "results_dir", 0, false,
         "where the JSON and CSV go (default results/)"},
        {"progress", 0, "WHEN", K_PROGRESS, OFF(progress), 0, 0, NULL, 0, false,
         "progress line on stderr: auto (on a terminal), always, never"},
        {"quiet", 'q', NULL, K_FLAG, OFF(quiet), 0, 0, NULL, 0, false, "no progress line"},
        {"help", 'h', NULL, K_HELP, 0, 0, 0, NULL, 0, false, "this help"},
        {"version", 'V', NULL, K_VERSION, 0, 0, 0, NULL, 0, false, "print the version"},
};

#define NOPTS (sizeof opts / sizeof opts[0])

static const char *const op_names[] = {"rmw", "debit"};
static const char *const progress_names[] = {"auto", "always", "never"};

void fb_config_defaults(fb_config *cfg)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	*cfg = (fb_config){
	        .threads = cpus > 0 && cpus < FB_OWNER_MAX ? (uint32_t)cpus : 1,
	        .duration_ns = UINT64_C(10000000000),
	        .keys = 16,
	        .ttl_ns = 10000000,
	        .modes = (1u << FB_FENCED) | (1u << FB_WRITE_FENCED) | (1u << FB_UNFENCED),
	        .op = FB_OP_RMW,
	        .pause_rate = 50,
	        .pause_at = FB_PAUSE_MIX,
	        .fence = FB_FENCE_GLOBAL,
	        .first_fence = 1,
	        .seed = 1,
	        .sample = 8,
	        .results_dir = "results",
	        .progress = FB_PROGRESS_AUTO,
	        .initial_balance = INT64_C(1000000000000),
	        .amount = 1,
	};
}

static void *field(fb_config *cfg, const opt *o)
{
	return (char *)cfg + o->off;
}

static const void *cfield(const fb_config *cfg, const opt *o)
{
	return (const char *)cfg + o->off;
}

static int bad(const opt *o, const char *v, const char *why)
{
	fprintf(stderr, "fencebench: --%s: '%s' %s\n", o->name, v, why);
	return -1;
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	if (!*s || *s == '-' || *s == '+')
		return -1;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int fb_parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"", 1e9}};
	const char *p = s;
	if (!(*p >= '0' && *p <= '9'))
		return -1;
	while ((*p >= '0' && *p <= '9') || *p == '.')
		p++;
	char num[64];
	size_t n = (size_t)(p - s);
	if (n >= sizeof num)
		return -1;
	memcpy(num, s, n);
	num[n] = 0;
	char *end;
	double v = strtod(num, &end);
	if (*end || !isfinite(v))
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(p, units[i].unit) != 0)
			continue;
		double t = v * units[i].ns;
		/* a year is more than any run needs and far below 2^64 ns */
		if (t < 1 || t > 365 * 24 * 3600e9)
			return -1;
		*ns = (uint64_t)llround(t);
		return 0;
	}
	return -1;
}

void fb_format_duration(char *buf, size_t len, uint64_t ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"h", 3600000000000u},
	             {"m", 60000000000u},
	             {"s", 1000000000u},
	             {"ms", 1000000u},
	             {"us", 1000u}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (ns >= units[i].ns || i + 1 == sizeof units / sizeof units[0]) {
			snprintf(buf, len, "%.4g%s", (double)ns / (double)units[i].ns,
			         units[i].unit);
			return;
		}
	}
}

static int parse_name(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static int parse_modes(const opt *o, const char *v, uint32_t *out)
{
	uint32_t m = 0;
	char buf[256];
	if (strlen(v) >= sizeof buf || !*v)
		return bad(o, v, "is not a list of fenced, write-fenced, unfenced");
	strcpy(buf, v);
	for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int d;
		for (d = 0; d < FB_DISCIPLINES; d++)
			if (strcmp(tok, fb_discipline_name((fb_discipline)d)) == 0 ||
			    strcmp(tok, fb_discipline_key((fb_discipline)d)) == 0)
				break;
		if (d == FB_DISCIPLINES) {
			fprintf(stderr,
			        "fencebench: --%s: unknown mode '%s' in '%s' (valid: fenced, "
			        "write-fenced, unfenced)\n",
			        o->name, tok, v);
			return -1;
		}
		m |= 1u << d;
	}
	if (!m)
		return bad(o, v, "selects no mode");
	*out = m;
	return 0;
}

static int parse_value(fb_config *cfg, const opt *o, const char *v)
{
	void *f = field(cfg, o);
	uint64_t u;
	int i;
	switch (o->k) {
	case K_U32:
	case K_U64:
		if (parse_u64(v, o->min, o->max, &u)) {
			char why[96];
			snprintf(why, sizeof why, "is not a whole number in %llu..%llu",
			         (unsigned long long)o->min, (unsigned long long)o->max);
			return bad(o, v, why);
		}
		if (o->k == K_U32)
			*(uint32_t *)f = (uint32_t)u;
		else
			*(uint64_t *)f = u;
		return 0;
	case K_DURATION:
		if (fb_parse_duration(v, (uint64_t *)f))
			return bad(o, v,
			           "is not a duration above zero (e.g. 250ms, 10s, 5m; units us ms "
			           "s m h)");
		return 0;
	case K_MODES:
		return parse_modes(o, v, (uint32_t *)f);
	case K_OP:
		if ((i = parse_name(v, op_names, 2)) < 0)
			return bad(o, v, "is not an operation (rmw or debit)");
		*(fb_op *)f = (fb_op)i;
		return 0;
	case K_FENCE:
		if (strcmp(v, "global") == 0)
			cfg->fence = FB_FENCE_GLOBAL;
		else if (strcmp(v, "per-key") == 0)
			cfg->fence = FB_FENCE_PER_KEY;
		else
			return bad(o, v, "is not a fence source (global or per-key)");
		return 0;
	case K_PAUSE_AT:
		for (i = 0; i <= FB_PAUSE_MIX; i++)
			if (strcmp(v, fb_pause_at_name((fb_pause_at)i)) == 0)
				break;
		if (i > FB_PAUSE_MIX)
			return bad(o, v, "is not a pause point (any, after-read, takeover, mix)");
		cfg->pause_at = (fb_pause_at)i;
		return 0;
	case K_PROGRESS:
		if ((i = parse_name(v, progress_names, 3)) < 0)
			return bad(o, v, "is not auto, always or never");
		*(fb_progress *)f = (fb_progress)i;
		return 0;
	case K_RATE: {
		char *end;
		errno = 0;
		double r = strtod(v, &end);
		if (!*v || *end || errno || !isfinite(r) || r < 0 || r > 1e6)
			return bad(o, v, "is not a rate in 0..1000000 per second");
		*(double *)f = r;
		return 0;
	}
	case K_PAUSE: {
		char buf[128];
		if (strlen(v) >= sizeof buf)
			return bad(o, v, "is too long");
		strcpy(buf, v);
		char *dash = strchr(buf, '-');
		if (dash)
			*dash = 0;
		if (fb_parse_duration(buf, &cfg->pause_min_ns))
			return bad(o, v, "is not a duration or range (e.g. 20ms or 15ms-30ms)");
		cfg->pause_max_ns = cfg->pause_min_ns;
		if (dash && fb_parse_duration(dash + 1, &cfg->pause_max_ns))
			return bad(o, v, "is not a duration or range (e.g. 20ms or 15ms-30ms)");
		if (cfg->pause_min_ns > cfg->pause_max_ns)
			return bad(o, v, "is a range whose minimum exceeds its maximum");
		cfg->pause_given = true;
		return 0;
	}
	case K_STRING:
		if (!*v)
			return bad(o, v, "is empty");
		*(const char **)f = v;
		return 0;
	default:
		return 0;
	}
}

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: fencebench [OPTION]...\n"
	        "Stress a lease table and three storage disciplines side by side: worker\n"
	        "threads take leases that mint fencing tokens, debit accounts under them while\n"
	        "an injector suspends lease holders past the TTL, and an independent checker\n"
	        "counts the stale writes each store accepted and the updates it lost.\n\n"
	        "Options:\n");
	for (size_t i = 0; i < NOPTS; i++) {
		const opt *o = &opts[i];
		char lhs[64], sh[8] = "    ";
		if (o->short_name)
			snprintf(sh, sizeof sh, "-%c, ", o->short_name);
		snprintf(lhs, sizeof lhs, "%s--%s%s%s", sh, o->name, o->arg ? " " : "",
		         o->arg ? o->arg : "");
		fprintf(out, "  %-26s %s\n", lhs, o->help);
	}
	fprintf(out, "\nExit status:\n"
	             "  0  every fenced discipline held: no stale write accepted, no update lost\n"
	             "  1  a fenced discipline accepted a stale write or lost an update, or the\n"
	             "     checker disagreed with the store\n"
	             "  2  bad option or value\n"
	             "  3  runtime error (threads, memory, results directory)\n"
	             "  130, 143  interrupted by SIGINT, SIGTERM (results so far are written)\n\n"
	             "Example: fencebench -t 64 -d 60s --pause-rate 40 --pause 15ms-30ms\n");
}

fb_parse fb_config_parse(fb_config *cfg, int argc, char **argv)
{
	struct option lo[NOPTS + 1];
	char shorts[2 * NOPTS + 2], *sp = shorts;
	*sp++ = ':';
	for (size_t i = 0; i < NOPTS; i++) {
		lo[i] = (struct option){opts[i].name, opts[i].arg ? required_argument : no_argument,
		                        NULL,
		                        opts[i].short_name ? opts[i].short_name : 256 + (int)i};
		if (opts[i].short_name) {
			*sp++ = (char)opts[i].short_name;
			if (opts[i].arg)
				*sp++ = ':';
		}
	}
	*sp = 0;
	lo[NOPTS] = (struct option){0, 0, 0, 0};
	opterr = 0;
	optind = 1;
	int c;
	while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
		if (c == '?' || c == ':') {
			const char *arg = argv[optind - 1];
			if (c == ':')
				fprintf(stderr,
				        "fencebench: option '%s' needs a value (see --help)\n",
				        arg);
			else if (optopt)
				fprintf(stderr, "fencebench: unknown option '-%c' (see --help)\n",
				        optopt);
			else
				fprintf(stderr, "fencebench: unknown option '%s' (see --help)\n",
				        arg);
			return FB_PARSE_USAGE;
		}
		const opt *o = NULL;
		for (size_t i = 0; i < NOPTS; i++)
			if ((opts[i].short_name && c == opts[i].short_name) || c == 256 + (int)i)
				o = &opts[i];
		if (!o)
			return FB_PARSE_USAGE;
		if (o->k == K_HELP) {
			usage(stdout);
			return FB_PARSE_EXIT0;
		}
		if (o->k == K_VERSION) {
			printf("fencebench %s\n", FB_VERSION);
			return FB_PARSE_EXIT0;
		}
		if (o->k == K_FLAG) {
			*(bool *)field(cfg, o) = true;
			continue;
		}
		if (parse_value(cfg, o, optarg))
			return FB_PARSE_USAGE;
	}
	if (optind < argc) {
		fprintf(stderr, "fencebench: unexpected argument '%s' (see --help)\n",
		        argv[optind]);
		return FB_PARSE_USAGE;
	}
	if (!cfg->pause_given) {
		cfg->pause_min_ns = cfg->ttl_ns * 3 / 2;
		cfg->pause_max_ns = cfg->ttl_ns * 3;
	}
	return FB_PARSE_RUN;
}

static void modes_list(uint32_t modes, const char **names, int *n)
{
	*n = 0;
	for (int d = 0; d < FB_DISCIPLINES; d++)
		if (modes & (1u << d))
			names[(*n)++] = fb_discipline_name((fb_discipline)d);
}

void fb_config_replay(const fb_config *cfg, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "fencebench");
	for (size_t i = 0; i < NOPTS && at < len; i++) {
		const opt *o = &opts[i];
		if (!o->replay)
			continue;
		const void *f = cfield(cfg, o);
		char v[160], a[32], b[32];
		switch (o->k) {
		case K_U32:
			snprintf(v, sizeof v, "%u", *(const uint32_t *)f);
			break;
		case K_U64:
			snprintf(v, sizeof v, "%llu", (unsigned long long)*(const uint64_t *)f);
			break;
		case K_DURATION:
			fb_format_duration(v, sizeof v, *(const uint64_t *)f);
			break;
		case K_MODES: {
			const char *names[FB_DISCIPLINES];
			int n;
			modes_list(cfg->modes, names, &n);
			v[0] = 0;
			for (int k = 0; k < n; k++)
				snprintf(v + strlen(v), sizeof v - strlen(v), "%s%s", k ? "," : "",
				         names[k]);
			break;
		}
		case K_OP:
			snprintf(v, sizeof v, "%s", op_names[cfg->op]);
			break;
		case K_RATE:
			snprintf(v, sizeof v, "%g", *(const double *)f);
			break;
		case K_PAUSE:
			fb_format_duration(a, sizeof a, cfg->pause_min_ns);
			fb_format_duration(b, sizeof b, cfg->pause_max_ns);
			snprintf(v, sizeof v, "%s-%s", a, b);
			break;
		case K_FENCE:
			snprintf(v, sizeof v, "%s", fb_fence_source_name(cfg->fence));
			break;
		case K_PAUSE_AT:
			snprintf(v, sizeof v, "%s", fb_pause_at_name(cfg->pause_at));
			break;
		default:
			continue;
		}
		at += (size_t)snprintf(buf + at, len - at, " --%s %s", o->name, v);
	}
}

void fb_config_visit(const fb_config *cfg, const fb_config_visitor *vis, void *ctx)
{
	for (size_t i = 0; i < NOPTS; i++) {
		const opt *o = &opts[i];
		if (!o->json)
			continue;
		const void *f = cfield(cfg, o);
		switch (o->k) {
		case K_U32:
			vis->integer(ctx, o->json, *(const uint32_t *)f);
			break;
		case K_U64:
			vis->integer(ctx, o->json, *(const uint64_t *)f);
			break;
		case K_DURATION:
			vis->number(ctx, o->json, (double)*(const uint64_t *)f / o->json_unit);
			break;
		case K_MODES: {
			const char *names[FB_DISCIPLINES];
			int n;
			modes_list(cfg->modes, names, &n);
			vis->strings(ctx, o->json, names, n);
			break;
		}
		case K_OP:
			vis->string(ctx, o->json, op_names[cfg->op]);
			break;
		case K_RATE:
			vis->number(ctx, o->json, *(const double *)f);
			break;
		case K_PAUSE:
			vis->number(ctx, "pause_min_ms", (double)cfg->pause_min_ns / o->json_unit);
			vis->number(ctx, "pause_max_ms", (double)cfg->pause_max_ns / o->json_unit);
			break;
		case K_FENCE:
			vis->string(ctx, o->json, fb_fence_source_name(cfg->fence));
			break;
		case K_PAUSE_AT:
			vis->string(ctx, o->json, fb_pause_at_name(cfg->pause_at));
			break;
		case K_STRING:
			vis->string(ctx, o->json, *(const char *const *)f);
			break;
		default:
			break;
		}
	}
	vis->integer(ctx, "initial_balance", (uint64_t)cfg->initial_balance);
	vis->integer(ctx, "debit_amount", (uint64_t)cfg->amount);
}
