/*
 * libFuzzer: the statements file of --store postgres://...?sql=FILE
 * (backends/pg_sql.c), parsed and rewritten, and the URL's sql=FILE taken
 * out. What it accepts holds together: a name fits a column, the resets fit
 * their slots, and a statement without parameters reads back as it was (one
 * with them does not: a positional $1 is refused on purpose). ASan and UBSan
 * watch the quoting, comment and dollar-quote scanners.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_sql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect(bool ok)
{
	if (!ok)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	fb_user_sql u;
	char err[400];
	if (fb_user_sql_parse(text, &u, err, sizeof err)) {
		expect(strlen(u.name) <= 13 && u.nreset <= FB_SQL_RESETS);
		for (int k = 0; k < FB_SQL_RESET; k++) {
			if (!u.sql[k])
				continue;
			/* positional already: parsing it again as the same kind keeps it */
			size_t n = strlen(u.sql[k]);
			char *again = malloc(n + 32);
			expect(again != NULL);
			snprintf(again, n + 32, "-- @%s\n%s\n", fb_sql_kind_names[k], u.sql[k]);
			fb_user_sql v;
			char why[400];
			if (fb_user_sql_parse(again, &v, why, sizeof why))
				expect(!strcmp(v.sql[k], u.sql[k]));
			fb_user_sql_free(&v);
			free(again);
		}
	} else {
		expect(strlen(err) < sizeof err);
	}
	fb_user_sql_free(&u);
	char rest[512], path[256];
	if (size < sizeof rest && fb_user_sql_take(text, rest, sizeof rest, path, sizeof path))
		expect(strlen(rest) <= strlen(text));
	free(text);
	return 0;
}
