/*
 * libFuzzer: the adapter protocol's reply parser and every validator after
 * it (backends/exec_proto.c), on the bytes an adapter could write as one
 * line. What a parse leaves must hold together: names and strings are
 * NUL-terminated where their lengths say, an array's strings lie in the
 * decoding buffer; whitespace around the object changes nothing; a
 * validator that accepts leaves values in its own ranges.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect(bool ok)
{
	if (!ok)
		__builtin_trap();
}

/* The fields of a parse, checked against the buffer they were decoded to. */
static void check_fields(const fb_reply *r, const char *scratch, size_t cap)
{
	expect(r->n <= FB_REPLY_FIELDS);
	for (unsigned i = 0; i < r->n; i++) {
		const fb_jfield *f = &r->f[i];
		expect(f->name >= scratch && f->name < scratch + cap);
		expect(fb_reply_get(r, f->name) == f); /* no name twice */
		if (f->type == FB_J_STRING)
			expect(strlen(f->s) == f->len && f->s + f->len < scratch + cap);
		if (f->type == FB_J_ARRAY) {
			expect(f->strings <= f->items);
			const char *s = f->s;
			for (uint32_t k = 0; k < f->strings; k++, s += strlen(s) + 1)
				expect(s >= scratch && s < scratch + cap);
		}
	}
}

/* Every validator on one parse; what each accepts is in range. */
static void validate(const fb_reply *r)
{
	char err[256];
	fb_exec_hello h;
	if (fb_exec_hello_of(r, &h, err, sizeof err))
		expect(h.protocol == FB_EXEC_PROTOCOL && strlen(h.name) <= FB_EXEC_NAME_MAX);
	(void)fb_exec_ok_of(r, err, sizeof err);
	(void)fb_exec_error_of(r);
	static const fb_exec_op ops[] = {FB_XOP_READ, FB_XOP_WRITE, FB_XOP_DEBIT};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		fb_store_result res;
		int64_t version;
		if (fb_exec_result_of(r, ops[i], 33, &res, &version, err, sizeof err) && res.ok &&
		    ops[i] != FB_XOP_READ)
			expect(version >= 1 && res.version == (uint64_t)version);
		expect(res.highest <= FB_FENCE_MAX);
	}
	int64_t balance;
	uint64_t last;
	if (fb_exec_final_of(r, &balance, &last, err, sizeof err))
		expect(last <= FB_FENCE_MAX);
	fb_store_meta m;
	if (fb_exec_meta_of(r, &m, err, sizeof err))
		expect(m.keys >= 1 && m.amount >= 1 && m.modes == 1u << FB_FENCED);
	fb_history_row row;
	bool end;
	if (fb_exec_row_of(r, &row, &end, err, sizeof err) && !end)
		expect(row.version >= 1 && row.fence <= FB_FENCE_MAX);
	char ops_text[128];
	fb_exec_ops_list(h.ops, ops_text, sizeof ops_text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > FB_EXEC_LINE_MAX)
		return 0;
	char *line = malloc(size + 2), *scratch = malloc(size + 3);
	if (!line || !scratch)
		goto out;
	memcpy(line, data, size);
	fb_reply r;
	char err[256];
	bool ok = fb_reply_parse(&r, line, size, scratch, size + 1, err, sizeof err);
	if (ok) {
		check_fields(&r, scratch, size + 1);
		validate(&r);
		/* the same object with whitespace around it parses the same */
		unsigned n = r.n;
		memmove(line + 1, line, size);
		line[0] = ' ';
		line[size + 1] = '\t';
		fb_reply again;
		expect(fb_reply_parse(&again, line, size + 2, scratch, size + 3, err, sizeof err));
		expect(again.n == n);
	} else {
		expect(strlen(err) < sizeof err);
	}
	char quoted[4 * 120 + 8];
	fb_exec_quote((const char *)data, size, 120, quoted, sizeof quoted);
	expect(strlen(quoted) < sizeof quoted);
	for (const char *q = quoted; *q; q++)
		expect(*q >= 0x20 && *q < 0x7f);
out:
	free(line);
	free(scratch);
	return 0;
}
