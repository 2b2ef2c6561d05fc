/*
 * Your own SQL for the PostgreSQL store's fenced column: --store
 * postgres://...?sql=FILE (or a conninfo's sql=FILE) runs the statements
 * in FILE against your own table, so the run tests the exact UPDATE your
 * service runs, beside fencebench's own write-fenced and unfenced tables.
 *
 * FILE holds one statement after each directive line:
 *
 *   -- @name accounts            the column's heading (optional; "yours")
 *   -- @reset                    before a fresh run (any number, in order)
 *   -- @read                     $key $token          -> balance
 *   -- @write                    $key $balance $token -> before, balance, version, last_fence
 *   -- @debit                    $key $amount $token  -> the same
 *   -- @final                    $key                 -> balance, last_fence
 *
 * A statement names its parameters ($key, $token, $balance, $amount,
 * $client, $worker; $keys and $initial_balance in a reset); they become
 * the positional parameters fencebench binds. This module only reads and
 * rewrites the text (no I/O beyond the file, no server): postgres.c
 * prepares the statements and checks the columns they return.
 */
#ifndef FB_PG_SQL_H
#define FB_PG_SQL_H

#include <stdbool.h>
#include <stddef.h>

typedef enum fb_sql_kind {
	FB_SQL_READ,
	FB_SQL_WRITE,
	FB_SQL_DEBIT,
	FB_SQL_FINAL,
	FB_SQL_RESET,
	FB_SQL_KINDS
} fb_sql_kind;

extern const char *const fb_sql_kind_names[FB_SQL_KINDS];

#define FB_SQL_RESETS 8

typedef struct fb_user_sql {
	char name[14];              /* the column's heading, "" if not given */
	char *sql[FB_SQL_RESET];    /* read, write, debit, final: rewritten, or NULL */
	char *reset[FB_SQL_RESETS]; /* the resets, rewritten, in order */
	int nreset;
} fb_user_sql;

/* The parameters of kind k in the order fencebench binds them ($1, $2...). */
const char *const *fb_sql_params(fb_sql_kind k, int *n);

/* Parse a statements file's text into u (free it with fb_user_sql_free
 * whatever the outcome). False: why, with the line, in err. */
bool fb_user_sql_parse(const char *text, fb_user_sql *u, char *err, size_t errlen);
void fb_user_sql_free(fb_user_sql *u);

/* Read and parse the file at path; false with why in err. */
bool fb_user_sql_load(const char *path, fb_user_sql *u, char *err, size_t errlen);

/* Take "sql=FILE" out of a URL's query string or a conninfo: url without
 * it into out, FILE into path ("" when there is none). False: it does not
 * fit. */
bool fb_user_sql_take(const char *url, char *out, size_t outlen, char *path, size_t pathlen);

#endif
