/*
 * libFuzzer: the command line. The input is split into argv words on NUL
 * and newline bytes (a separator at the very end makes no empty word;
 * anywhere else it does: "" is a real argument), at most WORDS_MAX words
 * of at most WORD_MAX bytes, each in its own exact-size allocation so ASan
 * sees a read past its NUL. Then fb_config_defaults and fb_config_parse,
 * as main does, and on success the replay line and the JSON echo, which
 * read every field the parse wrote.
 *
 * Bad input is expected to print one line on stderr, and --help and
 * --version print on stdout: both go to /dev/null from the start (see
 * LLVMFuzzerInitialize).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

/* Above every buffer in options.c (1024 bytes for a list), so the "too
 * long" branches stay reachable. */
#define WORD_MAX  2048
#define WORDS_MAX 64

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Silence the parser, not libFuzzer. Swapping the stdio streams (glibc's
 * stderr and stdout are plain variables) rather than fds 1 and 2 keeps
 * libFuzzer's own output, which goes to the FILE * it took before this
 * runs, and the sanitizers' reports, which write to fd 2 directly.
 */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		stderr = null;
		stdout = null;
	}
	return 0;
}

static void no_number(void *ctx, const char *key, double v)
{
	(void)ctx, (void)key, (void)v;
}

static void no_integer(void *ctx, const char *key, uint64_t v)
{
	(void)ctx, (void)key, (void)v;
}

/* Reads the whole string, so ASan checks it is a string. */
static void no_string(void *ctx, const char *key, const char *v)
{
	*(size_t *)ctx += strlen(key) + (v ? strlen(v) : 0);
}

static void no_strings(void *ctx, const char *key, const char *const *v, int n)
{
	for (int i = 0; i < n; i++)
		no_string(ctx, key, v[i]);
}

static void no_boolean(void *ctx, const char *key, bool v)
{
	(void)ctx, (void)key, (void)v;
}

static void no_numbers(void *ctx, const char *key, const double *v, int n)
{
	(void)ctx, (void)key, (void)v, (void)n;
}

static const fb_config_visitor visitor = {no_number,  no_integer, no_string,
                                          no_strings, no_boolean, no_numbers};

/*
 * fb_config_parse sets optind = 1, which glibc takes as "go on", not
 * "start again": a short-option cluster the previous input left half
 * read ("-xq" returns at 'x') keeps glibc's cursor inside that input's
 * freed argv. optind = 0 and one call on an empty argv make glibc
 * forget it, as if this were a fresh process.
 */
static void getopt_reset(void)
{
	static char prog[] = "fuzz";
	char *none[] = {prog, NULL};
	optind = 0;
	while (getopt(1, none, "") != -1)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char prog[] = "fencebench";
	char *argv[WORDS_MAX + 2] = {prog};
	int argc = 1;
	for (size_t pos = 0; pos < size && argc <= WORDS_MAX;) {
		size_t n = 0;
		while (pos + n < size && data[pos + n] != 0 && data[pos + n] != '\n')
			n++;
		size_t keep = n < WORD_MAX ? n : WORD_MAX;
		char *w = malloc(keep + 1);
		if (!w)
			break;
		memcpy(w, data + pos, keep);
		w[keep] = 0;
		argv[argc++] = w;
		pos += n + 1;
	}
	argv[argc] = NULL;

	fb_config cfg;
	fb_config_defaults(&cfg);
	getopt_reset();
	if (fb_config_parse(&cfg, argc, argv) == FB_PARSE_RUN) {
		char replay[1024]; /* as main and the report size it */
		size_t sum = 0;
		fb_config_replay(&cfg, replay, sizeof replay);
		if (strncmp(replay, "fencebench", 10) != 0)
			__builtin_trap();
		fb_config_visit(&cfg, &visitor, &sum);
		(void)fb_config_is_sweep(&cfg);
	}
	for (int i = 1; i < argc; i++)
		free(argv[i]);
	return 0;
}
